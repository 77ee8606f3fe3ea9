"""A game's decision times are stored once: in its record (``timing``), not also in the
store's ``latencies`` table (issue 38, item 3). Real SQLite files, real games (built-in
bots play in process, each decision timed).

Covered: a store made by version 2 (its tables, indexes and triggers as that arena made
them, written row for row as its ``game_finished`` did, with games from before the record
kept ``timing`` and games after), opened by this arena, gives the leaderboard's answer
and CPU times and the running totals it gave before, read as it is and once migrated;
the migration keeps the rows that are the only copy of a game's times, deletes those
that copy a record's ``timing``, keeps a row that differs (``arena verify`` names it);
a new store holds each time once (no per-decision list outside the records), and a game
written after the migration adds no row; ``arena verify`` checks the sums ``results``
keeps against the record.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from arena.bots import make_bot
from arena.model import chain
from arena.model.record import game_record
from arena.report.board import build_leaderboard
from arena.rules import new_game
from arena.runs.audit import AuditError, verify_store
from arena.runs.schedule import ScheduledGame, schedule, seed_commitment
from arena.runs.store import SCHEMA_VERSION, STORE_NAME, Store, StoredGame

BOTS = ("heur", "rand-a", "rand-b")
KINDS = {"heur": "heuristic", "rand-a": "random", "rand-b": "random"}
SEED = 11

V2_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE bots (name TEXT PRIMARY KEY, spec TEXT NOT NULL, version TEXT, author TEXT,
    protocol_version INTEGER, games TEXT, sandboxed INTEGER, isolation TEXT,
    insecure INTEGER);
CREATE TABLE games (id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE,
    table_no INTEGER NOT NULL, deal_no INTEGER NOT NULL, rotation INTEGER NOT NULL,
    deal_seed TEXT NOT NULL, bots TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('running', 'done')), started_at REAL,
    ended_at REAL, chain_seq INTEGER, chain_prev TEXT, chain TEXT, record TEXT);
CREATE TABLE results (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE, seat INTEGER NOT NULL,
    bot TEXT NOT NULL, score INTEGER NOT NULL, place INTEGER NOT NULL,
    forfeited INTEGER NOT NULL, PRIMARY KEY (game_id, seat));
CREATE TABLE faults (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE, seat INTEGER NOT NULL,
    bot TEXT NOT NULL, round INTEGER, trick INTEGER, kind TEXT NOT NULL,
    detail TEXT NOT NULL, action TEXT NOT NULL);
CREATE TABLE latencies (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE, seat INTEGER NOT NULL,
    bot TEXT NOT NULL, ms TEXT NOT NULL, cpu_ms TEXT, PRIMARY KEY (game_id, seat));
CREATE INDEX games_status ON games (status, seq, id);
CREATE INDEX games_chain ON games (chain_seq) WHERE chain_seq IS NOT NULL;
CREATE INDEX games_unchained ON games (seq) WHERE status = 'done' AND chain_seq IS NULL;
CREATE INDEX faults_game ON faults (game_id);
CREATE INDEX results_bot ON results (bot, game_id);
CREATE INDEX games_unit ON games (table_no, deal_no, status);
CREATE TABLE bot_totals (bot TEXT PRIMARY KEY, games INTEGER NOT NULL DEFAULT 0,
    decisions INTEGER NOT NULL DEFAULT 0, wall_ms REAL NOT NULL DEFAULT 0,
    cpu_decisions INTEGER NOT NULL DEFAULT 0, cpu_ms REAL NOT NULL DEFAULT 0,
    faults INTEGER NOT NULL DEFAULT 0);
CREATE TABLE bot_fault_kinds (bot TEXT NOT NULL, kind TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (bot, kind));
CREATE TRIGGER bot_totals_results AFTER INSERT ON results BEGIN
    INSERT INTO bot_totals (bot, games) VALUES (NEW.bot, 1)
    ON CONFLICT (bot) DO UPDATE SET games = games + 1;
END;
CREATE TRIGGER bot_totals_latencies AFTER INSERT ON latencies BEGIN
    INSERT INTO bot_totals (bot, decisions, wall_ms, cpu_decisions, cpu_ms)
    SELECT NEW.bot, (SELECT COUNT(value) FROM json_each(NEW.ms)),
           (SELECT TOTAL(value) FROM json_each(NEW.ms)),
           (SELECT COUNT(value) FROM json_each(COALESCE(NEW.cpu_ms, '[]'))),
           (SELECT TOTAL(value) FROM json_each(COALESCE(NEW.cpu_ms, '[]')))
    WHERE true
    ON CONFLICT (bot) DO UPDATE SET decisions = decisions + excluded.decisions,
        wall_ms = wall_ms + excluded.wall_ms,
        cpu_decisions = cpu_decisions + excluded.cpu_decisions,
        cpu_ms = cpu_ms + excluded.cpu_ms;
END;
CREATE TRIGGER bot_totals_faults AFTER INSERT ON faults BEGIN
    INSERT INTO bot_totals (bot, faults) VALUES (NEW.bot, 1)
    ON CONFLICT (bot) DO UPDATE SET faults = faults + 1;
    INSERT INTO bot_fault_kinds (bot, kind, n) VALUES (NEW.bot, NEW.kind, 1)
    ON CONFLICT (bot, kind) DO UPDATE SET n = n + 1;
END;
"""
"""Version 2's tables, indexes and running totals, as its ``store_schema`` made them."""

