"""The fair clock's stop between calls, as it is made cheap (``docs/isolation.md``, "The
fair clock's cost per decision"): bubblewrap's own processes are out of the bot's v1
freezer cgroup, every process of the bot is in it, and the bot is still stopped whole
(that a stopped bot gains no CPU is ``test_sandbox.py::test_a_stopped_bot_gets_no_cpu``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import SAMPLE_BOTS, Sandbox, bot_cmd, run_trio

from arena.model.limits import Confinement
from arena.model.spec import BotSpec
from arena.proc.bwrap import sandbox_works
from arena.proc.cgroup import STOPPED_SLACK_NS, Cgroup, limit_mechanism
from arena.proc.connection import BotConnection
from arena.proc.process import BotProcess

MECHANISM = limit_mechanism()
pytestmark = pytest.mark.skipif(
    sandbox_works() is not None or MECHANISM.kind != "cgroup1"
    or "freezer" not in MECHANISM.base or bool(os.environ.get("ARENA_NO_FREEZER")),
    reason="needs the sandbox and the cgroup v1 freezer")


def freezer_of(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "freezer" in controllers.split(","):
            return path
    raise AssertionError(f"no freezer line for {pid}")


def comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def test_bubblewrap_is_out_of_the_stops_and_every_process_of_the_bot_is_in(
        arena_sandbox: Sandbox) -> None:
    """Deterministic: once a sandboxed bot serves, the processes of its (pids) cgroup
    that are bubblewrap's are in the arena's freezer cgroup, not the bot's; the bot's
    own process is in the bot's, and a freeze leaves it frozen (freezer.state FROZEN,
    its threads parked in the kernel's refrigerator, CPU time still). The wrappers
    are still in the bot's other cgroups: the end of the bot ends them (the fixture
    checks that nothing is left)."""
    proc = BotProcess("clock", bot_cmd(SAMPLE_BOTS / "random_bot.py")[4:],
                      arena_sandbox.tmp / "logs" / "clock.log", startup_s=120, idle=False,
                      confinement=Confinement(sandbox=True))

    async def check() -> None:
        channel = await proc.start()
        try:
            cgroup = proc._cgroup
            assert cgroup is not None
            own = "/" + cgroup.dirs["freezer"].name
            arena = os.path.normpath("/" + str(MECHANISM.base["freezer"].relative_to(
                "/sys/fs/cgroup/freezer")))
            pids = cgroup.pids()
            wrappers = [p for p in pids if comm(p) == "bwrap"]
            bot = [p for p in pids if comm(p) != "bwrap"]
            assert len(wrappers) == 2 and bot, [(p, comm(p)) for p in pids]
            assert all(freezer_of(p) == arena for p in wrappers), \
                [(p, freezer_of(p)) for p in wrappers]
            assert all(freezer_of(p) == own for p in bot), [(p, freezer_of(p)) for p in bot]
            proc.freeze()
            state = (cgroup.dirs["freezer"] / "freezer.state").read_text().strip()
            before = proc.cpu_ns()
            assert state == "FROZEN"
            assert proc.cpu_ns() == before
            proc.thaw()
        finally:
            channel.close()
            await proc.aclose()

    run_trio(check)



def test_after_each_call_the_bot_is_frozen_with_its_cpu_noted_before_the_next_is_woken(
        arena_sandbox: Sandbox) -> None:
    """Deterministic: the fair clock's stop after a call (one CPU reading, not two that
    agree) returns with the bot FROZEN and its CPU time noted (a slice accounted late
    stays inside the thaw's slack), and once settled that time does not move while the
    next bot of the table is woken and put to rest, 30 times over; no CPU counts as used
    while stopped."""
    spec = BotSpec.parse(bot_cmd(SAMPLE_BOTS / "random_bot.py"))
    conns = [BotConnection(f"clock-{i}", spec, arena_sandbox.tmp / "logs", startup_s=120,
                           confinement=Confinement(sandbox=True)) for i in range(2)]

    def cgroup(conn: BotConnection) -> Cgroup:
        assert conn.process is not None and conn.process._cgroup is not None
        return conn.process._cgroup

    async def check() -> None:
        try:
            for conn in conns:
                await conn.open()
            for _ in range(30):
                for asked, other in (conns, conns[::-1]):
                    asked.wake()
                    asked.rest()
                    stopped = cgroup(asked)
                    at_rest = stopped.cpu_at_rest
                    assert (stopped.dirs["freezer"] / "freezer.state").read_text().strip() \
                        == "FROZEN"
                    assert at_rest is not None
                    # the last slice may be accounted a moment after the freezer says
                    # FROZEN (17 us seen in CI): inside the slack the thaw allows
                    late = (stopped.cpu_ns() or 0) - at_rest
                    assert 0 <= late <= STOPPED_SLACK_NS, late
                    settled = stopped._settled_cpu_ns()
                    other.wake()
                    other.rest()
                    assert stopped.cpu_ns() == settled
            for conn in conns:  # no CPU was charged as used while stopped
                conn.wake()
                assert cgroup(conn).take_cpu_while_stopped() == 0
                conn.rest()
        finally:
            for conn in conns:
                await conn.aclose()

    run_trio(check)
