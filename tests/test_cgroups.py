"""The arena's cgroups on the real kernel, both ways a machine with cgroup v1 and the v2
hierarchy beside it ("hybrid") allows (conftest.CGROUP_MODES): v1 for everything, and the
v2 hierarchy for the stop (``cgroup.freeze``, ``cgroup.events``), the kill
(``cgroup.kill``), the CPU time (``cpu.stat``) and the clean-up after a crash, the limits
staying on v1 (``ARENA_CGROUP=unified``). On v2 this is the same code as on a machine with
v2 alone (a folder ``trick-arena-PID`` per arena, the bots' cgroups in it), but for the
limits, whose v2 controllers this machine does not have.

Covered: a kill -9 of an arena with a bot running leaves no bot process and no cgroup
(its reaper, which is told the arena's folders, sweeps them); what a dead arena left is
swept by the next arena's start, not another's that lives; and on v2 the mechanisms
themselves: a frozen bot gains no CPU time and ``cgroup.events`` says frozen, a frozen
bot is killed at once by ``cgroup.kill``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, SAMPLE_BOTS, Sandbox, bot_cmd, run_trio, wait_until

from arena.model.limits import Confinement, Limits
from arena.proc.bwrap import sandbox_works
from arena.proc.cgroup import Cgroup, limit_mechanism
from arena.proc.mechanism import PREFIX
from arena.proc.process import BotProcess
from arena.proc.sweep import sweep_stale_cgroups

pytestmark = pytest.mark.skipif(
    not limit_mechanism().cgroups or sandbox_works() is not None,
    reason=f"needs cgroups and the sandbox: {limit_mechanism().note or sandbox_works()}")

ARENA = """
import json, os, sys, time
from pathlib import Path
import trio
from arena.model.limits import Confinement
from arena.proc.cgroup import limit_mechanism
from arena.proc.process import BotProcess
from arena.proc.reaper import start_cleanup

start_cleanup()
bot = BotProcess("bot", sys.argv[1], Path(sys.argv[2]), cwd=Path.cwd(), startup_s=120,
                 idle=False, confinement=Confinement())

async def main():
    channel = await bot.start()
    cgroup = bot._cgroup
    print(json.dumps({"arena": os.getpid(), "bot": cgroup.pids(),
                      "dirs": [str(d) for d in cgroup.dirs.values()],
                      "base": {k: str(v) for k, v in limit_mechanism().base.items()}}),
          flush=True)
    await trio.sleep(600)

