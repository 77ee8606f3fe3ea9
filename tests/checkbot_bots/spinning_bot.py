"""A misbehaving bot for check-bot's tests: it plays legally, but SIGTERM sets it
spinning instead of ending it. A thread waits for the signal (blocked everywhere else)
and then loops for ever: the bot is runnable, and uses CPU, yet never exits."""

import signal
import threading

from arena.sdk import Bot, View, serve


class SpinningBot(Bot):
    name = "spinning-bot"
    version = "0"

    def bid(self, view: View) -> int:
        return view.legal[0]

    def play(self, view: View) -> int:
        return view.legal[0]


def spin_on_sigterm() -> None:
    signal.sigwait({signal.SIGTERM})
    n = 0
    while True:
        n += 1


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # before gRPC's threads
    threading.Thread(target=spin_on_sigterm, daemon=True).start()
    serve(SpinningBot())
