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

Columns added after the first release (``bots.sandboxed``, ``bots.isolation``,
``bots.insecure``, ``latencies.cpu_ms``, ``games.chain_seq``, ``games.chain_prev``,
``games.chain``) are nullable and are added to an older store when it is opened, so
:data:`SCHEMA_VERSION` stays ``"1"``: an older arena ignores them.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from arena.model import chain
from arena.model.errors import one_line, show
from arena.rules.cards import CardError, parse_card
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
    games TEXT,
    sandboxed INTEGER,
    isolation TEXT,
    insecure INTEGER
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
    record TEXT,
    chain_seq INTEGER,
    chain_prev TEXT,
    chain TEXT
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
    cpu_ms TEXT,
    PRIMARY KEY (game_id, seat)
);
"""

_ADDED_COLUMNS = (
    # table, column, declaration: nullable columns newer than the first schema
    ("bots", "sandboxed", "INTEGER"),
    ("bots", "isolation", "TEXT"),
    ("bots", "insecure", "INTEGER"),
    ("latencies", "cpu_ms", "TEXT"),
    ("games", "chain_seq", "INTEGER"),
    ("games", "chain_prev", "TEXT"),
    ("games", "chain", "TEXT"),
)
"""Columns an older store lacks; :meth:`Store.open` adds them with ``ALTER TABLE``."""


class StoreError(RuntimeError):
    """The store cannot be used (not a tournament store, another version, damaged, or a
    stored value that is not what the arena wrote); the message is one line naming the
    file (and the game or key at fault)."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turn SQLite's errors (a damaged file, a foreign database) into :class:`StoreError`."""
    @functools.wraps(method)
    def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            store = args[0]
            assert isinstance(store, Store)
            raise StoreError(f"{store.path}: damaged or not a trick-arena store ({e})") from None
    return guarded


