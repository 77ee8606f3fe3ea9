"""A trick-arena bot that searches: Perfect Information Monte Carlo, as the built-in `pimc`.

For each decision it guesses the hidden cards many times, consistently with everything
its seat has seen (arena.rules.search.Sampler), rebuilds the game for each guess
(arena.rules.search.game_from_view), plays every candidate action out to the end of the
round with the heuristic in every seat, and takes the action with the best mean. The
search lives in arena/bots/pimc.py (built on the public search API only); this file
serves it over gRPC with the decision's time, and seeds it with the game id so a
replayed game gets the same moves.

Run it in a game:
    arena play --game wizard \\
        --bots "cmd:python sample_bots/python/pimc_bot.py",heuristic,heuristic,heuristic
"""

from arena.bots.pimc import PimcBot
from arena.sdk import Bot, View, serve


class Pimc(Bot):
    name = "pimc-py"
    version = "1.0"
    author = "trick-arena samples"

    def decide(self, view: View) -> int:
        search = PimcBot(seed=self.game_id)  # seeded by the game: a replay plays the same
        # plan on the move's own time; the bank (if any) is left for a slow machine
        return search.act_within(view, self.deadline_ms - self.bank_ms or 1000)

    def bid(self, view: View) -> int:
        return self.decide(view)

    def choose_trump(self, view: View) -> int:
        return self.decide(view)

    def play(self, view: View) -> int:
        return self.decide(view)


if __name__ == "__main__":
    serve(Pimc())
