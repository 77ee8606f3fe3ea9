"""Ratings and statistics for tournaments: Bradley-Terry Elo with bootstrap intervals.

A game of k seats counts as k(k-1)/2 pairwise comparisons: the higher final score wins one,
equal scores give half a win to each. The ratings are the Bradley-Terry maximum likelihood
over those comparisons on the Elo scale (400 log10, mean 1500) under a weak prior, and the
confidence intervals come from a seeded bootstrap over units (duplicate sets: the games of a
unit share a deal, so they are resampled together). Pure functions: no I/O, no global random
state.

The prior: each bot with at least one comparison plays ``prior_draws`` virtual games
against a virtual opponent rated at the mean of those bots, all drawn (half a win and half a
loss each); a bot without comparisons is not fitted and gets exactly 1500. In natural-log
units (``elo = 1500 + 400 / ln 10 * theta``) the fit maximises, over the bots P with
comparisons,

    sum_ij W[i, j] log s(theta_i - theta_j)
      + prior_draws / 2 * sum_{i in P} [log s(theta_i - m) + log s(m - theta_i)]

with m the mean of theta over P and s the logistic function, and reports theta - m. The
objective is strictly concave once m is fixed, so the maximum is unique and finite even for
unbeaten or winless bots, and the mean over all bots is exactly 1500.
"""

from __future__ import annotations

import math
import statistics
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "ELO_PER_NAT",
    "Comparisons",
    "GameScores",
    "IncrementalElo",
    "Rating",
    "fit_elo",
    "incremental_elo",
    "mean_and_se",
    "pairwise",
    "rate",
    "same_cards",
]


Array = npt.NDArray[np.float64]


ELO_PER_NAT = 400.0 / math.log(10.0)
"""Elo points per natural-log unit of Bradley-Terry strength (about 173.7)."""


_MEAN_ELO = 1500.0


_TOLERANCE = 1e-10  # Newton stops when no parameter would move more than this (log units)


_RESOLUTION = 1e-13  # ... or when the predicted gain is below this share of the objective


_POLISH = 1e-3  # the last step is taken only if no parameter moves more than this


_MAX_STEP = 4.0  # no parameter moves more than this in one iteration


_RIDGE = 1e-12  # keeps the Newton system regular where curvature underflows (tiny priors)


_MAX_ITERATIONS = 200


_BATCH_ELEMENTS = 2_000_000  # bound on the floats held per bootstrap batch


@dataclass(frozen=True, slots=True)
class GameScores:
    """The final scores of one game, with the unit (duplicate set) it belongs to.

    Raises ValueError unless there are at least two seats, one score per seat, distinct bots
    and finite scores.
    """

    unit: str
    bots: tuple[str, ...]
    scores: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.bots) < 2:
            raise ValueError(f"game in unit {self.unit!r} has {len(self.bots)} seat(s), need 2")
        if len(self.scores) != len(self.bots):
            raise ValueError(
                f"game in unit {self.unit!r} has {len(self.bots)} bots "
                f"but {len(self.scores)} scores"
            )
        if len(set(self.bots)) != len(self.bots):
            raise ValueError(f"game in unit {self.unit!r} seats a bot twice: {self.bots}")
        if not all(math.isfinite(s) for s in self.scores):
            raise ValueError(f"game in unit {self.unit!r} has a non-finite score: {self.scores}")


@dataclass(frozen=True, slots=True)
class Rating:
    """One bot's rating with its bootstrap confidence interval.

    ``p_above_next`` is the share of bootstrap resamples in which this bot's elo exceeds that
    of the next bot down the ranking (an exact tie counts half); None for the last bot.
    """

    name: str
    elo: float
    low: float
    high: float
    p_above_next: float | None


def _comparisons(game: GameScores) -> Iterable[tuple[str, str, float]]:
    """(winner, loser, credit) for every pair of seats; a draw gives 0.5 both ways."""
    seats = len(game.bots)
    for a in range(seats):
        for b in range(a + 1, seats):
            sa, sb = game.scores[a], game.scores[b]
            if sa > sb:
                yield game.bots[a], game.bots[b], 1.0
            elif sb > sa:
                yield game.bots[b], game.bots[a], 1.0
            else:
                yield game.bots[a], game.bots[b], 0.5
                yield game.bots[b], game.bots[a], 0.5


