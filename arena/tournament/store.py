"""The tournament store: one SQLite file (WAL mode) in the output folder.

It holds the tournament file as run and its hash, the bots and the versions they
reported, and every game: table, deal seed, rotation, status, start and end time, the
full record, per-seat results, faults and answer latencies. A game is written in one
transaction when it finishes, so a kill -9 at any moment loses at most the games in
flight and never leaves the store inconsistent. Games marked ``running`` when a run
stopped are played again from the start by the next run.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.tournament.schedule import ScheduledGame

STORE_NAME = "tournament.sqlite"
SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS bots (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    version TEXT,
    author TEXT,
    protocol_version INTEGER,
    games TEXT
);
CREATE TABLE IF NOT EXISTS games (
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
CREATE TABLE IF NOT EXISTS results (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    score INTEGER NOT NULL,
    place INTEGER NOT NULL,
    forfeited INTEGER NOT NULL,
    PRIMARY KEY (game_id, seat)
);
CREATE TABLE IF NOT EXISTS faults (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    round INTEGER,
    trick INTEGER,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL,
    action TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS latencies (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    ms TEXT NOT NULL,
    PRIMARY KEY (game_id, seat)
);
"""


class StoreError(RuntimeError):
    """The store cannot be used (not a tournament store, or another version)."""


@dataclass(frozen=True, slots=True)
class StoredGame:
    """A finished game as read back from the store."""

    id: str
    seq: int
    table_no: int
    deal_no: int
    rotation: int
    deal_seed: int
    bots: tuple[str, ...]
    started_at: float
    ended_at: float
    record: dict[str, Any]
    latencies_ms: tuple[tuple[float, ...], ...]
    """Answer latencies by seat, in milliseconds."""

    @property
    def unit(self) -> str:
        """The duplicate set (see :attr:`ScheduledGame.unit`)."""
        return f"t{self.table_no}-d{self.deal_no}"


class Store:
    """A tournament store. Use :meth:`open`; close with :meth:`close` (or ``with``)."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.db = connection
        self.path = path

    @classmethod
    def open(cls, folder: Path) -> Store:
        """Open (creating if needed) the store in ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / STORE_NAME
        try:
            db = sqlite3.connect(path, isolation_level=None, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{path}: not a trick-arena store ({e})") from None
        store = cls(db, path)
        version = store.meta().get("schema_version")
        if version is None:
            store.set_meta({"schema_version": SCHEMA_VERSION})
        elif version != SCHEMA_VERSION:
            raise StoreError(f"{path}: store schema version {version}; this arena reads "
                             f"version {SCHEMA_VERSION}")
        return store

    @classmethod
    def exists(cls, folder: Path) -> bool:
        return (folder / STORE_NAME).exists()

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- metadata and bots --------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM meta").fetchall())

    def set_meta(self, values: Mapping[str, str]) -> None:
        with self._transaction():
            self.db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                list(values.items()))

    def set_bot(self, name: str, spec: str, version: str = "", author: str = "",
                protocol_version: int | None = None, games: Sequence[str] = ()) -> None:
        with self._transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO bots (name, spec, version, author, protocol_version,"
                " games) VALUES (?, ?, ?, ?, ?, ?)",
                (name, spec, version, author, protocol_version, ",".join(games)))

    def bots(self) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT name, spec, version, author, protocol_version, games FROM bots "
            "ORDER BY name").fetchall()
        return [{"name": r[0], "spec": r[1], "version": r[2], "author": r[3],
                 "protocol_version": r[4], "games": [g for g in (r[5] or "").split(",") if g]}
                for r in rows]

    # -- games ------------------------------------------------------------------------

    def done_ids(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT id FROM games WHERE status = 'done'")}

    def count_done(self) -> int:
        return int(self.db.execute(
            "SELECT COUNT(*) FROM games WHERE status = 'done'").fetchone()[0])

    def count_faults(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM faults").fetchone()[0])

    def reset_unfinished(self) -> int:
        """Forget games a stopped run left ``running``; returns how many."""
        with self._transaction():
            return self.db.execute("DELETE FROM games WHERE status = 'running'").rowcount

    def game_started(self, game: ScheduledGame) -> None:
        with self._transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO games (id, seq, table_no, deal_no, rotation, deal_seed,"
                " bots, status, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)",
                (game.id, game.seq, game.table_no, game.deal_no, game.rotation,
                 str(game.deal_seed), json.dumps(game.bots), time.time()))

    def game_finished(self, game: ScheduledGame, record: Mapping[str, Any],
                      latencies_ms: Sequence[Sequence[float]]) -> None:
        """Store a finished game with its results, faults and latencies, atomically."""
        forfeited = record.get("forfeited") or [False] * len(game.bots)
        with self._transaction():
            self.db.execute(
                "UPDATE games SET status = 'done', ended_at = ?, record = ? WHERE id = ?",
                (time.time(), json.dumps(record, separators=(",", ":")), game.id))
            self.db.executemany(
                "INSERT OR REPLACE INTO results (game_id, seat, bot, score, place, forfeited)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [(game.id, s, game.bots[s], record["totals"][s], record["places"][s],
                  int(bool(forfeited[s]))) for s in range(len(game.bots))])
            self.db.executemany(
                "INSERT INTO faults (game_id, seat, bot, round, trick, kind, detail, action)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(game.id, f["seat"], game.bots[f["seat"]], f.get("round"), f.get("trick"),
                  f["kind"], f["detail"], f["action"]) for f in record.get("faults", [])])
            self.db.executemany(
                "INSERT OR REPLACE INTO latencies (game_id, seat, bot, ms) VALUES (?, ?, ?, ?)",
                [(game.id, s, game.bots[s], json.dumps([round(x, 3) for x in ms]))
                 for s, ms in enumerate(latencies_ms)])

    def iter_games(self) -> Iterator[StoredGame]:
        """Every finished game in schedule order, one at a time (records are not kept)."""
        cursor = self.db.execute(
            "SELECT g.id, g.seq, g.table_no, g.deal_no, g.rotation, g.deal_seed, g.bots,"
            " g.started_at, g.ended_at, g.record FROM games g WHERE g.status = 'done'"
            " ORDER BY g.seq")
        for row in cursor:
            lat = {s: tuple(json.loads(ms)) for s, ms in self.db.execute(
                "SELECT seat, ms FROM latencies WHERE game_id = ?", (row[0],))}
            bots = tuple(json.loads(row[6]))
            yield StoredGame(row[0], row[1], row[2], row[3], row[4], int(row[5]), bots,
                             row[7], row[8], json.loads(row[9]),
                             tuple(lat.get(s, ()) for s in range(len(bots))))

    def _transaction(self) -> _Transaction:
        return _Transaction(self.db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
