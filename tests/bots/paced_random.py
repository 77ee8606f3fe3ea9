"""The random sample bot, paced: it waits ``PACE_S`` before each decision (sleeping, not
computing), as a bot that thinks would.

The league service's tests submit it (tests/league_helpers.py): a league plays for as
long as its tests run, and with bots that answer at once it plays some hundred duplicate
sets in a module, each starting the bot's process afresh, for tests about the service
that need a few games. Paced, it plays the games they need at a fraction of the CPU.
Self-contained (it imports only the SDK), as a submitted bundle must be."""

import random
import time

from arena.sdk import Bot, View, serve

PACE_S = 0.03


class PacedRandom(Bot):
    name = "paced-random-py"
    version = "1.0"
    author = "trick-arena tests"

    def choose(self, view: View) -> int:
        time.sleep(PACE_S)
        where = (self.game_id, view.seat, view.round, len(view.tricks), len(view.trick.cards))
        return random.Random(str(where)).choice(view.legal)

    bid = play = choose_trump = choose


if __name__ == "__main__":
    serve(PacedRandom())