def same_cards(games: Iterable[GameScores]) -> list[GameScores]:
    """The comparisons of equal cards, as games: for each unit (duplicate set, whose games
    are rotations of one deal: seat s holds the same hand in each) and each seat, one
    "game" of the bots that held that seat, with their scores there. ``rate(same_cards(
    games))`` rates who played the same cards better, free of the deal's luck (the
    ``cards`` comparisons of :class:`arena.league.live.LiveRatings`). A seat held by one
    bot only (a unit of one game) gives nothing; raises ValueError for a unit whose games
    differ in their number of seats, or a seat held twice by one bot."""
    units: dict[str, list[GameScores]] = {}
    for game in games:
        units.setdefault(game.unit, []).append(game)
    out: list[GameScores] = []
    for unit, played in units.items():
        seats = len(played[0].bots)
        if any(len(g.bots) != seats for g in played):
            raise ValueError(f"unit {unit!r} has games of different numbers of seats")
        if len(played) < 2:
            continue
        out += [GameScores(unit, tuple(g.bots[s] for g in played),
                           tuple(g.scores[s] for g in played)) for s in range(seats)]
    return out


def _names(games: Sequence[GameScores], bots: Iterable[str]) -> list[str]:
    return sorted({*bots, *(bot for game in games for bot in game.bots)})


def pairwise(games: Iterable[GameScores], *, bots: Iterable[str] = ()) -> tuple[list[str], Array]:
    """Bot names (sorted) and the matrix W where W[i, j] = comparisons bot i won against bot j.

    In a game of k players each pair of seats is one comparison: the higher final score wins
    1, equal scores give 0.5 each. ``bots`` adds names that may have played no game.
    """
    games = list(games)
    names = _names(games, bots)
    index = {name: i for i, name in enumerate(names)}
    wins = np.zeros((len(names), len(names)))
    for game in games:
        for winner, loser, credit in _comparisons(game):
            wins[index[winner], index[loser]] += credit
    return names, wins


def _sigmoid(x: Array) -> Array:
    """The logistic function, accurate in both tails (so that 1 - s(x) = s(-x) holds)."""
    return np.asarray(np.exp(-np.logaddexp(0.0, -x)), dtype=np.float64)


def _mean_of(theta: Array, present: Array) -> Array:
    """The mean of each row over the bots present (b, 1); 0 when none is."""
    count = np.maximum(present.sum(axis=1, keepdims=True), 1.0)
    return np.asarray((theta * present).sum(axis=1, keepdims=True) / count, dtype=np.float64)


def _objective(theta: Array, wins: Array, present: Array, prior_draws: float) -> Array:
    """The penalised log-likelihood (module docstring) for each row of a batch."""
    diff = theta[:, :, None] - theta[:, None, :]
    centred = theta - _mean_of(theta, present)
    data = -(wins * np.logaddexp(0.0, -diff)).sum(axis=(1, 2))
    prior = present * (np.logaddexp(0.0, -centred) + np.logaddexp(0.0, centred))
    return np.asarray(data - 0.5 * prior_draws * prior.sum(axis=1), dtype=np.float64)


