"""A bot for check-bot's tests that claims only Wizard in its hand-shake."""

from arena.sdk import Bot, View, serve


class WizardOnly(Bot):
    name = "wizard-only"
    version = "0"
    games = ("wizard",)

    def bid(self, view: View) -> int:
        return view.legal[-1]

    def play(self, view: View) -> int:
        return view.legal[-1]


if __name__ == "__main__":
    serve(WizardOnly())
