"""The schedule: which bots play which deal in which seats, derived from the file alone.

``round-robin``: every table of ``seats`` distinct bots from the field; ``gauntlet``:
each candidate with every ``seats - 1`` others; ``balanced``: about n·K/S tables in which
each bot plays ``tables_per_bot`` (K) tables, for fields too big for a round-robin
(:mod:`arena.runs.balanced`). Each table plays ``deals`` deal seeds,
each in every cyclic rotation of its bots (a duplicate set), so every bot holds every
seat's cards once. The deal seeds derive from the tournament seed and are the same at
every table, so results are paired across tables too.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from arena.runs.balanced import balanced_tables, table_count

FORMATS = ("round-robin", "gauntlet", "balanced")


@dataclass(frozen=True, slots=True)
class ScheduledGame:
    """One game of the schedule."""

    seq: int
    """Position in the schedule (0-based): the order of the classic incremental Elo."""
    table_no: int
    deal_no: int
    rotation: int
    deal_seed: int
    bots: tuple[str, ...]
    """Bot names by seat."""

    @property
    def id(self) -> str:
        return f"t{self.table_no}-d{self.deal_no}-r{self.rotation}"

    @property
    def table_id(self) -> str:
        return f"t{self.table_no}"

    @property
    def unit(self) -> str:
        """The duplicate set this game belongs to (the bootstrap's independent unit)."""
        return f"t{self.table_no}-d{self.deal_no}"


def seed_commitment(seed: int) -> str:
    """The SHA-256 hex digest of the seed's decimal string, published before the games."""
    return hashlib.sha256(str(seed).encode()).hexdigest()


def deal_seed(tournament_seed: int, deal_no: int) -> int:
    """The seed of deal ``deal_no``: 63 bits of SHA-256 over the tournament seed and number."""
    digest = hashlib.sha256(f"trick-arena/deal/{tournament_seed}/{deal_no}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def tables(fmt: str, field: Sequence[str], seats: int, candidates: Sequence[str] = (), *,
           tables_per_bot: int | None = None, seed: int = 0) -> list[tuple[str, ...]]:
    """The tables (bot names in seat order before rotation), in a fixed order.

    ``tables_per_bot`` (required) and ``seed`` (the tournament seed) are the balanced
    format's; the other formats do not use them."""
    if fmt == "balanced":
        if tables_per_bot is None:
            raise ValueError("a balanced schedule needs tables_per_bot")
        return balanced_tables(field, seats, tables_per_bot, seed)
    if fmt == "round-robin":
        return list(itertools.combinations(field, seats))
    if fmt == "gauntlet":
        others = [b for b in field if b not in candidates]
        return [(c, *rest) for c in candidates
                for rest in itertools.combinations(others, seats - 1)]
    raise ValueError(f"unknown schedule format {fmt!r}; allowed: {', '.join(FORMATS)}")


def game_count(fmt: str, bots: int, seats: int, deals: int, candidates: int = 0, *,
               tables_per_bot: int | None = None) -> int:
    """How many games :func:`schedule` makes, computed without making them: tables ×
    ``deals`` × ``seats`` rotations (``bots`` is the field's size, candidates included)."""
    if fmt == "balanced":
        if tables_per_bot is None:
            raise ValueError("a balanced schedule needs tables_per_bot")
        count = table_count(bots, seats, tables_per_bot)
    elif fmt == "gauntlet":
        count = candidates * math.comb(max(bots - candidates, 0), seats - 1)
    else:
        count = math.comb(bots, seats)
    return count * deals * seats


def schedule(fmt: str, field: Sequence[str], seats: int, deals: int, tournament_seed: int,
             candidates: Sequence[str] = (), *,
             tables_per_bot: int | None = None) -> list[ScheduledGame]:
    """Every game of the tournament, in order: table by table, deal by deal, rotation by
    rotation (rotation r seats the table's bot ``(s + r) % seats`` in seat ``s``). A
    balanced schedule's tables derive from the tournament seed too."""
    games: list[ScheduledGame] = []
    seeds = [deal_seed(tournament_seed, d) for d in range(deals)]
    for t, table in enumerate(tables(fmt, field, seats, candidates,
                                     tables_per_bot=tables_per_bot, seed=tournament_seed)):
        for d, seed in enumerate(seeds):
            for r in range(seats):
                bots = tuple(table[(s + r) % seats] for s in range(seats))
                games.append(ScheduledGame(len(games), t, d, r, seed, bots))
    return games
