"""The values a store hands out (:class:`StoredGame`, :class:`GameRow`,
:class:`BotTotals`) and the checks of what is read back: a stored value the arena did not
write is a :class:`~arena.runs.store_errors.StoreError` naming the file, the game
and the column, never a traceback further on."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.model.errors import show
from arena.model.record import record_problem, record_timing
from arena.runs.store_errors import StoreError

_INT_META = ("seed", "seats", "deals", "move_ms", "bank_ms", "max_faults", "tables_per_bot")
"""Meta keys whose values are integers in decimal."""
_JSON_META = {"options": dict, "candidates": list, "bots": list, "skipped": list,
              "house": dict, "lineage": dict, "seasons": list}
"""Meta keys whose values are JSON, and the type they hold."""
DECIMAL = re.compile(r"-?[0-9]{1,80}")



@dataclass(frozen=True, slots=True)
class BotTotals:
    """The running totals of some bots (the versions of one), from
    :data:`~arena.runs.store_schema.TOTALS`."""

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
    """Answer latencies by seat, in milliseconds: the record's ``timing`` (a record from
    before it was kept: the store's ``latencies`` rows)."""
    cpu_ms: tuple[tuple[float | None, ...], ...] = ()
    """The bot process's CPU time per decision by seat, in milliseconds (None where it was
    not measured), from the same place; a seat's tuple is empty when none was kept."""
    chain_seq: int | None = None
    """The game's position in the results chain, its previous link and its link (None for
    a game written before the chain existed)."""
    chain_prev: str | None = None
    chain: str | None = None

    @property
    def unit(self) -> str:
        """The duplicate set (see :attr:`ScheduledGame.unit`)."""
        return f"t{self.table_no}-d{self.deal_no}"



def parse_json(text: Any, where: str, what: str) -> Any:
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


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def checked_meta(path: Path, rows: Sequence[tuple[Any, Any]]) -> dict[str, str]:
    """The ``meta`` table's rows of the store at ``path``, as a dict; :class:`StoreError`
    for a value the arena did not write (a seed that is not a number, options that are
    not JSON, ...)."""
    meta: dict[Any, Any] = dict(rows)
    for key, value in meta.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise StoreError(f"{path}: meta {show(key)}: not text")
    for key in _INT_META:
        if key in meta and not DECIMAL.fullmatch(meta[key]):
            raise StoreError(f"{path}: meta {key}: {show(meta[key])} is not an "
                             f"integer")
    for key, kind in _JSON_META.items():
        if key in meta:
            value = parse_json(meta[key], f"{path}: meta", key)
            if not isinstance(value, kind):
                raise StoreError(f"{path}: meta {key}: not a JSON "
                                 f"{'object' if kind is dict else 'list'}")
    return meta


def check_bots(path: Path, rows: Sequence[Sequence[Any]]) -> None:
    """:class:`StoreError` for a row of ``bots`` the arena did not write."""
    types = (str, str, str | None, str | None, int | None, str | None, int | None,
             str | None, int | None)
    for r in rows:
        for column, (value, kind) in enumerate(zip(r, types, strict=True)):
            if not isinstance(value, kind):
                raise StoreError(f"{path}: bot {show(r[0])}: column {column + 1} "
                                 f"holds {show(value)}, not what the arena writes")


SeatSums = tuple[int, float, int, float]
"""A seat's sums of its decision times in a game, as ``results`` holds them: decisions,
answer time, decisions whose CPU time was measured, CPU time (milliseconds)."""


def timing_sums(wall: Sequence[float], cpu: Sequence[float | None]) -> SeatSums:
    """The sums of a seat's times (:data:`SeatSums`; exact sums, ``math.fsum``)."""
    measured = [x for x in cpu if x is not None]
    return len(wall), math.fsum(wall), len(measured), math.fsum(measured)


def seat_sums(record: dict[str, Any], n: int) -> list[SeatSums]:
    """The sums of each of the ``n`` seats' times in ``record`` (its ``timing``; zeros
    for a record without one). :class:`~arena.model.record.RecordError` for a timing of
    another shape."""
    timing = record_timing(record, n)
    if timing is None:
        return [(0, 0.0, 0, 0.0)] * n
    return [timing_sums(wall, cpu) for wall, cpu in zip(*timing, strict=True)]


def latency_row(where: str, seat: Any, ms: Any, cpu_ms: Any,
                ) -> tuple[list[float], list[float | None] | None]:
    """A ``latencies`` row's seat times, parsed: its answer times and CPU times (None for
    a NULL ``cpu_ms``); :class:`StoreError` naming ``where`` for a row the arena did not
    write."""
    times = parse_json(ms, where, "latencies")
    cpu_times = None if cpu_ms is None else parse_json(cpu_ms, where, "cpu_ms")
    if (not isinstance(seat, int) or not _numbers(times, False)
            or (cpu_times is not None and not _numbers(cpu_times, True))):
        raise StoreError(f"{where}: latencies of seat {show(seat)} are not lists of "
                         f"numbers")
    return times, cpu_times


def stored_game(path: Path, row: Sequence[Any], latencies: Sequence[Sequence[Any]],
                ) -> StoredGame:
    """A row of ``games`` of the store at ``path``, checked, with its times: its
    record's ``timing``, or for a record without one its rows of ``latencies``."""
    game_id = row[0]
    where = f"{path}: game {show(game_id)}"
    if not isinstance(game_id, str):
        raise StoreError(f"{where}: the id is not text")
    for column, value in zip(("seq", "table_no", "deal_no", "rotation"), row[1:5],
                             strict=True):
        if not isinstance(value, int):
            raise StoreError(f"{where}: {column} {show(value)} is not an integer")
    if not isinstance(row[5], str) or not DECIMAL.fullmatch(row[5]):
        raise StoreError(f"{where}: deal_seed {show(row[5])} is not an integer")
    for column, value in zip(("started_at", "ended_at"), row[7:9], strict=True):
        if not isinstance(value, int | float):
            raise StoreError(f"{where}: {column} {show(value)} is not a time")
    bots = parse_json(row[6], where, "bots")
    if not isinstance(bots, list) or not bots or not all(isinstance(b, str)
                                                         for b in bots):
        raise StoreError(f"{where}: bots is not a list of bot names")
    record = parse_json(row[9], where, "record")
    problem = record_problem(record, len(bots))
    if problem:
        raise StoreError(f"{where}: record: {problem}")
    lat: dict[int, tuple[float, ...]] = {}
    cpu: dict[int, tuple[float | None, ...]] = {}
    timing = record.get("timing")  # its shape checked by record_problem, just above
    if timing is not None:
        lat = {s: tuple(times) for s, times in enumerate(timing["wall_ms"])}
        cpu = {s: tuple(times) for s, times in enumerate(timing["cpu_ms"])}
    else:
        for s, ms, cpu_ms in latencies:
            times, cpu_times = latency_row(where, s, ms, cpu_ms)
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