Times = tuple[list[list[float]], list[list[float | None]]]


def scheduled(count: int) -> list[ScheduledGame]:
    return schedule("round-robin", list(BOTS), 3, count, SEED)[:count]


def play(sg: ScheduledGame, timed: bool) -> tuple[dict[str, Any], Times]:
    """Play one Trumps game: its record (with ``timing`` as the referee writes it if
    ``timed``; without, as before the referee kept it) and its times by seat, rounded as
    the store rounded them. The CPU times are made up (built-in bots have none): seat 0
    measured, seat 1 half, seat 2 never."""
    g = new_game("trumps", {"players": 3}, sg.deal_seed)
    bots = [make_bot(KINDS[name], f"{sg.seq}/{seat}") for seat, name in enumerate(sg.bots)]
    wall: list[list[float]] = [[] for _ in sg.bots]
    while not g.is_over:
        seat = g.to_move
        assert seat is not None
        started = time.perf_counter()
        action = bots[seat].act(g.view(seat))
        wall[seat].append(round((time.perf_counter() - started) * 1000 + 0.5, 3))
        g.apply(action)
    cpu: list[list[float | None]] = [
        [round(0.1 + i / 7, 3) for i in range(len(wall[0]))],
        [None if i % 2 else round(i / 3, 3) for i in range(len(wall[1]))],
        [None] * len(wall[2])]
    extra: dict[str, Any] = {"timing": {"wall_ms": wall, "cpu_ms": cpu}} if timed else {}
    record = game_record(g, sg.bots, forfeited=[False] * 3, game_id=sg.id,
                         table_id=sg.table_id, **extra)
    return json.loads(json.dumps(record)), (wall, cpu)


