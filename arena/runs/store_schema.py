"""The tournament store's schema: its tables, indexes and running totals, the
transaction every write runs in, the opening for writing (:func:`open_writable`: made if
new, checked, migrated) and the migrations of a version-1 store (:func:`migrate_v1`) and
a version-2 store (:func:`migrate_v2`). :mod:`arena.runs.store` uses it."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from arena.model.errors import one_line
from arena.model.record import RecordError, record_timing
from arena.runs.store_errors import (
    OPEN_WAIT_S,
    Busy,
    StoreError,
    StoreIOError,
    is_busy,
    store_error,
)
from arena.runs.store_readonly import check_file
from arena.runs.store_rows import SeatSums, checked_meta, latency_row, timing_sums

SCHEMA_VERSION = "3"
READABLE_VERSIONS = ("1", "2", SCHEMA_VERSION)
"""The versions :meth:`Store.open_readonly` reads (1 and 2 as they are, unmigrated)."""

GAMES = """CREATE TABLE IF NOT EXISTS {name} (
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
    chain_seq INTEGER,
    chain_prev TEXT,
    chain TEXT,
    record TEXT
)"""
"""The games table; ``record`` last: a row's other columns sit before its overflow pages."""
GAME_COLUMNS = ("id", "seq", "table_no", "deal_no", "rotation", "deal_seed", "bots",
                 "status", "started_at", "ended_at", "chain_seq", "chain_prev", "chain",
                 "record")

TABLES = (
    """CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS bots (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    version TEXT,
    author TEXT,
    protocol_version INTEGER,
    games TEXT,
    sandboxed INTEGER,
    isolation TEXT,
    insecure INTEGER
)""",
    GAMES.format(name="games"),
    """CREATE TABLE IF NOT EXISTS results (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    score INTEGER NOT NULL,
    place INTEGER NOT NULL,
    forfeited INTEGER NOT NULL,
    decisions INTEGER NOT NULL DEFAULT 0,
    wall_ms REAL NOT NULL DEFAULT 0,
    cpu_decisions INTEGER NOT NULL DEFAULT 0,
    cpu_ms REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (game_id, seat)
)""",
    """CREATE TABLE IF NOT EXISTS faults (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    round INTEGER,
    trick INTEGER,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL,
    action TEXT NOT NULL
)""",
)
"""A new store's tables. A game's decision times live in its record (``timing``, see
docs/records.md); ``results`` holds each seat's sums of them (decisions, answer time,
decisions with a CPU time, CPU time), which the running totals add up. A store of an
earlier version may also have ``latencies`` (:data:`LATENCIES`)."""

LATENCIES = "latencies"
"""The table of each seat's time of every decision, as JSON lists (``ms``, ``cpu_ms``),
that stores before version 3 wrote for every game. Kept, after the migration, only for
the games whose record has no ``timing`` (written before the referee kept it): their one
copy. A store without such games has no such table."""
TIMING_SUMS = (("decisions", "INTEGER NOT NULL DEFAULT 0"), ("wall_ms", "REAL NOT NULL DEFAULT 0"),
               ("cpu_decisions", "INTEGER NOT NULL DEFAULT 0"),
               ("cpu_ms", "REAL NOT NULL DEFAULT 0"))
"""The columns of ``results`` a version-2 store lacks: a seat's sums of its times."""

INDEXES = (
    # done_ids, count_done, reset_unfinished, and finished games in schedule order
    "CREATE INDEX IF NOT EXISTS games_status ON games (status, seq, id)",
    # the chain's end (its last entry) and the games in chain order
    "CREATE INDEX IF NOT EXISTS games_chain ON games (chain_seq) WHERE chain_seq IS NOT NULL",
    # finished games without a link (a store from before the chain): empty once linked
    "CREATE INDEX IF NOT EXISTS games_unchained ON games (seq)"
    " WHERE status = 'done' AND chain_seq IS NULL",
    # a game's faults (verify), and the cascade when a running game is reset
    "CREATE INDEX IF NOT EXISTS faults_game ON faults (game_id)",
    # the games a bot sat in (an author's games on the live page), newest first
    "CREATE INDEX IF NOT EXISTS results_bot ON results (bot, game_id)",
    # the games of a duplicate set (is a replay withheld: are its rotations all done?)
    "CREATE INDEX IF NOT EXISTS games_unit ON games (table_no, deal_no, status)",
)
"""Every query on the game path uses one of these (or a primary key)."""

