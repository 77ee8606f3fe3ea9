"""A misbehaving bot for check-bot's tests: it plays legally but fails every RoundEnded
notification (which a real game ignores, and check-bot reports)."""

from arena.sdk import Bot, RoundResult, View, serve


class DeafBot(Bot):
    name = "deaf-bot"
    version = "0"

    def bid(self, view: View) -> int:
        return view.legal[0]

    def play(self, view: View) -> int:
        return view.legal[0]

    def round_ended(self, result: RoundResult) -> None:
        raise RuntimeError("not listening")


if __name__ == "__main__":
    serve(DeafBot())