trio.run(main)
"""


def alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(pid)
    return out


def test_a_kill_9_of_an_arena_leaves_no_bot_and_no_cgroup(
        cgroup_mode: str, arena_sandbox: Sandbox) -> None:
    env = dict(arena_sandbox.env)
    if cgroup_mode == "unified":
        env["ARENA_CGROUP"] = "unified"
    else:
        env.pop("ARENA_CGROUP", None)
    arena = subprocess.Popen(
        [sys.executable, "-c", ARENA, bot_cmd(SAMPLE_BOTS / "random_bot.py")[4:],
         str(arena_sandbox.tmp / "bot.log")], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert arena.stdout is not None
        line = arena.stdout.readline()
        assert line, "the arena did not start its bot"
        seen = json.loads(line)
        assert seen["bot"] and all(Path(d).is_dir() for d in seen["dirs"])
        if cgroup_mode == "unified":
            unified = Path(seen["base"]["unified"])
            assert unified.name == f"{PREFIX}{seen['arena']}" and unified.is_dir()
            assert any(Path(d).is_relative_to(unified) for d in seen["dirs"])
        else:
            assert "unified" not in seen["base"]
        arena.send_signal(signal.SIGKILL)
        arena.wait(30)
    finally:
        if arena.poll() is None:
            arena.kill()
            arena.wait(30)
        if arena.stdout is not None:
            arena.stdout.close()
    # the arena's reaper (told the arena's folders) ends what is left and removes them
    assert wait_until(lambda: not alive(seen["bot"]), 30), alive(seen["bot"])
    assert wait_until(lambda: not any(Path(d).exists() for d in seen["dirs"]), 30), \
        [d for d in seen["dirs"] if Path(d).exists()]
    if cgroup_mode == "unified":  # the arena's own folder of the v2 hierarchy too
        assert wait_until(lambda: not Path(seen["base"]["unified"]).exists(), 30)


DEAD = """
import json, os, subprocess, sys
from arena.model.limits import Limits
from arena.proc.cgroup import Cgroup, limit_mechanism
cgroup = Cgroup(limit_mechanism(), Limits(), "left")
child = subprocess.Popen(["sleep", "600"], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for procs in cgroup.procs_files():
    with open(procs, "w") as f:
        f.write(str(child.pid))
print(json.dumps({"arena": os.getpid(), "sleep": child.pid,
                  "dirs": [str(d) for d in cgroup.dirs.values()]}), flush=True)
os._exit(0)  # no clean-up, no reaper: as an arena killed with its reaper
"""


def test_what_a_dead_arena_left_is_swept_at_the_next_start_and_a_live_ones_is_not(
        cgroup_mode: str, arena_sandbox: Sandbox) -> None:
    env = {k: v for k, v in arena_sandbox.env.items() if k != "ARENA_CGROUP"}
    if cgroup_mode == "unified":
        env["ARENA_CGROUP"] = "unified"
    done = subprocess.run([sys.executable, "-c", DEAD], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    dead = json.loads(done.stdout)
    try:
        assert alive([dead["sleep"]]) and all(Path(d).is_dir() for d in dead["dirs"])
        mine = Cgroup(limit_mechanism(), Limits(), "mine")  # a live arena's (this one)
        try:
            removed = sweep_stale_cgroups(limit_mechanism())
            assert all(Path(d).is_dir() for d in mine.dirs.values())  # not swept
        finally:
            mine.remove()
        assert wait_until(lambda: not alive([dead["sleep"]]), 10)
        assert not any(Path(d).exists() for d in dead["dirs"]), removed
        if cgroup_mode == "unified":
            assert any(r.endswith(f"{PREFIX}{dead['arena']}") for r in removed), removed
    finally:
        if alive([dead["sleep"]]):
            os.kill(dead["sleep"], signal.SIGKILL)


SPIN = "cmd:python3 -c \"import time\nwhile True: pass\""


def test_on_v2_a_frozen_bot_gains_no_cpu_and_cgroup_kill_ends_it_frozen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The v2 mechanisms themselves, on the hierarchy beside v1: a process spinning in
    the bot's cgroup gains CPU (``cpu.stat``), is frozen (``cgroup.freeze``; the kernel
    says so in ``cgroup.events``) and gains none while frozen, and ``cgroup.kill`` ends it
    at once though frozen (a v1 freeze holds off a kill until the thaw)."""
    from conftest import unified_why_not

    why = unified_why_not()
    if why is not None:
        pytest.skip(f"ARENA_CGROUP=unified: {why}")
    monkeypatch.setenv("ARENA_CGROUP", "unified")
    limit_mechanism.cache_clear()
    try:
        cgroup = Cgroup(limit_mechanism(), Limits(), "spin")
        assert cgroup.unified is not None and cgroup.unified.parent.name.startswith(PREFIX)
        spin = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                start_new_session=True)
        try:
            for procs in cgroup.procs_files():
                Path(procs).write_text(str(spin.pid))
            first = cgroup.cpu_ns()
            assert wait_until(lambda: (cgroup.cpu_ns() or 0) > (first or 0) + 20_000_000, 30)
            assert cgroup.freeze()
            events = (cgroup.unified / "cgroup.events").read_text().split()
            assert events[events.index("frozen") + 1] == "1"
            at_rest = cgroup.cpu_ns()
            time.sleep(0.2)  # (what is measured: no CPU while frozen, however long)
            assert cgroup.cpu_ns() == at_rest
            cgroup.kill_all(signal.SIGKILL)  # through cgroup.kill
            spin.wait(10)
            assert spin.returncode == -signal.SIGKILL
        finally:
            if spin.poll() is None:
                spin.kill()
                spin.wait()
            cgroup.remove()
        assert not cgroup.unified.exists()
    finally:
        limit_mechanism.cache_clear()


def test_the_start_of_a_run_says_which_hierarchy_does_what(cgroup_mode: str) -> None:
    text = limit_mechanism().describe(Limits())
    if cgroup_mode == "unified":
        assert "cgroup v1 (memory, pids)" in text and "the stop between calls, the kill, " \
            "the CPU time and the clean-up after a crash on the cgroup v2 hierarchy beside " \
            "it (/sys/fs/cgroup/unified)" in text
    else:
        assert "cgroup v1 (memory, pids, cpuacct" in text and "v2" not in text


def test_a_bot_in_unified_mode_runs_and_its_cgroups_go(cgroup_mode: str,
                                                      arena_sandbox: Sandbox) -> None:
    """A real sandboxed bot, each way: started, stopped and continued, ended; nothing of
    its cgroups stays (the v2 one included)."""
    proc = BotProcess("both", bot_cmd(SAMPLE_BOTS / "random_bot.py")[4:],
                      arena_sandbox.tmp / "logs" / "both.log", startup_s=120, idle=False,
                      confinement=Confinement())

    async def check() -> list[Path]:
        channel = await proc.start()
        try:
            cgroup = proc._cgroup
            assert cgroup is not None
            dirs = list(cgroup.dirs.values())
            assert (cgroup.unified is not None) == (cgroup_mode == "unified")
            assert proc.cpu_ns() is not None
            proc.freeze()
            assert cgroup._is_frozen()
            proc.thaw()
        finally:
            channel.close()
            await proc.aclose()
        return dirs

    dirs = run_trio(check)
    assert wait_until(lambda: not any(d.exists() for d in dirs), 10), dirs
