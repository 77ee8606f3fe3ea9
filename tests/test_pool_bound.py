"""The pools' processes bounded by the machine's memory (issue 36): the arithmetic from
``/proc/meminfo`` and the bots' memory limits, and pools under a tiny bound that end
idle processes rather than keep them (real processes)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from conftest import SAMPLE_BOTS, Sandbox, bot_cmd, gone, run_trio

import arena.play.bound as pool_module
from arena.model.limits import Confinement, Limits
from arena.model.spec import BotSpec
from arena.play.bound import (
    GIB,
    IDLE_FLOOR,
    MIB,
    IdleBound,
    idle_budget,
    machine_bound,
    memory_available,
)
from arena.play.pool import BotPool
from arena.proc.connection import BotConnection

RANDOM_PY = bot_cmd(SAMPLE_BOTS / "random_bot.py")


def test_memory_available_reads_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24683784 kB\nMemFree:  1 kB\n"
                       "MemAvailable:   22860916 kB\nBuffers: 3 kB\n")
    assert memory_available(meminfo) == 22860916 * 1024
    meminfo.write_text("MemTotal: 5 kB\n")
    assert memory_available(meminfo) is None
    assert memory_available(tmp_path / "missing") is None
    assert (memory_available() or 0) > 0  # this machine's


def test_the_bound_leaves_a_margin_and_the_processes_in_games() -> None:
    # 20 GiB available: a margin of 2 GiB (a tenth), 12 processes in games at 256 MiB
    assert idle_budget(20 * GIB, 256 * MIB, 12) == 20 * GIB - 2 * GIB - 3 * GIB
    # a small machine: the margin is at least 1 GiB; nothing left is no room, not less
    assert idle_budget(4 * GIB, 256 * MIB, 0) == 3 * GIB
    assert idle_budget(2 * GIB, 1024 * MIB, 4) == 0
    budget, line = machine_bound([256, 128, 256], 12, 20 * GIB)
    assert budget == 15 * GIB
    assert line == ("pool: 15360 MiB for idle and spare processes of all bots at once (each "
                    "idle one counts what it holds, at least 32 MiB; a spare its limit; "
                    "memory: 20.0 GiB available, 12 in games at 256 MiB, a margin of 2.0 GiB)")
    # no memory limit counts as 1 GiB; an unknown machine has no bound
    assert machine_bound([0], 0, 20 * GIB)[0] == 18 * GIB
    assert machine_bound([256], 12, None)[0] is None


def test_a_full_bound_ends_the_process_idle_longest_of_any_bot() -> None:
    class Pool:  # what the bound asks of a pool: forget a process it ends
        def __init__(self) -> None:
            self.forgotten: list[object] = []

        def _forget(self, conn: object) -> None:
            self.forgotten.append(conn)

    bound = IdleBound(2 * MIB)
    p, q = Pool(), Pool()
    a, b, c = object(), object(), object()
    assert bound.keep(p, a, MIB) == []  # type: ignore[arg-type]
    assert bound.keep(q, b, MIB) == []  # type: ignore[arg-type]
    assert bound.keep(q, c, MIB) == [a]  # type: ignore[arg-type]
    assert p.forgotten == [a] and bound.used == 2 * MIB
    bound.drop(b)  # leased
    assert bound.reserve(MIB) == []  # a spare fits beside c
    assert bound.reserve(MIB) == [c] and q.forgotten == [c]  # the next one ends c
    assert bound.reserve(MIB) is None  # two spares fill it: no third
    assert bound.keep(p, b, MIB) == [b] and p.forgotten == [a, b]  # no room to keep it
    assert bound.ended == 3


def _confined(mb: int) -> Confinement:
    return Confinement(limits=Limits(memory_mb=mb))


def test_an_idle_process_counts_what_it_holds_not_its_limit(arena_sandbox: Sandbox) -> None:
    """Stopped and reclaimed, an idle process cannot grow: it counts the memory its cgroup
    is charged (at least the floor), not its bot's 1 GiB limit; leased, it counts no more."""
    async def main() -> None:
        bound = IdleBound(8 * GIB)
        async with BotPool("a", BotSpec.parse(RANDOM_PY), arena_sandbox.tmp / "logs", 30.0,
                           _confined(1024), "deal", deals=5, bound=bound) as a:
            await a.open("wizard")
            conn = a._ledger.idle[0]
            held = await conn.memory_bytes()
            if held is None:
                pytest.skip("no memory cgroup counts a bot's memory here")
            assert IDLE_FLOOR <= bound.used <= max(IDLE_FLOOR, held) + 8 * MIB
            assert bound.used < 1024 * MIB
            leased = await a.lease(1)
            assert bound.used == 0
            await a.release(leased)  # after its game, stopped and reclaimed: counted again
            assert IDLE_FLOOR <= bound.used < 1024 * MIB

    run_trio(main)


