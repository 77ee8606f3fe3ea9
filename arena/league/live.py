"""Live ratings: the Bradley-Terry fit of :mod:`arena.stats.ratings`, kept up to date game by game.

The published leaderboard refits every game from scratch and bootstraps its intervals
over duplicate sets; that takes seconds at 200 bots. A league needs a rating after every
game, so :class:`LiveRatings` keeps the pairwise win matrix and the current strengths,
and after each game (or each duplicate set) takes one Newton step from the last fit:
the objective is the one of :mod:`arena.stats.ratings` (k(k − 1)/2 comparisons a game), so
the live order is the published order (``tests/test_live_ratings.py``; ``docs/league.md``
has the figures and why this was chosen over ``openskill``). After each game the bots of
that game take Newton steps in their own strengths (O(seats × bots), well under a
millisecond at 200 bots, whatever the number of games), and every ``refresh_every``
games a full Newton step (one n × n inverse) moves every strength and refreshes the
uncertainties. A settled fit (:meth:`LiveRatings.settle`) is the maximum of the
objective.

With ``compare="cards"`` a comparison is between two bots that held the same seat's
cards in one duplicate set (the luck of the deal cancels; ``docs/league.md`` measures
what that gains). Two things differ from :func:`arena.ratings.rate`:

- **Anchors.** House bots have a fixed rating: they anchor the scale, are shown, and are
  not ranked. The prior's virtual opponent sits at ``prior_elo`` (default 1500) instead
  of the pool mean, so the fit is strictly concave with or without anchors, and the
  ratings are on the anchors' scale.
- **Uncertainty.** ``sigma`` is the curvature (Hessian) standard error times
  ``inflation``, not a bootstrap: with anchors, relative to them; without, relative to
  the pool mean (the level the weak prior sets is no one's concern). Comparisons are
  not independent (a game's k − 1 comparisons of a bot come from one score; a duplicate
  set's rotations share cards), so the factor is there to bring the curvature to the
  bootstrap's width; its default was measured in the simulation of
  :mod:`arena.league.sim` (``docs/league.md``).

Pure: no I/O, no random state.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from arena.stats.ratings import ELO_PER_NAT, GameScores

Array = npt.NDArray[np.float64]

BASE_ELO = 1500.0
"""The Elo of strength 0 (natural-log units are ``(elo - BASE_ELO) / ELO_PER_NAT``)."""
INFLATION = 1.0
"""The default ``inflation`` of the curvature standard error (see the module docstring)."""
REFRESH_EVERY = 50
COMPARE = ("games", "cards")
"""What a comparison is (see :class:`LiveRatings`): two seats of one game, or two bots
that held the same seat's cards in the rotations of one duplicate set."""
"""Games between two full Newton steps of :meth:`LiveRatings.record`."""
_MAX_STEP = 4.0  # no strength moves more than this (natural-log units) in one step
_TOLERANCE = 1e-9  # settle() stops when no strength would move more than this


@dataclass(frozen=True, slots=True)
class LiveRating:
    """One bot's live rating on the Elo scale."""

    name: str
    elo: float
    sigma: float
    """The standard error, Elo points (0 for a house bot)."""
    games: int
    house: bool


def _sigmoid(x: Array) -> Array:
    return np.asarray(np.exp(-np.logaddexp(0.0, -x)), dtype=np.float64)


