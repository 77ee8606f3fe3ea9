"""A misbehaving bot for check-bot's tests: it plays legally but fails every RoundEnded
notification (which a real game ignores, and check-bot reports), though it did not
decline them: it overrides round_ended, so the SDK asks for them. With ``--hang`` it
answers them too late instead of with an error."""

import sys
import time

from arena.sdk import Bot, RoundResult, View, serve

HANG = "--hang" in sys.argv


class DeafBot(Bot):
    name = "deaf-bot"
    version = "0"

    def bid(self, view: View) -> int:
        return view.legal[0]

    def play(self, view: View) -> int:
        return view.legal[0]

    def round_ended(self, result: RoundResult) -> None:
        if HANG:
            time.sleep(1.0)
            return
        raise RuntimeError("not listening")


if __name__ == "__main__":
    serve(DeafBot(), argv=[a for a in sys.argv[1:] if a != "--hang"], workers=4)
