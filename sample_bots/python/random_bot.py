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

    def __init__(self) -> None:
        self.rng = random.Random()

    def bid(self, view: View) -> int:
        return self.rng.choice(view.legal)

    def play(self, view: View) -> int:
        return self.rng.choice(view.legal)

    def choose_trump(self, view: View) -> int:
        return self.rng.choice(view.legal)


if __name__ == "__main__":
    serve(RandomBot())
