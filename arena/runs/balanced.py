"""The ``balanced`` schedule: about n·K/S tables for a big field, instead of C(n, S).

Each bot plays ``tables_per_bot`` (K) tables, or K + 1 where n·K is not a multiple of the
seats S (then ``ceil(n·K / S)`` tables hold the n·K seats and the S·T − n·K left over go
to distinct bots); every pair of bots meets about equally often, and so does every
*ordered* pair of cyclic neighbours (who sits directly after whom). Seat positions need
no work of their own: every table plays each deal in all S rotations, so every bot holds
every seat's cards once per deal; rotations keep the cyclic order, which is why that
order is balanced here.

The construction, seeded and deterministic (a local :class:`random.Random` whose only
draws are ``random()``, the one stream Python keeps across versions):

1. **Greedy.** Tables are filled seat by seat with a bot that has the most tables left
   to play (so at every point of the list the bots have played within two tables of one
   another: a prefix of the list is itself nearly balanced), and among those the one
   that has met the bots already seated least often; the seats of a table are then put
   in the cyclic order whose neighbour pairs have occurred least.
2. **Local search.** A fixed number of proposals (a function of the size alone, never
   of time): swap two bots between two tables close in the list (which keeps every
   bot's table count), or two bots within a table (which changes only the order); a
   proposal is kept when it does not raise ``PAIR_WEIGHT · Σ pairs² + Σ neighbours²``.
   As both sums are fixed, this lowers the spread of the counts.

What it achieves is measured, not proven: :func:`balance` gives the spreads, the tests
check bounds for several sizes, and ``docs/tournaments.md`` lists them.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

PAIR_WEIGHT = 4
"""How much more an unbalanced pair count costs than an unbalanced neighbour count."""
PROPOSALS_PER_SEAT = 40
"""Local-search proposals per seat of the schedule ..."""
MAX_PROPOSALS = 400_000
"""... but no more than this many (about two seconds)."""


@dataclass(frozen=True, slots=True)
class Balance:
    """How even a list of tables is (each spread is max − min over every bot or pair)."""

    tables: int
    tables_per_bot: tuple[int, int]
    """The fewest and most tables any bot plays."""
    pair_meetings: tuple[int, int]
    """The fewest and most tables any two bots share."""
    neighbours: tuple[int, int]
    """The fewest and most times any bot sits directly after any other (ordered pairs)."""
    neighbour_asymmetry: int
    """The most, over pairs a, b, that 'a before b' and 'b before a' differ."""
    prefix_spread: int
    """The largest spread of tables played among the bots after any prefix of the list."""

    @property
    def pair_spread(self) -> int:
        return self.pair_meetings[1] - self.pair_meetings[0]


def table_count(bots: int, seats: int, tables_per_bot: int) -> int:
    """The number of tables of a balanced schedule: ``ceil(bots · tables_per_bot / seats)``."""
    return -(-bots * tables_per_bot // seats)


def balanced_tables(field: Sequence[str], seats: int, tables_per_bot: int,
                    seed: int = 0) -> list[tuple[str, ...]]:
    """The tables (bot names in seat order before rotation) of a balanced schedule.

    The same arguments give the same tables. Raises ValueError for fewer bots than
    seats, a bot named twice, fewer than 2 seats or ``tables_per_bot`` < 1.
    """
    names = list(field)
    n = len(names)
    if seats < 2:
        raise ValueError(f"a table needs at least 2 seats, not {seats}")
    if n < seats:
        raise ValueError(f"{n} bots for {seats} seats; a table needs {seats} distinct bots")
    if len(set(names)) != n:
        raise ValueError("a bot is named twice in the field")
    if tables_per_bot < 1:
        raise ValueError(f"tables_per_bot must be at least 1, not {tables_per_bot}")
    rng = random.Random(_seed(seed))
    tables = _greedy(n, seats, tables_per_bot, rng)
    _improve(tables, n, seats, rng)
    return [tuple(names[b] for b in table) for table in tables]


def _seed(seed: int) -> int:
    """The local generator's seed: 64 bits of SHA-256 over the tournament seed, so the
    tables do not share a stream with anything else drawn from that seed."""
    digest = hashlib.sha256(f"trick-arena/balanced/{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _below(rng: random.Random, n: int) -> int:
    """A whole number 0..n-1 from ``rng.random()`` alone (stable across Python versions,
    unlike ``randrange``; the bias of 53-bit floats is negligible here)."""
    return min(int(rng.random() * n), n - 1)


def _shuffled(rng: random.Random, items: list[int]) -> list[int]:
    """A Fisher-Yates shuffle of a copy of ``items`` drawn with :func:`_below`."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = _below(rng, i + 1)
        out[i], out[j] = out[j], out[i]
    return out


