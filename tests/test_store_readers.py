"""What a running league's pages read, and how: real league stores (played by built-in
bots with ``arena league run``, grown to 25,000 games with SQL: benchmarks/page_store.py),
real SQLite, the real writer and reader threads.

Covered: a bot's running totals are those its rows give (faults, CPU times with gaps),
and a store from before them gets them on open; a bot's page reads a row per version
whatever the number of games (its statements' plans search an index, scan no table; the
SQLite steps it takes at 100 and at 25,000 games are the same; control: the queries it
made before take steps in proportion to the games); the page's reads are served while
the writer thread is held (they never queue behind a game's write); a replay is withheld
while a rotation of its set is to be played, and shown once the set is whole; a published
site of an open season withholds the same replays (pages and games.jsonl.gz)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sqlite3
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import trio

from arena.league.config import load_league
from arena.league.runner import League, LeagueSummary
from arena.league.store import field_rows
from arena.league_service.backend import RunnerBackend
from arena.model.league_api import LeagueError
from arena.publish.build import publish
from arena.publish.markup import game_path
from arena.runs.readers import store_readers
from arena.runs.schedule import ScheduledGame
from arena.runs.store import Store
from arena.runs.writer import store_writer
from benchmarks.page_store import grow, play_league


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A league's folder after two whole sets (6 games)."""
    folder = tmp_path_factory.mktemp("page-store")
    play_league(folder, 6)
    return folder


@pytest.fixture
def league(played: Path, tmp_path: Path) -> Path:
    """A copy of the played league's folder (its league file and ``out``)."""
    shutil.copy(played / "league.toml", tmp_path / "league.toml")
    shutil.copytree(played / "out", tmp_path / "out")
    return tmp_path


def rows_totals(db: sqlite3.Connection, bot: str) -> tuple[Any, ...]:
    """A bot's totals the way the bot's page made them before: from every row (and the
    times from every record of its games, where they are kept)."""
    games = db.execute("SELECT COUNT(DISTINCT game_id) FROM results WHERE bot = ?",
                       (bot,)).fetchone()[0]
    kinds = dict(db.execute("SELECT kind, COUNT(*) FROM faults WHERE bot = ? GROUP BY kind",
                            (bot,)).fetchall())
    walls: list[float] = []
    cpus: list[float] = []
    for record, seat in db.execute("SELECT g.record, r.seat FROM results AS r JOIN games AS g"
                                   " ON g.id = r.game_id WHERE r.bot = ?", (bot,)):
        timing = json.loads(record)["timing"]
        walls += timing["wall_ms"][seat]
        cpus += [x for x in timing["cpu_ms"][seat] if x is not None]
    return games, kinds, len(walls), round(sum(walls), 6), len(cpus), round(sum(cpus), 6)


def totals_of(store: Store, bot: str) -> tuple[Any, ...]:
    t = store.bot_totals([bot])
    return (t.games, t.fault_kinds, t.decisions, round(t.wall_ms, 6), t.cpu_decisions,
            round(t.cpu_ms, 6))


def finish_copy(store: Store, source: str, game: ScheduledGame,
                faults: list[dict[str, Any]] | None = None,
                cpu: list[list[float | None]] | None = None) -> None:
    """Store ``game`` with the record of the stored game ``source`` (and ``faults``)."""
    record = dict(json.loads(store.db.execute("SELECT record FROM games WHERE id = ?",
                                              (source,)).fetchone()[0]))
    wall = [[1.5, 2.25], [3.0], [0.5, 0.5, 0.5]]
    record.update(game_id=game.id, faults=faults or [],
                  timing={"wall_ms": wall, "cpu_ms": cpu or [[None] * len(w) for w in wall]})
    store.game_started(game)
    store.game_finished(game, record)


