"""The games of a match, and what they add up to. No I/O.

Deal ``d`` (seed :func:`arena.runs.schedule.deal_seed`) is played four times: in
seat ``d mod n`` and in seat ``(d + 1) mod n`` (``n`` seats), each once with the
candidate there and once with the baseline there, the other seats held by the same
opponents in the same places (``opponent1`` in the next seat, ``opponent2`` after it,
...). So the seats rotate over the deals.

A game's id is ``t{table}-d{deal}-r{seat}`` as in a tournament's store: table 0 is the
candidate's game, table 1 the baseline's, and the "rotation" is the seat compared.
The two games of a *game pair* (same deal, same seat) compare the candidate's final total
with the baseline's: 1, 1/2 or 0 to the candidate. The deal's two game pairs are a *pair
of pairs*, counted in the pentanomial class of their sum (0 to 4 half points).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from arena.runs.schedule import ScheduledGame, deal_seed

CANDIDATE = "candidate"
BASELINE = "baseline"
GAMES_PER_DEAL = 4


def opponent_names(seats: int) -> list[str]:
    return [f"opponent{i}" for i in range(1, seats)]


def field_names(seats: int) -> list[str]:
    """The match's bots as a tournament's field: candidate, baseline, opponents."""
    return [CANDIDATE, BASELINE, *opponent_names(seats)]


def compared_seats(deal_no: int, seats: int) -> tuple[int, int]:
    """The two seats deal ``deal_no`` is compared in."""
    return deal_no % seats, (deal_no + 1) % seats


def deal_games(deal_no: int, seats: int, match_seed: int) -> list[ScheduledGame]:
    """The four games of deal ``deal_no``: for each compared seat, the candidate's game
    (table 0), then the baseline's (table 1)."""
    seed = deal_seed(match_seed, deal_no)
    opponents = opponent_names(seats)
    games: list[ScheduledGame] = []
    for k, seat in enumerate(compared_seats(deal_no, seats)):
        for table, tested in enumerate((CANDIDATE, BASELINE)):
            bots = [""] * seats
            bots[seat] = tested
            for i, name in enumerate(opponents):
                bots[(seat + 1 + i) % seats] = name
            games.append(ScheduledGame(GAMES_PER_DEAL * deal_no + 2 * k + table, table,
                                       deal_no, seat, seed, tuple(bots)))
    return games


def match_schedule(seats: int, deals: int, match_seed: int) -> Iterator[ScheduledGame]:
    """Every game of a match of ``deals`` deals, in order."""
    for d in range(deals):
        yield from deal_games(d, seats, match_seed)


def pair_score(candidate_total: int, baseline_total: int) -> float:
    """A game pair's score for the candidate: its total against the baseline's."""
    if candidate_total > baseline_total:
        return 1.0
    if candidate_total == baseline_total:
        return 0.5
    return 0.0


@dataclass(slots=True)
class Tally:
    """The results so far: the totals of the tested seat by game, and the pairs of pairs
    counted, deal by deal in order (the sequential test reads them in that order)."""

    seats: int
    limit: int
    """Deals 0..limit-1 may be counted (the match's ``--max-games``)."""
    totals: dict[str, int] = field(default_factory=dict)
    """The tested seat's final total, by game id."""
    counted: int = 0
    """Deals 0..counted-1 are counted."""
    pentanomial: list[int] = field(default_factory=lambda: [0] * 5)
    trinomial: list[int] = field(default_factory=lambda: [0] * 3)
    """Game pairs lost, drawn and won by the candidate."""

    def add(self, game_id: str, rotation: int, record: Mapping[str, object]) -> None:
        totals = record["totals"]
        assert isinstance(totals, Sequence)
        self.totals[game_id] = int(totals[rotation])

    def deal_points(self, deal_no: int) -> list[float] | None:
        """The deal's two game pair scores, or None while one of its games is missing."""
        scores: list[float] = []
        for seat in compared_seats(deal_no, self.seats):
            a = self.totals.get(f"t0-d{deal_no}-r{seat}")
            b = self.totals.get(f"t1-d{deal_no}-r{seat}")
            if a is None or b is None:
                return None
            scores.append(pair_score(a, b))
        return scores

    def advance(self) -> bool:
        """Count the next deal if all its games are in; whether it was."""
        points = self.deal_points(self.counted) if self.counted < self.limit else None
        if points is None:
            return False
        for score in points:
            self.trinomial[int(2 * score)] += 1
        self.pentanomial[int(2 * sum(points))] += 1
        self.counted += 1
        return True


def planned_games(meta: Mapping[str, str]) -> Iterator[ScheduledGame] | None:
    """The games of the match stored with ``meta`` (None for a store that is not a
    match's): what ``arena verify`` checks a match's games against."""
    if meta.get("format") != "match":
        return None
    return match_schedule(int(meta["seats"]), int(meta["deals"]), int(meta["seed"]))