def _greedy(n: int, seats: int, k: int, rng: random.Random) -> list[list[int]]:
    """The first list of tables (bot indices in cyclic order), filled as the module
    docstring says; ties go by a random order of the bots drawn afresh every round."""
    count = table_count(n, seats, k)
    left = [k] * n
    for b in _shuffled(rng, list(range(n)))[: count * seats - n * k]:
        left[b] += 1
    met = [[0] * n for _ in range(n)]
    after = [[0] * n for _ in range(n)]
    per_round = max(1, n // seats)
    tie = list(range(n))
    tables: list[list[int]] = []
    for t in range(count):
        if t % per_round == 0:
            tie = _shuffled(rng, list(range(n)))
        chosen: list[int] = []
        for _ in range(seats):
            most = max(left[b] for b in range(n) if b not in chosen)
            best = min((b for b in tie if left[b] == most and b not in chosen),
                       key=lambda b: sum(met[b][c] for c in chosen))
            chosen.append(best)
        for b in chosen:
            left[b] -= 1
            for c in chosen:
                if c != b:
                    met[b][c] += 1
        table = _best_order(chosen, after)
        for i, b in enumerate(table):
            after[b][table[(i + 1) % seats]] += 1
        tables.append(table)
    return tables


def _best_order(chosen: list[int], after: list[list[int]]) -> list[int]:
    """``chosen`` in the cyclic order whose neighbour pairs have occurred least (sum of
    squares after adding them): every order for up to 5 seats, greedily beyond."""
    seats = len(chosen)
    first, rest = chosen[0], chosen[1:]
    if seats <= 5:
        best: list[int] = chosen
        best_cost = -1
        for perm in itertools.permutations(rest):
            order = [first, *perm]
            cost = sum((after[order[i]][order[(i + 1) % seats]] + 1) ** 2
                       for i in range(seats))
            if best_cost < 0 or cost < best_cost:
                best, best_cost = order, cost
        return best
    order = [first]
    todo = list(rest)
    while todo:
        nxt = min(todo, key=lambda b: after[order[-1]][b])
        order.append(nxt)
        todo.remove(nxt)
    return order


def _improve(tables: list[list[int]], n: int, seats: int, rng: random.Random) -> None:
    """The local search of the module docstring, in place: rounds of a targeted descent
    (every bot of a pair that met more than its share tries every swap within its round
    of tables, and takes the best one that lowers the cost), a reordering of every table
    given the others, and random swaps that keep the cost (a walk across plateaus)."""
    count = len(tables)
    met = [[0] * n for _ in range(n)]
    after = [[0] * n for _ in range(n)]
    for table in tables:
        for i, b in enumerate(table):
            after[b][table[(i + 1) % seats]] += 1
            for c in table:
                if c != b:
                    met[b][c] += 1
    # swaps stay within a block of ROUNDS rounds (round r: the tables in which the bots
    # play their r-th table), so that a prefix of the list stays nearly balanced
    round_of = [t * seats // (n * ROUNDS) for t in range(count)]
    rounds: dict[int, list[int]] = {}
    for t in range(count):
        rounds.setdefault(round_of[t], []).append(t)
    most = math.ceil(count * seats * (seats - 1) / (n * (n - 1)) - 1e-9)
    budget = min(MAX_PROPOSALS, PROPOSALS_PER_SEAT * count * seats)
    for _ in range(CYCLES):
        for t1 in _shuffled(rng, list(range(count))):
            table = tables[t1]
            for i in range(seats):
                x = table[i]
                if any(met[x][z] > most for z in table if z != x):
                    _best_swap(tables, t1, i, rounds[round_of[t1]], met, after)
        for table in tables:
            _reorder(table, after)
        for _ in range(budget // CYCLES):
            t1 = _below(rng, count)
            peers = rounds[round_of[t1]]
            t2 = peers[_below(rng, len(peers))]
            if t2 != t1:
                i, j = _below(rng, seats), _below(rng, seats)
                delta = _swap_cost(tables[t1], i, tables[t2], j, met, after)
                if delta is not None and delta <= 0:
                    _swap(tables[t1], i, tables[t2], j, met, after)


CYCLES = 4
"""Rounds of descent, reordering and plateau walk."""
ROUNDS = 2
"""How many rounds of tables a swap may span."""


def _best_swap(tables: list[list[int]], t1: int, i: int, peers: list[int],
               met: list[list[int]], after: list[list[int]]) -> None:
    """Make the swap of ``tables[t1][i]`` with a bot of a table in ``peers`` that lowers
    the cost most (the first such in their order), if any lowers it."""
    best: tuple[int, int, int] | None = None
    for t2 in peers:
        if t2 == t1:
            continue
        for j in range(len(tables[t2])):
            delta = _swap_cost(tables[t1], i, tables[t2], j, met, after)
            if delta is not None and delta < 0 and (best is None or delta < best[0]):
                best = (delta, t2, j)
    if best is not None:
        _swap(tables[t1], i, tables[best[1]], best[2], met, after)


def _edges(table: list[int]) -> list[tuple[int, int]]:
    seats = len(table)
    return [(table[i], table[(i + 1) % seats]) for i in range(seats)]


def _seat_edges(table: list[int], i: int, bot: int) -> list[tuple[int, int]]:
    """The two neighbour pairs of seat ``i`` of ``table`` with ``bot`` in it."""
    seats = len(table)
    return [(table[(i - 1) % seats], bot), (bot, table[(i + 1) % seats])]


def _swap_cost(t1: list[int], i: int, t2: list[int], j: int, met: list[list[int]],
               after: list[list[int]]) -> int | None:
    """The change of the weighted cost if ``t1[i]`` and ``t2[j]`` changed tables; None
    if either already sits at the other's table."""
    x, y = t1[i], t2[j]
    if x in t2 or y in t1:
        return None
    # pairs: x leaves t1's others for t2's, y the other way; bots at both tables cancel
    pairs = 0
    for z in t1:
        if z != x and z not in t2:
            pairs += met[y][z] - met[x][z] + 1
    for w in t2:
        if w != y and w not in t1:
            pairs += met[x][w] - met[y][w] + 1
    changes: dict[tuple[int, int], int] = {}
    for edge in _seat_edges(t1, i, x) + _seat_edges(t2, j, y):
        changes[edge] = changes.get(edge, 0) - 1
    for edge in _seat_edges(t1, i, y) + _seat_edges(t2, j, x):
        changes[edge] = changes.get(edge, 0) + 1
    return PAIR_WEIGHT * 2 * pairs + _cost(changes, after)


def _swap(t1: list[int], i: int, t2: list[int], j: int, met: list[list[int]],
          after: list[list[int]]) -> None:
    """Exchange ``t1[i]`` and ``t2[j]``, keeping the counts up to date."""
    x, y = t1[i], t2[j]
    for table, old in ((t1, x), (t2, y)):
        for z in table:
            if z != old:
                met[old][z] -= 1
                met[z][old] -= 1
        for a, b in _edges(table):
            after[a][b] -= 1
    t1[i], t2[j] = y, x
    for table, new in ((t1, y), (t2, x)):
        for z in table:
            if z != new:
                met[new][z] += 1
                met[z][new] += 1
        for a, b in _edges(table):
            after[a][b] += 1


def _cost(changes: dict[tuple[int, int], int], counts: list[list[int]]) -> int:
    """The change in the sum of squares of ``counts`` from adding ``changes``."""
    total = 0
    for (a, b), c in changes.items():
        if c:
            m = counts[a][b]
            total += (m + c) ** 2 - m * m
    return total


def _reorder(table: list[int], after: list[list[int]]) -> None:
    """Put ``table`` in its best cyclic order given every other table's neighbours."""
    for a, b in _edges(table):
        after[a][b] -= 1
    table[:] = _best_order(table, after)
    for a, b in _edges(table):
        after[a][b] += 1


def balance(tables: Sequence[Sequence[str]], field: Sequence[str]) -> Balance:
    """The spreads of a list of tables over ``field`` (every bot and every pair of it,
    including those that never meet)."""
    index = {name: i for i, name in enumerate(field)}
    n = len(field)
    played = [0] * n
    met = [[0] * n for _ in range(n)]
    after = [[0] * n for _ in range(n)]
    prefix = 0
    for table in tables:
        seats = len(table)
        ids = [index[b] for b in table]
        for s, b in enumerate(ids):
            played[b] += 1
            after[b][ids[(s + 1) % seats]] += 1
            for c in ids:
                if c != b:
                    met[b][c] += 1
        prefix = max(prefix, max(played) - min(played))
    pair_counts = [met[a][b] for a in range(n) for b in range(a + 1, n)]
    ordered = [after[a][b] for a in range(n) for b in range(n) if a != b]
    asymmetry = max((abs(after[a][b] - after[b][a]) for a in range(n)
                     for b in range(a + 1, n)), default=0)
    return Balance(
        tables=len(tables),
        tables_per_bot=(min(played, default=0), max(played, default=0)),
        pair_meetings=(min(pair_counts, default=0), max(pair_counts, default=0)),
        neighbours=(min(ordered, default=0), max(ordered, default=0)),
        neighbour_asymmetry=asymmetry,
        prefix_spread=prefix,
    )


def expected_meetings(bots: int, seats: int, tables_per_bot: int) -> float:
    """The mean number of tables two bots share: K (S − 1) / (n − 1)."""
    return tables_per_bot * (seats - 1) / max(bots - 1, 1) if bots > 1 else math.nan
