"""The progress lines of ``arena tournament``: how often, the ETA at the run's pace, and
the standings by the incremental Elo (a real tournament's lines are checked in
tests/test_tournament.py)."""

from __future__ import annotations

import pytest

from arena.cli.tournament import ProgressReport, duration_text, report_every
from arena.report.board import QuickStandings
from arena.stats.ratings import GameScores, incremental_elo


@pytest.mark.parametrize(("total", "every"), [(1, 1), (9, 1), (40, 4), (160, 16),
                                               (500, 50), (10_000, 50)])
def test_a_line_every_tenth_or_every_50_games(total: int, every: int) -> None:
    assert report_every(total) == every


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0s"), (59.6, "1m00s"), (65, "1m05s"),
                                               (3599, "59m59s"), (3725, "1h02m")])
def test_durations(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_are_due_every_n_games_and_at_the_end_with_the_pace_of_this_run() -> None:
    clock = Clock()
    report = ProgressReport(faults=2, clock=clock)
    report.start(total=25, done=5)  # resumed: 5 games were played before
    lines = []
    for i in range(20):
        clock.now += 3.0
        line = report.game(("a", "b", "c"), (10, 5, 0) if i % 2 else (0, 5, 10), i == 7)
        if line is not None:
            lines.append(line)
    assert [line.split(",")[0] for line in lines] == [
        "games 6/25 (24%)", "games 9/25 (36%)", "games 12/25 (48%)", "games 15/25 (60%)",
        "games 18/25 (72%)", "games 21/25 (84%)", "games 24/25 (96%)", "games 25/25 (100%)"]
    # 4 games in 12 s: 16 left at 3 s a game
    assert lines[1].startswith("games 9/25 (36%), 12s elapsed, eta 48s, faults 2; ")
    assert lines[-1].startswith("games 25/25 (100%), 1m00s elapsed, done, faults 3; ")


def test_the_standings_are_the_incremental_elo_of_the_games_so_far() -> None:
    games = [GameScores("", ("a", "b", "c"), (30.0, 10.0, 20.0)),
             GameScores("", ("c", "a", "b"), (5.0, 40.0, 40.0)),
             GameScores("", ("b", "c", "a"), (1.0, 2.0, 3.0))]
    standings = QuickStandings()
    for game in games:
        standings.add(game.bots, game.scores)
    ratings, _ = incremental_elo(games)
    top = standings.top(2)
    assert [name for name, _, _ in top] == sorted(ratings, key=lambda n: -ratings[n])[:2]
    assert [(elo, count) for _, elo, count in top] == [(ratings[n], 3) for n, _, _ in top]
    report = ProgressReport(clock=Clock())
    report.start(total=3, done=0)
    line = None
    for game in games:
        line = report.game(game.bots, game.scores, 0)
    assert line is not None and line.endswith(
        "; Elo so far: " + ", ".join(f"{i}. {n} {ratings[n]:.0f}" for i, n in enumerate(
            sorted(ratings, key=lambda n: (-ratings[n], n)), start=1)))


def test_the_first_game_of_a_run_gives_the_first_estimate_of_the_time_left() -> None:
    """A long run's first line comes after its first game, not after a tenth of them
    (at 50 games a line, a big field's first line came after five minutes)."""
    clock = Clock()
    report = ProgressReport(clock=clock)
    report.start(total=1000, done=0)
    lines = []
    for _ in range(100):
        clock.now += 2.0
        line = report.game(("a", "b", "c"), (1, 2, 3), 0)
        if line is not None:
            lines.append(line)
    assert [line.split(",")[0] for line in lines] == ["games 1/1000 (0%)", "games 50/1000 (5%)",
                                                      "games 100/1000 (10%)"]
    assert lines[0].startswith("games 1/1000 (0%), 2s elapsed, eta 33m18s, ")
