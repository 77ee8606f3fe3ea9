"""A league simulated with known strengths: how many games each scheduler needs to rank.

No game is played. The model (``docs/league.md``):

- **Skills.** Each ranked bot's true skill is drawn from N(0, 1); the house bots sit at
  fixed quantiles of the same distribution and are anchored at the Bradley-Terry rating
  their skill implies (:func:`house_elo`).
- **A deal** gives each seat a luck term L_s ~ N(0, ``luck_sd``²) that follows the cards:
  the S rotations of a duplicate set share it, so every bot gets every seat's luck once
  and its total over the set is free of it. That is what duplicate sets are for.
- **A game**: seat s's score is skill + L_s + e, with e ~ N(0, ``noise_sd``²) fresh per
  seat and game (the play's own noise); the scores are a Thurstone model, and the ratings
  see them as :class:`arena.ratings.GameScores`.

Three schedulers pick the tables, a round at a time (about as many tables as the field
fills, each bot at most once, as concurrent tables of a league would be): ``matchmaking``
(:mod:`arena.league.matchmaking`), ``random`` (the bot with the fewest games, the rest of
the table at random: psyleague's and CG Arena's way) and ``balanced``
(:mod:`arena.runs.balanced`, played in its order). After each round the live
ratings (:class:`arena.league.live.LiveRatings`) take a full Newton step, and the ranking
of the ranked bots (house bots left out) is compared with the true order: Kendall's tau,
and whether the true top 3 are its top 3 (as a set).

**What is compared** (:attr:`Model.estimator`, the same for every scheduler of a run):
``games``, every two seats of a game (the published leaderboard's comparisons);
``cards``, the bots that held the same seat's cards in one set (``compare="cards"`` of
:class:`arena.league.live.LiveRatings`: the luck cancels); ``sets``, each bot's total over
a set against the others' (one comparison a pair and set).

Pure: every draw comes from generators seeded by the arguments.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from arena.league.live import BASE_ELO, LiveRatings
from arena.league.matchmaking import BotState, choose_tables
from arena.runs.balanced import balanced_tables
from arena.stats.ratings import ELO_PER_NAT, GameScores

Array = npt.NDArray[np.float64]

SCHEDULERS = ("matchmaking", "random", "balanced")
"""The schedulers a league could use."""
YARDSTICKS = ("oracle",)
"""What :func:`run` also plays and no league could: ``oracle`` reads the true skills
(:func:`oracle_tables`)."""
ESTIMATORS = ("games", "cards", "sets")
"""What the live ratings compare (:attr:`Model.estimator`)."""
ROUND_SHARE = 4
"""A round seats a quarter of the field (tables at once, each bot at most once): the
ratings are updated after every round, and a scheduler may give some bots more games."""
_LOGIT_PER_PROBIT = 1.702  # the logistic curve closest to the normal one


@dataclass(frozen=True, slots=True)
class Model:
    """The game model and the field's size."""

    bots: int = 50
    """Ranked bots."""
    seats: int = 4
    house: int = 2
    """House bots, at the quantiles k / (house + 1) of the skills."""
    luck_sd: float = 1.5
    noise_sd: float = 1.0
    estimator: str = "games"
    """What the ratings compare (:data:`ESTIMATORS`): ``games``, each game's scores;
    ``cards``, the scores of the bots that held the same seat's cards in a set;
    ``sets``, each bot's total over a set."""

    def comparison_sd(self) -> float:
        """The standard deviation of one comparison's score difference, skill apart."""
        if self.estimator == "games":
            return math.sqrt(2.0 * (self.luck_sd ** 2 + self.noise_sd ** 2))
        if self.estimator == "cards":
            return math.sqrt(2.0) * self.noise_sd
        if self.estimator == "sets":  # totals: S times the skill, 2 S noise variances
            return math.sqrt(2.0 / self.seats) * self.noise_sd
        raise ValueError(f"unknown estimator {self.estimator!r}")

    def house_skills(self) -> list[float]:
        normal = NormalDist()
        return [normal.inv_cdf((k + 1) / (self.house + 1)) for k in range(self.house)]


def house_elo(model: Model, skill: float) -> float:
    """The Bradley-Terry Elo a skill implies: one comparison is won with probability
    Φ(Δ / √(2 (luck² + noise²))), and logit ≈ 1.702 probit."""
    scale = model.comparison_sd()
    return BASE_ELO + ELO_PER_NAT * _LOGIT_PER_PROBIT * skill / scale


