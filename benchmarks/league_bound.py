"""The oracle's best spread of comparisons, in a normal approximation of the ratings and
played in the simulation (``docs/league.md``, "The oracle's best spread, planned and
played").

For the games the ratings rest on, the fitted Bradley-Terry ratings are about normal
around the true ones (in natural-log units) with the covariance the inverse of the
information, the Laplacian ``L = Σ w_ij c_ij (e_i − e_j)(e_i − e_j)ᵀ`` of the pairs'
comparisons: ``w_ij`` comparisons of bots i and j, each worth ``c_ij = p (1 − p)``,
``p`` the chance the better of them wins one. The variance of ``θ_i − θ_j`` is then the
effective resistance ``R_ij`` between i and j, and the expected number of pairs in the
wrong order is ``D(w) = Σ_{i<j} Φ(−|Δ_ij| / √R_ij)``. Kendall's tau is ``1 − 2 D / P``
for ``P`` pairs, so tau 0.9 is ``D = 0.05 P``.

- **Random tables**: the ranked bots' comparisons as the simulation's random tables give
  them (:func:`arena.league.sim.random_tables`), drawn afresh for each number of games.
- **The oracle's best**: the ``w`` with the fewest comparisons for ``D = 0.05 P``, over
  *every* way to spread comparisons over pairs, knowing the true skills. The problem is
  convex (effective conductance is concave in the conductances, and ``Φ(−Δ √S)`` is
  convex and falling in ``S``), so the minimum found by exponentiated gradient steps
  from the uniform spread is the minimum, certified by the Frank-Wolfe gap.

In the approximation, ``random / best`` would bound what a plan made in advance could
gain. It does not hold in the simulation: ``--play`` plays the best spread there
(:func:`plan_tables`), next to random tables, the matchmaking and the matchmaking told
the true skills (:func:`told_the_truth`), and the spread keeps little of what the
approximation promised (1.03-1.38x fewer games than random tables, where it promised up
to 1.92x); where the comparisons are sharp, the matchmaking, which follows the ratings'
current errors, does as well or better. So the approximation bounds nothing.

    python -m benchmarks.league_bound [--level wizard model trumps] [--bots 50] [--runs 20]
        [--estimator games|cards] [--play [--games-per-bot 80]]
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

import numpy as np
import numpy.typing as npt

from arena.league import sim
from arena.league.sim import ROUND_SHARE, Model, World, new_world, random_tables
from benchmarks.league import LEVELS

Array = npt.NDArray[np.float64]

TAU = 0.9
LOGIT_PER_PROBIT = 1.702


def pair_terms(model: Model, skills: Array) -> tuple[Array, Array]:
    """Each pair's true gap in natural-log units (the scale the ratings are fitted on)
    and the information of one of its comparisons."""
    scale = model.comparison_sd()
    gap = LOGIT_PER_PROBIT * np.abs(skills[:, None] - skills[None, :]) / scale
    p = 1.0 / (1.0 + np.exp(-gap))
    return gap, p * (1.0 - p)


def _normal_cdf(x: Array) -> Array:
    return np.asarray(0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2.0)), dtype=np.float64)


def _resistances(w: Array, info: Array) -> tuple[Array, Array]:
    """The pseudo-inverse of the comparisons' Laplacian, and the effective resistance
    between every two bots (1 on the diagonal)."""
    n = len(w)
    conductance = w * info
    laplacian = np.diag(conductance.sum(axis=1)) - conductance
    ones = np.full((n, n), 1.0 / n)
    m = np.linalg.inv(laplacian + ones) - ones  # the pseudo-inverse
    d = np.diag(m)
    r = d[:, None] + d[None, :] - 2.0 * m
    np.fill_diagonal(r, 1.0)
    return m, r


def pair_misorders(w: Array, gap: Array, info: Array) -> Array:
    """Each pair's chance of being misordered, Φ(−|Δ_ij| / √R_ij) (n × n). A played
    spread may leave a bot without comparisons yet: a millionth of a comparison between
    every two bots keeps the network connected, so such a pair's chance is about 1/2."""
    _, r = _resistances(w + 1e-6, info)
    return _normal_cdf(-gap / np.sqrt(r))