def _newton(wins: Array, start: Array, prior_draws: float) -> Array:
    """Maximise the objective for each matrix of the batch ``wins`` (b, n, n) from ``start``.

    Newton's method with a backtracking line search. Only differences between the bots
    present (those with comparisons) matter, so the solve adds the projection on that
    direction, which keeps every step at zero mean; absent bots stay at 0. Returns
    parameters (b, n) in natural-log units with mean 0.
    """
    batch, n, _ = wins.shape
    games = wins + wins.transpose(0, 2, 1)
    present = (games.sum(axis=2) > 0).astype(np.float64)
    count = np.maximum(present.sum(axis=1), 1.0)
    theta: Array = (start - _mean_of(start, present)) * present
    diagonal = np.arange(n)
    active = np.arange(batch)
    for _ in range(_MAX_ITERATIONS):
        if len(active) == 0:
            break
        th, w, g, on, c = theta[active], wins[active], games[active], present[active], count[active]
        p = _sigmoid(th[:, :, None] - th[:, None, :])  # p[i, j] = P(i beats j)
        q = p.transpose(0, 2, 1)  # 1 - p, accurately
        curvature = g * p * q
        gradient = (w * q).sum(axis=2) - (w.transpose(0, 2, 1) * p).sum(axis=2)
        u = th - _mean_of(th, on)
        slope = -0.5 * prior_draws * np.tanh(0.5 * u) * on  # the prior term by theta_i - m
        bend = prior_draws * _sigmoid(u) * _sigmoid(-u) * on  # minus its second derivative
        gradient += slope - on * (slope.sum(axis=1) / c)[:, None]
        # Minus the Hessian: a graph Laplacian for the data, C diag(bend) C' for the prior
        # (C = I - on on' / c centres on the bots present), plus on on' / c for the mean.
        cross = bend[:, :, None] * on[:, None, :] + on[:, :, None] * bend[:, None, :]
        outer = on[:, :, None] * on[:, None, :]
        system = outer * ((bend.sum(axis=1) / c + 1.0) / c)[:, None, None]
        system -= curvature + cross / c[:, None, None]
        system[:, diagonal, diagonal] += curvature.sum(axis=2) + bend + (1.0 - on) + _RIDGE
        step = np.linalg.solve(system, gradient[:, :, None])[:, :, 0]
        size = np.abs(step).max(axis=1, initial=0.0)
        rise = (gradient * step).sum(axis=1)  # twice the predicted gain, >= 0
        before = _objective(th, w, on, prior_draws)
        # Done when no parameter would move, or when the objective would not change
        # measurably: along directions almost without curvature (a tiny prior, a bot that
        # never won) rounding keeps the step from shrinking, but nothing is left to gain.
        done = (size < _TOLERANCE) | (rise < _RESOLUTION * (1.0 + np.abs(before)))
        polish = done & (size < _POLISH)  # a last Newton step where it is safely small
        theta[active[polish]] += step[polish]
        todo = ~done
        if todo.any():
            th, w, on, step, size = th[todo], w[todo], on[todo], step[todo], size[todo]
            before, rise = before[todo], rise[todo]
            scale = np.minimum(1.0, _MAX_STEP / size)  # a trust region: far out, where the
            for _ in range(60):  # curvature vanishes, whole steps would fly off
                after = _objective(th + scale[:, None] * step, w, on, prior_draws)
                short = after < before + 1e-4 * scale * rise  # Armijo's condition
                if not short.any():
                    break
                scale[short] *= 0.5
            theta[active[todo]] = th + scale[:, None] * step
        active = active[todo]
    else:
        if len(active):
            raise ArithmeticError("Bradley-Terry fit did not converge")
    centred: Array = (theta - _mean_of(theta, present)) * present
    return centred


def _objective_fixed(theta: Array, wins: Array, free: Array, prior_draws: float) -> Array:
    """The objective with anchors (:func:`_newton_fixed`) for each row of a batch."""
    diff = theta[:, :, None] - theta[:, None, :]
    data = -(wins * np.logaddexp(0.0, -diff)).sum(axis=(1, 2))
    prior = free * (np.logaddexp(0.0, -theta) + np.logaddexp(0.0, theta))
    return np.asarray(data - 0.5 * prior_draws * prior.sum(axis=1), dtype=np.float64)


def _newton_fixed(wins: Array, start: Array, fixed: Array, prior_draws: float) -> Array:
    """Maximise the objective with anchors for each matrix of the batch ``wins`` (b, n, n):
    the bots where ``fixed`` (n,) is True keep their ``start`` strength; every other bot
    with comparisons moves, under ``prior_draws`` virtual draws against a virtual
    opponent at strength 0 (1500), not at the pool mean: the objective of
    :class:`arena.league.live.LiveRatings`, so a settled live fit is this fit. Bots
    without comparisons stay at ``start``."""
    batch, n, _ = wins.shape
    games = wins + wins.transpose(0, 2, 1)
    free = ((games.sum(axis=2) > 0) & np.logical_not(fixed)[None, :]).astype(np.float64)
    theta: Array = np.array(start, dtype=np.float64, copy=True)
    diagonal = np.arange(n)
    active = np.arange(batch)
    for _ in range(_MAX_ITERATIONS):
        if len(active) == 0:
            break
        th, w, g, on = theta[active], wins[active], games[active], free[active]
        p = _sigmoid(th[:, :, None] - th[:, None, :])
        q = p.transpose(0, 2, 1)
        curvature = g * p * q
        gradient = (w * q).sum(axis=2) - (w.transpose(0, 2, 1) * p).sum(axis=2)
        gradient = (gradient - 0.5 * prior_draws * np.tanh(0.5 * th)) * on
        bend = prior_draws * _sigmoid(th) * _sigmoid(-th) * on
        outer = on[:, :, None] * on[:, None, :]
        system = -curvature * outer
        system[:, diagonal, diagonal] += (curvature.sum(axis=2) + bend) * on + (1.0 - on) \
            + _RIDGE
        step = np.linalg.solve(system, gradient[:, :, None])[:, :, 0] * on
        size = np.abs(step).max(axis=1, initial=0.0)
        rise = (gradient * step).sum(axis=1)
        before = _objective_fixed(th, w, on, prior_draws)
        done = (size < _TOLERANCE) | (rise < _RESOLUTION * (1.0 + np.abs(before)))
        polish = done & (size < _POLISH)
        theta[active[polish]] += step[polish]
        todo = ~done
        if todo.any():
            th, w, on, step, size = th[todo], w[todo], on[todo], step[todo], size[todo]
            before, rise = before[todo], rise[todo]
            scale = np.minimum(1.0, _MAX_STEP / size)
            for _ in range(60):
                after = _objective_fixed(th + scale[:, None] * step, w, on, prior_draws)
                short = after < before + 1e-4 * scale * rise
                if not short.any():
                    break
                scale[short] *= 0.5
            theta[active[todo]] = th + scale[:, None] * step
        active = active[todo]
    else:
        if len(active):
            raise ArithmeticError("Bradley-Terry fit did not converge")
    return theta


