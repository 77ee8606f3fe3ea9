"""A bound on what any matchmaking can gain: the best design of an oracle that knows
the true skills, against random tables, in the simulation's model (``docs/league.md``,
"How far any scheduler could go").

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
  *every* way to spread comparisons over pairs, whatever the tables: a table of S bots
  gives S (S − 1) / 2 pairs a comparison a game, and any schedule of tables is one such
  spread, so none can need fewer games. The problem is convex (effective conductance is
  concave in the conductances, and ``Φ(−Δ √S)`` is convex and falling in ``S``), so the
  minimum found by exponentiated gradient steps from the uniform spread is the minimum.

A scheduler that learns as it goes cannot beat a design that knows the truth from the
start, within the normal approximation; so ``random / best`` bounds what any
matchmaking can gain, to tau 0.9, at each noise level. The comparisons are counted as
independent, as the live ratings count them; each level's random-tables figure next to
the simulation's measures how far that holds.

    python -m benchmarks.league_bound [--level wizard model trumps] [--bots 50] [--runs 20]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Callable, Sequence
from statistics import median

import numpy as np
import numpy.typing as npt

from arena.league.sim import ROUND_SHARE, Model, new_world, random_tables
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


def misordered(w: Array, gap: Array, info: Array) -> tuple[float, Array]:
    """``D(w)``, the expected misordered pairs, and its gradient in ``w`` (n × n,
    symmetric, zero diagonal)."""
    n = len(w)
    conductance = w * info
    laplacian = np.diag(conductance.sum(axis=1)) - conductance
    ones = np.full((n, n), 1.0 / n)
    m = np.linalg.inv(laplacian + ones) - ones  # the pseudo-inverse
    d = np.diag(m)
    r = d[:, None] + d[None, :] - 2.0 * m
    np.fill_diagonal(r, 1.0)
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
    n = model.bots
    index = {name: i for i, name in enumerate(world.ranked)}
    w = np.zeros((n, n))
    for (a, b), sets in world.met.items():
        if a in index and b in index:
            w[index[a], index[b]] = w[index[b], index[a]] = sets * model.seats
    return w


def one_field(model: Model, seed: int) -> tuple[float, float, float]:
    """Games to tau 0.9 for one field: random tables (the mean of 4 draws), the uniform
    spread, and the oracle's best."""
    skills = new_world(model, seed).skills[: model.bots]
    gap, info = pair_terms(model, skills)
    n = model.bots
    pairs = n * (n - 1) / 2
    target = (1.0 - TAU) / 2.0 * pairs
    per_game = model.seats * (model.seats - 1) / 2  # comparisons a game gives

    def random_loss(games: float) -> float:
        return float(np.mean([misordered(random_spread(model, seed, int(games), draw),
                                         gap, info)[0] for draw in range(4)]))

    def uniform_loss(games: float) -> float:
        w = np.full((n, n), games * per_game / pairs)
        np.fill_diagonal(w, 0.0)
        return misordered(w, gap, info)[0]

    spread: list[Array] = []

    def best_loss(games: float) -> float:
        # the certified lower bound: fewer games than found here cannot reach the target
        _, lower, w = best_spread(games * per_game, gap, info, spread[-1] if spread else None)
        spread.append(w)
        return lower

    uniform = games_needed(uniform_loss, target, 10.0, 100.0)
    random_games = games_needed(random_loss, target, 0.5 * uniform, uniform)
    best = games_needed(best_loss, target, 0.2 * uniform, uniform)
    return random_games, uniform, best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.league_bound",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--level", nargs="+", default=["wizard", "model", "trumps"],
                        choices=sorted(LEVELS))
    parser.add_argument("--bots", type=int, default=50)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--estimator", default="games", choices=["games", "cards"])
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