_INT_META = ("seed", "seats", "deals", "move_ms", "bank_ms", "max_faults")
"""Meta keys whose values are integers in decimal."""
_JSON_META = {"options": dict, "candidates": list, "bots": list, "skipped": list}
"""Meta keys whose values are JSON, and the type they hold."""
_DECIMAL = re.compile(r"-?[0-9]{1,80}")


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
    """A tournament store. Use :meth:`open`; close with :meth:`close` (or ``with``)."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.db = connection
        self.path = path

    @classmethod
    def open(cls, folder: Path) -> Store:
        """Open (creating if needed) the store in ``folder``.

        An existing file must be a store: an empty file, a damaged one or another
        database is refused with :class:`StoreError` and left as it is. Another process
        opening the same store at the same moment (e.g. both turning an old store's
        journal to WAL) can make SQLite answer "locked" at once, without its busy wait:
        the opening is then tried again, for up to :data:`OPEN_WAIT_S` seconds."""
        deadline = time.monotonic() + OPEN_WAIT_S
        while True:
            try:
                return cls._open_once(folder)
            except _Busy as e:
                if time.monotonic() > deadline:
                    raise StoreError(f"{folder / STORE_NAME}: {e.args[0]} (busy for "
                                     f"{OPEN_WAIT_S:.0f} s: another process holds it)"
                                     ) from None
                time.sleep(0.02 + 0.08 * (time.monotonic() % 1))

    @classmethod
    def _open_once(cls, folder: Path) -> Store:
        path = folder / STORE_NAME
        try:
            folder.mkdir(parents=True, exist_ok=True)
            new = not path.exists()
            if not new and not path.is_file():
                raise StoreError(f"{path}: not a trick-arena store (not a file)")
            if not new and path.stat().st_size == 0:
                raise StoreError(f"{path}: not a trick-arena store (an empty file); move it "
                                 f"away, or run the tournament again with --fresh")
        except OSError as e:
            raise StoreError(f"{path}: cannot open: {e.strerror or e}") from None
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(path, isolation_level=None, timeout=30)
            if not new:
                found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                                   " AND name = 'meta'").fetchone()
                if found is None:
                    raise StoreError(f"{path}: not a trick-arena store (an SQLite database "
                                     f"without its tables)")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            if new:  # the tables and the version at once: never a store without a version
                db.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} INSERT OR IGNORE INTO meta "
                                 f"(key, value) VALUES ('schema_version', "
                                 f"'{SCHEMA_VERSION}'); COMMIT;")
            else:
                db.executescript(_SCHEMA)
        except (sqlite3.DatabaseError, UnicodeDecodeError, StoreError) as e:
            if db is not None:
                db.close()
            if isinstance(e, StoreError):
                raise
            if _is_busy(e):
                raise _Busy(str(e)) from None
            raise StoreError(f"{path}: damaged or not a trick-arena store ({e})") from None
        store = cls(db, path)
        try:
            version = store.meta().get("schema_version")
        except StoreError:
            db.close()
            raise
        if version is None:
            db.close()
            raise StoreError(f"{path}: not a trick-arena store (no schema version)")
        if version != SCHEMA_VERSION:
            db.close()
            raise StoreError(f"{path}: store schema version {one_line(version, 40)}; this "
                             f"arena reads version {SCHEMA_VERSION}")
        try:
            _add_missing_columns(db)  # after the version check: leave other versions alone
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            db.close()
            if _is_busy(e):
                raise _Busy(str(e)) from None
            raise StoreError(f"{path}: cannot add the new columns to the store ({e})") from None
        return store

    @classmethod
    def open_readonly(cls, folder: Path) -> Store:
        """Open the store in ``folder`` for reading only: nothing is created or added."""
        path = folder / STORE_NAME
        try:
            db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True,
                                 isolation_level=None, timeout=30)
            store = cls(db, path)
            version = store.meta().get("schema_version")
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{path}: not a trick-arena store ({e})") from None
        if version != SCHEMA_VERSION:
            db.close()
            raise StoreError(f"{path}: store schema version {version}; this arena reads "
                             f"version {SCHEMA_VERSION}")
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
            db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=5)
            try:
                row = db.execute(
                    "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            finally:
                db.close()
        except sqlite3.Error:
            return False
        return row is not None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- metadata and bots --------------------------------------------------------------

    @_guarded
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

    @_guarded
    def set_meta(self, values: Mapping[str, str]) -> None:
        with self._transaction():
            self.db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                list(values.items()))

    @_guarded
    def set_bot(self, name: str, spec: str, version: str = "", author: str = "",
                protocol_version: int | None = None, games: Sequence[str] = (), *,
                sandboxed: bool = True, isolation: str = "", insecure: bool = False) -> None:
        """Register a bot. ``sandboxed`` is False for a bot the arena does not confine in
        its sandbox (untrusted mode off, or a bot served from elsewhere); ``isolation`` is
        how its processes are shared between games (``"deal"``, ``"game"`` or
        ``"shared"``; ``""`` if unsaid); ``insecure`` is True for a bot reached by plain
        ``grpc://`` beyond loopback (no TLS, no authentication)."""
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

    def done_ids(self) -> set[str]:
        return {r[0] for r in self._read("SELECT id FROM games WHERE status = 'done'")}

    def count_done(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM games WHERE status = 'done'")[0][0])

    def count_faults(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM faults")[0][0])

    @_guarded
    def _read(self, sql: str) -> list[Any]:
        return self.db.execute(sql).fetchall()

    @_guarded
    def reset_unfinished(self) -> int:
        """Forget games a stopped run left ``running``; returns how many."""
        with self._transaction():
            return self.db.execute("DELETE FROM games WHERE status = 'running'").rowcount

    @_guarded
    def game_started(self, game: ScheduledGame) -> None:
        with self._transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO games (id, seq, table_no, deal_no, rotation, deal_seed,"
                " bots, status, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)",
                (game.id, game.seq, game.table_no, game.deal_no, game.rotation,
                 str(game.deal_seed), json.dumps(game.bots), time.time()))

    @_guarded
    def game_finished(self, game: ScheduledGame, record: Mapping[str, Any],
                      latencies_ms: Sequence[Sequence[float]],
                      cpu_ms: Sequence[Sequence[float | None]] | None = None) -> None:
        """Store a finished game with its results, faults and latencies, atomically.

        ``latencies_ms`` holds each seat's answer times; ``cpu_ms`` (optional) each seat's
        bot-process CPU time per decision, None where it was not measured (a built-in bot,
        a machine without cgroups). Both are stored rounded to 0.001 ms.
        """
        seats = max(len(latencies_ms), len(cpu_ms or ()))
        forfeited = record.get("forfeited") or [False] * len(game.bots)
        text = json.dumps(record, separators=(",", ":"))
        with self._transaction():
            self._chain_unchained()  # games of a store from before the chain
            self.db.execute(
                "UPDATE games SET status = 'done', ended_at = ?, record = ? WHERE id = ?",
                (time.time(), text, game.id))
            self._append_to_chain(game.id, json.loads(text))
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

    def iter_games(self, chain_order: bool = False) -> Iterator[StoredGame]:
        """Every finished game in schedule order, one at a time (records are not kept).

        ``chain_order``: in results-chain order instead, games without a link last (in
        schedule order). Raises :class:`StoreError` naming the game for a row the arena
        did not write: a record that is not a JSON object with the seats' results, a bad
        column."""
        try:
            links = ("g.chain_seq, g.chain_prev, g.chain" if self._has_chain_columns()
                     else "NULL, NULL, NULL")
            order = "g.chain_seq IS NULL, g.chain_seq, g.seq" if chain_order else "g.seq"
            cursor = self.db.execute(
                "SELECT g.id, g.seq, g.table_no, g.deal_no, g.rotation, g.deal_seed, g.bots,"
                f" g.started_at, g.ended_at, g.record, {links} FROM games g"
                f" WHERE g.status = 'done' ORDER BY {order}")
            for row in cursor:
                latencies = self.db.execute(
                    "SELECT seat, ms, cpu_ms FROM latencies WHERE game_id = ?",
                    (row[0],)).fetchall()
                yield self._stored_game(row, latencies)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            raise StoreError(f"{self.path}: damaged or not a trick-arena store ({e})") from None

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
        """False for a store from before the chain opened read-only (not upgraded)."""
        return "chain" in {r[1] for r in self.db.execute("PRAGMA table_info(games)")}

    def _chain_start(self) -> str:
        meta = self.meta()
        return meta.get("chain_head") or chain.genesis(meta.get("seed_commitment", ""))

    def _append_to_chain(self, game_id: str, record: Mapping[str, Any]) -> None:
        """Link ``record`` after the head (inside the caller's transaction)."""
        prev = self._chain_start()
        seq = int(self.db.execute(
            "SELECT COUNT(*) FROM games WHERE chain_seq IS NOT NULL").fetchone()[0])
        head = chain.link(prev, record)
        self.db.execute("UPDATE games SET chain_seq = ?, chain_prev = ?, chain = ? WHERE id = ?",
                        (seq, prev, head, game_id))
        self.db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                            [("chain_head", head), ("chain_games", str(seq + 1))])

    def _chain_unchained(self) -> None:
        """Link the finished games that have no link (a store written before the chain
        existed), in schedule order; inside the caller's transaction."""
        for game_id, text in self.db.execute(
                "SELECT id, record FROM games WHERE status = 'done' AND chain IS NULL"
                " ORDER BY seq").fetchall():
            self._append_to_chain(game_id, json.loads(text))

    def _transaction(self) -> _Transaction:
        return _Transaction(self.db)


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


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """Add the columns of :data:`_ADDED_COLUMNS` that an older store lacks.

    Checked again inside a write transaction, so that two processes opening the same old
    store at once do not both add a column."""
    def missing() -> list[tuple[str, str, str]]:
        have: dict[str, set[str]] = {}
        for table, _, _ in _ADDED_COLUMNS:
            if table not in have:
                have[table] = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
        return [c for c in _ADDED_COLUMNS if c[1] not in have[c[0]]]

    if not missing():
        return
    with _Transaction(db):
        for table, column, declaration in missing():
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