@dataclass(slots=True)
class World:
    """One simulated league: the true skills and everything played so far."""

    model: Model
    skills: Array
    """True skills, ranked bots first, then the house bots."""
    names: list[str]
    rng: np.random.Generator
    live: LiveRatings
    games: Array
    met: dict[tuple[str, str], int] = field(default_factory=dict)
    played: int = 0
    units: int = 0

    @property
    def ranked(self) -> list[str]:
        return self.names[: self.model.bots]

    @property
    def house(self) -> list[str]:
        return self.names[self.model.bots:]

    def play(self, table: Sequence[int]) -> list[GameScores]:
        """One duplicate set at ``table`` (bot indices in cyclic order), recorded."""
        seats = len(table)
        luck = self.rng.normal(0.0, self.model.luck_sd, seats)
        noise = self.rng.normal(0.0, self.model.noise_sd, (seats, seats))
        unit = f"u{self.units}"
        self.units += 1
        out = []
        for r in range(seats):
            bots = [table[(s + r) % seats] for s in range(seats)]
            scores = tuple(float(self.skills[b] + luck[s] + noise[r, s])
                           for s, b in enumerate(bots))
            out.append(GameScores(unit, tuple(self.names[b] for b in bots), scores))
        for a in table:
            self.games[a] += seats
            for b in table:
                if a < b:
                    key = (min(self.names[a], self.names[b]), max(self.names[a], self.names[b]))
                    self.met[key] = self.met.get(key, 0) + 1
        self.played += seats
        return out


def new_world(model: Model, seed: int) -> World:
    """A league with skills drawn from ``seed``, nothing played."""
    rng = np.random.default_rng([seed, 1])
    skills = np.concatenate([rng.normal(0.0, 1.0, model.bots), model.house_skills()])
    names = [f"bot{i:03d}" for i in range(model.bots)] + [f"house{k}" for k in
                                                          range(model.house)]
    house = {names[model.bots + k]: house_elo(model, s)
             for k, s in enumerate(model.house_skills())}
    live = LiveRatings(names[: model.bots], house,
                       compare="cards" if model.estimator == "cards" else "games")
    return World(model, skills, names, np.random.default_rng([seed, 2]), live,
                 np.zeros(len(names)))


