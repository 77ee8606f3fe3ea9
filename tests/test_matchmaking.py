"""League matchmaking: its rules, their reasons, determinism; and the simulation it is
measured in (duplicate luck, the schedulers, the summaries)."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from statistics import mean

import numpy as np
import pytest

from arena.league.matchmaking import NEW_GAMES, BotState, choose_tables
from arena.league.sim import (
    Model,
    Trajectory,
    kendall_tau,
    new_world,
    oracle_tables,
    run,
    summarise,
)


def field(n: int, *, step: float = 20.0, sigma: float = 40.0, games: int = 40,
          ) -> list[BotState]:
    return [BotState(f"b{i:02d}", 1500.0 + step * (i - n / 2), sigma, games) for i in range(n)]


def test_same_inputs_same_tables_and_reasons() -> None:
    bots = field(24)
    met = {("b01", "b02"): 3, ("b05", "b09"): 1}
    a = choose_tables(bots, [], met, 4, 5, seed=3)
    assert a == choose_tables(bots, [], met, 4, 5, seed=3)
    assert a == choose_tables(bots, [], met, 4, 5, seed=random.Random(3))
    # the reasons are what the league stores: JSON, naming the table
    for choice in a:
        reason = json.loads(json.dumps(choice.reason))
        assert reason["bots"] == list(choice.table)
        assert reason["rule"] in ("new", "uncertain", "least-met")
        assert reason["anchor"] == choice.table[0]
        assert isinstance(reason["score"], float)


def test_the_seed_only_breaks_ties() -> None:
    equal = [BotState(f"b{i:02d}", 1500.0, 50.0, 40) for i in range(16)]
    tables = {tuple(c.table for c in choose_tables(equal, [], {}, 4, 4, seed=s))
              for s in range(6)}
    assert len(tables) > 1  # all bots alike: the seed decides
    distinct = field(16)
    tables = {tuple(c.table for c in choose_tables(distinct, [], {}, 4, 4, seed=s))
              for s in range(6)}
    assert len(tables) == 1  # no ties: the seed does not matter


def test_new_bots_first_fewest_games_first() -> None:
    bots = field(20)
    bots[7] = BotState("b07", 1500.0, 350.0, 0)
    bots[12] = BotState("b12", 1500.0, 300.0, 4)
    choices = choose_tables(bots, [], {}, 4, 3, seed=1)
    assert choices[0].reason["rule"] == "new" and choices[0].table[0] == "b07"
    # the other new bot: at the first table (it is the most uncertain company), or
    # anchoring the second
    assert "b12" in choices[0].table or (choices[1].reason["rule"] == "new"
                                         and choices[1].table[0] == "b12")
    assert choices[2].reason["rule"] == "uncertain"
    assert all(b.games >= NEW_GAMES for b in bots if b.name not in ("b07", "b12"))


def test_uncertain_bots_play_those_close_to_them() -> None:
    # a settled field, 50 Elo apart, but for two bots whose ratings are in doubt
    bots = [BotState(f"b{i:02d}", 1000.0 + 50.0 * i, 5.0, 200) for i in range(20)]
    bots[9] = BotState("b09", 1450.0, 60.0, 20)
    bots[10] = BotState("b10", 1500.0, 60.0, 20)
    first = choose_tables(bots, [], {}, 4, 1, seed=0)[0]
    assert first.reason["rule"] == "uncertain"
    assert {"b09", "b10"} <= set(first.table)
    # and with the bots nearest them in rating, not the far ends of the field
    assert all(abs(int(b[1:]) - 9.5) <= 3 for b in first.table)


def test_a_settled_field_plays_the_pairs_that_met_least() -> None:
    bots = [BotState(f"b{i:02d}", 1000.0 + 300.0 * i, 1.0, 500) for i in range(8)]
    met = {(a.name, b.name): 5 for a in bots for b in bots if a.name < b.name}
    for i in range(8):  # b07 has met nobody
        met[tuple(sorted((f"b{i:02d}", "b07")))] = 0  # type: ignore[index]
    choice = choose_tables(bots, [], met, 4, 1, seed=0, candidates=8)[0]
    assert choice.reason["rule"] == "least-met"
    assert choice.reason["score"] < 1e-3
    anchor = choice.table[0]
    if anchor != "b07":
        assert "b07" in choice.table  # the one it met least
    # the rest by meetings, then nearness in rating
    def key(name: str) -> tuple[int, float]:
        pair = (min(anchor, name), max(anchor, name))
        return met[pair], abs(int(name[1:]) - int(anchor[1:]))
    others = sorted((b.name for b in bots if b.name != anchor), key=key)
    assert list(choice.table[1:]) == others[:3]


def test_house_bots_fill_but_never_anchor() -> None:
    active = field(3, sigma=100.0)
    house = [BotState("house", 1500.0, 0.0, 1000)]
    choices = choose_tables(active, house, {}, 4, 3, seed=0)
    for c in choices:
        assert "house" in c.table and c.table[0] != "house"
        assert c.reason["anchor"] != "house"


def test_a_bot_sits_at_one_table_of_a_round() -> None:
    choices = choose_tables(field(40), [], {}, 4, 10, seed=2)
    seated = Counter(b for c in choices for b in c.table)
    assert len(seated) == 40 and set(seated.values()) == {1}
    assert all(len(set(c.table)) == 4 for c in choices)
    # more tables than the field fills: a second pass, still distinct bots per table
    more = choose_tables(field(10), [], {}, 4, 5, seed=2)
    assert all(len(set(c.table)) == 4 for c in more)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="3 bots for 4 seats"):
        choose_tables(field(3), [], {}, 4)
    with pytest.raises(ValueError, match="given twice"):
        choose_tables([*field(4), field(4)[0]], [], {}, 4)
    with pytest.raises(ValueError, match="not finite"):
        choose_tables([*field(4), BotState("x", float("nan"), 1.0, 0)], [], {}, 4)
    with pytest.raises(ValueError, match="no active bot"):
        choose_tables([], field(5), {}, 4)


# -- the simulation -------------------------------------------------------------------

def test_duplicate_luck_follows_the_cards() -> None:
    """Without play noise, a duplicate set's totals differ exactly by skill: every bot
    held every seat's cards (and luck) once; a single game's scores do not."""
    world = new_world(Model(bots=8, seats=4, noise_sd=0.0, luck_sd=2.0), seed=4)
    games = world.play([0, 1, 2, 3])
    assert len(games) == 4 and len({g.unit for g in games}) == 1
    totals = Counter[str]()
    for g in games:
        for bot, score in zip(g.bots, g.scores, strict=True):
            totals[bot] += score
    skill = {name: float(s) for name, s in zip(world.names, world.skills, strict=True)}
    for bot in totals:
        assert totals[bot] - 4 * skill[bot] == pytest.approx(
            totals["bot000"] - 4 * skill["bot000"])
    first = games[0]
    luck = [score - skill[bot] for bot, score in zip(first.bots, first.scores, strict=True)]
    assert max(luck) - min(luck) > 0.1
    # the seat's luck is the same in every rotation (it follows the cards)
    assert {round(g.scores[0] - skill[g.bots[0]], 9) for g in games} == {round(luck[0], 9)}


def test_kendall_tau() -> None:
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)


def test_summaries_count_every_run_to_its_end() -> None:
    right = Trajectory([10, 20, 30, 40], [0.5, 0.9, 0.95, 0.97], [False, True, True, True])
    flip = Trajectory([10, 20, 30, 40], [0.5, 0.8, 0.85, 0.92], [True, False, True, True])
    never = Trajectory([10, 20, 30, 40], [0.5, 0.6, 0.7, 0.8], [True, True, True, False])
    s = summarise("x", [right, flip])
    assert s.games_to_tau == 30.0  # the median of 20 and 40
    assert s.games_to_top3 == 30  # right in both from 30 on, not at 10 (one was lucky)
    assert s.games_to_top3_90 == 30
    s = summarise("x", [right, flip, never])
    assert s.games_to_top3 is None and s.unfinished == 1
    assert s.games_to_tau == 40.0  # 20, 40 and one that never reached it


def test_matchmaking_ranks_better_than_random_tables_at_the_same_games() -> None:
    """The point of the matchmaker, in a small seeded simulation (30 bots, 8 runs of 1,500
    games): its top 3 is right in more of the last 40 rounds than that of random tables
    (measured 245 of 320 against 200), and its ranking over the whole field is no worse
    after 700 games (mean tau 0.878 against 0.874: at this size the gain on tau is small,
    see docs/league.md)."""
    model = Model(bots=30)
    runs = {s: [run(model, s, seed, 1500) for seed in range(8)]
            for s in ("matchmaking", "random")}
    right = {s: sum(sum(r.top3[-40:]) for r in rs) for s, rs in runs.items()}
    assert right["matchmaking"] >= right["random"] + 20

    def tau_at(r: Trajectory, games: int) -> float:
        return next(t for g, t in zip(r.games, r.tau, strict=True) if g >= games)

    taus = {s: mean(tau_at(r, 700) for r in rs) for s, rs in runs.items()}
    assert taus["matchmaking"] > taus["random"] - 0.01


def test_a_pair_whose_order_is_in_doubt_is_preferred_to_a_settled_pair() -> None:
    # two pairs of equally uncertain bots: b04-b05 are 10 Elo apart (their order is in
    # doubt), b18-b19 are 300 apart and 400 from the next (settled); the rest of the field
    # is settled too
    bots = [BotState(f"b{i:02d}", 1000.0 + 100.0 * i, 3.0, 400) for i in range(20)]
    bots[4] = BotState("b04", 1400.0, 60.0, 400)
    bots[5] = BotState("b05", 1410.0, 60.0, 400)
    bots[18] = BotState("b18", 3100.0, 60.0, 400)
    bots[19] = BotState("b19", 3400.0, 60.0, 400)
    first = choose_tables(bots, [], {}, 4, 1, seed=0, top_weight=0.0)[0]
    assert first.reason["rule"] == "uncertain"
    assert {"b04", "b05"} <= set(first.table)
    assert not {"b18", "b19"} & set(first.table)


def test_the_error_function_is_close_to_maths() -> None:
    import math

    import numpy as np

    from arena.league.matchmaking import _erf
    x = np.linspace(-7.0, 7.0, 20001)
    exact = np.array([math.erf(v) for v in x])
    assert float(np.abs(_erf(x) - exact).max()) < 2e-7


def test_the_simulation_passes_the_matchmaking_options_and_is_seeded() -> None:
    model = Model(bots=16, luck_sd=0.5, noise_sd=0.5)
    a = run(model, "matchmaking", 3, 300, {"top_weight": 0.0})
    assert a == run(model, "matchmaking", 3, 300, {"top_weight": 0.0})
    # every table "new" until each bot has a million games: a different schedule
    b = run(model, "matchmaking", 3, 300, {"new_games": 10**6})
    assert a != b


def test_the_information_a_table_gives_a_pair_is_a_parameter() -> None:
    bots = field(24, sigma=60.0)
    met = {("b01", "b02"): 3}
    default = choose_tables(bots, [], met, 4, 3, seed=1)
    assert default == choose_tables(bots, [], met, 4, 3, seed=1, per_pair=4.0)
    # one comparison a pair (set totals) removes less doubt per table: lower scores
    fewer = choose_tables(bots, [], met, 4, 3, seed=1, per_pair=1.0)
    assert fewer[0].reason["score"] < default[0].reason["score"]
    with pytest.raises(ValueError, match="per_pair"):
        choose_tables(bots, [], met, 4, 1, per_pair=0.0)


def test_what_the_simulation_compares() -> None:
    from arena.league.sim import house_elo
    games, cards, sets = (Model(luck_sd=1.5, noise_sd=1.0, estimator=e)
                          for e in ("games", "cards", "sets"))
    # the same cards leave the play noise only; a set's totals half of it at 4 seats
    assert games.comparison_sd() == pytest.approx(math.sqrt(6.5))
    assert cards.comparison_sd() == pytest.approx(math.sqrt(2.0))
    assert sets.comparison_sd() == pytest.approx(math.sqrt(0.5))
    assert house_elo(cards, 1.0) - 1500 > house_elo(games, 1.0) - 1500 > 0
    with pytest.raises(ValueError, match="estimator"):
        Model(estimator="margins").comparison_sd()
    # every scheduler with each: seeded, and the luck-free comparisons rank better (the
    # model level: luck 1.5 against play noise 1)
    final = {}
    for model in (games, cards, sets):
        small = Model(bots=16, luck_sd=1.5, noise_sd=1.0, estimator=model.estimator)
        a = run(small, "random", 1, 400)
        assert a == run(small, "random", 1, 400)
        final[model.estimator] = mean(run(small, "random", s, 400).tau[-1] for s in range(6))
    assert final["cards"] > final["games"]


def test_the_oracle_seats_true_neighbours_fewest_games_first_and_is_seeded() -> None:
    model = Model(bots=40, house=0)
    world = new_world(model, 5)
    place = {int(b): k for k, b in enumerate(np.argsort(world.skills, kind="stable"))}
    world.games[:] = 8.0
    world.games[[7, 19]] = 0.0  # these two anchor the first tables
    tables = oracle_tables(world, 6, random.Random(1), window=3)
    assert tables == oracle_tables(world, 6, random.Random(1), window=3)
    assert {tables[0][0], tables[1][0]} == {7, 19}
    seated = [b for t in tables for b in t]
    assert len(seated) == len(set(seated)) == 6 * model.seats  # once a round each
    for table in tables:
        # drawn from the anchor's free neighbours in the true order: within 3 free places
        # each side, so within 3 + (tables already seated) * seats places at most
        gaps = [abs(place[b] - place[table[0]]) for b in table[1:]]
        assert max(gaps) <= 3 + 5 * model.seats, (table, gaps)
    first = tables[0]
    assert max(abs(place[b] - place[first[0]]) for b in first[1:]) <= 3
    # and the simulation runs it, seeded, with its window
    assert run(model, "oracle", 2, 200, window=2) == run(model, "oracle", 2, 200, window=2)
    assert run(model, "oracle", 2, 200, window=2) != run(model, "oracle", 2, 200, window=12)