def test_pools_under_a_tiny_bound_end_idle_processes(arena_sandbox: Sandbox,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Two bots' pools share room for one idle process (64 MiB, each bot at 64 MiB, and
    each idle process counted at 64 MiB whatever it holds): the process idle longest ends
    when another goes idle; a spare does not start while only a game's process could make
    room; with no room a pool keeps nothing."""
    monkeypatch.setattr(pool_module, "IDLE_FLOOR", 64 * MIB)

    async def main() -> None:
        logs = arena_sandbox.tmp / "logs"
        bound = IdleBound(64 * MIB)
        async with BotPool("a", BotSpec.parse(RANDOM_PY), logs, 30.0, _confined(64),
                           "deal", deals=5, max_idle=8, bound=bound) as a, \
                BotPool("b", BotSpec.parse(RANDOM_PY), logs, 30.0, _confined(64),
                        "deal", deals=5, max_idle=8, bound=bound) as b:
            await a.open("wizard")  # idle: the one the bound has room for
            first = a._ledger.idle[0]
            await b.open("wizard")  # idle too: a's ends, idle longest
            assert a._ledger.idle == [] and not first.usable
            assert first.pid is None or gone(first.pid)
            assert bound.used == 64 * MIB and bound.ended == 1
            conn = await b.lease(1)
            assert bound.used == 0
            a.prepare([1])  # a spare for a: room for it now
            assert a.started == 2 and bound.used == 64 * MIB
            b.prepare([1, 1])  # none for b: no room, nothing idle to end
            assert b.started == 1
            await b.release(conn)  # the spare holds the room: not kept
            assert b._ledger.idle == [] and not conn.usable and bound.ended == 2

        async with BotPool("c", BotSpec.parse(RANDOM_PY), logs, 30.0, _confined(64),
                           "deal", deals=5, max_idle=8, bound=IdleBound(0)) as c:
            await c.open("wizard")  # nothing kept, not even the first
            assert c._ledger.idle == []
            conn = await c.lease(1)  # a new one for the game
            assert c.started == 2
            await c.release(conn)
            assert c._ledger.idle == [] and not conn.usable

    run_trio(main)


def test_bots_first_processes_wait_for_room_one_at_a_time_at_least(
        arena_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three bots open at once under room for one process: their first processes start
    one after another, each ending the one idle before it (not three at once)."""
    monkeypatch.setattr(pool_module, "IDLE_FLOOR", 64 * MIB)

    class Watched(IdleBound):
        most = 0

        async def open_first(self, cost: int) -> list[BotConnection]:
            ended = await super().open_first(cost)
            Watched.most = max(Watched.most, self._opening)
            return ended

    async def main() -> None:
        bound = Watched(64 * MIB)
        logs = arena_sandbox.tmp / "logs"
        pools = [BotPool(n, BotSpec.parse(RANDOM_PY), logs, 30.0, _confined(64), "deal",
                         deals=5, bound=bound) for n in "xyz"]
        async with pools[0], pools[1], pools[2]:
            async with trio.open_nursery() as nursery:
                for pool in pools:
                    nursery.start_soon(pool.open, "wizard")
            assert Watched.most == 1
            assert bound.ended == 2 and bound.used == 64 * MIB
            assert sum(len(p._ledger.idle) for p in pools) == 1

    run_trio(main)
