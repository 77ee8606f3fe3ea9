"""The machine's memory bound on the processes that every pool of a run keeps idle or
starts ahead, together (:class:`IdleBound`, sized by :func:`machine_bound` from
``/proc/meminfo`` at the start of a run): an idle process counts what it holds (stopped
and reclaimed, it cannot grow), a spare or a bot's first process its bot's memory limit;
past the bound the process idle longest, of any bot, ends."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from arena.proc.connection import BotConnection

if TYPE_CHECKING:
    from arena.play.pool import BotPool

GIB = 1 << 30
MIB = 1 << 20


def memory_available(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """The machine's ``MemAvailable`` in bytes (blocking: read it off the trio thread);
    None where the file or the line is missing."""
    try:
        text = meminfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key == "MemAvailable":
            parts = rest.split()
            if parts and parts[0].isdigit():
                return int(parts[0]) * 1024
    return None


IDLE_FLOOR = 32 * MIB
"""The least an idle process counts against the bound, whatever it measures: a process
holds kernel memory its cgroup may not be charged for (its page tables, its sandbox)."""


def idle_budget(available: int, bot_bytes: int, in_games: int) -> int:
    """The bytes the pools may keep in idle and spare processes: ``available`` less a
    margin for the machine (a tenth of it, at least 1 GiB) and less the processes in
    games (``in_games`` of them, each at ``bot_bytes``, the largest bot memory limit)."""
    margin = max(GIB, available // 10)
    return max(0, available - margin - in_games * bot_bytes)


class IdleBound:
    """The memory every pool of a run may keep in idle processes and spares, together.

    A process counts from when it goes idle or its start ahead of a game is decided,
    until a game leases it or it ends: an idle one what it holds (measured, stopped and
    reclaimed: it cannot grow while frozen; :meth:`BotPool._idle_cost`), a spare or a
    first process its bot's memory limit (it may take that while it starts). When a
    process goes idle past the bound, the one idle longest of any bot ends (it may be
    this one); a spare starts only if ending idle ones makes room for it. A bot's first
    process (its hand-shake, at the start of a run) waits for room, one at a time at
    least: 200 bots do not start 200 processes at once. ``limit`` None: no bound (one
    pool alone, a match)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.used = 0
        """Bytes counted now: the idle processes and the reserved spares."""
        self.ended = 0
        """Idle processes ended for the bound."""
        self._idle: dict[BotConnection, tuple[BotPool, int]] = {}
        """The idle processes, idle longest first, with their pool and cost."""
        self._opening = 0
        """Bots' first processes starting now."""
        self._freed = trio.Event()

    def _fits(self, cost: int) -> bool:
        return self.limit is None or self.used + cost <= self.limit

    def _evict_for(self, cost: int) -> list[BotConnection] | None:
        """End idle processes, longest idle first, until ``cost`` fits; the ones ended
        (taken out of their pools), or None if it cannot fit (nothing is ended then)."""
        if self._fits(cost):
            return []
        assert self.limit is not None
        freeable = self.limit - self.used + sum(c for _, c in self._idle.values())
        if cost > freeable:
            return None
        ended: list[BotConnection] = []
        while not self._fits(cost):
            conn, (pool, _) = next(iter(self._idle.items()))
            self.drop(conn)
            pool._forget(conn)
            ended.append(conn)
        self.ended += len(ended)
        return ended

    def keep(self, pool: BotPool, conn: BotConnection, cost: int) -> list[BotConnection]:
        """``conn`` of ``pool`` goes idle: the processes to end now (taken out of their
        pools), ``conn`` itself among them when it cannot fit."""
        ended = self._evict_for(cost)
        if ended is None:
            pool._forget(conn)
            self.ended += 1
            return [conn]
        self._idle[conn] = (pool, cost)
        self.used += cost
        return ended

    def drop(self, conn: BotConnection) -> None:
        """``conn`` is no longer idle (leased, or ended)."""
        entry = self._idle.pop(conn, None)
        if entry is not None:
            self.used -= entry[1]
            self._free()

    def _free(self) -> None:
        self._freed.set()
        self._freed = trio.Event()

    async def open_first(self, cost: int) -> list[BotConnection]:
        """Wait for room for a bot's first process (counted until :meth:`opened`): the
        idle processes to end for it. One starts whatever the bound when none other
        does, so every bot is heard from in the end."""
        while True:
            ended = self._evict_for(cost)
            if ended is not None or self._opening == 0:
                self.used += cost
                self._opening += 1
                return ended or []
            await self._freed.wait()

    def opened(self, cost: int) -> None:
        """The first process of :meth:`open_first` answered, or failed."""
        self._opening -= 1
        self.unreserve(cost)

    def reserve(self, cost: int) -> list[BotConnection] | None:
        """Count a spare about to start: the idle processes to end for it, or None when
        it does not fit (then it does not start)."""
        ended = self._evict_for(cost)
        if ended is not None:
            self.used += cost
        return ended

    def unreserve(self, cost: int) -> None:
        """A reserved spare was leased, or ended."""
        self.used -= cost
        self._free()

    def recount(self, cost: int) -> None:
        """A spare a game had claimed is a spare again (the game was called off): counted
        again, even past the bound (it is already started)."""
        self.used += cost


def machine_bound(limits_mb: Sequence[int], in_games: int,
                  available: int | None) -> tuple[int | None, str]:
    """The bytes an :class:`IdleBound` of a run allows, whose ``cmd:`` bots have memory
    limits ``limits_mb`` (MiB, 0: none, counted as 1 GiB), ``in_games`` of their processes
    in games at once, on a machine with ``available`` bytes (None: unknown, no bound);
    and the line that says it at the start of the run."""
    if available is None or not limits_mb:
        return None, "pool: no bound by the machine's memory (MemAvailable unknown)"
    largest = max((mb or 1024) for mb in limits_mb) * MIB
    budget = idle_budget(available, largest, in_games)
    return budget, (
        f"pool: {budget // MIB} MiB for idle and spare processes of all bots at once "
        f"(each idle one counts what it holds, at least {IDLE_FLOOR // MIB} MiB; a spare "
        f"its limit; memory: {available / GIB:.1f} GiB available, {in_games} in games at "
        f"{largest // MIB} MiB, a margin of {max(GIB, available // 10) / GIB:.1f} GiB)")