def write_v2_game(db: sqlite3.Connection, sg: ScheduledGame, record: dict[str, Any],
                  times: Times) -> None:
    """Store a finished game as version 2's ``game_finished`` did: linked after the
    head, its results, faults and a latencies row per seat (JSON as it wrote it)."""
    meta = dict(db.execute("SELECT key, value FROM meta"))
    prev = meta.get("chain_head") or chain.genesis(meta["seed_commitment"])
    seq = int(meta.get("chain_games", "0"))
    text = json.dumps(record, separators=(",", ":"))
    head = chain.link(prev, json.loads(text))
    db.execute("INSERT INTO games (id, seq, table_no, deal_no, rotation, deal_seed, bots,"
               " status, started_at, ended_at, chain_seq, chain_prev, chain, record)"
               " VALUES (?, ?, ?, ?, ?, ?, ?, 'done', 1.0, 2.0, ?, ?, ?, ?)",
               (sg.id, sg.seq, sg.table_no, sg.deal_no, sg.rotation, str(sg.deal_seed),
                json.dumps(sg.bots), seq, prev, head, text))
    db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                   [("chain_head", head), ("chain_games", str(seq + 1))])
    db.executemany("INSERT INTO results (game_id, seat, bot, score, place, forfeited)"
                   " VALUES (?, ?, ?, ?, ?, 0)",
                   [(sg.id, s, sg.bots[s], record["totals"][s], record["places"][s])
                    for s in range(3)])
    wall, cpu = times
    db.executemany("INSERT OR REPLACE INTO latencies (game_id, seat, bot, ms, cpu_ms)"
                   " VALUES (?, ?, ?, ?, ?)",
                   [(sg.id, s, sg.bots[s], json.dumps(wall[s]), json.dumps(cpu[s]))
                    for s in range(3)])


def make_v2_store(folder: Path, games: list[ScheduledGame],
                  untimed: int) -> dict[str, tuple[dict[str, Any], Times]]:
    """A version-2 store of ``games``, the first ``untimed`` of them with records from
    before ``timing``; each game's record and times by id."""
    folder.mkdir(parents=True, exist_ok=True)
    played = {}
    with closing(sqlite3.connect(folder / STORE_NAME)) as db, db:
        db.executescript(V2_SCHEMA)
        db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                       [("schema_version", "2"), ("name", "cup"), ("game", "trumps"),
                        ("seed", str(SEED)), ("seed_commitment", seed_commitment(SEED))])
        db.executemany("INSERT INTO bots (name, spec, version, author, protocol_version,"
                       " games, sandboxed, isolation, insecure) VALUES (?, ?, '', '', NULL,"
                       " '', 1, 'deal', 0)", [(name, KINDS[name]) for name in BOTS])
        for i, sg in enumerate(games):
            played[sg.id] = play(sg, timed=i >= untimed)
            write_v2_game(db, sg, *played[sg.id])
    return played


def figures(games: Any, meta: dict[str, str], bots: list[dict[str, Any]]) -> dict[str, Any]:
    """The leaderboard's answer and CPU times by bot."""
    board = build_leaderboard(games, meta, bots, resamples=20)
    return {b["name"]: (b["latency_ms"], b["cpu_ms"]) for b in board["bots"]}


def old_figures(folder: Path, played: dict[str, tuple[dict[str, Any], Times]]
                ) -> dict[str, Any]:
    """The figures version 2 showed: the games read back with their latencies rows."""
    with Store.open_readonly(folder) as store:
        games = [StoredGame(g.id, g.seq, g.table_no, g.deal_no, g.rotation, g.deal_seed,
                            g.bots, g.started_at, g.ended_at, g.record,
                            tuple(tuple(w) for w in played[g.id][1][0]),
                            tuple(tuple(c) for c in played[g.id][1][1]))
                 for g in store.iter_games()]
        return figures(games, store.meta(), store.bots())


def totals(folder: Path) -> dict[str, tuple[Any, ...]]:
    with closing(sqlite3.connect(folder / STORE_NAME)) as db:
        return {r[0]: (r[1], r[2], round(r[3], 6), r[4], round(r[5], 6)) for r in db.execute(
            "SELECT bot, games, decisions, wall_ms, cpu_decisions, cpu_ms FROM bot_totals")}


def tables(folder: Path) -> set[str]:
    with closing(sqlite3.connect(folder / STORE_NAME)) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def latency_rows(folder: Path) -> dict[tuple[str, int], tuple[Any, Any]]:
    with closing(sqlite3.connect(folder / STORE_NAME)) as db:
        return {(r[0], r[1]): (json.loads(r[2]), json.loads(r[3]) if r[3] else None)
                for r in db.execute("SELECT game_id, seat, ms, cpu_ms FROM latencies")}