TOTALS = (
    """CREATE TABLE IF NOT EXISTS bot_totals (
    bot TEXT PRIMARY KEY,
    games INTEGER NOT NULL DEFAULT 0,
    decisions INTEGER NOT NULL DEFAULT 0,
    wall_ms REAL NOT NULL DEFAULT 0,
    cpu_decisions INTEGER NOT NULL DEFAULT 0,
    cpu_ms REAL NOT NULL DEFAULT 0,
    faults INTEGER NOT NULL DEFAULT 0
)""",
    """CREATE TABLE IF NOT EXISTS bot_fault_kinds (
    bot TEXT NOT NULL,
    kind TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (bot, kind)
)""",
    """CREATE TRIGGER IF NOT EXISTS bot_totals_results AFTER INSERT ON results BEGIN
    INSERT INTO bot_totals (bot, games, decisions, wall_ms, cpu_decisions, cpu_ms)
    VALUES (NEW.bot, 1, NEW.decisions, NEW.wall_ms, NEW.cpu_decisions, NEW.cpu_ms)
    ON CONFLICT (bot) DO UPDATE SET games = games + 1,
        decisions = decisions + excluded.decisions,
        wall_ms = wall_ms + excluded.wall_ms,
        cpu_decisions = cpu_decisions + excluded.cpu_decisions,
        cpu_ms = cpu_ms + excluded.cpu_ms;
END""",
    """CREATE TRIGGER IF NOT EXISTS bot_totals_faults AFTER INSERT ON faults BEGIN
    INSERT INTO bot_totals (bot, faults) VALUES (NEW.bot, 1)
    ON CONFLICT (bot) DO UPDATE SET faults = faults + 1;
    INSERT INTO bot_fault_kinds (bot, kind, n) VALUES (NEW.bot, NEW.kind, 1)
    ON CONFLICT (bot, kind) DO UPDATE SET n = n + 1;
END""",
)
"""Each bot's running totals (games, decisions, answer and CPU time, faults by kind),
kept by triggers as the rows of a finished game are written, in its transaction: a bot's
page reads a row per version, whatever the number of games (no scan of results or
faults, no record parsed). The rows of a game are only ever added (a game is written
once, when it finishes), so the totals only ever add."""
TOTALS_NAMES = ("bot_totals", "bot_fault_kinds", "bot_totals_results", "bot_totals_faults")
OLD_TRIGGERS = ("bot_totals_latencies",)
"""Triggers of version 2 (its totals' times, added from each ``latencies`` row)."""

FILL_TOTALS = (
    "DELETE FROM bot_totals",
    "DELETE FROM bot_fault_kinds",
    "INSERT INTO bot_totals (bot, games, decisions, wall_ms, cpu_decisions, cpu_ms)"
    " SELECT bot, COUNT(*), SUM(decisions), TOTAL(wall_ms), SUM(cpu_decisions), TOTAL(cpu_ms)"
    " FROM results GROUP BY bot",
    "INSERT INTO bot_fault_kinds (bot, kind, n) SELECT bot, kind, COUNT(*) FROM faults"
    " GROUP BY bot, kind",
    """INSERT INTO bot_totals (bot, faults) SELECT bot, SUM(n) FROM bot_fault_kinds
    WHERE true GROUP BY bot ON CONFLICT (bot) DO UPDATE SET faults = excluded.faults""",
)
"""The totals made from the rows already stored (a store written before them)."""


ADDED_COLUMNS = (
    # table, column, declaration: nullable columns newer than the first schema, added to
    # a version-1 store that lacks them (the games table is rebuilt whole)
    ("bots", "sandboxed", "INTEGER"),
    ("bots", "isolation", "TEXT"),
    ("bots", "insecure", "INTEGER"),
    ("latencies", "cpu_ms", "TEXT"),
)



def has_meta(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                      " AND name = 'meta'").fetchone() is not None


def has_indexes(db: sqlite3.Connection) -> bool:
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    wanted = {"meta", "bots", "games", "results", "faults",
              *(statement.split()[5] for statement in INDEXES)}
    return wanted <= names


def has_totals(db: sqlite3.Connection) -> bool:
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    return set(TOTALS_NAMES) <= names


def add_totals(db: sqlite3.Connection) -> None:
    """Make the running totals (:data:`TOTALS`) of a store written before them, from its
    rows, in one transaction (looked at again inside it: of two processes opening the
    store at once, the second finds them made). Made whole again if a part was lost."""
    with Transaction(db):
        if has_totals(db):
            return
        for name in (*TOTALS_NAMES[2:], *OLD_TRIGGERS):
            db.execute(f"DROP TRIGGER IF EXISTS {name}")
        for statement in (*TOTALS, *FILL_TOTALS):
            db.execute(statement)



