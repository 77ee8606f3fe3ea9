"""A misbehaving bot for check-bot's tests: it bids at once but takes 0.6 s to play a card
(several workers, so a late answer does not hold up the next call)."""

import time

from arena.sdk import Bot, View, serve


class SlowBot(Bot):
    name = "slow-bot"
    version = "0"

    def bid(self, view: View) -> int:
        return view.legal[0]

    def play(self, view: View) -> int:
        time.sleep(0.6)
        return view.legal[0]


if __name__ == "__main__":
    serve(SlowBot(), workers=8)