def misordered(w: Array, gap: Array, info: Array) -> tuple[float, Array]:
    """``D(w)``, the expected misordered pairs, and its gradient in ``w`` (n × n,
    symmetric, zero diagonal)."""
    n = len(w)
    m, r = _resistances(w, info)
    s = 1.0 / r
    x = gap * np.sqrt(s)
    iu = np.triu_indices(n, 1)
    loss = float(_normal_cdf(-x)[iu].sum())
    # dD/dR_ij = φ(x) x / (2 R); dR_ij/dw_kl = −c_kl (u_ijᵀ M u_kl)²
    g = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi) * x / (2.0 * r)
    np.fill_diagonal(g, 0.0)
    lg = np.diag(g.sum(axis=1)) - g
    q = m @ lg @ m
    dq = np.diag(q)
    grad = -info * (dq[:, None] + dq[None, :] - 2.0 * q)
    np.fill_diagonal(grad, 0.0)
    return loss, grad


def best_spread(budget: float, gap: Array, info: Array, start: Array | None = None,
                steps: int = 5000, tolerance: float = 1e-3) -> tuple[float, float, Array]:
    """The least ``D`` with ``budget`` comparisons spread over the pairs: exponentiated
    gradient steps on the simplex from ``start`` (default uniform), a step taken only
    where it lowers ``D`` (else the rate halves; after a step taken it grows). Returns
    ``D`` at the spread found, a certified lower bound of the least ``D`` (the
    Frank-Wolfe gap: for a convex ``D``, ``D* >= D(w) − ∇Dᵀ(w − s)`` with ``s`` the
    whole budget on the pair of the steepest slope), and the spread; it stops when the
    two are within ``tolerance`` of ``D``."""
    n = len(gap)
    iu = np.triu_indices(n, 1)
    pairs = len(iu[0])
    v = np.full(pairs, budget / pairs) if start is None else start[iu] * budget / start[iu].sum()

    def full(values: Array) -> Array:
        w = np.zeros((n, n))
        w[iu] = values
        w.T[iu] = values
        return w

    loss, grad = misordered(full(v), gap, info)
    rate = 0.5
    lower = -math.inf
    for _ in range(steps):
        step = grad[iu]
        lower = max(lower, loss - float(step @ v - budget * step.min()))
        scale = float(np.abs(step).max())
        if scale == 0.0 or rate < 1e-9 or loss - lower <= tolerance * loss:
            break
        trial = v * np.exp(-rate * step / scale)
        trial *= budget / trial.sum()
        trial_loss, trial_grad = misordered(full(trial), gap, info)
        if trial_loss < loss:
            v, loss, grad = trial, trial_loss, trial_grad
            rate *= 1.5
        else:
            rate *= 0.5
    return loss, lower, full(v)


def games_needed(loss_at: Callable[[float], float], target: float, low: float,
                 high: float) -> float:
    """Bisection in the number of games for ``loss_at(games) = target`` (``loss_at``
    falls as games are added), to half a percent."""
    while loss_at(high) > target:
        low, high = high, high * 2
    while high - low > 0.005 * high:
        mid = 0.5 * (low + high)
        if loss_at(mid) > target:
            low = mid
        else:
            high = mid
    return high


def comparisons_played(world: World) -> Array:
    """The ranked bots' comparisons in ``world`` so far: a comparison a pair and game."""
    index = {name: i for i, name in enumerate(world.ranked)}
    n = len(index)
    w = np.zeros((n, n))
    for (a, b), sets in world.met.items():
        if a in index and b in index:
            w[index[a], index[b]] = w[index[b], index[a]] = sets * world.model.seats
    return w


