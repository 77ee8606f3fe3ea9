"""Matchmaking: which tables a league plays next, chosen to rank the field in fewer games.

Every table is played as a whole duplicate set (one deal in all S rotations), so the
matchmaker only picks the S bots and their cyclic order. It is pure and deterministic:
the same field, ratings, counts and seed give the same tables, and every table comes with
a short machine-readable reason the league stores (``{"rule": ..., "bots": [...],
"score": ...}``).

The rules, in order:

1. ``new``: a bot with fewer than ``new_games`` games anchors a table (fewest games
   first), filled as in rule 2: new bots are placed before anything else is learnt.
2. ``uncertain``: otherwise the anchor is the bot with the most to gain, and the table is
   filled greedily, seat by seat, with the bot that adds the most *expected reduction of
   misordered pairs*. For two ranked bots i, j with ratings μ and standard errors σ (live
   Bradley-Terry, in natural-log units) the chance that their order is wrong is
   ``P = Φ(−|μi − μj| / √(σi² + σj²))``. A table gives bot i the information
   ``S · Σ_c p(1 − p)`` (its comparisons with the others, in every rotation), which shrinks
   σi² to ``1 / (1/σi² + I)``; the table's score is the sum over the bots i at the table
   and all ranked bots j of ``P_ij · (1 − √(v'_ij / v_ij))``, the share of i–j's spread
   the table removes times the chance their order is wrong. So uncertain bots are seated
   with bots close to them in rating, where both the doubt and the information are.
3. ``least-met``: where the best table would remove (almost) nothing, the field is settled
   near the anchor: the table is filled with the nearest-rated bots that have met the
   anchor least.

Pairs that have met often are discounted in rule 2 (their information is divided by
``1 + met_weight · met / (1 + mean met)``), so the same four bots do not sit together
round after round. **The top's edge** weighs more: with t_i = Φ((μi − c) / σi) the chance
that bot i belongs in the top ``top`` (c halfway between the ratings ranked ``top`` and
``top + 1``), a pair's P is multiplied by ``1 + top_weight · n / top · b_ij``, where
``b_ij = t_i (1 − t_j) + t_j (1 − t_i)`` is the chance the pair straddles that edge.
Without it the expected-misorderings score spends the games where bots are densest, the
middle of the field, and the leaders are the last to be sorted; with it the top 3 settle
about twice as fast as with random tables, at some cost in Kendall's tau over the whole
field (``docs/league.md`` has the trade-off measured). House bots (fixed ratings, not
ranked) may fill seats, where they inform; they never anchor. Within one call a bot sits
at one table at most, as a round of concurrent tables needs, unless fewer than S bots
are left. The order at the table: the anchor first, then the seats in the order chosen
(the rotations give every bot every seat anyway).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from arena.stats.ratings import ELO_PER_NAT

Array = npt.NDArray[np.float64]

NEW_GAMES = 8
"""Bots with fewer games than this are ``new`` (two duplicate sets at 4 seats)."""
CANDIDATES = 24
"""How many bots nearest in rating to the anchor are considered for its seats."""
TOP = 3
"""The leaderboard's top that :data:`TOP_WEIGHT` favours."""
TOP_WEIGHT = 0.5
"""How much more the order at the top's edge weighs (see :func:`choose_tables`)."""
MET_WEIGHT = 1.0
"""How much a pair's past meetings discount its information (see :func:`choose_tables`)."""
SETTLED = 1e-3
"""A table whose score is below this removes (almost) no doubt: rule 3 fills it."""


@dataclass(frozen=True, slots=True)
class BotState:
    """What the matchmaker knows of one bot."""

    name: str
    elo: float
    sigma: float
    """The standard error of ``elo`` (Elo points; 0 for a house bot)."""
    games: int


@dataclass(frozen=True, slots=True)
class Choice:
    """One table to play, with why it was chosen."""

    table: tuple[str, ...]
    reason: dict[str, Any]
    """``rule`` (``new``, ``uncertain`` or ``least-met``), ``bots`` (the table),
    ``anchor`` (the bot it was built around) and ``score`` (rule 2's score, 6 digits)."""


def _phi(x: Array) -> Array:
    """The standard normal distribution function."""
    return np.asarray(0.5 * (1.0 + _erf(x / math.sqrt(2.0))), dtype=np.float64)