class LiveRatings:
    """Bradley-Terry ratings updated game by game, with house bots as fixed anchors.

    ``house`` maps each house bot to its fixed Elo. ``prior_draws`` virtual draws against a
    virtual opponent at ``prior_elo`` keep unbeaten and winless bots finite, as in
    :mod:`arena.stats.ratings`. Raises ValueError for a non-positive prior or inflation, or a
    non-finite house rating.

    ``compare``: ``games`` (the default, as :func:`arena.stats.ratings.rate`) compares
    every two seats of a game, k(k − 1)/2 comparisons; ``cards`` compares the bots that
    held the same seat's cards in the rotations of one duplicate set (the games of one
    ``unit``, whose seat s has the same hand in every rotation), as duplicate bridge
    scores a board: the luck of the cards cancels from every comparison, and a complete
    set of k rotations gives as many comparisons as ``games`` (k(k − 1)/2 per seat). The
    published fit of the same comparisons is ``rate(same_cards(games))``
    (:func:`arena.stats.ratings.same_cards`). A unit's first game has nothing to be
    compared with yet.
    """

    def __init__(self, bots: Iterable[str] = (), house: Mapping[str, float] | None = None, *,
                 prior_draws: float = 1.0, prior_elo: float = BASE_ELO,
                 inflation: float = INFLATION, refresh_every: int = REFRESH_EVERY,
                 compare: str = "games") -> None:
        if compare not in COMPARE:
            raise ValueError(f"compare must be one of {COMPARE}, not {compare!r}")
        self.compare = compare
        self._held: dict[str, list[list[tuple[int, float]]]] = {}
        """``cards``: per open unit and seat, who held those cards so far and scored what."""
        if not (prior_draws > 0 and math.isfinite(prior_draws)):
            raise ValueError(f"prior_draws must be positive and finite, not {prior_draws}")
        if not (inflation > 0 and math.isfinite(inflation)):
            raise ValueError(f"inflation must be positive and finite, not {inflation}")
        if refresh_every < 1:
            raise ValueError(f"refresh_every must be at least 1, not {refresh_every}")
        self.refresh_every = refresh_every
        self._since = 0
        self.prior_draws = prior_draws
        self.prior_elo = prior_elo
        self.inflation = inflation
        self._centre = (prior_elo - BASE_ELO) / ELO_PER_NAT
        self._index: dict[str, int] = {}
        self._names: list[str] = []
        self._wins: Array = np.zeros((0, 0))
        self._theta: Array = np.zeros(0)
        self._house: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._games: list[int] = []
        self._sigma: Array | None = None
        self._stale = False
        self._bend: Array = np.zeros(0)
        """Each bot's curvature at the last full step (the sigmas' denominator)."""
        self._now: Array = np.zeros(0)
        """Each bot's curvature since, where a local step has measured it."""
        for name, elo in (house or {}).items():
            if not math.isfinite(elo):
                raise ValueError(f"house bot {name!r} has a non-finite rating {elo}")
            i = self.add_bot(name)
            self._house[i] = True
            self._theta[i] = (elo - BASE_ELO) / ELO_PER_NAT
        for name in bots:
            self.add_bot(name)

    # -- the field -------------------------------------------------------------------

    def add_bot(self, name: str) -> int:
        """Add a bot (rated at ``prior_elo`` until it plays); returns its index. Adding a
        bot already there does nothing."""
        if name in self._index:
            return self._index[name]
        n = len(self._names)
        if n == len(self._theta):  # grow the arrays by doubling
            size = max(8, 2 * n)
            wins = np.zeros((size, size))
            wins[:n, :n] = self._wins[:n, :n]
            self._wins = wins
            self._theta = np.concatenate([self._theta, np.full(size - n, self._centre)])
            self._house = np.concatenate([self._house, np.zeros(size - n, dtype=bool)])
        self._theta[n] = self._centre
        self._index[name] = n
        self._names.append(name)
        self._games.append(0)
        self._sigma = None
        return n

    @property
    def names(self) -> list[str]:
        """Every bot, house bots included, in the order they were added."""
        return list(self._names)

    def is_house(self, name: str) -> bool:
        return bool(self._house[self._index[name]])

    # -- results ---------------------------------------------------------------------

    def record(self, game: GameScores, *, update: bool = True) -> None:
        """Add one game's comparisons (the higher score wins, equal scores half each; with
        ``compare="cards"`` each seat's score against those of the bots that held the same
        seat in the unit's earlier games) and,
        with ``update``, bring the ratings up to date: a local step (below), and a full
        Newton :meth:`step` every ``refresh_every`` games. Bots not seen yet are added."""
        ids = [self.add_bot(b) for b in game.bots]
        for i in ids:
            self._games[i] += 1
        if self.compare == "games":
            for a in range(len(ids)):
                for b in range(a + 1, len(ids)):
                    self._compare(ids[a], game.scores[a], ids[b], game.scores[b])
        else:
            held = self._held.setdefault(game.unit, [[] for _ in ids])
            if len(held) != len(ids):
                raise ValueError(f"game in unit {game.unit!r} has {len(ids)} seats, its "
                                 f"unit's other games {len(held)}")
            for s, (i, score) in enumerate(zip(ids, game.scores, strict=True)):
                for j, other in held[s]:
                    if j != i:
                        self._compare(i, score, j, other)
                held[s].append((i, score))
            if len(held[0]) >= len(ids):  # every rotation played: the set is complete
                del self._held[game.unit]
        self._since += 1
        if update:
            self._local([i for i in dict.fromkeys(ids) if not self._house[i]])
            if self._since >= self.refresh_every:
                self.step()
        else:
            self._stale = True

    def _compare(self, i: int, si: float, j: int, sj: float) -> None:
        """One comparison: the higher score wins, equal scores half each."""
        if si > sj:
            self._wins[i, j] += 1.0
        elif sj > si:
            self._wins[j, i] += 1.0
        else:
            self._wins[i, j] += 0.5
            self._wins[j, i] += 0.5

    def record_set(self, games: Iterable[GameScores]) -> None:
        """Add a finished duplicate set (or any games), then take one full Newton step."""
        for game in games:
            self.record(game, update=False)
        self.step()

    def _local(self, ids: list[int], sweeps: int = 2) -> None:
        """Newton steps in one strength at a time, for the bots of the last game only:
        O(seats × bots), no linear algebra (a full step's n × n inverse can take tens of
        milliseconds where BLAS threads fight over a loaded machine). The other bots'
        strengths move little after one game; the next full step moves them. The sigmas
        of these bots follow their curvature until then."""
        n = len(self._names)
        wins = self._wins[:n, :n]
        theta = self._theta[:n]
        if len(self._bend) < n:
            self._bend = np.concatenate([self._bend, np.zeros(n - len(self._bend))])
            self._now = np.concatenate([self._now, np.zeros(n - len(self._now))])
        for _ in range(sweeps):
            for i in ids:
                p = _sigmoid(theta[i] - theta)  # P(i beats j)
                q = 1.0 - p
                u = theta[i] - self._centre
                gradient = float(wins[i] @ q - wins[:, i] @ p)
                gradient -= 0.5 * self.prior_draws * math.tanh(0.5 * u)
                s = 1.0 / (1.0 + math.exp(-u))
                curve = float((wins[i] + wins[:, i]) @ (p * q)) + self.prior_draws * s * (1 - s)
                theta[i] += max(-_MAX_STEP, min(_MAX_STEP, gradient / curve))
                self._now[i] = curve

    # -- the fit ---------------------------------------------------------------------

    def _objective(self, theta: Array, wins: Array, fitted: npt.NDArray[np.bool_]) -> float:
        diff = theta[:, None] - theta[None, :]
        data = -float((wins * np.logaddexp(0.0, -diff)).sum())
        u = theta[fitted] - self._centre
        prior = float((np.logaddexp(0.0, -u) + np.logaddexp(0.0, u)).sum())
        return data - 0.5 * self.prior_draws * prior

    def step(self) -> float:
        """One Newton step with a backtracking line search from the current strengths;
        returns the largest move (natural-log units). Also refreshes the sigmas."""
        n = len(self._names)
        wins = self._wins[:n, :n]
        theta = self._theta[:n]
        games = wins + wins.T
        fitted = (games.sum(axis=1) > 0) & ~self._house[:n]
        free = np.flatnonzero(fitted)
        sigma = np.full(n, 2.0 / math.sqrt(self.prior_draws))  # the prior alone
        sigma[self._house[:n]] = 0.0
        if len(free) == 0:
            self._sigma, self._stale, self._since = sigma, False, 0
            self._bend, self._now = np.zeros(n), np.zeros(n)
            return 0.0
        p = _sigmoid(theta[:, None] - theta[None, :])  # p[i, j] = P(i beats j)
        gradient = (wins * p.T).sum(axis=1) - (wins.T * p).sum(axis=1)
        u = theta - self._centre
        gradient -= 0.5 * self.prior_draws * np.tanh(0.5 * u)
        curvature = games * p * p.T
        bend = self.prior_draws * _sigmoid(u) * _sigmoid(-u)
        system = -curvature[np.ix_(free, free)]
        system[np.diag_indices(len(free))] += curvature[free].sum(axis=1) + bend[free]
        inverse = np.linalg.inv(system)
        step = inverse @ gradient[free]
        variance = np.diag(inverse)
        if not (self._house[:n] & (games.sum(axis=1) > 0)).any():
            # no anchor played: only the weak prior fixes the pool's level, which no
            # order depends on; report the spread around the pool mean, as the
            # bootstrap of arena.stats.ratings does
            variance = variance - 2.0 * inverse.mean(axis=1) + inverse.mean()
        sigma[free] = np.sqrt(np.maximum(variance, 0.0))
        self._sigma, self._stale, self._since = sigma, False, 0
        diagonal = np.zeros(n)
        diagonal[free] = system[np.diag_indices(len(free))]
        self._bend, self._now = diagonal, diagonal.copy()
        size = float(np.abs(step).max())
        scale = min(1.0, _MAX_STEP / size) if size > 0 else 1.0
        before = self._objective(theta, wins, fitted)
        rise = float(gradient[free] @ step)
        for _ in range(40):
            trial = theta.copy()
            trial[free] += scale * step
            if self._objective(trial, wins, fitted) >= before + 1e-4 * scale * rise:
                break
            scale *= 0.5
        self._theta[free] += scale * step
        return scale * size

    def settle(self, max_steps: int = 100) -> int:
        """Take Newton steps until no strength moves more than 1e-9; returns the steps.
        Raises ArithmeticError if that takes more than ``max_steps``."""
        for steps in range(1, max_steps + 1):
            if self.step() < _TOLERANCE:
                return steps
        raise ArithmeticError("live Bradley-Terry fit did not settle")

    # -- reading ---------------------------------------------------------------------

    def _sigmas(self) -> Array:
        """The sigmas (natural-log units): those of the last full step, each scaled by
        sqrt(curvature then / curvature now) for bots that have played since."""
        if self._sigma is None or self._stale or len(self._sigma) != len(self._names):
            # the curvature at the current strengths, without moving them
            theta = self._theta.copy()
            self.step()
            self._theta = theta
        assert self._sigma is not None
        sigma = self._sigma.copy()
        played = (self._now > self._bend) & (self._bend > 0)
        sigma[played] *= np.sqrt(self._bend[played] / self._now[played])
        first = (self._now > 0) & (self._bend == 0)  # no full step since its first game
        sigma[first] = 1.0 / np.sqrt(self._now[first])
        return sigma

    def rating(self, name: str) -> LiveRating:
        i = self._index[name]
        sigma = float(self._sigmas()[i]) * ELO_PER_NAT * self.inflation
        return LiveRating(name, BASE_ELO + ELO_PER_NAT * float(self._theta[i]), sigma,
                          self._games[i], bool(self._house[i]))

    def ratings(self) -> dict[str, LiveRating]:
        """Every bot's rating, house bots included, by name."""
        sigmas = self._sigmas() * ELO_PER_NAT * self.inflation
        return {name: LiveRating(name, BASE_ELO + ELO_PER_NAT * float(self._theta[i]),
                                 float(sigmas[i]), self._games[i], bool(self._house[i]))
                for i, name in enumerate(self._names)}

    def ranking(self) -> list[LiveRating]:
        """The ranked bots (house bots left out), best first; equal ratings by name."""
        ranked = [r for r in self.ratings().values() if not r.house]
        return sorted(ranked, key=lambda r: (-round(r.elo, 9), r.name))

    def elo_array(self, names: Iterable[str] | None = None) -> Array:
        """The Elo of ``names`` (default: every bot, in the order of :attr:`names`), as
        an array for vectorised callers."""
        ids = (list(range(len(self._names))) if names is None
               else [self._index[name] for name in names])
        return np.asarray(BASE_ELO + ELO_PER_NAT * self._theta[ids], dtype=np.float64)
