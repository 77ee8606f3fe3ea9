"""A misbehaving bot for check-bot's tests: it plays legally but never acts on SIGTERM.
It blocks the signal in every thread and never waits for it (a C++ bot's likely
mistake), so only SIGKILL ends it."""

import signal

from arena.sdk import Bot, View, serve


class StubbornBot(Bot):
    name = "stubborn-bot"
    version = "0"

    def bid(self, view: View) -> int:
        return view.legal[0]

    def play(self, view: View) -> int:
        return view.legal[0]


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # before gRPC's threads
    serve(StubbornBot())