def _float_bincount(cells: npt.NDArray[np.int64], weights: Array, length: int) -> Array:
    """Sum of ``weights`` by cell, as a float array of ``length`` cells."""
    return np.bincount(cells, weights, minlength=length).astype(np.float64, copy=False)


def _check_prior(prior_draws: float) -> None:
    if not (prior_draws > 0 and math.isfinite(prior_draws)):
        raise ValueError(f"prior_draws must be positive and finite, not {prior_draws}")


def fit_elo(
    games: Sequence[GameScores], prior_draws: float = 1.0, *, bots: Iterable[str] = ()
) -> dict[str, float]:
    """Bradley-Terry maximum likelihood over the pairwise results, on the Elo scale.

    Mean 1500, with the weak prior of the module docstring: each bot gets ``prior_draws``
    virtual draws against a virtual opponent at the pool mean, so unbeaten or winless bots
    stay finite. ``bots`` adds names that may have played no game; a bot without
    comparisons gets exactly 1500. Raises ValueError unless ``prior_draws`` is positive.
    """
    _check_prior(prior_draws)
    names, wins = pairwise(games, bots=bots)
    theta = _newton(wins[None], np.zeros((1, len(names))), prior_draws)[0]
    return {name: _MEAN_ELO + ELO_PER_NAT * float(x) for name, x in zip(names, theta, strict=True)}


