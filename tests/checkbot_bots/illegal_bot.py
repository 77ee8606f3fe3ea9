"""A misbehaving bot for check-bot's tests: it plays a card it holds that the rules forbid
(when there is one), and is otherwise legal."""

from arena.sdk import Bot, View, serve


class IllegalBot(Bot):
    name = "illegal-bot"
    version = "0"

    def bid(self, view: View) -> int:
        return view.legal[0]

    def play(self, view: View) -> int:
        forbidden = [c for c in view.hand if c not in view.legal]
        return forbidden[0] if forbidden else view.legal[0]


if __name__ == "__main__":
    serve(IllegalBot())
