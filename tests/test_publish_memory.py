"""The compact forms ``arena publish`` keeps per game (issue 18's memory bound): the
ratings' comparisons gathered game by game, and the games list's packed rows, give
exactly what the objects they replace gave. Figures: ``benchmarks/publish_memory.py``."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from arena.publish import charts
from arena.publish.pages import GameRow
from arena.publish.rows import GameRows
from arena.stats.ratings import Comparisons, GameScores, _comparisons, rate


def _games(seed: int, units: int, interleave: bool) -> list[GameScores]:
    """Games of 3 or 4 of 5 bots, several to a unit, with ties (draws); a unit's games
    one after another, or shuffled so that units come back."""
    rng = random.Random(seed)
    bots = [f"b{i}" for i in range(5)]
    games = []
    for u in range(units):
        seated = rng.sample(bots, rng.choice((3, 4)))
        for _ in range(rng.randint(1, 4)):
            games.append(GameScores(f"u{u}", tuple(seated),
                                    tuple(float(rng.randint(0, 3)) for _ in seated)))
    if interleave:
        rng.shuffle(games)
    return games


def _reference(games: list[GameScores], names: list[str]) -> tuple[int, list[int], list[int],
                                                                    list[float]]:
    """The entries as rate() built them before Comparisons: a dict by (unit, pair)."""
    index = {name: i for i, name in enumerate(names)}
    n = len(names)
    units: dict[str, int] = {}
    entries: dict[tuple[int, int], float] = {}
    for game in games:
        u = units.setdefault(game.unit, len(units))
        for winner, loser, credit in _comparisons(game):
            key = (u, index[winner] * n + index[loser])
            entries[key] = entries.get(key, 0.0) + credit
    return (len(units), [u for u, _ in entries], [p for _, p in entries],
            list(entries.values()))


@pytest.mark.parametrize("interleave", [False, True])
def test_comparisons_are_the_games_entries(interleave: bool) -> None:
    games = _games(7, 40, interleave)
    names = sorted({b for g in games for b in g.bots} | {"idle"})
    data = Comparisons()
    for game in games:
        data.add(game)
    count, unit_of, pair, credit = data.entries(names)
    want = _reference(games, names)
    assert count == want[0]
    assert unit_of.tolist() == want[1]
    assert pair.tolist() == want[2]
    assert credit.tolist() == want[3]
    assert data.games == len(games)
    if not interleave:  # one unit at a time: 12 ordered pairs at most per unit
        assert len(pair) <= 12 * count


@pytest.mark.parametrize("interleave", [False, True])
def test_rate_of_comparisons_is_rate_of_games(interleave: bool) -> None:
    games = _games(11, 30, interleave)
    assert rate(Comparisons(games), resamples=50, seed=3, bots=["idle"]) \
        == rate(games, resamples=50, seed=3, bots=["idle"])


def test_comparisons_after_entries_keep_adding() -> None:
    """More games after the entries were read (the same unit again) are merged."""
    games = _games(5, 6, False)
    data = Comparisons(games[:-1])
    names = sorted({b for g in games for b in g.bots})
    data.entries(names)
    data.add(games[-1])
    _, unit_of, pair, credit = data.entries(names)
    want = _reference(games, names)
    assert (unit_of.tolist(), pair.tolist(), credit.tolist()) == tuple(want[1:])


def test_game_rows_read_back_what_was_appended() -> None:
    rows = [GameRow(f"t{i}-d{i % 3}-r{i % 4}", i, i // 4, i % 3, i % 4,
                    ("alpha", "b\u00e9ta", f"gamma{i % 2}")[: 2 + i % 2],
                    tuple(range(i, i + 2 + i % 2)), tuple(range(1, 3 + i % 2)), i % 5)
            for i in range(25)]
    packed = GameRows()
    for row in rows:
        packed.append(row)
    assert len(packed) == 25
    assert list(packed) == rows
    assert packed[0] == rows[0] and packed[-1] == rows[-1] and packed[13] == rows[13]
    assert packed[10:20] == rows[10:20] and packed[20:40] == rows[20:]
    with pytest.raises(IndexError):
        packed[25]
    with pytest.raises(ValueError, match="game x: 2 bots, 1 totals"):
        packed.append(GameRow("x", 0, 0, 0, 0, ("a", "b"), (1,), (1, 2), 0))


def test_line_chart_reads_a_range_as_a_list() -> None:
    """A long history passed as it is (a range of x, the values) draws the chart the
    lists drew, thinned to MAX_POINTS."""
    values = [1500.0 + 50 * float(np.sin(i / 300)) for i in range(5001)]
    lists = charts.line_chart([charts.Series("a", values, list(range(5001)))], "c", "t",
                              "d", "x", "y", reference=1500.0)
    ranged = charts.line_chart([charts.Series("a", values, range(5001))], "c", "t", "d",
                               "x", "y", reference=1500.0)
    assert ranged == lists
    drawn = re.search(r'<path d="(M[^"]*)"', lists)
    assert drawn is not None and drawn.group(1).count("L") == charts.MAX_POINTS - 1
    with pytest.raises(ValueError, match="series 'a': 3 x values, 2 y values"):
        charts.line_chart([charts.Series("a", [1.0, 2.0], [1, 2, 3])], "c", "t", "d", "x",
                          "y")