class Comparisons:
    """The pairwise comparisons of games (:func:`_comparisons`) gathered one game at a time
    for :func:`rate`, in compact arrays: per unit (duplicate set) and ordered pair of bots
    the credit won, 20 bytes an entry, instead of an object per game. A unit's games come
    one after another in schedule order, so a unit is summed in a small dict and written
    out when the next one starts; a unit that comes back later (any order works) is merged
    in :meth:`entries`."""

    __slots__ = ("_bots", "_credit", "_current", "_loser", "_merge", "_unit", "_unit_of",
                 "_units", "_winner", "games", "names")

    def __init__(self, games: Iterable[GameScores] = ()) -> None:
        self.names: list[str] = []
        """The bots, in order of first appearance."""
        self.games = 0
        self._bots: dict[str, int] = {}
        self._units: dict[str, int] = {}
        self._unit = -1
        self._current: dict[tuple[int, int], float] = {}
        self._winner = array("i")
        self._loser = array("i")
        self._credit = array("d")
        self._merge = False
        self._unit_of = array("i")
        for game in games:
            self.add(game)

    def add(self, game: GameScores) -> None:
        """Fold in one game."""
        unit = self._units.get(game.unit)
        if unit is None or unit != self._unit:
            self._flush()
            if unit is None:
                unit = self._units[game.unit] = len(self._units)
            else:  # a unit seen before, not just now: entries() merges
                self._merge = True
            self._unit = unit
        current = self._current
        for winner, loser, credit in _comparisons(game):
            key = (self._bot(winner), self._bot(loser))
            current[key] = current.get(key, 0.0) + credit
        self.games += 1

    def _bot(self, name: str) -> int:
        found = self._bots.get(name)
        if found is None:
            found = self._bots[name] = len(self.names)
            self.names.append(name)
        return found

    def _flush(self) -> None:
        """Write out the open unit's entries (and close it)."""
        for (winner, loser), credit in self._current.items():
            self._unit_of.append(self._unit)
            self._winner.append(winner)
            self._loser.append(loser)
            self._credit.append(credit)
        self._current = {}
        self._unit = -1

    def entries(self, names: Sequence[str]) -> tuple[int, npt.NDArray[np.int64],
                                                      npt.NDArray[np.int64], Array]:
        """The units' count and, per entry, its unit, its pair ``i * n + j`` (``i`` the
        winner's and ``j`` the loser's place in ``names``, which holds every bot seen)
        and its credit, each (unit, pair) once, in order of first appearance."""
        self._flush()
        n = len(names)
        place = {name: i for i, name in enumerate(names)}
        order = np.array([place[name] for name in self.names], dtype=np.int64)
        unit_of = np.asarray(self._unit_of, dtype=np.int64)
        pair = order[np.asarray(self._winner, dtype=np.int64)] * n \
            + order[np.asarray(self._loser, dtype=np.int64)]
        credit = np.asarray(self._credit, dtype=np.float64)
        if self._merge:  # a unit came back: sum its entries, kept in first-seen order
            key = unit_of * (n * n) + pair
            unique, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            sums = _float_bincount(inverse, credit, len(unique))
            seen = np.argsort(first, kind="stable")
            unit_of, pair, credit = unit_of[first[seen]], pair[first[seen]], sums[seen]
        return len(self._units), unit_of, pair, credit


