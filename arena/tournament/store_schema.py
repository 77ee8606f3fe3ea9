"""The tournament store's schema: its tables, indexes and running totals, the
transaction every write runs in, the opening for writing (:func:`open_writable`: made if
new, checked, migrated) and the migration of a version-1 store (:func:`migrate_v1`).
:mod:`arena.tournament.store` uses it."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from arena.model.errors import one_line
from arena.tournament.store_errors import (
    OPEN_WAIT_S,
    Busy,
    StoreError,
    StoreIOError,
    is_busy,
    store_error,
)
from arena.tournament.store_readonly import check_file
from arena.tournament.store_rows import checked_meta

SCHEMA_VERSION = "2"
READABLE_VERSIONS = ("1", SCHEMA_VERSION)
"""The versions :meth:`Store.open_readonly` reads (1 as it is, unmigrated)."""

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
    """CREATE TABLE IF NOT EXISTS latencies (
    game_id TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    ms TEXT NOT NULL,
    cpu_ms TEXT,
    PRIMARY KEY (game_id, seat)
)""",
)

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
    INSERT INTO bot_totals (bot, games) VALUES (NEW.bot, 1)
    ON CONFLICT (bot) DO UPDATE SET games = games + 1;
END""",
    """CREATE TRIGGER IF NOT EXISTS bot_totals_latencies AFTER INSERT ON latencies BEGIN
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
page reads a row per version, whatever the number of games (no scan of results, faults
or latencies, no latency list parsed). The rows of a game are only ever added (a game is
written once, when it finishes), so the totals only ever add."""
TOTALS_NAMES = ("bot_totals", "bot_fault_kinds", "bot_totals_results",
                 "bot_totals_latencies", "bot_totals_faults")

FILL_TOTALS = (
    "DELETE FROM bot_totals",
    "DELETE FROM bot_fault_kinds",
    "INSERT INTO bot_totals (bot, games) SELECT bot, COUNT(*) FROM results GROUP BY bot",
    """INSERT INTO bot_totals (bot, decisions, wall_ms)
    SELECT l.bot, COUNT(j.value), TOTAL(j.value) FROM latencies AS l, json_each(l.ms) AS j
    WHERE true GROUP BY l.bot
    ON CONFLICT (bot) DO UPDATE SET decisions = excluded.decisions,
        wall_ms = excluded.wall_ms""",
    """INSERT INTO bot_totals (bot, cpu_decisions, cpu_ms)
    SELECT l.bot, COUNT(j.value), TOTAL(j.value) FROM latencies AS l, json_each(l.cpu_ms) AS j
    WHERE l.cpu_ms IS NOT NULL GROUP BY l.bot
    ON CONFLICT (bot) DO UPDATE SET cpu_decisions = excluded.cpu_decisions,
        cpu_ms = excluded.cpu_ms""",
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
    wanted = {"meta", "bots", "games", "results", "faults", "latencies",
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
        for name in TOTALS_NAMES[2:]:
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
                if column not in have[table]:
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
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                       (SCHEMA_VERSION,))
    finally:
        db.execute("PRAGMA foreign_keys=ON")



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
    :data:`~arena.tournament.store_errors.OPEN_WAIT_S` seconds while another process
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
    try:
        version = _version(db, path)
        if version is None:
            raise StoreError(f"{path}: not a trick-arena store (no schema version)")
        if version == "1":
            migrate_v1(db)
            add_totals(db)
        elif version != SCHEMA_VERSION:
            raise StoreError(f"{path}: store schema version {one_line(version, 40)}; "
                             f"this arena reads version {SCHEMA_VERSION} (and migrates "
                             f"version 1)")
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
        raise store_error(e, path, "migrate the store (version 1 to 2)") from None
    return db


def _version(db: sqlite3.Connection, path: Path) -> str | None:
    try:
        rows = db.execute("SELECT key, value FROM meta").fetchall()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        raise store_error(e, path, "read") from None
    return checked_meta(path, rows).get("schema_version")