def test_the_running_totals_are_the_rows_and_an_old_store_gets_them(league: Path) -> None:
    out = league / "out"
    with Store.open(out) as store:
        source = store.db.execute("SELECT id FROM games ORDER BY seq LIMIT 1").fetchone()[0]
        fault = {"seat": 1, "kind": "timeout", "detail": "late", "action": "a card",
                 "round": 1, "trick": 0}
        finish_copy(store, source, ScheduledGame(100, 100, 1, 0, 7, ("b0", "b1", "b2")),
                    [fault, dict(fault, kind="illegal")],
                    [[0.25, None], [None], [1.0, 2.0, None]])
        finish_copy(store, source, ScheduledGame(101, 100, 1, 1, 7, ("b1", "b2", "b0")),
                    [fault])
        expected = {b: rows_totals(store.db, b) for b in ("b0", "b1", "b2", "b3")}
        assert expected["b1"][1] == {"timeout": 1, "illegal": 1}
        assert expected["b2"][1] == {"timeout": 1} and expected["b0"][4] == 1
        assert {b: totals_of(store, b) for b in expected} == expected
    with closing(sqlite3.connect(out / "tournament.sqlite")) as db:  # as before them
        for trigger in ("bot_totals_results", "bot_totals_faults"):
            db.execute(f"DROP TRIGGER {trigger}")
        db.execute("DROP TABLE bot_totals")
        db.execute("DROP TABLE bot_fault_kinds")
        db.commit()
    with Store.open(out) as store:
        assert {b: totals_of(store, b) for b in expected} == expected


def store_steps(out: Path, read: Callable[[Store], object]) -> tuple[int, list[str]]:
    """The SQLite virtual-machine steps (in thousands, counted by the progress handler)
    that ``read`` takes on a read-only connection, and the statements it ran."""
    steps = [0]
    statements: list[str] = []
    with Store.open_readonly(out) as store:
        store.db.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1) or 0, 1000)
        store.db.set_trace_callback(statements.append)
        read(store)
        store.db.set_progress_handler(None, 0)
        store.db.set_trace_callback(None)
    return steps[0], statements


def bot_page_reads(store: Store) -> object:
    """What the bot's page reads of the store (:meth:`RunnerBackend.bot`'s job)."""
    rows = field_rows(store)
    return store.bot_totals([r.name for r in rows if r.base == "b1"])


def old_bot_page_reads(store: Store) -> object:
    """What it read before: every row of the bot in three tables (the times, kept then
    in a table of their own, are now in the records: read from there)."""
    names = ("b1",)
    games = store.db.execute("SELECT COUNT(DISTINCT game_id) FROM results WHERE bot IN (?)",
                             names).fetchone()
    kinds = store.db.execute("SELECT kind, COUNT(*) FROM faults WHERE bot IN (?)"
                             " GROUP BY kind", names).fetchall()
    times = store.db.execute("SELECT json_extract(g.record, '$.timing') FROM results AS r"
                             " JOIN games AS g ON g.id = r.game_id WHERE r.bot IN (?)",
                             names).fetchall()
    return games, kinds, times


def test_a_bots_page_reads_the_same_at_100_and_25000_games(league: Path,
                                                            tmp_path: Path) -> None:
    small, large = tmp_path / "small", tmp_path / "large"
    shutil.copytree(league / "out", small)
    shutil.copytree(league / "out", large)
    assert grow(small, 100) >= 100 and grow(large, 25_000) >= 25_000
    steps_small, statements = store_steps(small, bot_page_reads)
    steps_large, _ = store_steps(large, bot_page_reads)
    assert steps_small == steps_large  # what it reads does not grow with the games
    with Store.open_readonly(large) as store:
        assert store.bot_totals(["b1"]).games == rows_totals(store.db, "b1")[0]
        for statement in statements:  # the field (league_bots) is read whole; no table
            plan = [r[3] for r in store.db.execute(f"EXPLAIN QUERY PLAN {statement}")]
            scans = [s for s in plan if re.match(r"SCAN (games|results|faults|"
                                                 r"bot_totals|bot_fault_kinds)\b", s)]
            assert not scans, (statement, plan)  # of the games or their rows is scanned
        assert any("bot_totals" in s for s in statements)
    # control: the reads of before, on the same stores, grow with the games
    old_small, _ = store_steps(small, old_bot_page_reads)
    old_large, _ = store_steps(large, old_bot_page_reads)
    assert old_large > 50 * max(old_small, 1)


