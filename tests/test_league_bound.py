"""The bound on what any matchmaking could gain (``benchmarks/league_bound.py``;
``docs/league.md``, "How far any scheduler could go"), checked on small fields: the
expected misordered pairs of a network known in closed form, their gradient against
finite differences, and the certified minimum against spreads drawn at random."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from arena.league.sim import Model
from benchmarks.league_bound import best_spread, games_needed, misordered, pair_terms

WIZARD = Model(bots=8, luck_sd=0.23, noise_sd=0.74)


def small_field(seed: int, n: int = 8) -> tuple[np.ndarray, np.ndarray]:
    skills = np.random.default_rng(seed).normal(0.0, 1.0, n)
    return pair_terms(WIZARD, skills)


def spread_of(values: np.ndarray, n: int) -> np.ndarray:
    iu = np.triu_indices(n, 1)
    w = np.zeros((n, n))
    w[iu] = values
    w.T[iu] = values
    return w


def test_two_bots_are_misordered_as_one_normal_difference() -> None:
    # two bots, w comparisons of information c: the difference's variance is 1 / (w c)
    gap = np.array([[0.0, 0.4], [0.4, 0.0]])
    info = np.array([[0.0, 0.24], [0.24, 0.0]])
    w = np.array([[0.0, 30.0], [30.0, 0.0]])
    loss, _ = misordered(w, gap, info)
    assert loss == pytest.approx(NormalDist().cdf(-0.4 * math.sqrt(30 * 0.24)), rel=1e-9)


def test_three_bots_in_a_chain_add_their_resistances() -> None:
    # a-b and b-c compared, a-c never: Var(a - c) is the sum of the two links' variances
    gap = np.array([[0.0, 0.2, 0.5], [0.2, 0.0, 0.3], [0.5, 0.3, 0.0]])
    info = np.full((3, 3), 0.25)
    w = np.array([[0.0, 40.0, 0.0], [40.0, 0.0, 10.0], [0.0, 10.0, 0.0]])
    loss, _ = misordered(w, gap, info)
    phi = NormalDist().cdf
    r_ab, r_bc = 1 / (40 * 0.25), 1 / (10 * 0.25)
    expected = (phi(-0.2 / math.sqrt(r_ab)) + phi(-0.3 / math.sqrt(r_bc))
                + phi(-0.5 / math.sqrt(r_ab + r_bc)))
    assert loss == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_gradient_is_the_slope(seed: int) -> None:
    gap, info = small_field(seed)
    n = len(gap)
    rng = np.random.default_rng([seed, 5])
    w = spread_of(rng.uniform(1.0, 20.0, n * (n - 1) // 2), n)
    loss, grad = misordered(w, gap, info)
    for k, ell in [(0, 1), (2, 5), (3, 7), (4, 6)]:
        h = 1e-4 * w[k, ell]
        moved = w.copy()
        moved[k, ell] += h
        moved[ell, k] += h
        slope = (misordered(moved, gap, info)[0] - loss) / h
        assert grad[k, ell] == pytest.approx(slope, rel=1e-3, abs=1e-9)
        assert grad[k, ell] < 0  # another comparison never adds doubt


@pytest.mark.parametrize("seed", [0, 1])
def test_no_spread_of_the_budget_is_below_the_certified_minimum(seed: int) -> None:
    gap, info = small_field(seed)
    n = len(gap)
    pairs = n * (n - 1) // 2
    budget = 6.0 * 40
    loss, lower, w = best_spread(budget, gap, info)
    uniform = misordered(spread_of(np.full(pairs, budget / pairs), n), gap, info)[0]
    assert lower <= loss < uniform
    assert w[np.triu_indices(n, 1)].sum() == pytest.approx(budget)
    assert loss - lower <= 1e-3 * loss  # it stops once the two are that close
    rng = np.random.default_rng([seed, 7])
    for share in rng.dirichlet(np.full(pairs, 0.5), 300):
        assert misordered(spread_of(share * budget, n), gap, info)[0] >= lower


def test_more_comparisons_leave_fewer_pairs_in_doubt() -> None:
    gap, info = small_field(3)
    fewer, _, _ = best_spread(120.0, gap, info)
    more, _, _ = best_spread(240.0, gap, info)
    assert more < fewer


def test_games_needed_finds_where_the_doubt_falls_to_the_target() -> None:
    assert games_needed(lambda games: 1000.0 / games, 10.0, 1.0, 50.0) == pytest.approx(
        100.0, rel=0.01)
