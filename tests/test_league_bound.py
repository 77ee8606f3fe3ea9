"""The oracle's best spread (``benchmarks/league_bound.py``; ``docs/league.md``, "The
oracle's best spread, planned and played"), checked on small fields: the expected
misordered pairs of a network known in closed form, their gradient against finite
differences, the certified minimum against spreads drawn at random, and the tables that
play a spread in the simulation."""

from __future__ import annotations

import math
import random
from statistics import NormalDist

import numpy as np
import pytest

from arena.league.sim import Model, World, new_world, random_tables, run
from benchmarks.league_bound import (
    best_spread,
    comparisons_played,
    games_needed,
    misordered,
    pair_misorders,
    pair_terms,
    plan_tables,
)

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


def test_the_plans_tables_play_the_plan_and_no_house_bot() -> None:
    # the oracle's best spread for a small field, played by plan_tables: its comparisons
    # come out near the plan's, far nearer than random tables' do (the control)
    model = Model(bots=12, luck_sd=0.23, noise_sd=0.74)
    gap, info = pair_terms(model, new_world(model, 3).skills[: model.bots])
    _, _, plan = best_spread(120 * 6, gap, info)
    distance = {}
    for name, schedule in (("plan", plan_tables(plan, 120)), ("random", random_tables)):
        world = new_world(model, 3)
        rng = random.Random(0)
        while world.played < 120:
            for table in schedule(world, 1, rng):
                world.play(table)
        if name == "plan":
            assert not world.games[model.bots:].any(), "a house bot was seated"
        distance[name] = float(np.abs(comparisons_played(world) - plan).sum() / plan.sum())
    assert distance["plan"] < 0.5 * distance["random"], distance


def test_the_simulation_runs_a_scheduler_of_the_callers() -> None:
    model = Model(bots=12, luck_sd=0.23, noise_sd=0.74)
    seen = []

    def first_bots(world: World, count: int, rng: random.Random) -> list[list[int]]:
        seen.append(world.played)
        return [list(range(model.seats))] * count

    trajectory = run(model, first_bots, 0, 40)
    assert seen and seen[0] == 0 and trajectory.games[-1] >= 40
    assert trajectory.games == [g + model.seats for g in seen]


def test_the_pairs_chances_add_up_to_the_expected_misorderings() -> None:
    gap, info = small_field(4)
    n = len(gap)
    w = spread_of(np.random.default_rng(9).uniform(1.0, 20.0, n * (n - 1) // 2), n)
    chances = pair_misorders(w, gap, info)
    assert chances[np.triu_indices(n, 1)].sum() == pytest.approx(misordered(w, gap, info)[0])
    assert np.allclose(chances, chances.T)
    # a bot not compared yet (a played spread's tail at its budget): no singular network,
    # and its order against every other bot is a coin toss
    w[0, :] = w[:, 0] = 0.0
    alone = pair_misorders(w, gap, info)
    assert np.allclose(alone[0, 1:], 0.5, atol=0.01), alone[0]
    assert (alone[1:, 1:][np.triu_indices(n - 1, 1)] < 0.5).all()