def random_spread(model: Model, seed: int, games: int, draw: int) -> Array:
    """The ranked bots' comparisons after ``games`` games of the simulation's own random
    tables (:func:`arena.league.sim.random_tables`, in its rounds, house bots seated as
    it seats them): a comparison a pair and game."""
    world = new_world(model, seed)
    rng = random.Random(f"{seed}-{draw}")
    per_round = max(1, len(world.names) // (ROUND_SHARE * model.seats))
    while world.played < games:
        for table in random_tables(world, per_round, rng):
            world.play(table)
    return comparisons_played(world)


def uniform_games(model: Model, gap: Array, info: Array) -> float:
    """The games to tau 0.9 of the uniform spread (every pair compared as often)."""
    n = model.bots
    pairs = n * (n - 1) / 2
    per_game = model.seats * (model.seats - 1) / 2

    def loss(games: float) -> float:
        w = np.full((n, n), games * per_game / pairs)
        np.fill_diagonal(w, 0.0)
        return misordered(w, gap, info)[0]

    return games_needed(loss, (1.0 - TAU) / 2.0 * pairs, 10.0, 100.0)


def best_games(model: Model, gap: Array, info: Array) -> tuple[float, Array]:
    """The fewest games of the oracle's best spread for tau 0.9 in the approximation (where
    the certified lower bound of the least ``D`` reaches the target: fewer games cannot),
    and that spread."""
    n = model.bots
    pairs = n * (n - 1) / 2
    per_game = model.seats * (model.seats - 1) / 2  # comparisons a game gives
    spreads: dict[float, Array] = {}

    def loss(games: float) -> float:
        start = spreads[max(spreads)] if spreads else None  # warm, from the largest yet
        _, lower, w = best_spread(games * per_game, gap, info, start)
        spreads[games] = w
        return lower

    uniform = uniform_games(model, gap, info)
    games = games_needed(loss, (1.0 - TAU) / 2.0 * pairs, 0.2 * uniform, uniform)
    return games, spreads[games]


def one_field(model: Model, seed: int) -> tuple[float, float, float]:
    """Games to tau 0.9 for one field: random tables (the mean of 4 draws), the uniform
    spread, and the oracle's best."""
    skills = new_world(model, seed).skills[: model.bots]
    gap, info = pair_terms(model, skills)
    n = model.bots
    target = (1.0 - TAU) / 2.0 * n * (n - 1) / 2

    def random_loss(games: float) -> float:
        return float(np.mean([misordered(random_spread(model, seed, int(games), draw),
                                         gap, info)[0] for draw in range(4)]))

    uniform = uniform_games(model, gap, info)
    random_games = games_needed(random_loss, target, 0.5 * uniform, uniform)
    return random_games, uniform, best_games(model, gap, info)[0]


def plan_tables(plan: Array, plan_games: float) -> sim.Scheduler:
    """A yardstick no league can use: tables that play the spread ``plan`` (comparisons
    a pair of ranked bots over ``plan_games`` games, e.g. the oracle's best) as the games
    go. Each round's tables are built from the pairs furthest behind their share of the
    plan so far: a table starts from the pair with the largest deficit among the bots not
    yet seated this round, and each further seat goes to the bot with the largest
    deficit against those seated. House bots are never seated."""
    n = len(plan)

    def tables(world: World, count: int, rng: random.Random) -> list[list[int]]:
        seats = world.model.seats
        deficit = (plan * (world.played + count * seats) / plan_games
                   - comparisons_played(world))
        np.fill_diagonal(deficit, -math.inf)
        free = list(range(n))
        out = []
        for _ in range(count):
            if len(free) < seats:
                free = list(range(n))
            sub = deficit[np.ix_(free, free)]
            k = int(np.argmax(sub))
            table = [free[k // len(free)], free[k % len(free)]]
            while len(table) < seats:
                table.append(max((i for i in free if i not in table),
                                 key=lambda i: float(deficit[i, table].sum())))
            for x in table:
                for y in table:
                    if x != y:
                        deficit[x, y] -= seats
            free = [i for i in free if i not in table]
            out.append(table)
        return out

    return tables


def told_the_truth(top_weight: float) -> sim.Scheduler:
    """A yardstick no league can use: the matchmaking's own choice, told each bot's true
    skill (as the Elo it implies, :func:`arena.league.sim.house_elo`) in place of its
    rating, with the fit's standard errors and games as they are."""

    def tables(world: World, count: int, rng: random.Random) -> list[list[int]]:
        truth = {name: sim.house_elo(world.model, float(skill))
                 for name, skill in zip(world.names, world.skills, strict=True)}
        return sim.matchmaking_tables(world, count, rng, {"top_weight": top_weight}, truth)

    return tables


GAP_BANDS = (0.0, 0.1, 0.2, 0.4, 0.8, math.inf)
"""The bands of true gap (natural-log units) in which misordered pairs are counted."""


@dataclass(frozen=True, slots=True)
class Played:
    """One field, played: see :func:`played`."""

    games: dict[str, float]
    """Games to tau 0.9 by scheduler (``inf``: not within the horizon)."""
    tau_expected: dict[str, float]
    """At the games the best spread was planned for, the tau the approximation expects
    of the comparisons played (``best`` and ``random``)."""
    tau_played: dict[str, float]
    """The simulation's tau there."""
    bands_expected: dict[str, Array]
    """Misordered pairs there by band of true gap (:data:`GAP_BANDS`), as expected..."""
    bands_played: dict[str, Array]
    """... and as the simulation's ratings have them."""


def played(model: Model, seed: int, horizon: int) -> Played:
    """The oracle's best spread *played* in the simulation, for one field: the games to
    tau 0.9 (first reached, as the simulation counts) of random tables (``random``), of
    the tables that play the best spread for the approximation's 5% (``best``,
    :func:`plan_tables`), of the matchmaking (``matchmaking``, ``top_weight = 0``) and
    of the matchmaking told the true skills (``told``, :func:`told_the_truth`); and, for
    ``best`` and ``random`` at the games that spread was planned for, what the
    approximation expects of the comparisons played against what the simulation gave."""
    skills = new_world(model, seed).skills[: model.bots]
    gap, info = pair_terms(model, skills)
    best, plan = best_games(model, gap, info)
    iu = np.triu_indices(model.bots, 1)
    band = np.digitize(gap[iu], GAP_BANDS[1:-1])
    schedulers: dict[str, tuple[str | sim.Scheduler, dict[str, float] | None]] = {
        "random": ("random", None), "best": (plan_tables(plan, best), None),
        "matchmaking": ("matchmaking", {"top_weight": 0.0}),
        "told": (told_the_truth(0.0), None)}
    out = Played({}, {}, {}, {}, {})
    for name, (scheduler, options) in schedulers.items():
        out.games[name] = math.inf
        looked = name not in ("random", "best")  # at the plan's budget: best and random
        for world in sim.rounds(model, scheduler, seed, horizon, options):
            elo = world.live.elo_array(world.ranked)
            tau = sim.kendall_tau(elo, skills)
            if tau >= TAU:
                out.games[name] = min(out.games[name], float(world.played))
            if not looked and world.played >= best:
                looked = True
                chances = pair_misorders(comparisons_played(world), gap, info)[iu]
                wrong = (np.sign(elo[:, None] - elo[None, :])
                         != np.sign(skills[:, None] - skills[None, :]))[iu]
                out.tau_expected[name] = 1.0 - 2.0 * float(chances.sum()) / len(band)
                out.tau_played[name] = tau
                out.bands_expected[name] = _by_band(band, chances)
                out.bands_played[name] = _by_band(band, wrong)
    return out


def _by_band(band: npt.NDArray[np.intp], values: npt.NDArray[Any]) -> Array:
    """``values`` (one a pair) summed by band of gap."""
    return np.asarray(np.bincount(band, values, len(GAP_BANDS) - 1), dtype=np.float64)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.league_bound",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--level", nargs="+", default=["wizard", "model", "trumps"],
                        choices=sorted(LEVELS))
    parser.add_argument("--bots", type=int, default=50)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--estimator", default="games", choices=["games", "cards"])
    parser.add_argument("--play", action="store_true",
                        help="play the oracle's best spread in the simulation, next to "
                             "random tables and the matchmaking (see played())")
    parser.add_argument("--games-per-bot", type=int, default=80,
                        help="with --play: the runs' horizon, games a bot (default 80)")
    args = parser.parse_args(argv)
    if args.play:
        return play(args)
    print(f"{args.bots} bots, 4 seats, ratings compare {args.estimator}; games to an "
          f"expected Kendall's tau of {TAU} (median of {args.runs} fields, seeds 0-"
          f"{args.runs - 1}):")
    print("| level | random tables | uniform spread | the oracle's best | random / best |")
    print("|---|---:|---:|---:|---:|")
    for level in args.level:
        luck, noise = LEVELS[level]
        model = Model(bots=args.bots, luck_sd=luck, noise_sd=noise,
                      estimator=args.estimator)
        found = [one_field(model, seed) for seed in range(args.runs)]
        rnd, uni, best = (median(f[k] for f in found) for k in range(3))
        ratios = median(f[0] / f[2] for f in found)
        print(f"| {level} | {rnd:,.0f} | {uni:,.0f} | {best:,.0f} | {ratios:.2f}x |",
              flush=True)
    return 0


def play(args: argparse.Namespace) -> int:
    """``--play``: the oracle's best spread played in the simulation."""
    horizon = args.games_per_bot * args.bots  # as benchmarks.league counts it
    print(f"{args.bots} bots, 4 seats, ratings compare {args.estimator}; games to Kendall's "
          f"tau >= {TAU} in the simulation (median of {args.runs} fields, seeds 0-"
          f"{args.runs - 1}, {horizon:,} games each), and at the games the best spread was "
          "planned for, the tau the approximation expects of the comparisons played and the "
          "tau the simulation gave (means):")
    print("| level | random tables | the oracle's best, played | matchmaking (top_weight 0) "
          "| matchmaking told the true skills | random / played | random / matchmaking "
          "| random / told | tau expected: best, random "
          "| tau in the simulation: best played, random |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    bands: list[str] = []
    for level in args.level:
        luck, noise = LEVELS[level]
        model = Model(bots=args.bots, luck_sd=luck, noise_sd=noise,
                      estimator=args.estimator)
        found = [played(model, seed, horizon) for seed in range(args.runs)]
        rnd, plan, mm, told = (median(f.games[k] for f in found)
                               for k in ("random", "best", "matchmaking", "told"))
        expected = [float(np.mean([f.tau_expected[k] for f in found]))
                    for k in ("best", "random")]
        observed = [float(np.mean([f.tau_played[k] for f in found]))
                    for k in ("best", "random")]
        print(f"| {level} | {rnd:,.0f} | {plan:,.0f} | {mm:,.0f} | {told:,.0f} "
              f"| {rnd / plan:.2f}x | {rnd / mm:.2f}x | {rnd / told:.2f}x "
              f"| {expected[0]:.3f}, {expected[1]:.3f} "
              f"| {observed[0]:.3f}, {observed[1]:.3f} |", flush=True)
        for k in ("best", "random"):
            want = np.mean([f.bands_expected[k] for f in found], axis=0)
            got = np.mean([f.bands_played[k] for f in found], axis=0)
            bands.append(f"| {level} | {k} | " + " | ".join(
                f"{g:.1f} / {e:.1f}" for g, e in zip(got, want, strict=True)) + " |")
    edges = [f"{lo:g}-{hi:g}" if math.isfinite(hi) else f"over {lo:g}"
             for lo, hi in itertools.pairwise(GAP_BANDS)]
    print("\nAt the same games, misordered pairs a field by band of true gap (natural-log "
          "units): in the simulation / as the approximation expects (means):")
    print("| level | tables | " + " | ".join(edges) + " |")
    print("|---|---|" + "---:|" * len(edges))
    print("\n".join(bands))
    return 0


if __name__ == "__main__":
    sys.exit(main())