def migrate_v1(db: sqlite3.Connection) -> None:
    """Turn a version-1 store into version 2, in place and in one transaction.

    The games table is made again with the record as its last column (a version-1 store
    had it before the chain's columns, which ``ALTER TABLE`` added at the end, so every
    read of a chain column walked the record's overflow pages), its rows copied (games
    from before the chain get NULL links: the first game a run writes links them); then
    the indexes, the columns :data:`ADDED_COLUMNS` an older store lacks, and the version.
    The version is read again inside the write transaction: of two processes opening an
    old store at once, the second finds it migrated and changes nothing. Foreign keys are
    off meanwhile (dropping the old games table would otherwise delete every game's
    results, faults and latencies). A kill -9 midway leaves the version-1 store as it was.
    The copy needs free disk for a second copy of the games (the old pages are reused by
    later writes; the file does not shrink)."""
    db.execute("PRAGMA foreign_keys=OFF")
    try:
        with Transaction(db):
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None or row[0] != "1":
                return  # migrated by another process meanwhile
            for statement in TABLES:
                db.execute(statement)  # a table the first release did not have
            have: dict[str, set[str]] = {}
            for table in ("games", *(t for t, _, _ in ADDED_COLUMNS)):
                have[table] = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
            for table, column, declaration in ADDED_COLUMNS:
                if have[table] and column not in have[table]:  # (a table it has)
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
            columns = ", ".join(GAME_COLUMNS)
            select = ", ".join(c if c in have["games"] else "NULL" for c in GAME_COLUMNS)
            db.execute("DROP TABLE IF EXISTS games_v2")
            db.execute(GAMES.format(name="games_v2"))
            db.execute(f"INSERT INTO games_v2 ({columns}) SELECT {select} FROM games")
            db.execute("DROP TABLE games")
            db.execute("ALTER TABLE games_v2 RENAME TO games")
            for statement in INDEXES:
                db.execute(statement)
            db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    finally:
        db.execute("PRAGMA foreign_keys=ON")


def migrate_v2(db: sqlite3.Connection) -> None:
    """Turn a version-2 store into version 3, in place and in one transaction: a game's
    times are kept once, in its record (``timing``), no longer also in ``latencies``.

    ``results`` gains each seat's sums (:data:`TIMING_SUMS`), made from the record's
    ``timing``, or, for a record without one (written before the referee kept it), from
    the game's ``latencies`` rows. A ``latencies`` row equal to its record's ``timing``
    for that seat (as ``arena verify`` compares them) is a second copy and is deleted;
    the others are kept: the rows of a record without ``timing`` (their only copy), and
    rows that differ from their record or cannot be read (``arena verify`` names them). A
    ``latencies`` table left empty is dropped. The running totals keep the figures they
    had (their trigger on ``latencies`` is replaced by one on ``results``, nothing is
    added again). Every record is read once (SQLite's JSON functions, for its ``timing``
    alone). The version is read again inside the write transaction, as in
    :func:`migrate_v1`; a kill -9 midway leaves the version-2 store as it was."""
    with Transaction(db):
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or row[0] != "2":
            return  # migrated by another process meanwhile
        have = {r[1] for r in db.execute("PRAGMA table_info(results)")}
        for column, declaration in TIMING_SUMS:
            if column not in have:
                db.execute(f"ALTER TABLE results ADD COLUMN {column} {declaration}")
        legacy = has_table(db, LATENCIES)
        games = db.execute("SELECT id, bots, CASE WHEN json_valid(record) THEN"
                           " json_extract(record, '$.timing') END FROM games"
                           " WHERE status = 'done'")
        while batch := games.fetchmany(1000):  # the timings of 1,000 games in memory
            sums: list[tuple[int, float, int, float, str, int]] = []
            copies: list[tuple[int]] = []
            for game_id, bots, timing in batch:
                rows = db.execute(f"SELECT rowid, seat, ms, cpu_ms FROM {LATENCIES} WHERE"
                                  f" game_id = ?", (game_id,)).fetchall() if legacy else []
                found, same = _game_sums(bots, timing, rows)
                sums += [(*t, game_id, seat) for seat, t in found.items()]
                copies += [(rowid,) for rowid in same]
            db.executemany("UPDATE results SET decisions = ?, wall_ms = ?, cpu_decisions = ?,"
                           " cpu_ms = ? WHERE game_id = ? AND seat = ?", sums)
            if copies:
                db.executemany(f"DELETE FROM {LATENCIES} WHERE rowid = ?", copies)
        if legacy and db.execute(f"SELECT 1 FROM {LATENCIES} LIMIT 1").fetchone() is None:
            db.execute(f"DROP TABLE {LATENCIES}")
        for name in (*OLD_TRIGGERS, "bot_totals_results"):
            db.execute(f"DROP TRIGGER IF EXISTS {name}")
        if has_table(db, "bot_totals") and has_table(db, "bot_fault_kinds"):
            for statement in TOTALS:  # the new trigger on results; the rest are there
                db.execute(statement)
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                   (SCHEMA_VERSION,))


