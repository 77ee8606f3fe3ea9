"""A misbehaving bot for check-bot's tests: it bids at once but takes 0.6 s to play a card
(several workers, so a late answer does not hold up the next call). With ``--note`` it
says on stderr (its log) each time it is asked to play: a test waits for that line to
know the checks are under way."""

import sys
import time

from arena.sdk import Bot, View, serve


class SlowBot(Bot):
    name = "slow-bot"
    version = "0"

    def bid(self, view: View) -> int:
        return view.legal[0]

    def play(self, view: View) -> int:
        if NOTE:
            print("asked to play", file=sys.stderr, flush=True)
        time.sleep(0.6)
        return view.legal[0]


NOTE = "--note" in sys.argv[1:]

if __name__ == "__main__":
    serve(SlowBot(), [a for a in sys.argv[1:] if a != "--note"], workers=8)
