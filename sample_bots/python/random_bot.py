"""A trick-arena bot that plays a uniformly random legal action.

Run it in a game:
    arena play --game wizard \\
        --bots "cmd:python sample_bots/python/random_bot.py",heuristic,random,random
Run it by hand:
    python sample_bots/python/random_bot.py --listen 127.0.0.1:50051
"""

import random

from arena.sdk import Bot, View, serve


class RandomBot(Bot):
    name = "random-py"
    version = "1.0"
    author = "trick-arena samples"

    def choose(self, view: View) -> int:
        # Seeded by the game and the position, so a replayed game is played the same way.
        where = (self.game_id, view.seat, view.round, len(view.tricks), len(view.trick.cards))
        return random.Random(str(where)).choice(view.legal)

    def bid(self, view: View) -> int:
        return self.choose(view)

    def play(self, view: View) -> int:
        return self.choose(view)

    def choose_trump(self, view: View) -> int:
        return self.choose(view)


if __name__ == "__main__":
    serve(RandomBot())