async def _with_backend(folder: Path, body: Callable[[RunnerBackend, Any], Any]) -> None:
    """``body(backend, writer)`` with the league of ``folder`` loaded (its store, writer
    and readers; no game is played)."""
    config = load_league(folder / "league.toml")
    store = Store.open(folder / "out")
    try:
        async with store_writer(store) as writer, store_readers(folder / "out") as readers, \
                trio.open_nursery() as pools:
            league = League(config, store, writer, pools, LeagueSummary(), None, None, None,
                            readers)
            backend = RunnerBackend(config, sandbox=False)
            backend.attach(league)
            await body(backend, writer)
    finally:
        store.close()


def test_a_bots_page_and_a_replay_are_read_while_the_writer_is_held(league: Path) -> None:
    """The writer thread is held (a job that waits): the page's reads are answered, as
    they go to the readers. Before, they were jobs of the writer and waited behind it."""
    entered, release = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def hold(store: Store) -> None:
        entered.set()
        release.wait(60)

    async def body(backend: RunnerBackend, writer: Any) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer.call, hold)
            with trio.fail_after(30):
                while not entered.is_set():
                    await trio.sleep(0.01)
            try:
                with trio.fail_after(30):
                    seen["bot"] = await backend.bot("b1")
                    seen["recent"] = await backend.recent_games(20)
                    seen["record"] = await backend.record(seen["recent"][0].game_id)
            finally:
                release.set()

    trio.run(_with_backend, league, body)
    with closing(sqlite3.connect(league / "out" / "tournament.sqlite")) as db:
        expected = rows_totals(db, "b1")
        last = db.execute("SELECT id FROM games WHERE status = 'done' ORDER BY seq DESC"
                          " LIMIT 1").fetchone()[0]
    assert seen["bot"].games == expected[0] and seen["bot"].decisions == expected[2]
    assert seen["recent"][0].game_id == last and len(seen["recent"]) == 6
    assert seen["record"]["game_id"] == last


def test_a_replay_is_withheld_until_its_set_is_whole(league: Path, tmp_path: Path) -> None:
    outcomes: list[tuple[str, Any]] = []

    async def body(backend: RunnerBackend, writer: Any) -> None:
        recent = await backend.recent_games(1)
        done = recent[0].game_id  # of a whole set: the control
        for rotation in range(3):
            game = ScheduledGame(300 + rotation, 77, 1, rotation, 9,
                                 tuple(("b0", "b1", "b2")[(s + rotation) % 3]
                                       for s in range(3)))
            await writer.call(lambda s, g=game: finish_copy(s, done, g))
            for shown in (f"t77-d1-r{r}" for r in range(rotation + 1)):
                try:
                    outcomes.append((shown, await backend.record(shown)))
                except LeagueError as e:
                    outcomes.append((shown, str(e)))
        outcomes.append((done, await backend.record(done)))

    trio.run(_with_backend, league, body)
    withheld = [(g, o) for g, o in outcomes if isinstance(o, str)]
    shown = [g for g, o in outcomes if isinstance(o, dict)]
    assert [g for g, _ in withheld] == ["t77-d1-r0", "t77-d1-r0", "t77-d1-r1"]
    assert "2 more rotations of the same deal" in withheld[0][1]
    assert "1 more rotation of the same deal is" in withheld[2][1]
    assert shown[-4:-1] == ["t77-d1-r0", "t77-d1-r1", "t77-d1-r2"]  # the set whole
    assert shown[-1] not in ("t77-d1-r0", "t77-d1-r1", "t77-d1-r2")  # the control

    # the published site of the open season withholds the same replays
    with Store.open(league / "out") as store:
        for rotation in range(2):
            game = ScheduledGame(400 + rotation, 88, 1, rotation, 9, ("b3", "b1", "b2"))
            finish_copy(store, "t77-d1-r0", game)
    site = tmp_path / "site"
    publish(league / "out", site, resamples=20)
    for game_id, kept in (("t88-d1-r0", False), ("t88-d1-r1", False), ("t77-d1-r2", True)):
        page = (site / game_path(game_id)).read_text()
        assert ('id="record"' in page) == kept, game_id
        assert ("withheld until its deal" in page) != kept, game_id
    with gzip.open(site / "data" / "games.jsonl.gz", "rt") as lines:
        ids = {json.loads(line)["game_id"] for line in lines}
    assert "t77-d1-r2" in ids and not ids & {"t88-d1-r0", "t88-d1-r1"}