def verified(folder: Path) -> int:
    with Store.open_readonly(folder) as store:
        count, _ = verify_store(store)
        return count


@pytest.fixture(scope="module")
def v2_store(tmp_path_factory: pytest.TempPathFactory,
             ) -> tuple[Path, dict[str, tuple[dict[str, Any], Times]]]:
    """A version-2 store of 6 games, the first 2 from before the record's ``timing``."""
    folder = tmp_path_factory.mktemp("v2") / "out"
    return folder, make_v2_store(folder, scheduled(7)[:6], untimed=2)


@pytest.fixture
def old(v2_store: tuple[Path, Any], tmp_path: Path) -> tuple[Path, Any]:
    folder, played = v2_store
    copy = tmp_path / "out"
    copy.mkdir()
    (copy / STORE_NAME).write_bytes((folder / STORE_NAME).read_bytes())
    return copy, played


def test_a_version_2_store_shows_the_same_times_read_as_it_is_and_migrated(
        old: tuple[Path, dict[str, Any]]) -> None:
    folder, played = old
    before = old_figures(folder, played)
    assert all(lat is not None and cpu is not None for lat, cpu in before.values())
    totals_before = totals(folder)
    decisions = sum(len(w) for _, (walls, _) in played.values() for w in walls)
    assert sum(t[1] for t in totals_before.values()) == decisions
    assert verified(folder) == 6  # read as it is: rows and records agree
    with Store.open_readonly(folder) as store:  # read as it is, by this arena
        assert store.meta()["schema_version"] == "2"
        assert figures(store.iter_games(), store.meta(), store.bots()) == before
    with Store.open(folder) as store:  # migrated
        assert store.meta()["schema_version"] == SCHEMA_VERSION == "3"
        assert figures(store.iter_games(), store.meta(), store.bots()) == before
    with Store.open_readonly(folder) as store:
        assert figures(store.iter_games(), store.meta(), store.bots()) == before
    assert totals(folder) == totals_before  # the live pages' totals, as they were
    assert verified(folder) == 6


def test_the_migration_keeps_only_the_rows_no_record_holds(
        old: tuple[Path, dict[str, Any]]) -> None:
    folder, played = old
    untimed = [game_id for game_id, (record, _) in played.items() if "timing" not in record]
    assert len(untimed) == 2 and len(latency_rows(folder)) == 18
    with Store.open(folder):
        pass
    rows = latency_rows(folder)
    assert {game_id for game_id, _ in rows} == set(untimed)  # their times' one copy
    for (game_id, seat), (ms, cpu) in rows.items():
        assert (ms, cpu) == (played[game_id][1][0][seat], played[game_id][1][1][seat])
    assert "bot_totals_latencies" not in triggers(folder)
    with closing(sqlite3.connect(folder / STORE_NAME)) as db:
        sums = {(r[0], r[1]): r[2:] for r in db.execute(
            "SELECT game_id, seat, decisions, wall_ms, cpu_decisions, cpu_ms FROM results")}
    for game_id, (_, (wall, cpu)) in played.items():  # from the record, or the rows
        for seat in range(3):
            measured = [x for x in cpu[seat] if x is not None]
            got = sums[game_id, seat]
            assert (got[0], got[2]) == (len(wall[seat]), len(measured))
            assert got[1] == pytest.approx(sum(wall[seat]))
            assert got[3] == pytest.approx(sum(measured))
    # a game stored now adds no row, and the totals grow by its record's times
    before = totals(folder)
    sg = scheduled(7)[6]
    record, (wall, _) = play(sg, timed=True)
    with Store.open(folder) as store:
        store.game_started(sg)
        store.game_finished(sg, record)
    assert latency_rows(folder) == rows
    after = totals(folder)
    assert after[sg.bots[0]][1] == before[sg.bots[0]][1] + len(wall[0])
    assert verified(folder) == 7
    with Store.open(folder):  # opening again changes nothing
        pass
    assert latency_rows(folder) == rows and totals(folder) == after


