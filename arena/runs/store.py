"""The tournament store: one SQLite file (WAL mode) in the output folder.

It holds the tournament file as run and its hash, the bots and the versions they
reported, and every game: table, deal seed, rotation, status, start and end time, the
full record (with each decision's answer time and the bot's CPU time, its ``timing``:
the one copy of them), per-seat results (with the sums of the seat's times) and faults.
A game is written in one transaction when it finishes, so a kill -9 at any
moment loses at most the games in flight and never leaves the store inconsistent. Games
marked ``running`` when a run stopped are played again from the start by the next run.

Each finished game's record is linked into the results chain (:mod:`arena.model.chain`) in the
order the games are written: ``games.chain_seq``, ``chain_prev`` and ``chain``, with the
head and the number of links in ``meta`` (``chain_head``, ``chain_games``), all in the
game's transaction.

**A constant cost per game.** Every query a run makes per game goes through an index
(:data:`~arena.runs.store_schema.INDEXES`): the chain's end is the last entry of
``games_chain``, games from before the chain are found in ``games_unchained`` (empty
once they are linked), the rows of one game by its id. The record is the last column of
``games``, so reading a row's other columns never walks the record's overflow pages.
Finished games are read in chain order along ``games_chain``, without a sort (no
temporary space).

**One writer.** Every write needs the output folder's run lock (:mod:`arena.runs.lock`):
a run takes it first and hands it to :meth:`Store.open`; a store opened without it takes
it at its first write, and a second writer is refused (:class:`StoreLocked`). So the
chain is only ever extended by one process, from the head it reads in its own write
transaction. Readers never take the lock.

**Versions.** :data:`SCHEMA_VERSION` is ``"3"``: version 2 moved the record last and
added the indexes; version 3 keeps a game's times only in its record (version 2 also
wrote them to ``latencies``, a row per seat). A store of an earlier version is migrated
in place the first time :meth:`Store.open` opens it, a transaction per version (see
:func:`arena.runs.store_schema.migrate_v1` and ``migrate_v2``);
:meth:`Store.open_readonly` reads it as it is, without migrating it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arena.model import chain
from arena.model.errors import one_line, show
from arena.model.record import RecordError
from arena.runs.lock import Held, LockError, RunLock
from arena.runs.schedule import ScheduledGame
from arena.runs.store_errors import (
    StoreError,
    StoreIOError,
    StoreLocked,
    guarded,
    store_error,
)
from arena.runs.store_readonly import check_file, connect_readonly, is_store_file
from arena.runs.store_rows import (
    BotTotals,
    GameRow,
    StoredGame,
    check_bots,
    checked_meta,
    is_int,
    parse_json,
    seat_sums,
    stored_game,
)
from arena.runs.store_schema import (
    LATENCIES,
    READABLE_VERSIONS,
    SCHEMA_VERSION,
    Transaction,
    has_meta,
    has_table,
    open_writable,
)

__all__ = ["SCHEMA_VERSION", "STORE_NAME", "BotTotals", "GameRow", "Store", "StoreError",
           "StoreIOError", "StoreLocked", "StoredGame", "store_error"]

STORE_NAME = "tournament.sqlite"
_SELECT_GAME = ("SELECT g.id, g.seq, g.table_no, g.deal_no, g.rotation, g.deal_seed, g.bots,"
                " g.started_at, g.ended_at, g.record, {links} FROM games AS g {where}")


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
        self._latencies: bool | None = None

    @classmethod
    def open(cls, folder: Path, lock: RunLock | None = None) -> Store:
        """Open (creating if needed) the store in ``folder``, migrating a version-1 store.

        An existing file must be a store: an empty file, a damaged one or another
        database is refused with :class:`StoreError` and left as it is. Another process
        opening the same store at the same moment (e.g. both turning an old store's
        journal to WAL) can make SQLite answer "locked" at once, without its busy wait:
        the opening is then tried again, for up to
        :data:`~arena.runs.store_errors.OPEN_WAIT_S` seconds.

        ``lock``: the folder's run lock, taken by the caller (a run takes it before
        ``--fresh`` removes anything). The store owns it from then on: it is released
        when the store is closed, or at once if the opening fails. Without it, the store
        takes the lock at its first write."""
        try:
            store = cls(open_writable(folder, folder / STORE_NAME), folder / STORE_NAME)
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        if lock is not None:
            store._lock, store._owns_lock = lock, True
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
        if not check_file(path):
            raise StoreError(f"{path}: no tournament store here")
        db, shared = connect_readonly(path)
        store = cls(db, path, lock=shared, owns_lock=True, readonly=True)
        try:
            if not has_meta(db):
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
                             f"arena reads version {SCHEMA_VERSION} (and versions 1 and 2)")
        store._legacy = version == "1"
        return store

    @classmethod
    def exists(cls, folder: Path) -> bool:
        return (folder / STORE_NAME).exists()

    @classmethod
    def is_store(cls, folder: Path) -> bool:
        """Whether ``folder`` holds a store of ours (a SQLite file with our schema version),
        looked at read-only: a folder made before the arena marked its folders."""
        return is_store_file(folder / STORE_NAME)

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

    @guarded("open")
    def writer_copy(self) -> Store:
        """Another connection to this store, sharing its run lock (taken now if need be),
        for the writer thread (:mod:`arena.runs.writer`): make it in that thread."""
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

    @guarded("read")
    def meta(self) -> dict[str, str]:
        """The tournament's metadata; raises :class:`StoreError` for a value the arena
        did not write (see :func:`~arena.runs.store_rows.checked_meta`)."""
        return checked_meta(self.path, self.db.execute("SELECT key, value FROM meta").fetchall())

    @guarded("write")
    def set_meta(self, values: Mapping[str, str]) -> None:
        self.claim()
        with self._transaction():
            self.db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                list(values.items()))

    @guarded("write")
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
        check_bots(self.path, rows)
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

    @guarded("read")
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.db.execute(sql, params).fetchall()

    @guarded("write")
    def reset_unfinished(self) -> int:
        """Forget games a stopped run left ``running``; returns how many."""
        self.claim()
        with self._transaction():
            return self.db.execute("DELETE FROM games WHERE status = 'running'").rowcount

    @guarded("write")
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

    @guarded("write")
    def game_finished(self, game: ScheduledGame, record: Mapping[str, Any]) -> None:
        """Store a finished game with its results and faults, atomically, and link it
        after the chain's head (read in the same transaction). The game must be
        ``running`` (:meth:`game_started`).

        The record's ``timing`` (each decision's answer time and CPU time, see
        docs/records.md) is the one copy of the game's times: each seat's ``results`` row
        gets their sums (:func:`~arena.runs.store_rows.seat_sums`; zeros for a
        record without one), which the running totals add up; no time is written twice.
        The cost does not grow with the number of games stored: every statement uses an
        index.
        """
        self.claim()
        n = len(game.bots)
        forfeited = record.get("forfeited") or [False] * n
        text = json.dumps(record, separators=(",", ":"))
        stored = json.loads(text)  # what is hashed is what is read back
        try:
            sums = seat_sums(stored, n)
        except RecordError as e:
            raise StoreError(f"{self.path}: game {game.id} finished with a {e}") from None
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
                "INSERT OR REPLACE INTO results (game_id, seat, bot, score, place, forfeited,"
                " decisions, wall_ms, cpu_decisions, cpu_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(game.id, s, game.bots[s], record["totals"][s], record["places"][s],
                  int(bool(forfeited[s])), *sums[s]) for s in range(n)])
            self.db.executemany(
                "INSERT INTO faults (game_id, seat, bot, round, trick, kind, detail, action)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(game.id, f["seat"], game.bots[f["seat"]], f.get("round"), f.get("trick"),
                  f["kind"], f["detail"], f["action"]) for f in record.get("faults", [])])

    # -- what a live page reads (from the store's readers) ------------------------------

    @guarded("read")
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

    @guarded("read")
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
            seats = parse_json(bots_json, where, "bots")
            if not isinstance(seats, list):
                raise StoreError(f"{where}: bots is not a list of bot names")
            n = len(seats)
            totals, places, faults = [0] * n, [0] * n, [0] * n
            for seat, score, place in self.db.execute(
                    "SELECT seat, score, place FROM results WHERE game_id = ?", (game_id,)):
                if is_int(seat) and 0 <= seat < n:
                    totals[seat], places[seat] = int(score), int(place)
            for seat, count in self.db.execute(
                    "SELECT seat, COUNT(*) FROM faults WHERE game_id = ? GROUP BY seat",
                    (game_id,)):
                if is_int(seat) and 0 <= seat < n:
                    faults[seat] = int(count)
            out.append(GameRow(str(game_id), int(seq), int(table_no), int(deal_no),
                               tuple(str(b) for b in seats), float(ended or 0.0),
                               tuple(totals), tuple(places), tuple(faults)))
        return out

    @guarded("read")
    def finished_record(self, game_id: str) -> tuple[dict[str, Any], int] | None:
        """A finished game's record and how many games of its duplicate set (its table
        and deal) are finished (through ``games_unit``); None if it is not finished."""
        row = self.db.execute("SELECT record, table_no, deal_no FROM games WHERE id = ?"
                              " AND status = 'done'", (game_id,)).fetchone()
        if row is None:
            return None
        record = parse_json(row[0], f"{self.path}: game {show(game_id)}", "record")
        if not isinstance(record, dict):
            raise StoreError(f"{self.path}: game {show(game_id)}: record: not a JSON object")
        done = self.db.execute("SELECT COUNT(*) FROM games WHERE table_no = ? AND"
                               " deal_no = ? AND status = 'done'", (row[1], row[2])).fetchone()
        return record, int(done[0])

    @guarded("read")
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
        legacy = self.has_latencies()
        for row in cursor:
            latencies = self.db.execute(
                f"SELECT seat, ms, cpu_ms FROM {LATENCIES} WHERE game_id = ?",
                (row[0],)).fetchall() if legacy else []
            yield stored_game(self.path, row, latencies)

    def has_latencies(self) -> bool:
        """Whether the store has a ``latencies`` table: a store of version 2 or earlier,
        or of version 3 with games whose record has no ``timing`` (their times' one
        copy)."""
        if self._latencies is None:
            self._latencies = has_table(self.db, LATENCIES)
        return self._latencies

    @guarded("read")
    def has_links(self) -> bool:
        """Whether any finished game carries a chain link."""
        return self._has_chain_columns() and self.db.execute(
            "SELECT 1 FROM games WHERE status = 'done' AND chain IS NOT NULL LIMIT 1"
        ).fetchone() is not None

    @guarded("read")
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
        if row is not None and not is_int(row[0]):
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
            record = parse_json(text, f"{self.path}: game {show(game_id)}", "record")
            seq, prev = self._chain_end()
            head = chain.link(prev, record)
            self.db.execute("UPDATE games SET chain_seq = ?, chain_prev = ?, chain = ?"
                            " WHERE id = ?", (seq, prev, head, game_id))
            self._set_head(head, seq)

    def _transaction(self) -> Transaction:
        return Transaction(self.db)