def _game_sums(bots: Any, timing: Any, rows: list[Any],
               ) -> tuple[dict[int, SeatSums], list[int]]:
    """For :func:`migrate_v2`: one game's sums by seat, and the row ids of its
    ``latencies`` rows that are copies of its record's ``timing``."""
    try:
        n = len(json.loads(bots))
        times = record_timing({"timing": json.loads(timing)}, n) if timing else None
    except (ValueError, TypeError, RecordError):
        times = None  # not read as a store reads it: arena verify names the game
    found: dict[int, SeatSums] = {}
    same: list[int] = []
    if times is not None:
        found = {seat: timing_sums(wall, cpu)
                 for seat, (wall, cpu) in enumerate(zip(*times, strict=True))}
    for rowid, seat, ms, cpu_ms in rows:
        try:
            wall, cpu = latency_row("", seat, ms, cpu_ms)
        except StoreError:
            continue  # kept as it is: a reader names it
        if times is None:
            found[seat] = timing_sums(wall, cpu or [])
        elif 0 <= seat < len(times[0]) and (wall, cpu) == (times[0][seat], times[1][seat]):
            same.append(rowid)
    return found, same


def has_table(db: sqlite3.Connection, name: str) -> bool:
    """Whether the store has the table ``name`` (one of ours: not a bound value)."""
    return db.execute(f"PRAGMA table_info({name})").fetchone() is not None



class Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
                return
            except BaseException:
                self._rollback()
                raise
        self._rollback()

    def _rollback(self) -> None:
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the error that ended the transaction is the one to report


def open_writable(folder: Path, path: Path) -> sqlite3.Connection:
    """A connection to the store at ``path`` in ``folder`` for writing: made if new,
    migrated if version 1, its lost tables and indexes made again. Tried again for up to
    :data:`~arena.runs.store_errors.OPEN_WAIT_S` seconds while another process
    holds it."""
    deadline = time.monotonic() + OPEN_WAIT_S
    while True:
        try:
            return _open_once(folder, path)
        except Busy as e:
            if time.monotonic() > deadline:
                raise StoreIOError(f"{path}: {e.args[0]} (busy for "
                                   f"{OPEN_WAIT_S:.0f} s: another process holds it)"
                                   ) from None
            time.sleep(0.02 + 0.08 * (time.monotonic() % 1))



def _open_once(folder: Path, path: Path) -> sqlite3.Connection:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreIOError(f"{path}: cannot open: {e.strerror or e}") from None
    new = not check_file(path)
    db: sqlite3.Connection | None = None
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=30)
        if not new and not has_meta(db):
            raise StoreError(f"{path}: not a trick-arena store (an SQLite database "
                             f"without its tables)")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        if new:  # the tables and the version at once: never a store without a version
            with Transaction(db):
                for statement in (*TABLES, *INDEXES, *TOTALS):
                    db.execute(statement)
                db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES "
                           "('schema_version', ?)", (SCHEMA_VERSION,))
    except (sqlite3.DatabaseError, UnicodeDecodeError, StoreError) as e:
        if db is not None:
            db.close()
        if isinstance(e, StoreError):
            raise
        if is_busy(e):
            raise Busy(str(e)) from None
        raise store_error(e, path, "open") from None
    version: str | None = None
    try:
        version = _version(db, path)
        if version is None:
            raise StoreError(f"{path}: not a trick-arena store (no schema version)")
        if version == "1":
            migrate_v1(db)
            version = "2"
        if version == "2":
            migrate_v2(db)
        elif version != SCHEMA_VERSION:
            raise StoreError(f"{path}: store schema version {one_line(version, 40)}; "
                             f"this arena reads version {SCHEMA_VERSION} (and migrates "
                             f"versions 1 and 2)")
        elif not has_indexes(db):  # a table or index lost (or new): made again
            with Transaction(db):
                for statement in (*TABLES, *INDEXES):
                    db.execute(statement)
        if not has_totals(db):  # a store from before the running totals
            add_totals(db)
    except StoreError:
        db.close()
        raise
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        db.close()
        if is_busy(e):
            raise Busy(str(e)) from None
        raise store_error(e, path, f"migrate the store (version {version} to "
                                   f"{SCHEMA_VERSION})") from None
    return db


def _version(db: sqlite3.Connection, path: Path) -> str | None:
    try:
        rows = db.execute("SELECT key, value FROM meta").fetchall()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        raise store_error(e, path, "read") from None
    return checked_meta(path, rows).get("schema_version")