def rate(
    games: Iterable[GameScores] | Comparisons,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    prior_draws: float = 1.0,
    *,
    bots: Iterable[str] = (),
    fixed: Mapping[str, float] | None = None,
) -> list[Rating]:
    """Ratings sorted by elo (highest first, then by name) with bootstrap confidence intervals.

    The bootstrap resamples units (duplicate sets) with replacement ``resamples`` times from
    ``numpy.random.default_rng(seed)``, refits each resample (warm-started from the full
    fit) and takes the percentiles (1 - level) / 2 and (1 + level) / 2 of each bot's elo. A
    bot with no comparisons at all (named only in ``bots``) gets 1500 and the interval of
    the prior alone, whose draws carry information prior_draws / 4: 1500 -+ z * 2 /
    sqrt(prior_draws) natural-log units (681 Elo for one draw at 95%). Raises ValueError
    for resamples < 1, a level outside (0, 1) or a non-positive prior.

    ``fixed`` (a league's house bots): bots with a fixed Elo that anchor the scale. They
    keep it in the fit and in every resample (an interval of no width), and the prior's
    virtual opponent sits at 1500 instead of the pool mean, as in
    :class:`arena.league.live.LiveRatings`: the ratings are then on the anchors' scale,
    not centred on 1500.

    ``games`` may be :class:`Comparisons` gathered from a stream of games (what
    ``arena publish`` and the leaderboard do, so the games are never all held): the same
    ratings as the games themselves.
    """
    _check_prior(prior_draws)
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, not {level}")
    data = games if isinstance(games, Comparisons) else Comparisons(games)
    names = sorted({*bots, *data.names})
    n = len(names)
    if n == 0:
        return []
    count, unit_of, pair, credit_of = data.entries(names)
    wins = _float_bincount(pair, credit_of, n * n).reshape(1, n, n)
    anchored = np.array([name in (fixed or {}) for name in names], dtype=bool)
    origin = np.array([((fixed or {}).get(name, _MEAN_ELO) - _MEAN_ELO) / ELO_PER_NAT
                       for name in names])

    def fit(batch_wins: Array, start: Array) -> Array:
        if fixed:
            return _newton_fixed(batch_wins, start, anchored, prior_draws)
        return _newton(batch_wins, start, prior_draws)

    theta = fit(wins, origin[None, :])[0]

    rng = np.random.default_rng(seed)
    batch = max(1, min(resamples, _BATCH_ELEMENTS // max(len(pair), n * n, count, 1)))
    thetas = np.empty((resamples, n))
    for first in range(0, resamples, batch):
        b = min(batch, resamples - first)
        rows = np.arange(b)
        if count:
            drawn = rng.integers(0, count, size=(b, count)) + count * rows[:, None]
            weight = np.bincount(drawn.ravel(), minlength=b * count).reshape(b, count)
        else:
            weight = np.zeros((b, 0), dtype=np.int64)
        # one resample's entries at a time, so memory does not grow with the games
        flat_wins = np.empty((b, n * n))
        for r in range(b):
            flat_wins[r] = _float_bincount(pair, weight[r, unit_of] * credit_of, n * n)
        batch_wins = flat_wins.reshape(b, n, n)
        start = np.broadcast_to(theta, (b, n))
        thetas[first : first + b] = fit(batch_wins, start)

    elo = _MEAN_ELO + ELO_PER_NAT * theta
    sampled = _MEAN_ELO + ELO_PER_NAT * thetas
    tail = 50.0 * (1.0 - level)
    lows, highs = np.percentile(sampled, [tail, 100.0 - tail], axis=0)
    compared = wins[0].sum(axis=0) + wins[0].sum(axis=1) > 0
    z = statistics.NormalDist().inv_cdf(0.5 + 0.5 * level)
    prior_half_width = z * ELO_PER_NAT * 2.0 / math.sqrt(prior_draws)
    lows = np.where(compared | anchored, lows, elo - prior_half_width)
    highs = np.where(compared | anchored, highs, elo + prior_half_width)

    order = sorted(range(n), key=lambda i: (-round(elo[i], 9), names[i]))  # ties by name
    ratings = []
    for rank, i in enumerate(order):
        p_above: float | None = None
        if rank + 1 < n:
            below = order[rank + 1]
            above = np.mean(sampled[:, i] > sampled[:, below])
            tied = np.mean(sampled[:, i] == sampled[:, below])
            p_above = float(above + 0.5 * tied)
        ratings.append(Rating(names[i], float(elo[i]), float(lows[i]), float(highs[i]), p_above))
    return ratings


class IncrementalElo:
    """The classic incremental Elo, fed one game at a time (:meth:`add`): what
    :func:`incremental_elo` computes, kept up to date in O(seats²) per game, for the
    standings of a tournament in progress."""

    def __init__(self, start: float = 1500.0, k_base: float = 32.0) -> None:
        self.start = start
        self.k_base = k_base
        self.ratings: dict[str, float] = {}
        """Each bot's rating now, in order of first appearance."""
        self.games: dict[str, int] = {}
        """Each bot's games so far."""

    def add(self, game: GameScores) -> list[float]:
        """Fold in one game; the seats' ratings after it."""
        seats = len(game.bots)
        k = self.k_base / (seats - 1)
        before = [self.ratings.setdefault(bot, self.start) for bot in game.bots]
        change = [0.0] * seats
        for a in range(seats):
            for b in range(a + 1, seats):
                expected = 1.0 / (1.0 + 10.0 ** ((before[b] - before[a]) / 400.0))
                sa, sb = game.scores[a], game.scores[b]
                result = 1.0 if sa > sb else 0.0 if sa < sb else 0.5
                change[a] += k * (result - expected)
                change[b] -= k * (result - expected)
        after = [rating + delta for rating, delta in zip(before, change, strict=True)]
        for bot, rating in zip(game.bots, after, strict=True):
            self.ratings[bot] = rating
            self.games[bot] = self.games.get(bot, 0) + 1
        return after


def incremental_elo(
    games: Iterable[GameScores], start: float = 1500.0, k_base: float = 32.0
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """The classic incremental Elo, in game order.

    In a game of k players each pair of seats is one comparison (win 1, draw 0.5, loss 0),
    updated with K = k_base / (k - 1) from the ratings before the game (all pairs of one game
    update simultaneously, so seat order does not matter and each game is zero-sum). Returns
    the final ratings (in order of first appearance) and each bot's history: its rating after
    each game it played.
    """
    elo = IncrementalElo(start, k_base)
    history: dict[str, list[float]] = {}
    for game in games:
        for bot, rating in zip(game.bots, elo.add(game), strict=True):
            history.setdefault(bot, []).append(rating)
    return elo.ratings, history


def mean_and_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error (sample sd / sqrt n; 0 for fewer than 2 values).

    The mean of no values is nan.
    """
    n = len(values)
    if n == 0:
        return math.nan, 0.0
    mean = math.fsum(values) / n
    if n < 2:
        return mean, 0.0
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(variance / n)
