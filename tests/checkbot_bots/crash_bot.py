"""A misbehaving bot for check-bot's tests: its process dies when asked to play a card."""

import os

from arena.sdk import Bot, View, serve


class CrashBot(Bot):
    name = "crash-bot"
    version = "0"

    def bid(self, view: View) -> int:
        return view.legal[0]

    def play(self, view: View) -> int:
        os._exit(3)


if __name__ == "__main__":
    serve(CrashBot())
