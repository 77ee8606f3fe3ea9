"""``arena.runs.preamble``: the start and frame every run shares (a tournament here
or on Ray, a match). What a bot must not see is worked out once; a stopped run's
unfinished games are played again and finished ones never; a signal marks the run
interrupted and cancels it; the reason a run cannot go on comes out as itself."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from arena.runs.preamble import (
    TournamentError,
    hidden_paths,
    lane_order,
    run_framed,
    unplayed,
)
from arena.runs.schedule import schedule
from arena.runs.store import Store


def test_a_bot_sees_its_own_folders_but_not_the_output_nor_the_others() -> None:
    out = Path("/runs/out")
    folders = {"a": [Path("/bots/a")], "b": [Path("/bots/b"), Path("/shared")],
               "c": [Path("/shared")]}
    assert hidden_paths(out, folders, "a") == (out, Path("/bots/b"), Path("/shared"),
                                               Path("/shared"))
    # a folder two bots share is neither's secret from the other
    assert hidden_paths(out, folders, "b") == (out, Path("/bots/a"))
    assert hidden_paths(out, folders, "c") == (out, Path("/bots/a"), Path("/bots/b"))
    # a built-in or remote bot has no folders: it is kept from every one
    assert hidden_paths(out, folders, "builtin") == (
        out, Path("/bots/a"), Path("/bots/b"), Path("/shared"), Path("/shared"))


def test_the_output_is_hidden_by_its_absolute_path(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert hidden_paths(Path("out"), {}, "a") == (tmp_path / "out",)


def test_unplayed_replays_the_unfinished_and_never_the_finished(tmp_path: Path) -> None:
    games = schedule("round-robin", ["a", "b", "c", "d"], 4, 2, 7)
    with Store.open(tmp_path) as store:
        store.game_started(games[0])
        store.game_finished(games[0], _record(games[0].bots))
        store.game_started(games[1])  # left running by a stopped run
        todo, done = unplayed(store, iter(games))
        assert done == {games[0].id}
        assert [g.id for g in todo] == [g.id for g in games[1:]]
        assert store.done_ids() == {games[0].id}
        assert store.reset_unfinished() == 0  # the running one was cleared already


def test_lane_order_plays_each_lane_deal_after_deal() -> None:
    games = schedule("round-robin", ["a", "b", "c", "d", "e"], 4, 3, 7)
    ordered = lane_order(games)
    assert sorted(g.id for g in ordered) == sorted(g.id for g in games)
    lanes: dict[tuple[int, int], list[int]] = {}
    for g in ordered:
        lanes.setdefault((g.table_no, g.rotation), []).append(g.deal_no)
    assert all(deals == [0, 1, 2] for deals in lanes.values())
    # lanes one after another, not interleaved
    keys = [(g.table_no, g.rotation) for g in ordered]
    assert keys == sorted(keys)


@dataclass
class State:
    interrupted: bool = False
    seconds: float = -1.0


@pytest.mark.parametrize("signo", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_marks_the_run_interrupted_and_cancels_it(signo: int) -> None:
    state = State()
    steps: list[str] = []

    async def body() -> None:
        steps.append("started")
        os.kill(os.getpid(), signo)
        try:
            await trio.sleep_forever()
        finally:
            steps.append("cancelled")

    trio.run(run_framed, state, body)
    assert steps == ["started", "cancelled"]
    assert state.interrupted
    assert state.seconds >= 0


def test_the_reason_a_run_cannot_go_on_comes_out_as_itself() -> None:
    state = State()
    ended: list[str] = []

    async def body() -> None:
        try:
            raise TournamentError("bot x: no hand-shake")
        finally:
            ended.append("body")

    with pytest.raises(TournamentError, match="bot x: no hand-shake") as raised:
        trio.run(run_framed, state, body)
    assert type(raised.value) is TournamentError  # not wrapped in an exception group
    assert ended == ["body"]
    assert not state.interrupted and state.seconds >= 0


def test_a_run_that_ends_by_itself_is_not_interrupted() -> None:
    state = State()

    async def body() -> None:
        await trio.sleep(0)

    trio.run(run_framed, state, body)
    assert not state.interrupted and state.seconds >= 0


def _record(bots: tuple[str, ...]) -> dict[str, object]:
    n = len(bots)
    return {"format": "trick-arena.record/1", "game": "wizard", "options": {"players": n},
            "seed": 1, "seats": list(bots), "rounds": [], "totals": [0] * n,
            "places": [1] * n, "faults": [], "forfeited": [False] * n}