def _erf(x: Array) -> Array:
    """The error function, vectorised (numpy has none): Abramowitz and Stegun 7.1.26,
    within 1.5e-7 of it everywhere, and pure numpy, so 200 x 200 of it is quick."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (
        -1.453152027 + t * 1.061405429))))
    return np.asarray(np.sign(x) * (1.0 - poly * np.exp(-a * a)), dtype=np.float64)


def choose_tables(active: Sequence[BotState], house: Sequence[BotState],
                  met: Mapping[tuple[str, str], int], seats: int, count: int = 1, *,
                  seed: int | random.Random = 0, new_games: int = NEW_GAMES,
                  candidates: int = CANDIDATES, top: int = TOP,
                  top_weight: float = TOP_WEIGHT, met_weight: float = MET_WEIGHT,
                  per_pair: float | None = None) -> list[Choice]:
    """The next ``count`` tables of ``seats`` bots, each with its reason.

    ``active`` are the ranked bots, ``house`` the house bots (fillers and anchors of the
    scale); ``met`` counts the tables each pair has shared, keyed by the pair's names in
    sorted order (missing pairs: 0). ``seed`` (or a :class:`random.Random`, which is
    advanced) breaks ties only. ``per_pair``: the comparisons a table gives each pair of
    its bots (default ``seats``: one a rotation, as the seats of each game or the same
    cards are compared; 1 where the ratings compare set totals). Raises ValueError for
    fewer bots than seats, a name given twice, a non-finite rating or a ``per_pair`` that
    is not positive.
    """
    bots = [*active, *house]
    names = [b.name for b in bots]
    if seats < 2:
        raise ValueError(f"a table needs at least 2 seats, not {seats}")
    if len(set(names)) != len(names):
        raise ValueError("a bot is given twice")
    if len(bots) < seats:
        raise ValueError(f"{len(bots)} bots for {seats} seats")
    if not active:
        raise ValueError("no active bot to rank")
    if per_pair is not None and not (per_pair > 0 and math.isfinite(per_pair)):
        raise ValueError(f"per_pair must be positive and finite, not {per_pair}")
    for b in bots:
        if not (math.isfinite(b.elo) and math.isfinite(b.sigma) and b.sigma >= 0):
            raise ValueError(f"bot {b.name!r}: rating {b.elo} ± {b.sigma} is not finite")
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    n, ranked = len(bots), len(active)
    mu = np.array([b.elo for b in bots]) / ELO_PER_NAT
    var = np.maximum(np.array([b.sigma for b in bots]) / ELO_PER_NAT, 1e-6) ** 2
    games = np.array([b.games for b in bots])
    counts = np.zeros((n, n))
    index = {name: i for i, name in enumerate(names)}
    for (x, y), k in met.items():
        if x in index and y in index:
            counts[index[x], index[y]] = counts[index[y], index[x]] = k
    mean_met = counts[:ranked, :ranked].sum() / max(ranked * (ranked - 1), 1)
    discount = 1.0 / (1.0 + met_weight * counts / (1.0 + mean_met))
    gap = np.abs(mu[:, None] - mu[None, :])
    spread = var[:, None] + var[None, :]
    wrong = _phi(-gap / np.sqrt(spread))  # P(i and j are in the wrong order)
    weight = np.ones((n, n))
    weight[:, ranked:] = 0.0  # house bots are not ranked
    weight[ranked:, :] = 0.0
    np.fill_diagonal(weight, 0.0)
    if top_weight > 0 and 0 < top < ranked:
        # the top of the table matters more: a pair whose order may decide who is in the
        # top `top` weighs 1 + top_weight * ranked / top times as much
        sd = np.sqrt(var[:ranked])
        ordered = np.sort(mu[:ranked])[::-1]
        cut = 0.5 * (ordered[top - 1] + ordered[top])
        inside = np.zeros(n)
        inside[:ranked] = _phi((mu[:ranked] - cut) / sd)
        straddle = inside[:, None] * (1 - inside[None, :]) + inside[None, :] * (1 - inside[:, None])
        weight *= 1.0 + top_weight * ranked / top * straddle
    close = 1.0 / (1.0 + np.exp(-(mu[:, None] - mu[None, :])))
    close = close * (1.0 - close)  # p (1 - p) of one comparison
    tie = [names[i] for i in range(n)]
    order = {name: k for k, name in enumerate(_shuffled(rng, tie))}
    each = float(seats if per_pair is None else per_pair)
    state = _State(mu, var, wrong * weight, close * each, discount, counts, seats, each)

    choices: list[Choice] = []
    used: set[int] = set()
    for _ in range(count):
        if n - len(used) < seats:
            used = set()
        free = [i for i in range(n) if i not in used]
        new = [i for i in free if i < ranked and games[i] < new_games]
        if new:
            anchor = min(new, key=lambda i: (games[i], order[names[i]]))
            rule = "new"
        else:
            anchors = [i for i in free if i < ranked]
            if not anchors:
                anchors = [i for i in range(ranked)]
            value = state.anchor_values(anchors)
            anchor = max(anchors, key=lambda i: (value[i], -order[names[i]]))
            rule = "uncertain"
        near = sorted((i for i in free if i != anchor),
                      key=lambda i: (gap[anchor, i], order[names[i]]))[:candidates]
        if len(near) < seats - 1:
            near = sorted((i for i in range(n) if i != anchor),
                          key=lambda i: (gap[anchor, i], order[names[i]]))[:candidates]
        table = [anchor]
        for _ in range(seats - 1):
            pool = [i for i in near if i not in table]
            values = state.scores(table, pool)
            scores = {i: float(v) for i, v in zip(pool, values, strict=True)}
            best = max(pool, key=lambda i: (scores[i], -order[names[i]]))
            table.append(best)
        score = state.score(table)
        if rule == "uncertain" and score < SETTLED:
            rule = "least-met"
            pool = sorted((i for i in near), key=lambda i: (counts[anchor, i], gap[anchor, i],
                                                             order[names[i]]))
            table = [anchor, *pool[: seats - 1]]
            score = state.score(table)
        used.update(table)
        bots_at = tuple(names[i] for i in table)
        choices.append(Choice(bots_at, {"rule": rule, "bots": list(bots_at),
                                        "anchor": names[anchor], "score": round(score, 6)}))
    return choices


class _State:
    """The arrays the scores are computed from (natural-log units)."""

    def __init__(self, mu: Array, var: Array, wrong: Array, info: Array, discount: Array,
                 counts: Array, seats: int, per_pair: float) -> None:
        self.mu, self.var, self.wrong, self.info, self.seats = mu, var, wrong, info, seats
        self.per_pair = per_pair
        self.discount, self.counts = discount, counts
        self.spread = var[:, None] + var[None, :]
        self.weight = info * discount
        np.fill_diagonal(self.weight, 0.0)

    def score(self, table: list[int]) -> float:
        """Rule 2's score of ``table``: the expected misordered pairs it removes."""
        return float(self.scores(table[:-1], [table[-1]])[0])

    def scores(self, table: list[int], pool: list[int]) -> Array:
        """The score of ``table`` plus each bot of ``pool``, at once."""
        t = np.array(table, dtype=np.int64)
        c = np.array(pool, dtype=np.int64)
        seated = np.concatenate([np.broadcast_to(t, (len(c), len(t))), c[:, None]], axis=1)
        # each seated bot's information from the others at its table
        gained = self.weight[seated[:, :, None], seated[:, None, :]].sum(axis=2)
        after = np.broadcast_to(self.var, (len(c), len(self.var))).copy()
        rows = np.arange(len(c))[:, None]
        after[rows, seated] = 1.0 / (1.0 / self.var[seated] + gained)
        # for each seated bot i and every ranked j: P_ij (1 - sqrt(v'_ij / v_ij))
        mine = after[rows, seated]  # (m, s)
        new_spread = mine[:, :, None] + after[:, None, :]
        removed = 1.0 - np.sqrt(new_spread / self.spread[seated])
        total = self.wrong[seated] * removed  # (m, s, n)
        inner = np.take_along_axis(total, np.broadcast_to(seated[:, None, :], (
            len(c), seated.shape[1], seated.shape[1])), axis=2)
        # pairs seated together count once, not twice
        return np.asarray(total.sum(axis=(1, 2)) - 0.5 * inner.sum(axis=(1, 2)),
                          dtype=np.float64)

    def anchor_values(self, anchors: list[int]) -> Array:
        """Each anchor's expected misorderings removed by a typical table: one with
        S − 1 equal opponents, information ``S (S − 1) / 4``."""
        values = np.zeros(len(self.mu))
        typical = self.per_pair * (self.seats - 1) / 4.0
        a = np.array(anchors, dtype=np.int64)
        after = 1.0 / (1.0 / self.var[a] + typical)
        removed = 1.0 - np.sqrt((after[:, None] + self.var[None, :]) / self.spread[a])
        values[a] = (self.wrong[a] * removed).sum(axis=1)
        return values


def _shuffled(rng: random.Random, items: list[str]) -> list[str]:
    """A Fisher-Yates shuffle drawn with ``rng.random()`` only (stable across versions)."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = min(int(rng.random() * (i + 1)), i)
        out[i], out[j] = out[j], out[i]
    return out
