"""A trick-arena bot with a sensible strategy: bid from hand strength, then make it exactly.

The strategy is the built-in `heuristic` (arena/bots/heuristic.py), served over gRPC:
copy this file and replace `strategy.act` with your own logic.

Run it in a game:
    arena play --game wizard \\
        --bots "cmd:python sample_bots/python/heuristic_bot.py",random,random,random
"""

from arena.bots.heuristic import HeuristicBot
from arena.sdk import Bot, GameResult, View, serve


class Heuristic(Bot):
    name = "heuristic-py"
    version = "1.0"
    author = "trick-arena samples"

    def __init__(self) -> None:
        self.strategy = HeuristicBot()
        self.games_played = 0

    def bid(self, view: View) -> int:
        return self.strategy.act(view)

    def choose_trump(self, view: View) -> int:
        return self.strategy.act(view)

    def play(self, view: View) -> int:
        return self.strategy.act(view)

    def game_ended(self, result: GameResult) -> None:
        self.games_played += 1


if __name__ == "__main__":
    serve(Heuristic())
