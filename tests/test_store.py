"""The tournament store on real SQLite files: CPU time per decision, the bots' sandbox flag
and isolation, and stores written before those columns existed.

The games are real: built-in bots play a scheduled game in process and ``game_record``
makes its record, which goes through ``Store.game_finished`` and back out of
``Store.iter_games``.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from arena.bots import make_bot
from arena.model.record import game_record
from arena.report.board import build_leaderboard
from arena.rules import new_game
from arena.runs.schedule import ScheduledGame, schedule
from arena.runs.store import SCHEMA_VERSION, STORE_NAME, Store, StoreError

BOTS = ("heur", "rand-a", "rand-b")
KINDS = {"heur": "heuristic", "rand-a": "random", "rand-b": "random"}
OPTIONS = {"players": 3}

OLD_SCHEMA = """
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE bots (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    version TEXT,
    author TEXT,
    protocol_version INTEGER,
    games TEXT
);
CREATE TABLE games (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,
    table_no INTEGER NOT NULL,
    deal_no INTEGER NOT NULL,
    rotation INTEGER NOT NULL,
    deal_seed TEXT NOT NULL,
    bots TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('running', 'done')),
    started_at REAL,
    ended_at REAL,
    record TEXT
);
CREATE TABLE results (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    score INTEGER NOT NULL,
    place INTEGER NOT NULL,
    forfeited INTEGER NOT NULL,
    PRIMARY KEY (game_id, seat)
);
CREATE TABLE faults (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    round INTEGER,
    trick INTEGER,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL,
    action TEXT NOT NULL
);
CREATE TABLE latencies (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    ms TEXT NOT NULL,
    PRIMARY KEY (game_id, seat)
);
"""
"""The schema of the first release, before ``cpu_ms``, ``sandboxed`` and ``isolation``."""


def scheduled(count: int) -> list[ScheduledGame]:
    return schedule("round-robin", list(BOTS), 3, count, 11)[:count]


def play(sg: ScheduledGame) -> tuple[dict[str, Any], list[list[float]]]:
    """Play one Trumps game in process: its record and the answer latencies by seat."""
    g = new_game("trumps", OPTIONS, sg.deal_seed)
    bots = [make_bot(KINDS[name], f"{sg.seq}/{seat}") for seat, name in enumerate(sg.bots)]
    latencies: list[list[float]] = [[] for _ in sg.bots]
    while not g.is_over:
        seat = g.to_move
        assert seat is not None
        started = time.perf_counter()
        action = bots[seat].act(g.view(seat))
        latencies[seat].append((time.perf_counter() - started) * 1000)
        g.apply(action)
    record = game_record(g, sg.bots, forfeited=[False] * len(sg.bots), game_id=sg.id,
                         table_id=sg.table_id)
    return record, latencies


def columns(path: Path, table: str) -> list[str]:
    with sqlite3.connect(path) as db:
        return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]


def test_cpu_time_round_trips(tmp_path: Path) -> None:
    sg1, sg2 = scheduled(2)
    record1, lat1 = play(sg1)
    record2, lat2 = play(sg2)
    # seat 0 measured everywhere, seat 1 partly (None: not measured), seat 2 never
    cpu1: list[list[float | None]] = [[0.123456 + i for i in range(len(lat1[0]))],
                                      [None if i % 2 else 2.0004 for i in range(len(lat1[1]))],
                                      [None] * len(lat1[2])]
    # as the referee writes them (rounded to 0.001 ms)
    record1["timing"] = {"wall_ms": [[round(x, 3) for x in ms] for ms in lat1],
                         "cpu_ms": [[None if x is None else round(x, 3) for x in seat]
                                    for seat in cpu1]}
    record2["timing"] = {"wall_ms": [[round(x, 3) for x in ms] for ms in lat2],
                         "cpu_ms": [[None] * len(ms) for ms in lat2]}  # built-in bots
    with Store.open(tmp_path) as store:
        for sg in (sg1, sg2):
            store.game_started(sg)
        store.game_finished(sg1, record1)
        store.game_finished(sg2, record2)
    with Store.open(tmp_path) as store:
        games = {g.id: g for g in store.iter_games()}
    one, two = games[sg1.id], games[sg2.id]
    assert one.cpu_ms == (
        tuple(round(0.123456 + i, 3) for i in range(len(lat1[0]))),
        tuple(None if i % 2 else 2.0 for i in range(len(lat1[1]))),
        (None,) * len(lat1[2]),
    )
    assert one.latencies_ms == tuple(tuple(round(x, 3) for x in ms) for ms in lat1)
    assert one.record == record1  # the "timing" key is kept as part of the record
    assert one.record["timing"]["cpu_ms"][1][1] is None
    assert two.cpu_ms == tuple((None,) * len(ms) for ms in lat2)
    assert two.latencies_ms == tuple(tuple(round(x, 3) for x in ms) for ms in lat2)
    with sqlite3.connect(tmp_path / STORE_NAME) as db:  # the sums, beside the record
        sums = db.execute("SELECT decisions, cpu_decisions, cpu_ms FROM results WHERE"
                          " game_id = ? ORDER BY seat", (sg1.id,)).fetchall()
        assert [(d, c) for d, c, _ in sums] == [(len(lat1[0]), len(lat1[0])),
                                                (len(lat1[1]), (len(lat1[1]) + 1) // 2),
                                                (len(lat1[2]), 0)]
        assert sums[1][2] == pytest.approx(2.0 * ((len(lat1[1]) + 1) // 2))
    db.close()


def test_bots_carry_sandbox_and_isolation(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.set_bot("trusted", "cmd:./mine", "1.0", "me", 1, ["wizard"], sandboxed=False,
                      isolation="game")
        store.set_bot("plain", "cmd:./theirs")
        store.set_bot("far", "grpc://192.0.2.7:50051", sandboxed=False, insecure=True)
        bots = {b["name"]: b for b in store.bots()}
    assert bots["trusted"] == {"name": "trusted", "spec": "cmd:./mine", "version": "1.0",
                               "author": "me", "protocol_version": 1, "games": ["wizard"],
                               "sandboxed": False, "isolation": "game", "insecure": False}
    assert bots["plain"]["sandboxed"] is True and bots["plain"]["isolation"] == ""
    assert bots["far"]["insecure"] is True and bots["plain"]["insecure"] is False


def make_old_store(folder: Path, games: list[ScheduledGame]) -> list[dict[str, Any]]:
    """A store as the first release wrote it: the old tables, a bot, finished games."""
    folder.mkdir(parents=True, exist_ok=True)
    records = []
    with sqlite3.connect(folder / STORE_NAME) as db:
        db.executescript(OLD_SCHEMA)
        db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                       [("schema_version", "1"), ("name", "old cup"), ("game", "trumps")])
        for name in BOTS:
            db.execute("INSERT INTO bots (name, spec, version, author, protocol_version, games)"
                       " VALUES (?, ?, '', '', NULL, '')", (name, KINDS[name]))
        for sg in games:
            record, latencies = play(sg)
            records.append(record)
            db.execute(
                "INSERT INTO games (id, seq, table_no, deal_no, rotation, deal_seed, bots,"
                " status, started_at, ended_at, record) VALUES (?, ?, ?, ?, ?, ?, ?, 'done',"
                " 0, 1, ?)", (sg.id, sg.seq, sg.table_no, sg.deal_no, sg.rotation,
                              str(sg.deal_seed), json.dumps(sg.bots), json.dumps(record)))
            for s, ms in enumerate(latencies):
                db.execute("INSERT INTO latencies (game_id, seat, bot, ms) VALUES (?, ?, ?, ?)",
                           (sg.id, s, sg.bots[s], json.dumps([round(x, 3) for x in ms])))
                db.execute("INSERT INTO results (game_id, seat, bot, score, place, forfeited)"
                           " VALUES (?, ?, ?, ?, ?, 0)",
                           (sg.id, s, sg.bots[s], record["totals"][s], record["places"][s]))
    db.close()
    return records


def test_an_old_store_opens_and_gains_the_new_columns(tmp_path: Path) -> None:
    games = scheduled(3)
    records = make_old_store(tmp_path, games[:2])
    path = tmp_path / STORE_NAME
    assert "cpu_ms" not in columns(path, "latencies")
    assert "sandboxed" not in columns(path, "bots")
    with Store.open(tmp_path) as store:
        assert store.meta()["schema_version"] == SCHEMA_VERSION == "3"  # migrated
        old = list(store.iter_games())
        assert [g.record for g in old] == records
        assert all(g.cpu_ms == ((), (), ()) for g in old)
        assert all(len(g.latencies_ms[0]) > 0 for g in old)
        assert {b["name"]: (b["sandboxed"], b["isolation"], b["insecure"])
                for b in store.bots()} == {name: (True, "", False) for name in BOTS}
        # the store is usable as a new one: a game with CPU time, a bot with the flag
        sg = games[2]
        record, latencies = play(sg)
        cpu = [[1.5] * len(ms) for ms in latencies]
        record["timing"] = {"wall_ms": [[round(x, 3) for x in ms] for ms in latencies],
                            "cpu_ms": cpu}
        store.game_started(sg)
        store.game_finished(sg, record)
        store.set_bot("rand-b", "random", sandboxed=False, isolation="deal", insecure=True)
        board = build_leaderboard(store.iter_games(), store.meta(), store.bots(),
                                  resamples=20)
    assert columns(path, "latencies")[-1] == "cpu_ms"  # the old games' times: kept
    assert columns(path, "bots")[-3:] == ["sandboxed", "isolation", "insecure"]
    with sqlite3.connect(path) as db:  # the new game's times are in its record alone
        assert db.execute("SELECT COUNT(*) FROM latencies WHERE game_id = ?",
                          (games[2].id,)).fetchone() == (0,)
        assert db.execute("SELECT COUNT(DISTINCT game_id) FROM latencies").fetchone() == (2,)
    db.close()
    assert board["games"] == 3 and board["isolation"] == "shared"  # old store: not said
    assert {b["name"]: (b["sandboxed"], b["insecure"]) for b in board["bots"]} == {
        "heur": (True, False), "rand-a": (True, False), "rand-b": (False, True)}
    assert all(b["cpu_ms"] == {"p50": 1.5, "p95": 1.5, "max": 1.5} for b in board["bots"])
    with Store.open(tmp_path) as store:  # opening again changes nothing
        assert [g.cpu_ms for g in store.iter_games()][-1] == tuple(
            tuple(c) for c in cpu)
    assert columns(path, "latencies").count("cpu_ms") == 1


def test_an_old_store_without_new_games_reads_as_before(tmp_path: Path) -> None:
    make_old_store(tmp_path, scheduled(2))
    with Store.open(tmp_path) as store:
        board = build_leaderboard(store.iter_games(), store.meta(), store.bots(),
                                  resamples=20)
    assert board["isolation"] == "shared"
    assert all(b["cpu_ms"] is None and b["sandboxed"] for b in board["bots"])
    assert all(b["latency_ms"] is not None for b in board["bots"])


def test_another_schema_version_is_still_refused(tmp_path: Path) -> None:
    make_old_store(tmp_path, [])
    with sqlite3.connect(tmp_path / STORE_NAME) as db:
        db.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    db.close()
    with pytest.raises(StoreError, match="schema version 4"):
        Store.open(tmp_path)
    assert "cpu_ms" not in columns(tmp_path / STORE_NAME, "latencies")  # left as it was


def test_two_processes_opening_an_old_store_at_once_both_succeed(tmp_path: Path) -> None:
    make_old_store(tmp_path, scheduled(1))
    code = ("import sys; from pathlib import Path; from arena.runs.store import Store; "
            "s = Store.open(Path(sys.argv[1])); print(len(list(s.iter_games()))); s.close()")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(4)]
    results = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, results
    assert [out.strip() for out, _ in results] == ["1"] * 4
    assert columns(tmp_path / STORE_NAME, "latencies").count("cpu_ms") == 1