def triggers(folder: Path) -> set[str]:
    with closing(sqlite3.connect(folder / STORE_NAME)) as db:
        return {r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'")}


def test_a_version_2_store_whose_records_all_hold_their_times_loses_the_table(
        tmp_path: Path) -> None:
    played = make_v2_store(tmp_path, scheduled(3), untimed=0)
    before = old_figures(tmp_path, played)
    with Store.open(tmp_path) as store:
        assert figures(store.iter_games(), store.meta(), store.bots()) == before
    assert "latencies" not in tables(tmp_path)
    assert verified(tmp_path) == 3


def test_a_row_that_differs_from_its_record_is_kept_and_named(
        old: tuple[Path, dict[str, Any]]) -> None:
    folder, played = old
    timed = next(g for g, (record, _) in played.items() if "timing" in record)
    with closing(sqlite3.connect(folder / STORE_NAME)) as db, db:
        db.execute("UPDATE latencies SET ms = '[1.0, 2.0]' WHERE game_id = ? AND seat = 1",
                   (timed,))
    with pytest.raises(AuditError, match=f"game {timed}: changed: its latencies row for "
                                         f"seat 1 does not match the record's timing"):
        verified(folder)
    with Store.open(folder):
        pass
    assert (timed, 1) in latency_rows(folder) and (timed, 0) not in latency_rows(folder)
    with pytest.raises(AuditError, match=f"game {timed}: changed: its latencies row for "
                                         f"seat 1"):
        verified(folder)


def test_a_new_store_holds_each_time_once(tmp_path: Path) -> None:
    games = scheduled(3)
    played = {sg.id: play(sg, timed=True) for sg in games}
    with Store.open(tmp_path) as store:
        store.set_meta({"seed": str(SEED), "seed_commitment": seed_commitment(SEED)})
        for sg in games:
            store.game_started(sg)
            store.game_finished(sg, played[sg.id][0])
        board = figures(store.iter_games(), store.meta(), store.bots())
    # no table but games holds a per-decision list: results and the totals hold sums
    assert tables(tmp_path) == {"meta", "bots", "games", "results", "faults", "bot_totals",
                                "bot_fault_kinds"}
    with closing(sqlite3.connect(tmp_path / STORE_NAME)) as db:
        for table in tables(tmp_path) - {"games", "meta", "bots"}:
            for row in db.execute(f"SELECT * FROM {table}"):
                assert not any(isinstance(v, str) and v.startswith("[") for v in row), table
        stored = [json.loads(r[0]) for r in db.execute("SELECT record FROM games")]
    assert all("timing" in r for r in stored)
    wall = {name: [x for sg in games for seat, bot in enumerate(sg.bots) if bot == name
                   for x in played[sg.id][1][0][seat]] for name in BOTS}
    assert {name: board[name][0]["max"] for name in BOTS} == {
        name: max(wall[name]) for name in BOTS}
    got = totals(tmp_path)
    assert {name: (got[name][1], got[name][2]) for name in BOTS} == {
        name: (len(wall[name]), round(sum(wall[name]), 6)) for name in BOTS}
    assert verified(tmp_path) == 3


def test_verify_names_a_results_sum_that_is_not_its_records(tmp_path: Path) -> None:
    games = scheduled(2)
    with Store.open(tmp_path) as store:
        store.set_meta({"seed": str(SEED), "seed_commitment": seed_commitment(SEED)})
        for sg in games:
            store.game_started(sg)
            store.game_finished(sg, play(sg, timed=True)[0])
    with closing(sqlite3.connect(tmp_path / STORE_NAME)) as db, db:
        db.execute("UPDATE results SET wall_ms = wall_ms / 2 WHERE game_id = ? AND seat = 2",
                   (games[1].id,))
    with pytest.raises(AuditError, match=f"game {games[1].id}: changed: its results row for"
                                         f" seat 2 does not hold the sums of the record's "
                                         f"timing"):
        verified(tmp_path)
