"""The reaper (arena/proc/reaper.py): a process of the arena's own that waits for the
arena to end (its pipe closes) and then ends what is left in the arena's cgroups.

Checked with a real arena process: the reaper runs while the arena does, it ends when
the arena exits (the pipe the arena alone held is closed by the exit), and the arena's
exit leaves no unclosed file behind (it once held the pipe as a file object, which the
interpreter's end collected with a ResourceWarning: the "unclosed BufferedWriter" the
test suite printed at every worker's end)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from isolation_helpers import wait_until_gone, with_marker

from arena.proc.cgroup import limit_mechanism

ARENA = """
import json, os, sys
from arena.model.limits import Limits
from arena.proc.cgroup import Cgroup, limit_mechanism
from arena.proc.reaper import start_cleanup
start_cleanup()
left = Cgroup(limit_mechanism(), Limits(), "left")  # a bot's, left at the arena's exit
print(os.getpid(), json.dumps([str(d) for d in
                               (*limit_mechanism().base.values(), *left.dirs.values())]),
      flush=True)
sys.stdin.readline()  # until the test has seen the reaper
"""


def reapers_of(pid: int) -> list[int]:
    """Live reaper processes started for the arena process ``pid``."""
    return with_marker(f"from arena.proc.reaper import _reap; _reap()\0{pid}\0")


def test_the_reaper_lives_as_long_as_its_arena_and_the_exit_leaves_no_open_file(
        cgroup_mode: str) -> None:
    """Both ways (conftest.CGROUP_MODES). Its arena's cgroups, a bot's left behind and,
    on v2, the arena's own folder ``trick-arena-PID``, are gone once the reaper has
    ended (it is told the arena's folders: one of its own would be somewhere else)."""
    if not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: no reaper is started")
    arena = subprocess.Popen([sys.executable, "-X", "dev", "-c", ARENA], cwd=REPO,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert arena.stdout is not None and arena.stdin is not None
        first, folders = arena.stdout.readline().split(" ", 1)
        pid = int(first)
        made = [Path(f) for f in json.loads(folders)]
        bots = [f for f in made if f.name.startswith(f"arena-{pid}-left-")]
        v2 = [f for f in made if f.name == f"trick-arena-{pid}"]
        assert bots and all(f.is_dir() for f in bots)
        assert bool(v2) == (cgroup_mode == "unified")
        reapers = reapers_of(pid)
        assert len(reapers) == 1, reapers  # started, and waiting on its pipe
        arena.stdin.write("\n")
        arena.stdin.flush()
        _, err = arena.communicate(timeout=30)
    finally:
        if arena.poll() is None:
            arena.kill()
            arena.communicate()
    assert arena.returncode == 0, err
    assert "ResourceWarning" not in err and "unclosed" not in err, err
    # the arena's exit closed the pipe: the reaper swept its cgroups and ended
    assert wait_until_gone(lambda: reapers_of(pid), 10) == []
    assert [f for f in [*bots, *v2] if f.exists()] == []
