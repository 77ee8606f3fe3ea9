"""``arena verify DIR``: re-check a tournament store, its file first, then record by
record and link by link.

The file comes first (:func:`file_damage`): SQLite's own integrity check, which reads
every page, also those no record lives on (an index's, a free page), so a store damaged
where the export does not look is not certified, and a run does not write into damage it
would meet later (``arena tournament`` and ``arena league`` run the quicker check at
start and refuse such a store). Then every finished game is re-played by the rules
(:func:`arena.model.record.verify_record`), the results chain is walked from the
genesis to the head in ``meta`` (:mod:`arena.model.chain`), and what the leaderboard
and the league's pages read beside the records (the games table's seats, seed and
schedule position, the ``results`` rows with their sums of the seats' times, the
``faults`` rows, and any ``latencies`` rows) is checked against the chained records.
The first discrepancy raises :class:`AuditError` naming the game.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.model.chain import ChainError, ChainWalk, Link, genesis
from arena.model.record import RecordError, verify_record
from arena.runs.lock import RunLock
from arena.runs.schedule import ScheduledGame, schedule
from arena.runs.store import Store, StoredGame, StoreError, StoreIOError, store_error
from arena.runs.store_rows import timing_sums


class AuditError(ValueError):
    """The store does not hold; the message names the first game (or key) at fault."""


Planner = Callable[[Mapping[str, str]], Iterable[ScheduledGame] | None]
"""The schedule a store's games were played from, made from its metadata (None when the
metadata is not of that kind): the layer above gives :func:`verify_store` those of the
other kinds of run (a match's)."""


FILE_PROBLEMS = 10
"""The most problems SQLite's check lists (it stops there: bounded time and memory)."""


def open_for_run(folder: Path, lock: RunLock) -> Store:
    """The store in ``folder`` opened for a run to write (tournament, match, league): with
    the run's lock (which the store then releases), private (it holds the seed: the
    folder 0700, its files 0600, never in a sandbox) and sound (a damaged file is never
    written to: SQLite's ``quick_check`` at open). :class:`StoreError`, one line,
    otherwise."""
    store = Store.open(folder, lock)
    try:
        os.chmod(folder, 0o700)
        for suffix in ("", "-wal", "-shm"):
            path = folder / f"tournament.sqlite{suffix}"
            if path.exists():
                os.chmod(path, 0o600)
        problems = file_damage(store, quick=True)
        if problems:
            raise StoreError(damage_text(store, problems, "not run (arena verify says more)"))
    except BaseException:
        store.close()
        raise
    return store


def file_damage(store: Store, quick: bool = False) -> list[str]:
    """What SQLite's own check finds wrong with the store's file (``[]``: sound):
    ``PRAGMA integrity_check``, or with ``quick`` the ``quick_check`` (every page read,
    without cross-checking the indexes against their tables: linear, for the start of a
    run). Both are streamed by SQLite and stop after :data:`FILE_PROBLEMS` problems.
    :class:`~arena.runs.store.StoreIOError` when the file cannot be read at all
    (a read error, not damage)."""
    pragma = "quick_check" if quick else "integrity_check"
    try:
        rows = store.db.execute(f"PRAGMA {pragma}({FILE_PROBLEMS})").fetchall()
    except sqlite3.DatabaseError as e:
        error = store_error(e, store.path, "check")
        if isinstance(error, StoreIOError):
            raise error from None
        return [str(e)]
    problems = [str(r[0]) for r in rows]
    return [] if problems == ["ok"] else problems


def readable_games(store: Store) -> tuple[int, int | None]:
    """How many finished games' records can still be read from a damaged store, one by
    one, and how many finished games it lists (None when not even the list can be read)."""
    try:
        ids = [str(r[0]) for r in store.db.execute(
            "SELECT id FROM games WHERE status = 'done'").fetchall()]
    except sqlite3.DatabaseError:
        return 0, None
    readable = 0
    for game_id in ids:
        try:
            row = store.db.execute("SELECT record FROM games WHERE id = ?",
                                   (game_id,)).fetchone()
            if row is not None:
                json.loads(row[0])
                readable += 1
        except (sqlite3.DatabaseError, ValueError, TypeError):
            continue
    return readable, len(ids)


def damage_text(store: Store, problems: Sequence[str], then: str = "") -> str:
    """One line naming a damaged store: what is done about it (``then``, e.g. "not run"),
    what is still readable, and SQLite's first finding (and how many more), last: the
    part a terminal may cut."""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    readable, listed = readable_games(store)
    still = ("not even the list of its games can be read" if listed is None else
             f"{readable} of its {listed} finished games can still be read "
             f"(arena export copies them out)")
    first = " ".join(problems[0].split())[:120]
    return (f"{store.path}: the store file is damaged{'; ' + then if then else ''}; "
            f"{still}; SQLite's integrity check: {first}{more}")


def verify_store(store: Store, head: str | None = None,
                 planners: Sequence[Planner] = ()) -> tuple[int, str | None]:
    """Check every finished game of ``store``; returns (games, chain head), the head None
    for a store written before the chain. ``head``: the published head it must end at;
    ``planners`` are tried before the tournament's own schedule.

    One pass in chain order, from one snapshot of the store (a run may write meanwhile):
    each game's link, its table rows and its rules, then the next; one record is held at
    a time. The first game at fault in chain order is named."""
    with store.snapshot():
        return _verify(store, head, planners)


def _verify(store: Store, head: str | None,
            planners: Sequence[Planner]) -> tuple[int, str | None]:
    meta = store.meta()
    commitment = meta.get("seed_commitment", "")
    seed = meta.get("seed")
    if seed is not None and commitment and \
            hashlib.sha256(seed.encode()).hexdigest() != commitment:
        raise AuditError("meta: the seed does not match the seed commitment")
    chained = "chain_head" in meta or store.has_links()
    walk: ChainWalk | None = None
    if chained:
        if "chain_head" not in meta:
            raise AuditError("head mismatch: the store holds linked games but no chain head")
        try:
            length = int(meta.get("chain_games", ""))
        except ValueError:
            length = None
        walk = ChainWalk(genesis(commitment), meta["chain_head"], length,
                         store.game_with_link)
    elif head is not None:
        raise AuditError("head mismatch: the store holds no chain (written before it)")
    planned = _schedule(meta, planners)
    sums = "decisions" in {r[1] for r in store.db.execute("PRAGMA table_info(results)")}
    count = 0
    for game in store.iter_games(chain_order=True):
        where = f"game {game.id}"
        if walk is not None:
            try:
                walk.add(Link(game.id, game.chain_seq, game.chain_prev, game.chain,
                              game.record))
            except ChainError as e:
                raise AuditError(str(e)) from None
        _check_game(store, game, planned, where, sums)
        try:
            verify_record(game.record)
        except RecordError as e:
            raise AuditError(f"{where}: {e}") from None
        count += 1
    end: str | None = None
    if walk is not None:
        try:
            end = walk.end()
        except ChainError as e:
            raise AuditError(str(e)) from None
        if head is not None and end != head:
            raise AuditError(f"head mismatch: the chain head is {end}, not {head}")
    _check_orphans(store)
    return count, end


def _schedule(meta: Mapping[str, str],
              planners: Sequence[Planner]) -> dict[str, ScheduledGame] | None:
    """The schedule by game id, from the store's metadata (None if it lacks what makes
    it)."""
    try:
        for planner in planners:
            made = planner(meta)
            if made is not None:
                return {g.id: g for g in made}
        per_bot = meta.get("tables_per_bot")
        games = schedule(meta["format"], json.loads(meta["bots"]), int(meta["seats"]),
                         int(meta["deals"]), int(meta["seed"]),
                         json.loads(meta.get("candidates") or "[]"),
                         tables_per_bot=int(per_bot) if per_bot is not None else None)
    except (KeyError, ValueError, TypeError):
        return None
    return {g.id: g for g in games}


def _check_game(store: Store, game: StoredGame, planned: dict[str, ScheduledGame] | None,
                where: str, sums: bool) -> None:
    """The games, results, faults and latencies rows of ``game`` against its record
    (``sums``: the results rows have the sums of the seats' times, version 3)."""
    record = game.record
    if not isinstance(record, dict):
        raise AuditError(f"{where}: changed: the record is not a JSON object")
    seats = record.get("seats")
    if record.get("game_id") != game.id:
        raise AuditError(f"{where}: changed: its record is of game {record.get('game_id')}")
    if seats != list(game.bots):
        raise AuditError(f"{where}: changed: the games table seats {list(game.bots)}, "
                         f"the record {seats}")
    if record.get("seed") != game.deal_seed:
        raise AuditError(f"{where}: changed: the games table has deal seed {game.deal_seed}, "
                         f"the record {record.get('seed')}")
    if game.id != f"t{game.table_no}-d{game.deal_no}-r{game.rotation}":
        raise AuditError(f"{where}: changed: the games table has table {game.table_no}, "
                         f"deal {game.deal_no}, rotation {game.rotation}")
    if planned is not None:
        plan = planned.get(game.id)
        if plan is None:
            raise AuditError(f"{where}: added: it is not in the tournament's schedule")
        if (plan.seq, plan.bots, plan.deal_seed) != (game.seq, game.bots, game.deal_seed):
            raise AuditError(f"{where}: changed: the schedule seats {list(plan.bots)} with "
                             f"deal seed {plan.deal_seed} at position {plan.seq}")
    n = len(game.bots)
    forfeited = record.get("forfeited") or [False] * n
    try:
        expected = [(s, game.bots[s], record["totals"][s], record["places"][s],
                     int(bool(forfeited[s]))) for s in range(n)]
        faults = [(f["seat"], game.bots[f["seat"]], f.get("round"), f.get("trick"), f["kind"],
                   f["detail"], f["action"]) for f in record.get("faults") or []]
    except (KeyError, IndexError, TypeError):
        raise AuditError(f"{where}: changed: the record's totals, places, forfeits or "
                         f"faults are malformed") from None
    results = store.db.execute(
        "SELECT seat, bot, score, place, forfeited FROM results WHERE game_id = ?"
        " ORDER BY seat", (game.id,)).fetchall()
    if [tuple(r) for r in results] != expected:
        seat = next((i for i, (a, b) in enumerate(zip(results, expected, strict=False))
                     if tuple(a) != b), min(len(results), len(expected)))
        raise AuditError(f"{where}: changed: its results row for seat {seat} does not match "
                         f"the record")
    rows = store.db.execute(
        "SELECT seat, bot, round, trick, kind, detail, action FROM faults WHERE game_id = ?"
        " ORDER BY rowid", (game.id,)).fetchall()
    if [tuple(r) for r in rows] != faults:
        raise AuditError(f"{where}: changed: its faults rows ({len(rows)}) do not match the "
                         f"record's {len(faults)} faults")
    _check_latencies(store, game, where)
    if sums:
        _check_sums(store, game, where)


def _check_sums(store: Store, game: StoredGame, where: str) -> None:
    """The results rows' sums of each seat's times against the game's times: its
    record's ``timing`` (a record without one: its ``latencies`` rows, their one copy,
    as :class:`StoredGame` reads them)."""
    want = [timing_sums(game.latencies_ms[s], game.cpu_ms[s]) for s in range(len(game.bots))]
    rows = store.db.execute(
        "SELECT decisions, wall_ms, cpu_decisions, cpu_ms FROM results WHERE game_id = ?"
        " ORDER BY seat", (game.id,)).fetchall()
    for seat, (row, sums) in enumerate(zip(rows, want, strict=False)):
        if (row[0], row[2]) != (sums[0], sums[2]) or not all(
                isinstance(got, int | float) and math.isclose(got, value, rel_tol=1e-12,
                                                             abs_tol=1e-9)
                for got, value in ((row[1], sums[1]), (row[3], sums[3]))):
            source = ("the record's timing" if "timing" in game.record
                      else "its latencies rows")
            raise AuditError(f"{where}: changed: its results row for seat {seat} does not "
                             f"hold the sums of {source}")


def _check_latencies(store: Store, game: StoredGame, where: str) -> None:
    """The latencies rows against the record's ``timing`` (a record from before it was
    kept cannot say, and is not checked). A seat without a row is not at fault: since
    version 3 its times are kept in the record alone, and read from there."""
    if not store.has_latencies():
        return
    timing = game.record.get("timing")
    rows = store.db.execute("SELECT seat, bot, ms, cpu_ms FROM latencies WHERE game_id = ?",
                            (game.id,)).fetchall()
    stored: dict[int, tuple[str, Any, Any]] = {}
    for seat, bot, ms, cpu in rows:
        if not isinstance(seat, int) or not 0 <= seat < len(game.bots) or seat in stored:
            raise AuditError(f"{where}: added: a latencies row for seat {seat}")
        stored[seat] = (bot, json.loads(ms), None if cpu is None else json.loads(cpu))
    if not isinstance(timing, dict):
        return
    wall, cpu_ms = timing.get("wall_ms") or [], timing.get("cpu_ms") or []
    for seat, name in enumerate(game.bots):
        want = (name, wall[seat] if seat < len(wall) else [],
                cpu_ms[seat] if seat < len(cpu_ms) else None)
        if seat in stored and stored[seat] != want:
            raise AuditError(f"{where}: changed: its latencies row for seat {seat} does not "
                             f"match the record's timing")


def _check_orphans(store: Store) -> None:
    """Rows of results, faults and latencies for a game that is not a finished one."""
    for table in ("results", "faults", *(("latencies",) if store.has_latencies() else ())):
        # NOT EXISTS probes the games' primary key: no temporary table of every id
        row = store.db.execute(
            f"SELECT game_id FROM {table} AS t WHERE NOT EXISTS (SELECT 1 FROM games AS g"
            " WHERE g.id = t.game_id AND g.status = 'done') LIMIT 1").fetchone()
        if row is not None:
            raise AuditError(f"game {row[0]}: added: {table} rows for a game that is not a "
                             f"finished game of the store")
