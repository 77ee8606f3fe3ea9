"""The v1 freezer's anchor (arena.proc.keeper.Keeper.hold_freezer_anchor): while an arena has a
bot cgroup with a freezer it holds one empty cgroup of its own frozen, so that stopping
and continuing a bot does not turn the kernel's freezer switch on and off at every call
(the cost is a benchmark's figure: ``python -m benchmarks --only referee``). Shown here:
the anchor is there and frozen while the arena runs, it freezes no bot (it is a sibling
of the bots' cgroups, and empty), a bot is still stopped and continued, and it is gone
after the arena's exit, and after a kill -9 once the next arena's sweep has run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from arena.proc.cgroup import limit_mechanism
from arena.proc.keeper import ANCHOR_LABEL
from arena.proc.sweep import sweep_stale_cgroups

MECHANISM = limit_mechanism()
pytestmark = pytest.mark.skipif(
    MECHANISM.kind != "cgroup1" or "freezer" not in MECHANISM.base
    or bool(os.environ.get("ARENA_NO_FREEZER")),
    reason="the anchor is for the cgroup v1 freezer, which this machine does not offer")

ARENA = """
import os, subprocess, sys, time
from arena.model.limits import Limits
from arena.proc.cgroup import Cgroup, limit_mechanism
cgroup = Cgroup(limit_mechanism(), Limits(), "anchortest")
sleeper = subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
(cgroup.dirs["freezer"] / "cgroup.procs").write_text(str(sleeper.pid))
def state():
    return open(f"/proc/{sleeper.pid}/stat").read().rpartition(")")[2].split()[0]
deadline = time.monotonic() + 30
while state() != "S" and time.monotonic() < deadline:  # started, not yet asleep
    time.sleep(0.01)
print(cgroup.dirs["freezer"], (cgroup.dirs["freezer"] / "freezer.state").read_text().strip(),
      state(), flush=True)
cgroup.freeze()
frozen = (cgroup.dirs["freezer"] / "freezer.state").read_text().strip()
cgroup.thaw()
print(frozen, (cgroup.dirs["freezer"] / "freezer.state").read_text().strip(), flush=True)
if sys.argv[1] == "wait":
    time.sleep(60)
sleeper.kill(); sleeper.wait()
cgroup.remove()
"""


def anchor_of(pid: int) -> Path:
    return MECHANISM.base["freezer"] / f"arena-{pid}-{ANCHOR_LABEL}"


def start(mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", ARENA, mode], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_the_anchor_is_held_frozen_freezes_no_bot_and_goes_at_exit() -> None:
    proc = start("wait")
    try:
        assert proc.stdout is not None
        bot_folder, bot_state, sleeper_state = proc.stdout.readline().split()
        anchor = anchor_of(proc.pid)
        assert (anchor / "freezer.state").read_text().strip() == "FROZEN"
        assert (anchor / "cgroup.procs").read_text().strip() == ""  # empty
        assert Path(bot_folder).parent == anchor.parent  # a sibling, not a parent
        assert bot_state == "THAWED" and sleeper_state == "S"
        assert proc.stdout.readline().split() == ["FROZEN", "THAWED"]  # stops still work
    finally:
        proc.kill()
        proc.communicate()
    # killed (-9): the anchor stays until an arena's sweep, as every cgroup of a dead arena
    assert anchor.is_dir()
    sweep_stale_cgroups(MECHANISM)
    assert not anchor.exists()


def test_the_anchor_goes_when_the_arena_exits() -> None:
    proc = start("exit")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.splitlines()[1].split() == ["FROZEN", "THAWED"]
    assert not anchor_of(proc.pid).exists()


def test_a_forked_child_leaves_its_parents_anchor() -> None:
    code = ("import os\n"
            "from arena.model.limits import Limits\n"
            "from arena.proc.cgroup import Cgroup, limit_mechanism\n"
            "cgroup = Cgroup(limit_mechanism(), Limits(), 'anchortest')\n"
            "child = os.fork()\n"
            "if child == 0:\n"
            "    raise SystemExit(0)\n"  # atexit handlers run in the child too
            "os.waitpid(child, 0)\n"
            "anchor = cgroup.dirs['freezer'].parent / f'arena-{os.getpid()}-anchor'\n"
            "print(anchor.is_dir(), anchor)\n"
            "cgroup.remove()\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, text=True,
                          capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    held, anchor = proc.stdout.split()
    assert held == "True"  # the child's exit left it
    assert not Path(anchor).exists()  # the parent's removed it


def test_a_run_s_keeper_removes_its_anchor_at_the_run_s_end() -> None:
    """The anchor is the run's (``keeping()`` around it, as each command that runs bots
    does), not the process's: gone when the run ends, made afresh by a second run in the
    same process; an inner run shares the outer one's; after its end a bot started
    outside any run has the process's own keeper."""
    code = ("import os\n"
            "from arena.model.limits import Limits\n"
            "from arena.proc import keeper\n"
            "from arena.proc.cgroup import Cgroup, limit_mechanism\n"
            "def run():\n"
            "    cgroup = Cgroup(limit_mechanism(), Limits(), 'anchortest')\n"
            "    anchor = cgroup.dirs['freezer'].parent / f'arena-{os.getpid()}-anchor'\n"
            "    state = (anchor / 'freezer.state').read_text().strip()\n"
            "    cgroup.remove()\n"
            "    return anchor, state\n"
            "for _ in range(2):\n"
            "    with keeper.keeping() as outer:\n"
            "        anchor, state = run()\n"
            "        with keeper.keeping() as inner:\n"
            "            same = inner is outer is keeper.current()\n"
            "        print(state, same, anchor.is_dir(), end=' ')\n"
            "    print(anchor.exists(), keeper.current() is not outer)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, text=True,
                          capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["FROZEN True True False True"] * 2