def kendall_tau(a: Sequence[float] | Array, b: Sequence[float] | Array) -> float:
    """Kendall's tau-b between two lists of values (ties count as neither)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    sx = np.sign(x[:, None] - x[None, :])
    sy = np.sign(y[:, None] - y[None, :])
    tied_x = (sx != 0).sum()
    tied_y = (sy != 0).sum()
    if tied_x == 0 or tied_y == 0:
        return math.nan
    return float((sx * sy).sum() / math.sqrt(float(tied_x) * float(tied_y)))


Scheduler = Callable[[World, int, random.Random], list[list[int]]]
"""Picks ``count`` tables (bot indices in cyclic order) for the next round."""


def matchmaking_tables(world: World, count: int, rng: random.Random,
                       options: Mapping[str, float] | None = None,
                       elo: Mapping[str, float] | None = None) -> list[list[int]]:
    """The matchmaking's tables; ``options``: keyword arguments of
    :func:`arena.league.matchmaking.choose_tables` (``top_weight``, ...). ``elo``, for a
    yardstick: the ratings it is told in place of the live ones (their standard errors
    and the games stay the live ratings')."""
    kwargs: dict[str, Any] = dict(options or {})
    ratings = world.live.ratings()
    index = {name: i for i, name in enumerate(world.names)}

    def state(name: str) -> BotState:
        r = ratings[name]
        return BotState(name, r.elo if elo is None else elo[name], r.sigma,
                        int(world.games[index[name]]))

    choices = choose_tables([state(n) for n in world.ranked], [state(n) for n in world.house],
                            world.met, world.model.seats, count, seed=rng, **kwargs)
    return [[index[name] for name in c.table] for c in choices]


ORACLE_WINDOW = 3
"""The oracle's reach: it seats a table from the anchor's this many nearest bots on each
side in the true order (:func:`oracle_tables`)."""

Fill = Callable[[int, list[int], set[int]], list[int]]
"""The other seats of a table, given its anchor, the bots free this round and those
seated."""


def _fewest_first(world: World, count: int, rng: random.Random, fill: Fill
                  ) -> list[list[int]]:
    """``count`` tables, each anchored by the free bot with the fewest games (ties at
    random) and filled by ``fill``; each bot at one table of a round while enough are
    free."""
    games = world.games.copy()
    n = len(world.names)
    used: set[int] = set()
    tables = []
    for _ in range(count):
        if n - len(used) < world.model.seats:
            used = set()
        free = [i for i in range(n) if i not in used]
        fewest = min(games[i] for i in free)
        first = rng.choice([i for i in free if games[i] == fewest])
        table = [first, *fill(first, free, used)]
        for b in table:
            games[b] += world.model.seats
        used.update(table)
        tables.append(table)
    return tables


def oracle_tables(world: World, count: int, rng: random.Random,
                  window: int = ORACLE_WINDOW) -> list[list[int]]:
    """A yardstick, not a scheduler: tables of bots close in the *true* order, which no
    league knows. The anchor is random tables' (the fewest games), and the rest of its
    table is drawn at random from the ``window`` bots nearest to it on each side in true
    skill that are not yet seated this round (house bots included, at their skills). Every
    comparison is then as close as a table can make it, where one comparison tells the
    most; if closeness were what a schedule gains by, this would gain the most. It does
    not (``docs/league.md``, "An oracle that knows the true order")."""
    order = [int(i) for i in np.argsort(world.skills, kind="stable")]
    place = {b: k for k, b in enumerate(order)}
    others = world.model.seats - 1

    def fill(first: int, free: list[int], used: set[int]) -> list[int]:
        k = place[first]
        below = [b for b in reversed(order[:k]) if b not in used][:window]
        above = [b for b in order[k + 1:] if b not in used][:window]
        near = below + above
        if len(near) < others:  # an edge of the field: the nearest free
            near = sorted((b for b in free if b != first),
                          key=lambda b: abs(place[b] - k))[:others]
        return rng.sample(near, others)

    return _fewest_first(world, count, rng, fill)


def random_tables(world: World, count: int, rng: random.Random) -> list[list[int]]:
    """The bot with the fewest games (ties at random), and the rest of the table drawn at
    random from the bots not yet seated this round."""
    return _fewest_first(world, count, rng, lambda first, free, used: rng.sample(
        [i for i in free if i != first], world.model.seats - 1))


_BALANCED: dict[tuple[int, int, int], list[tuple[str, ...]]] = {}


def balanced_source(names: Sequence[str], seats: int, tables: int) -> list[list[int]]:
    """At least ``tables`` tables of one balanced schedule over ``names`` (kept between
    calls: building it is the slow part, and a relabelling makes it a new one)."""
    k = -(-tables * seats // len(names))
    key = (len(names), seats, k)
    if key not in _BALANCED:
        _BALANCED[key] = balanced_tables([str(i) for i in range(len(names))], seats, k, 7)
    return [[int(b) for b in t] for t in _BALANCED[key]]


@dataclass(frozen=True, slots=True)
class Trajectory:
    """A run: after each round, the games played, Kendall's tau with the true order and
    whether the true top 3 are the ranking's top 3."""

    games: list[int]
    tau: list[float]
    top3: list[bool]

    def games_to_tau(self, target: float) -> int | None:
        return next((g for g, t in zip(self.games, self.tau, strict=True) if t >= target),
                    None)


def set_totals(games: Sequence[GameScores]) -> GameScores:
    """One duplicate set's games as one comparison of totals: each bot's score summed over
    the rotations (the seat's luck cancels: every bot held every seat's cards once)."""
    totals: dict[str, float] = {}
    for game in games:
        for bot, score in zip(game.bots, game.scores, strict=True):
            totals[bot] = totals.get(bot, 0.0) + score
    return GameScores(games[0].unit, tuple(totals), tuple(totals.values()))


def rounds(model: Model, scheduler: str | Scheduler, seed: int, max_games: int,
           options: Mapping[str, float] | None = None, window: int = ORACLE_WINDOW
           ) -> Iterator[World]:
    """The league of :func:`run`, round by round: the world after each round's games are
    recorded and the ratings stepped (the same world each time, changed in place)."""
    estimator = model.estimator
    world = new_world(model, seed)
    names = (*SCHEDULERS, *YARDSTICKS)
    rng = random.Random(seed * 7919 + (names.index(scheduler) if isinstance(scheduler, str)
                                       else len(names)))
    per_round = max(1, len(world.names) // (ROUND_SHARE * model.seats))
    source: list[list[int]] = []
    if scheduler == "balanced":
        relabel = np.random.default_rng([seed, 3]).permutation(len(world.names))
        needed = -(-max_games // model.seats) + per_round
        source = [[int(relabel[b]) for b in t]
                  for t in balanced_source(world.names, model.seats, needed)]
    while world.played < max_games:
        if not isinstance(scheduler, str):
            tables = scheduler(world, per_round, rng)
        elif scheduler == "matchmaking":
            kwargs = dict(options or {})
            if estimator == "sets":
                kwargs.setdefault("per_pair", 1.0)
            tables = matchmaking_tables(world, per_round, rng, kwargs)
        elif scheduler == "random":
            tables = random_tables(world, per_round, rng)
        elif scheduler == "oracle":
            tables = oracle_tables(world, per_round, rng, window)
        else:
            start = world.units
            tables = source[start: start + per_round]
        for table in tables:
            played = world.play(table)
            if estimator == "sets":
                world.live.record(set_totals(played), update=False)
            else:
                for game in played:
                    world.live.record(game, update=False)
        world.live.step()
        yield world


def run(model: Model, scheduler: str | Scheduler, seed: int, max_games: int,
        options: Mapping[str, float] | None = None, window: int = ORACLE_WINDOW
        ) -> Trajectory:
    """Play one league with ``scheduler`` (a name of :data:`SCHEDULERS` or
    :data:`YARDSTICKS`, or a :data:`Scheduler` of the caller's, such as a benchmark's
    yardstick) for ``max_games`` games (whole rounds: a little more); ``options`` go to
    the matchmaking (:func:`matchmaking_tables`), ``window`` to the oracle
    (:func:`oracle_tables`). Every run plays to the same horizon: stopping a run once it
    looks right would count its lucky rounds as right for good."""
    games: list[int] = []
    taus: list[float] = []
    tops: list[bool] = []
    truth: Array | None = None
    top: set[int] = set()
    for world in rounds(model, scheduler, seed, max_games, options, window):
        if truth is None:
            truth = world.skills[: model.bots]
            top = set(np.argsort(-truth)[:3].tolist())
        elo = world.live.elo_array(world.ranked)
        games.append(world.played)
        taus.append(kendall_tau(elo, truth))
        tops.append(set(np.argsort(-elo)[:3].tolist()) == top)
    return Trajectory(games, taus, tops)


@dataclass(frozen=True, slots=True)
class Summary:
    """Over the runs of one scheduler: the median games to tau >= target, and the games
    from which on the top 3 was right in at least ``share`` of the runs, to the end of the
    runs (None: not within the runs' games)."""

    scheduler: str
    runs: int
    games_to_tau: float | None
    games_to_top3: int | None
    games_to_top3_90: int | None
    """The same at 90% of the runs (95% of 20 runs leaves room for one near-tie)."""
    unfinished: int
    """Runs that never reached the tau target."""


def summarise(scheduler: str, runs: Sequence[Trajectory], target: float = 0.9,
              share: float = 0.95) -> Summary:
    reached = [r.games_to_tau(target) for r in runs]
    done = [g for g in reached if g is not None]
    unfinished = len(reached) - len(done)
    # a run that never reached it counts as more than any that did, in the median
    median: float | None = None
    if unfinished <= len(runs) // 2 and done:
        ordered = sorted(done) + [math.inf] * unfinished
        mid = len(ordered) // 2
        median = float(ordered[mid] if len(ordered) % 2 else
                       (ordered[mid - 1] + ordered[mid]) / 2)
        if math.isinf(median):
            median = None
    return Summary(scheduler, len(runs), median, _top3_from(runs, share),
                   _top3_from(runs, 0.9), unfinished)


def _top3_from(runs: Sequence[Trajectory], share: float) -> int | None:
    """The games from which on the top 3 is right in at least ``share`` of the runs."""
    checkpoints = sorted({g for r in runs for g in r.games})
    top3: int | None = None
    for g in reversed(checkpoints):  # the first from which the share stays reached
        right = 0
        for r in runs:
            k = int(np.searchsorted(r.games, g, side="right")) - 1
            right += k >= 0 and r.top3[k]
        if right < share * len(runs) - 1e-9:
            break
        top3 = g
    return top3
