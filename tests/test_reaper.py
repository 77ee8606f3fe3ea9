"""The reaper (arena/proc/reaper.py): a process of the arena's own that waits for the
arena to end (its pipe closes) and then ends what is left in the arena's cgroups.

Checked with a real arena process: the reaper runs while the arena does, it ends when
the arena exits (the pipe the arena alone held is closed by the exit), and the arena's
exit leaves no unclosed file behind (it once held the pipe as a file object, which the
interpreter's end collected with a ResourceWarning: the "unclosed BufferedWriter" the
test suite printed at every worker's end)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO
from isolation_helpers import wait_until_gone, with_marker

from arena.proc.cgroup import limit_mechanism

ARENA = """
import os, sys
from arena.proc.reaper import start_cleanup
start_cleanup()
print(os.getpid(), flush=True)
sys.stdin.readline()  # until the test has seen the reaper
"""


def reapers_of(pid: int) -> list[int]:
    """Live reaper processes started for the arena process ``pid``."""
    return with_marker(f"from arena.proc.reaper import _reap; _reap()\0{pid}\0")


def test_the_reaper_lives_as_long_as_its_arena_and_the_exit_leaves_no_open_file() -> None:
    if not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: no reaper is started")
    arena = subprocess.Popen([sys.executable, "-X", "dev", "-c", ARENA], cwd=REPO,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert arena.stdout is not None and arena.stdin is not None
        pid = int(arena.stdout.readline())
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
    # the arena's exit closed the pipe: the reaper ended
    assert wait_until_gone(lambda: reapers_of(pid), 10) == []
