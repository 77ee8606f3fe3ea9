"""The tournament store: one SQLite file (WAL mode) in the output folder.

It holds the tournament file as run and its hash, the bots and the versions they
reported, and every game: table, deal seed, rotation, status, start and end time, the
full record, per-seat results, faults, answer latencies and the bots' CPU time per
decision. A game is written in one transaction when it finishes, so a kill -9 at any
moment loses at most the games in flight and never leaves the store inconsistent. Games
marked ``running`` when a run stopped are played again from the start by the next run.

Each finished game's record is linked into the results chain (:mod:`arena.model.chain`) in the
order the games are written: ``games.chain_seq``, ``chain_prev`` and ``chain``, with the
head and the number of links in ``meta`` (``chain_head``, ``chain_games``), all in the
game's transaction.

**A constant cost per game.** Every query a run makes per game goes through an index
(:data:`_INDEXES`): the chain's end is the last entry of ``games_chain``, games from
before the chain are found in ``games_unchained`` (empty once they are linked), the rows
of one game by its id. The record is the last column of ``games``, so reading a row's
other columns never walks the record's overflow pages. Finished games are read in chain
order along ``games_chain``, without a sort (no temporary space).

**One writer.** Every write needs the output folder's run lock (:mod:`arena.tournament.lock`):
a run takes it first and hands it to :meth:`Store.open`; a store opened without it takes
it at its first write, and a second writer is refused (:class:`StoreLocked`). So the
chain is only ever extended by one process, from the head it reads in its own write
transaction. Readers never take the lock.

**Versions.** :data:`SCHEMA_VERSION` is ``"2"``: the record moved last, the indexes. A
version-1 store (an earlier arena's) is migrated in place the first time
:meth:`Store.open` opens it, in one transaction (see :func:`_migrate_v1`);
:meth:`Store.open_readonly` reads a version-1 store as it is, without migrating it.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from arena.model import chain
from arena.model.errors import one_line, show
from arena.rules.cards import CardError, parse_card
from arena.tournament.lock import Held, LockError, RunLock
from arena.tournament.schedule import ScheduledGame

STORE_NAME = "tournament.sqlite"
SCHEMA_VERSION = "2"
READABLE_VERSIONS = ("1", SCHEMA_VERSION)
"""The versions :meth:`Store.open_readonly` reads (1 as it is, unmigrated)."""

_GAMES = """CREATE TABLE IF NOT EXISTS {name} (
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
_GAME_COLUMNS = ("id", "seq", "table_no", "deal_no", "rotation", "deal_seed", "bots",
                 "status", "started_at", "ended_at", "chain_seq", "chain_prev", "chain",
                 "record")

_TABLES = (
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
    _GAMES.format(name="games"),
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

_INDEXES = (
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

_TOTALS = (
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
_TOTALS_NAMES = ("bot_totals", "bot_fault_kinds", "bot_totals_results",
                 "bot_totals_latencies", "bot_totals_faults")

_FILL_TOTALS = (
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


@dataclass(frozen=True, slots=True)
class BotTotals:
    """The running totals of some bots (the versions of one), from :data:`_TOTALS`."""

    games: int
    """Games played, counted once per version that sat in them."""
    decisions: int
    wall_ms: float
    """The answer times' sum."""
    cpu_decisions: int
    """Decisions whose CPU time was measured."""
    cpu_ms: float
    faults: int
    fault_kinds: dict[str, int]


@dataclass(frozen=True, slots=True)
class GameRow:
    """A finished game as a list shows it, from the small tables (no record parsed)."""

    id: str
    seq: int
    table_no: int
    deal_no: int
    bots: tuple[str, ...]
    ended_at: float
    totals: tuple[int, ...]
    places: tuple[int, ...]
    faults: tuple[int, ...]
    """Faults by seat."""

_ADDED_COLUMNS = (
    # table, column, declaration: nullable columns newer than the first schema, added to
    # a version-1 store that lacks them (the games table is rebuilt whole)
    ("bots", "sandboxed", "INTEGER"),
    ("bots", "isolation", "TEXT"),
    ("bots", "insecure", "INTEGER"),
    ("latencies", "cpu_ms", "TEXT"),
)


class StoreError(RuntimeError):
    """The store cannot be used (not a tournament store, another version, damaged, or a
    stored value that is not what the arena wrote); the message is one line naming the
    file (and the game or key at fault)."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class StoreIOError(StoreError):
    """The store could not be read or written for a reason outside it: the disk (or the
    temporary space) is full, an I/O error, a read-only folder, no permission, a busy
    file. It says nothing about what the store holds (``arena verify`` exits 3, not 1)."""


class StoreLocked(StoreIOError):
    """Another process holds the output folder's run lock (it names its PID)."""


_SQLITE_CAUSES = {
    # SQLite's primary result codes that are about the machine, not the file's content
    3: "no permission",      # SQLITE_PERM
    5: "busy: another process holds it",  # SQLITE_BUSY
    6: "busy: another process holds it",  # SQLITE_LOCKED
    7: "out of memory",      # SQLITE_NOMEM
    8: "read-only",          # SQLITE_READONLY
    10: "I/O error",         # SQLITE_IOERR
    13: "disk full",         # SQLITE_FULL (the store's disk, or the temporary space)
    14: "cannot open the file",  # SQLITE_CANTOPEN
}


def store_error(error: BaseException, path: Path, verb: str) -> StoreError:
    """The one-line error for an error of SQLite on the store at ``path`` while it was
    being ``verb`` ("read", "write", ...): :class:`StoreIOError` for a full disk, an I/O
    error and the like (by SQLite's result code, never by its text), else "damaged or
    not a trick-arena store"."""
    code = getattr(error, "sqlite_errorcode", None)
    cause = _SQLITE_CAUSES.get(code & 0xFF) if isinstance(code, int) else None
    if cause is not None:
        return StoreIOError(f"{path}: cannot {verb}: {cause} ({error})")
    return StoreError(f"{path}: damaged or not a trick-arena store ({error})")


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(verb: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Turn SQLite's errors into :class:`StoreError` (see :func:`store_error`)."""
    def decorate(method: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(method)
        def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return method(*args, **kwargs)
            except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
                store = args[0]
                assert isinstance(store, Store)
                raise store_error(e, store.path, verb) from None
        return guarded
    return decorate


_INT_META = ("seed", "seats", "deals", "move_ms", "bank_ms", "max_faults", "tables_per_bot")
"""Meta keys whose values are integers in decimal."""
_JSON_META = {"options": dict, "candidates": list, "bots": list, "skipped": list,
              "house": dict, "lineage": dict, "seasons": list}
"""Meta keys whose values are JSON, and the type they hold."""
_DECIMAL = re.compile(r"-?[0-9]{1,80}")

_SELECT_GAME = ("SELECT g.id, g.seq, g.table_no, g.deal_no, g.rotation, g.deal_seed, g.bots,"
                " g.started_at, g.ended_at, g.record, {links} FROM games AS g {where}")


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
    cpu_ms: tuple[tuple[float | None, ...], ...] = ()
    """The bot process's CPU time per decision by seat, in milliseconds (None where it was
    not measured); a seat's tuple is empty when none was stored for it."""
    chain_seq: int | None = None
    """The game's position in the results chain, its previous link and its link (None for
    a game written before the chain existed)."""
    chain_prev: str | None = None
    chain: str | None = None

    @property
    def unit(self) -> str:
        """The duplicate set (see :attr:`ScheduledGame.unit`)."""
        return f"t{self.table_no}-d{self.deal_no}"


class Store:
    """A tournament store. Use :meth:`open` or :meth:`open_readonly`; close with
    :meth:`close` (or ``with``)."""

    def __init__(self, connection: sqlite3.Connection, path: Path, *,
                 lock: RunLock | None = None, owns_lock: bool = False,
                 readonly: bool = False, legacy: bool = False) -> None:
        self.db = connection
        self.path = path
        self.readonly = readonly
        self._lock = lock
        self._owns_lock = owns_lock
        self._legacy = legacy
        """A version-1 store read as it is (:meth:`open_readonly`): no indexes."""
        self._chain_columns: bool | None = None

    @classmethod
    def open(cls, folder: Path, lock: RunLock | None = None) -> Store:
        """Open (creating if needed) the store in ``folder``, migrating a version-1 store.

        An existing file must be a store: an empty file, a damaged one or another
        database is refused with :class:`StoreError` and left as it is. Another process
        opening the same store at the same moment (e.g. both turning an old store's
        journal to WAL) can make SQLite answer "locked" at once, without its busy wait:
        the opening is then tried again, for up to :data:`OPEN_WAIT_S` seconds.

        ``lock``: the folder's run lock, taken by the caller (a run takes it before
        ``--fresh`` removes anything). The store owns it from then on: it is released
        when the store is closed, or at once if the opening fails. Without it, the store
        takes the lock at its first write."""
        try:
            store = cls._open_retrying(folder)
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        if lock is not None:
            store._lock, store._owns_lock = lock, True
        return store

    @classmethod
    def _open_retrying(cls, folder: Path) -> Store:
        deadline = time.monotonic() + OPEN_WAIT_S
        while True:
            try:
                return cls._open_once(folder)
            except _Busy as e:
                if time.monotonic() > deadline:
                    raise StoreIOError(f"{folder / STORE_NAME}: {e.args[0]} (busy for "
                                       f"{OPEN_WAIT_S:.0f} s: another process holds it)"
                                       ) from None
                time.sleep(0.02 + 0.08 * (time.monotonic() % 1))

    @classmethod
    def _open_once(cls, folder: Path) -> Store:
        path = folder / STORE_NAME
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreIOError(f"{path}: cannot open: {e.strerror or e}") from None
        new = not _check_file(path)
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(path, isolation_level=None, timeout=30)
            if not new and not _has_meta(db):
                raise StoreError(f"{path}: not a trick-arena store (an SQLite database "
                                 f"without its tables)")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            if new:  # the tables and the version at once: never a store without a version
                with _Transaction(db):
                    for statement in (*_TABLES, *_INDEXES, *_TOTALS):
                        db.execute(statement)
                    db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES "
                               "('schema_version', ?)", (SCHEMA_VERSION,))
        except (sqlite3.DatabaseError, UnicodeDecodeError, StoreError) as e:
            if db is not None:
                db.close()
            if isinstance(e, StoreError):
                raise
            if _is_busy(e):
                raise _Busy(str(e)) from None
            raise store_error(e, path, "open") from None
        store = cls(db, path)
        try:
            version = store.meta().get("schema_version")
            if version is None:
                raise StoreError(f"{path}: not a trick-arena store (no schema version)")
            if version == "1":
                _migrate_v1(db)
                _add_totals(db)
            elif version != SCHEMA_VERSION:
                raise StoreError(f"{path}: store schema version {one_line(version, 40)}; "
                                 f"this arena reads version {SCHEMA_VERSION} (and migrates "
                                 f"version 1)")
            elif not _has_indexes(db):  # a table or index lost (or new): made again
                with _Transaction(db):
                    for statement in (*_TABLES, *_INDEXES):
                        db.execute(statement)
            if not _has_totals(db):  # a store from before the running totals
                _add_totals(db)
        except StoreError:
            db.close()
            raise
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            db.close()
            if _is_busy(e):
                raise _Busy(str(e)) from None
            raise store_error(e, path, "migrate the store (version 1 to 2)") from None
        return store

    @classmethod
    def open_readonly(cls, folder: Path) -> Store:
        """Open the store in ``folder`` for reading only: nothing is created, added or
        migrated (a version-1 store is read as it is). It works while a run writes, and
        in a read-only folder: where SQLite cannot make the store's shared-memory file
        (``-shm``) there, the file is read as immutable, which is exact only with no
        write-ahead log to replay and no run writing; otherwise it is refused with
        :class:`StoreIOError` saying why."""
        path = folder / STORE_NAME
        if not _check_file(path):
            raise StoreError(f"{path}: no tournament store here")
        db, shared = _connect_readonly(path)
        store = cls(db, path, lock=shared, owns_lock=True, readonly=True)
        try:
            if not _has_meta(db):
                raise StoreError(f"{path}: not a trick-arena store (an SQLite database "
                                 f"without its tables)")
            version = store.meta().get("schema_version")
        except StoreError:
            store.close()
            raise
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            store.close()
            raise store_error(e, path, "read") from None
        if version is None:
            store.close()
            raise StoreError(f"{path}: not a trick-arena store (no schema version)")
        if version not in READABLE_VERSIONS:
            store.close()
            raise StoreError(f"{path}: store schema version {one_line(version, 40)}; this "
                             f"arena reads version {SCHEMA_VERSION} (and version 1)")
        store._legacy = version == "1"
        return store

    @classmethod
    def exists(cls, folder: Path) -> bool:
        return (folder / STORE_NAME).exists()

    @classmethod
    def is_store(cls, folder: Path) -> bool:
        """Whether ``folder`` holds a store of ours (a SQLite file with our schema version),
        looked at read-only: a folder made before the arena marked its folders."""
        path = folder / STORE_NAME
        if not path.is_file() or path.is_symlink():
            return False
        try:
            db, shared = _connect_readonly(path, timeout=5)
        except StoreError:
            return False
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.Error:
            return False
        finally:
            db.close()
            if shared is not None:
                shared.release()
        return row is not None

    def close(self) -> None:
        self.db.close()
        if self._owns_lock and self._lock is not None:
            self._lock.release()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the run lock, and the writer's connection --------------------------------------

    def claim(self) -> None:
        """Make sure this store holds its folder's run lock, taking it now if need be:
        every write needs it. Raises :class:`StoreLocked` naming the holder."""
        if self.readonly:
            raise StoreError(f"{self.path}: opened for reading only")
        if self._lock is not None and self._lock.held and not self._lock.shared:
            return
        try:
            self._lock, self._owns_lock = RunLock.take(self.path.parent), True
        except Held as e:
            raise StoreLocked(str(e)) from None
        except LockError as e:
            raise StoreIOError(str(e)) from None

    @_guarded("open")
    def writer_copy(self) -> Store:
        """Another connection to this store, sharing its run lock (taken now if need be),
        for the writer thread (:mod:`arena.tournament.writer`): make it in that thread."""
        self.claim()
        db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        try:
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            db.close()
            raise
        return Store(db, self.path, lock=self._lock)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Read in one transaction: everything read inside sees the store as it was at
        the first read, however many games a run writes meanwhile (``arena verify`` reads
        the head in ``meta`` and every game from the same state)."""
        if self.db.in_transaction:
            yield
            return
        try:
            self.db.execute("BEGIN")
        except sqlite3.DatabaseError as e:
            raise store_error(e, self.path, "read") from None
        try:
            yield
        finally:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the error that ended the block is the one to report

    # -- metadata and bots --------------------------------------------------------------

    @_guarded("read")
    def meta(self) -> dict[str, str]:
        """The tournament's metadata; raises :class:`StoreError` for a value the arena
        did not write (a seed that is not a number, options that are not JSON, ...)."""
        meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        for key, value in meta.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise StoreError(f"{self.path}: meta {show(key)}: not text")
        for key in _INT_META:
            if key in meta and not _DECIMAL.fullmatch(meta[key]):
                raise StoreError(f"{self.path}: meta {key}: {show(meta[key])} is not an "
                                 f"integer")
        for key, kind in _JSON_META.items():
            if key in meta:
                value = _json(meta[key], f"{self.path}: meta", key)
                if not isinstance(value, kind):
                    raise StoreError(f"{self.path}: meta {key}: not a JSON "
                                     f"{'object' if kind is dict else 'list'}")
        return meta

    @_guarded("write")
    def set_meta(self, values: Mapping[str, str]) -> None:
        self.claim()
        with self._transaction():
            self.db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                list(values.items()))

    @_guarded("write")
    def set_bot(self, name: str, spec: str, version: str = "", author: str = "",
                protocol_version: int | None = None, games: Sequence[str] = (), *,
                sandboxed: bool = True, isolation: str = "", insecure: bool = False) -> None:
        """Register a bot. ``sandboxed`` is False for a bot the arena does not confine in
        its sandbox (untrusted mode off, or a bot served from elsewhere); ``isolation`` is
        how its processes are shared between games (``"deal"``, ``"game"`` or
        ``"shared"``; ``""`` if unsaid); ``insecure`` is True for a bot reached by plain
        ``grpc://`` beyond loopback (no TLS, no authentication)."""
        self.claim()
        with self._transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO bots (name, spec, version, author, protocol_version,"
                " games, sandboxed, isolation, insecure) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (name, spec, version, author, protocol_version, ",".join(games),
                 int(bool(sandboxed)), isolation, int(insecure)))

    def bots(self) -> list[dict[str, Any]]:
        """The registered bots by name: ``name``, ``spec``, ``version``, ``author``,
        ``protocol_version``, ``games`` (a list), ``sandboxed`` (True when not recorded, as
        in a store written before the flag existed), ``isolation`` (``""`` if unsaid) and
        ``insecure`` (False when not recorded)."""
        rows = self._read(
            "SELECT name, spec, version, author, protocol_version, games, sandboxed, isolation,"
            " insecure FROM bots ORDER BY name")
        types = (str, str, str | None, str | None, int | None, str | None, int | None,
                 str | None, int | None)
        for r in rows:
            for column, (value, kind) in enumerate(zip(r, types, strict=True)):
                if not isinstance(value, kind):
                    raise StoreError(f"{self.path}: bot {show(r[0])}: column {column + 1} "
                                     f"holds {show(value)}, not what the arena writes")
        return [{"name": r[0], "spec": r[1], "version": r[2], "author": r[3],
                 "protocol_version": r[4], "games": [g for g in (r[5] or "").split(",") if g],
                 "sandboxed": r[6] is None or bool(r[6]), "isolation": r[7] or "",
                 "insecure": bool(r[8])}
                for r in rows]

    # -- games ------------------------------------------------------------------------

    # -- games ------------------------------------------------------------------------

    def done_ids(self) -> set[str]:
        return {r[0] for r in self._read("SELECT id FROM games WHERE status = 'done'")}

    def count_done(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM games WHERE status = 'done'")[0][0])

    def count_faults(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM faults")[0][0])

    @_guarded("read")
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.db.execute(sql, params).fetchall()

    @_guarded("write")
    def reset_unfinished(self) -> int:
        """Forget games a stopped run left ``running``; returns how many."""
        self.claim()
        with self._transaction():
            return self.db.execute("DELETE FROM games WHERE status = 'running'").rowcount

    @_guarded("write")
    def game_started(self, game: ScheduledGame) -> None:
        """Mark ``game`` ``running``. A game already running (started again after a lost
        attempt) is started afresh; a finished game is never replaced, since it is linked
        in the chain: :class:`StoreError`."""
        self.claim()
        with self._transaction():
            stored = self.db.execute(
                "INSERT INTO games (id, seq, table_no, deal_no, rotation, deal_seed, bots,"
                " status, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)"
                " ON CONFLICT (id) DO UPDATE SET seq = excluded.seq,"
                " table_no = excluded.table_no, deal_no = excluded.deal_no,"
                " rotation = excluded.rotation, deal_seed = excluded.deal_seed,"
                " bots = excluded.bots, started_at = excluded.started_at"
                " WHERE games.status = 'running'",
                (game.id, game.seq, game.table_no, game.deal_no, game.rotation,
                 str(game.deal_seed), json.dumps(game.bots), time.time())).rowcount
            if stored != 1:
                raise StoreError(f"{self.path}: game {game.id} started but is finished "
                                 f"in the store already (played twice?)")

    @_guarded("write")
    def game_finished(self, game: ScheduledGame, record: Mapping[str, Any],
                      latencies_ms: Sequence[Sequence[float]],
                      cpu_ms: Sequence[Sequence[float | None]] | None = None) -> None:
        """Store a finished game with its results, faults and latencies, atomically, and
        link it after the chain's head (read in the same transaction). The game must be
        ``running`` (:meth:`game_started`).

        ``latencies_ms`` holds each seat's answer times; ``cpu_ms`` (optional) each seat's
        bot-process CPU time per decision, None where it was not measured (a built-in bot,
        a machine without cgroups). Both are stored rounded to 0.001 ms. The cost does
        not grow with the number of games stored: every statement uses an index.
        """
        self.claim()
        seats = max(len(latencies_ms), len(cpu_ms or ()))
        forfeited = record.get("forfeited") or [False] * len(game.bots)
        text = json.dumps(record, separators=(",", ":"))
        stored = json.loads(text)  # what is hashed is what is read back
        with self._transaction():
            self._link_unchained()  # games of a store from before the chain
            seq, prev = self._chain_end()
            head = chain.link(prev, stored)
            updated = self.db.execute(
                "UPDATE games SET status = 'done', ended_at = ?, chain_seq = ?, chain_prev = ?,"
                " chain = ?, record = ? WHERE id = ? AND status = 'running'",
                (time.time(), seq, prev, head, text, game.id)).rowcount
            if updated != 1:
                raise StoreError(f"{self.path}: game {game.id} finished but is not running "
                                 f"in the store (another run reset it?)")
            self._set_head(head, seq)
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
                "INSERT OR REPLACE INTO latencies (game_id, seat, bot, ms, cpu_ms)"
                " VALUES (?, ?, ?, ?, ?)",
                [(game.id, s, game.bots[s],
                  json.dumps([round(x, 3) for x in
                              (latencies_ms[s] if s < len(latencies_ms) else ())]),
                  None if cpu_ms is None or s >= len(cpu_ms) else json.dumps(
                      [None if x is None else round(x, 3) for x in cpu_ms[s]]))
                 for s in range(seats)])

    # -- what a live page reads (from the store's readers) ------------------------------

    @_guarded("read")
    def bot_totals(self, names: Sequence[str]) -> BotTotals:
        """The running totals of the bots ``names`` (a bot's versions) together: a row
        per name (the totals' primary key), whatever the number of games."""
        marks = ",".join("?" * len(names))
        row = self.db.execute(
            f"SELECT TOTAL(games), TOTAL(decisions), TOTAL(wall_ms), TOTAL(cpu_decisions),"
            f" TOTAL(cpu_ms), TOTAL(faults) FROM bot_totals WHERE bot IN ({marks})",
            tuple(names)).fetchone()
        kinds: dict[str, int] = {}
        for kind, n in self.db.execute(
                f"SELECT kind, n FROM bot_fault_kinds WHERE bot IN ({marks})", tuple(names)):
            kinds[str(kind)] = kinds.get(str(kind), 0) + int(n)
        return BotTotals(int(row[0]), int(row[1]), float(row[2]), int(row[3]),
                         float(row[4]), int(row[5]), kinds)

    @_guarded("read")
    def game_rows(self, limit: int, bots: Sequence[str] | None = None) -> list[GameRow]:
        """The last ``limit`` finished games, newest first (those in which one of
        ``bots`` sat, if given), from the small tables: no record is read. The newest
        games through ``games_status``; a bot's through ``results_bot`` (its games, then
        sorted)."""
        columns = "g.id, g.seq, g.table_no, g.deal_no, g.bots, g.ended_at"
        if bots is None:
            rows = self.db.execute(
                f"SELECT {columns} FROM games AS g WHERE g.status = 'done'"
                f" ORDER BY g.seq DESC LIMIT ?", (limit,)).fetchall()
        elif not bots:
            rows = []
        else:
            marks = ",".join("?" * len(bots))
            rows = self.db.execute(
                f"SELECT DISTINCT {columns} FROM results AS r CROSS JOIN games AS g"
                f" ON g.id = r.game_id WHERE r.bot IN ({marks}) AND g.status = 'done'"
                f" ORDER BY g.seq DESC LIMIT ?", (*bots, limit)).fetchall()
        out: list[GameRow] = []
        for game_id, seq, table_no, deal_no, bots_json, ended in rows:
            where = f"{self.path}: game {show(game_id)}"
            seats = _json(bots_json, where, "bots")
            if not isinstance(seats, list):
                raise StoreError(f"{where}: bots is not a list of bot names")
            n = len(seats)
            totals, places, faults = [0] * n, [0] * n, [0] * n
            for seat, score, place in self.db.execute(
                    "SELECT seat, score, place FROM results WHERE game_id = ?", (game_id,)):
                if _is_int(seat) and 0 <= seat < n:
                    totals[seat], places[seat] = int(score), int(place)
            for seat, count in self.db.execute(
                    "SELECT seat, COUNT(*) FROM faults WHERE game_id = ? GROUP BY seat",
                    (game_id,)):
                if _is_int(seat) and 0 <= seat < n:
                    faults[seat] = int(count)
            out.append(GameRow(str(game_id), int(seq), int(table_no), int(deal_no),
                               tuple(str(b) for b in seats), float(ended or 0.0),
                               tuple(totals), tuple(places), tuple(faults)))
        return out

    @_guarded("read")
    def finished_record(self, game_id: str) -> tuple[dict[str, Any], int] | None:
        """A finished game's record and how many games of its duplicate set (its table
        and deal) are finished (through ``games_unit``); None if it is not finished."""
        row = self.db.execute("SELECT record, table_no, deal_no FROM games WHERE id = ?"
                              " AND status = 'done'", (game_id,)).fetchone()
        if row is None:
            return None
        record = _json(row[0], f"{self.path}: game {show(game_id)}", "record")
        if not isinstance(record, dict):
            raise StoreError(f"{self.path}: game {show(game_id)}: record: not a JSON object")
        done = self.db.execute("SELECT COUNT(*) FROM games WHERE table_no = ? AND"
                               " deal_no = ? AND status = 'done'", (row[1], row[2])).fetchone()
        return record, int(done[0])

    @_guarded("read")
    def open_units(self, seats: int) -> set[tuple[int, int]]:
        """The duplicate sets (table, deal) with a finished game but fewer than ``seats``
        finished: their replays are withheld while the set is played (one pass over
        ``games_unit``)."""
        return {(int(t), int(d)) for t, d in self.db.execute(
            "SELECT table_no, deal_no FROM games INDEXED BY games_unit WHERE status = 'done'"
            " GROUP BY table_no, deal_no HAVING COUNT(*) < ?", (seats,))}

    def iter_games(self, chain_order: bool = False) -> Iterator[StoredGame]:
        """Every finished game in schedule order, one at a time (records are not kept).

        ``chain_order``: in results-chain order instead, games without a link last (in
        schedule order), all read from one snapshot of the store. The order is an
        index's, never a sort (no temporary space), except in a version-1 store read as
        it is, whose chain order is sorted by (position, row id) alone. Raises
        :class:`StoreError` naming the game for a row the arena did not write: a record
        that is not a JSON object with the seats' results, a bad column."""
        try:
            if not chain_order:
                yield from self._select("WHERE g.status = 'done' ORDER BY g.seq")
                return
            with self.snapshot():
                if not self._has_chain_columns():
                    yield from self._select("WHERE g.status = 'done' ORDER BY g.seq")
                elif self._legacy:
                    rowids = [r[0] for r in self.db.execute(
                        "SELECT rowid FROM games WHERE status = 'done' AND chain_seq IS NOT"
                        " NULL ORDER BY chain_seq, rowid")]
                    for rowid in rowids:
                        yield from self._select("WHERE g.rowid = ?", (rowid,))
                    yield from self._select("WHERE g.status = 'done' AND g.chain_seq IS NULL"
                                            " ORDER BY g.seq")
                else:
                    yield from self._select(
                        "INDEXED BY games_chain WHERE g.chain_seq IS NOT NULL AND"
                        " g.status = 'done' ORDER BY g.chain_seq")
                    yield from self._select(
                        "INDEXED BY games_unchained WHERE g.status = 'done' AND"
                        " g.chain_seq IS NULL ORDER BY g.seq")
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            raise store_error(e, self.path, "read") from None

    def _select(self, where: str, params: Sequence[Any] = ()) -> Iterator[StoredGame]:
        links = ("g.chain_seq, g.chain_prev, g.chain" if self._has_chain_columns()
                 else "NULL, NULL, NULL")
        cursor = self.db.execute(_SELECT_GAME.format(links=links, where=where), params)
        for row in cursor:
            latencies = self.db.execute(
                "SELECT seat, ms, cpu_ms FROM latencies WHERE game_id = ?",
                (row[0],)).fetchall()
            yield self._stored_game(row, latencies)

    @_guarded("read")
    def has_links(self) -> bool:
        """Whether any finished game carries a chain link."""
        return self._has_chain_columns() and self.db.execute(
            "SELECT 1 FROM games WHERE status = 'done' AND chain IS NOT NULL LIMIT 1"
        ).fetchone() is not None

    @_guarded("read")
    @_guarded("read")
    def iter_results(self) -> Iterator[tuple[tuple[str, ...], tuple[float, ...]]]:
        """Every finished game's bots and totals by seat, in schedule order, from the
        ``results`` rows alone (no record is read or parsed: what a resume's standings
        need, at a fraction of :meth:`iter_games`'s cost)."""
        bots: list[str] = []
        totals: list[float] = []
        current = None
        for game_id, bot, score in self.db.execute(
                "SELECT r.game_id, r.bot, r.score FROM games g JOIN results r"
                " ON r.game_id = g.id WHERE g.status = 'done' ORDER BY g.seq, r.seat"):
            if game_id != current and current is not None:
                yield tuple(bots), tuple(totals)
                bots, totals = [], []
            current = game_id
            bots.append(str(bot))
            totals.append(float(score))
        if current is not None:
            yield tuple(bots), tuple(totals)

    def game_with_link(self, digest: str) -> str | None:
        """The id of the first finished game, in chain order, whose link is ``digest``
        (None if none): for ``arena verify`` to tell a reordered game from a removed one.
        A scan of the games' small columns, made only when the chain is broken."""
        if not self._has_chain_columns():
            return None
        row = self.db.execute(
            "SELECT id FROM games WHERE status = 'done' AND chain = ?"
            " ORDER BY chain_seq IS NULL, chain_seq, seq LIMIT 1", (digest,)).fetchone()
        return None if row is None else str(row[0])

    def _stored_game(self, row: Sequence[Any], latencies: Sequence[Sequence[Any]],
                     ) -> StoredGame:
        """A row of ``games`` and its ``latencies``, checked."""
        game_id = row[0]
        where = f"{self.path}: game {show(game_id)}"
        if not isinstance(game_id, str):
            raise StoreError(f"{where}: the id is not text")
        for column, value in zip(("seq", "table_no", "deal_no", "rotation"), row[1:5],
                                 strict=True):
            if not isinstance(value, int):
                raise StoreError(f"{where}: {column} {show(value)} is not an integer")
        if not isinstance(row[5], str) or not _DECIMAL.fullmatch(row[5]):
            raise StoreError(f"{where}: deal_seed {show(row[5])} is not an integer")
        for column, value in zip(("started_at", "ended_at"), row[7:9], strict=True):
            if not isinstance(value, int | float):
                raise StoreError(f"{where}: {column} {show(value)} is not a time")
        bots = _json(row[6], where, "bots")
        if not isinstance(bots, list) or not bots or not all(isinstance(b, str)
                                                             for b in bots):
            raise StoreError(f"{where}: bots is not a list of bot names")
        record = _json(row[9], where, "record")
        problem = record_problem(record, len(bots))
        if problem:
            raise StoreError(f"{where}: record: {problem}")
        lat: dict[int, tuple[float, ...]] = {}
        cpu: dict[int, tuple[float | None, ...]] = {}
        for s, ms, cpu_ms in latencies:
            times = _json(ms, where, "latencies")
            cpu_times = None if cpu_ms is None else _json(cpu_ms, where, "cpu_ms")
            if (not isinstance(s, int) or not _numbers(times, False)
                    or (cpu_times is not None and not _numbers(cpu_times, True))):
                raise StoreError(f"{where}: latencies of seat {show(s)} are not lists of "
                                 f"numbers")
            lat[s] = tuple(times)
            if cpu_times is not None:
                cpu[s] = tuple(cpu_times)
        for column, value in zip(("chain_seq", "chain_prev", "chain"), row[10:13],
                                 strict=True):
            if value is not None and not isinstance(value, int if column == "chain_seq"
                                                    else str):
                raise StoreError(f"{where}: {column} {show(value)} is not what the arena "
                                 f"writes")
        return StoredGame(game_id, row[1], row[2], row[3], row[4], int(row[5]), tuple(bots),
                          row[7], row[8], record,
                          tuple(lat.get(s, ()) for s in range(len(bots))),
                          tuple(cpu.get(s, ()) for s in range(len(bots))),
                          row[10], row[11], row[12])

    def _has_chain_columns(self) -> bool:
        """False for a version-1 store from before the chain, opened read-only."""
        if self._chain_columns is None:
            self._chain_columns = "chain" in {
                r[1] for r in self.db.execute("PRAGMA table_info(games)")}
        return self._chain_columns

    def _chain_end(self) -> tuple[int, str]:
        """The position the next link takes and the link it follows: after the last entry
        of ``games_chain`` and the head in ``meta`` (the genesis before the first game).
        Inside the caller's write transaction, so it is the stored head, never a stale
        one."""
        row = self.db.execute(
            "SELECT chain_seq FROM games INDEXED BY games_chain WHERE chain_seq IS NOT NULL"
            " ORDER BY chain_seq DESC LIMIT 1").fetchone()
        if row is not None and not _is_int(row[0]):
            raise StoreError(f"{self.path}: games: chain_seq {show(row[0])} is not what the "
                             f"arena writes")
        meta = dict(self.db.execute(
            "SELECT key, value FROM meta WHERE key IN ('chain_head', 'seed_commitment')"))
        prev = meta.get("chain_head") or chain.genesis(meta.get("seed_commitment", ""))
        return (0 if row is None else row[0] + 1), prev

    def _set_head(self, head: str, seq: int) -> None:
        self.db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                            [("chain_head", head), ("chain_games", str(seq + 1))])

    def _link_unchained(self) -> None:
        """Link the finished games that have no link (a store written before the chain
        existed), in schedule order; inside the caller's transaction. ``games_unchained``
        holds exactly them, so this costs an index probe once they are linked."""
        for game_id, text in self.db.execute(
                "SELECT id, record FROM games INDEXED BY games_unchained WHERE status = 'done'"
                " AND chain_seq IS NULL ORDER BY seq").fetchall():
            record = _json(text, f"{self.path}: game {show(game_id)}", "record")
            seq, prev = self._chain_end()
            head = chain.link(prev, record)
            self.db.execute("UPDATE games SET chain_seq = ?, chain_prev = ?, chain = ?"
                            " WHERE id = ?", (seq, prev, head, game_id))
            self._set_head(head, seq)

    def _transaction(self) -> _Transaction:
        return _Transaction(self.db)


def _check_file(path: Path) -> bool:
    """Whether ``path`` is there to open; :class:`StoreError` for what is no store (a
    folder, an empty file: never taken for a new store)."""
    try:
        if not path.exists():
            return False
        if not path.is_file():
            raise StoreError(f"{path}: not a trick-arena store (not a file)")
        if path.stat().st_size == 0:
            raise StoreError(f"{path}: not a trick-arena store (an empty file); move it "
                             f"away, or run the tournament again with --fresh")
    except OSError as e:
        raise StoreIOError(f"{path}: cannot open: {e.strerror or e}") from None
    return True


def _has_meta(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                      " AND name = 'meta'").fetchone() is not None


def _has_indexes(db: sqlite3.Connection) -> bool:
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    wanted = {"meta", "bots", "games", "results", "faults", "latencies",
              *(statement.split()[5] for statement in _INDEXES)}
    return wanted <= names


def _has_totals(db: sqlite3.Connection) -> bool:
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    return set(_TOTALS_NAMES) <= names


def _add_totals(db: sqlite3.Connection) -> None:
    """Make the running totals (:data:`_TOTALS`) of a store written before them, from its
    rows, in one transaction (looked at again inside it: of two processes opening the
    store at once, the second finds them made). Made whole again if a part was lost."""
    with _Transaction(db):
        if _has_totals(db):
            return
        for name in _TOTALS_NAMES[2:]:
            db.execute(f"DROP TRIGGER IF EXISTS {name}")
        for statement in (*_TOTALS, *_FILL_TOTALS):
            db.execute(statement)


def _connect_readonly(path: Path, timeout: float = 30,
                      ) -> tuple[sqlite3.Connection, RunLock | None]:
    """A read-only connection to the store at ``path``, and the shared hold on the run
    lock that keeps a run from writing while it reads (None when not needed).

    ``mode=ro`` needs the WAL's shared-memory file (``-shm``), which SQLite cannot make in
    a read-only folder. There the file is opened ``immutable`` instead, which is exact
    only if there is no write-ahead log to replay (a store closed cleanly has none) and no
    run writes meanwhile (the shared hold); otherwise :class:`StoreIOError`."""
    uri = path.absolute().as_uri()
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=timeout)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return db, None
    except UnicodeDecodeError as e:  # a damaged schema text
        db.close()
        raise store_error(e, path, "read") from None
    except sqlite3.DatabaseError as e:
        db.close()
        if getattr(e, "sqlite_errorcode", 0) & 0xFF not in (8, 14):  # READONLY, CANTOPEN
            raise store_error(e, path, "read") from None
        cause = e
    wal = path.with_name(path.name + "-wal")
    try:
        replay = wal.exists() and wal.stat().st_size > 0
    except OSError as e:
        raise StoreIOError(f"{wal}: cannot read: {e.strerror or e}") from None
    if replay:
        raise StoreIOError(f"{path}: cannot read: SQLite cannot make {path.name}-shm here "
                           f"({cause}), which reading the changes in {wal.name} needs (a "
                           f"read-only folder?); read a copy of the folder")
    try:
        shared = RunLock.share(path.parent)
    except LockError as e:
        raise StoreIOError(f"{path}: cannot read: {e}") from None
    try:
        db = sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        db.close()
        if shared is not None:
            shared.release()
        raise store_error(e, path, "read") from None
    return db, shared


def _json(text: Any, where: str, what: str) -> Any:
    """A stored JSON text, parsed; :class:`StoreError` naming ``where`` and ``what``."""
    try:
        if not isinstance(text, str):
            raise ValueError(f"{type(text).__name__}, not text")
        return json.loads(text)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, int too long, too deep
        raise StoreError(f"{where}: {what} is not JSON ({e})") from None


def _numbers(value: Any, nulls: bool) -> bool:
    """Whether ``value`` is a list of numbers (and nulls, if allowed)."""
    return isinstance(value, list) and all(
        (isinstance(x, int | float) and not isinstance(x, bool)) or (nulls and x is None)
        for x in value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def record_problem(record: Any, n: int) -> str | None:
    """What is wrong with a stored record for ``n`` seats, as the leaderboard and the site
    read it (the results, faults and bids; not the rules: ``arena verify`` checks those),
    or None."""
    if not isinstance(record, dict):
        return "not a JSON object"
    for key in ("totals", "places"):
        value = record.get(key)
        if not isinstance(value, list) or len(value) != n or not all(map(_is_int, value)):
            return f"{key} is not a list of {n} integers"
    if not all(1 <= p <= n for p in record["places"]):
        return f"places are not 1..{n}"
    seats = record.get("seats")
    if seats is not None and (not isinstance(seats, list) or len(seats) != n
                              or not all(isinstance(x, str) for x in seats)):
        return f"seats is not a list of {n} names"
    forfeited = record.get("forfeited")
    if forfeited is not None and (not isinstance(forfeited, list) or len(forfeited) != n):
        return f"forfeited is not a list of {n} flags"
    faults = record.get("faults", [])
    if not isinstance(faults, list):
        return "faults is not a list"
    for i, fault in enumerate(faults):
        if (not isinstance(fault, dict) or not _is_int(fault.get("seat"))
                or not 0 <= fault["seat"] < n or not isinstance(fault.get("kind"), str)):
            return f"faults[{i}] is not a fault of a seat 0..{n - 1}"
    rounds = record.get("rounds", [])
    if not isinstance(rounds, list):
        return "rounds is not a list"
    for i, rnd in enumerate(rounds):
        problem = _round_problem(rnd, n)
        if problem:
            return f"rounds[{i}]: {problem}"
    return None


def _round_problem(rnd: Any, n: int) -> str | None:
    if not isinstance(rnd, dict) or not _is_int(rnd.get("number")):
        return "not an object with a round number"
    hands = rnd.get("hands")
    if not isinstance(hands, list) or len(hands) != n:
        return f"hands is not a list of {n} hands"
    for hand in hands:
        if not isinstance(hand, list) or not all(isinstance(c, str) for c in hand):
            return "a hand is not a list of cards"
        try:
            for card in hand:
                parse_card(card)
        except CardError as e:
            return str(e)
    bids, won = rnd.get("bids"), rnd.get("won")
    if not isinstance(won, list) or len(won) != n or not all(map(_is_int, won)):
        return f"won is not a list of {n} integers"
    if bids is not None and (not isinstance(bids, list) or len(bids) != n
                             or not all(map(_is_int, bids))):
        return f"bids is not null or a list of {n} integers"
    return None


OPEN_WAIT_S = 30.0
"""How long :meth:`Store.open` tries again while another process holds the store."""


class _Busy(Exception):
    """SQLite answered "locked" or "busy" while a store was being opened."""


def _is_busy(error: Exception) -> bool:
    return isinstance(error, sqlite3.OperationalError) and (
        "locked" in str(error) or "busy" in str(error))


def _migrate_v1(db: sqlite3.Connection) -> None:
    """Turn a version-1 store into version 2, in place and in one transaction.

    The games table is made again with the record as its last column (a version-1 store
    had it before the chain's columns, which ``ALTER TABLE`` added at the end, so every
    read of a chain column walked the record's overflow pages), its rows copied (games
    from before the chain get NULL links: the first game a run writes links them); then
    the indexes, the columns :data:`_ADDED_COLUMNS` an older store lacks, and the version.
    The version is read again inside the write transaction: of two processes opening an
    old store at once, the second finds it migrated and changes nothing. Foreign keys are
    off meanwhile (dropping the old games table would otherwise delete every game's
    results, faults and latencies). A kill -9 midway leaves the version-1 store as it was.
    The copy needs free disk for a second copy of the games (the old pages are reused by
    later writes; the file does not shrink)."""
    db.execute("PRAGMA foreign_keys=OFF")
    try:
        with _Transaction(db):
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None or row[0] != "1":
                return  # migrated by another process meanwhile
            for statement in _TABLES:
                db.execute(statement)  # a table the first release did not have
            have: dict[str, set[str]] = {}
            for table in ("games", *(t for t, _, _ in _ADDED_COLUMNS)):
                have[table] = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
            for table, column, declaration in _ADDED_COLUMNS:
                if column not in have[table]:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
            columns = ", ".join(_GAME_COLUMNS)
            select = ", ".join(c if c in have["games"] else "NULL" for c in _GAME_COLUMNS)
            db.execute("DROP TABLE IF EXISTS games_v2")
            db.execute(_GAMES.format(name="games_v2"))
            db.execute(f"INSERT INTO games_v2 ({columns}) SELECT {select} FROM games")
            db.execute("DROP TABLE games")
            db.execute("ALTER TABLE games_v2 RENAME TO games")
            for statement in _INDEXES:
                db.execute(statement)
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                       (SCHEMA_VERSION,))
    finally:
        db.execute("PRAGMA foreign_keys=ON")


class _Transaction:
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
