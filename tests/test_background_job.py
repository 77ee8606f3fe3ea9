"""``arena play`` started as a shell's background job (SIGINT inherited as ignored, so
Python installs no KeyboardInterrupt handler): SIGTERM, what ``kill %1`` sends, and
SIGINT still stop it cleanly, as they stop ``arena tournament``: exit 130, ``arena:
interrupted``, every bot process gone. (arena.cli.interrupt.sigterm_as_ctrl_c)"""

from __future__ import annotations

import signal
import subprocess
from typing import Any

import pytest
from conftest import REPO, TEST_BOTS, Sandbox, arena_command, bot_cmd, gone, read_trace, wait_until

AS_BACKGROUND_JOB = ("sh", "-c", 'trap "" INT; exec "$@"', "sh")
"""What a shell without job control does to ``command &``: SIGINT ignored, then exec."""


def decisions(trace: list[dict[str, Any]]) -> int:
    return sum(t["call"] in ("bid", "play", "trump") for t in trace)


@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_background_play_stops_cleanly(arena_sandbox: Sandbox, signo: int) -> None:
    trace = arena_sandbox.tmp / "trace.jsonl"
    arena = subprocess.Popen(
        [*AS_BACKGROUND_JOB, *arena_command(
            "play", "--no-sandbox", "--game", "wizard", "--players", "3", "--seed", "4",
            "--bots", f"{bot_cmd(TEST_BOTS / 'sleepy.py', '--sleep-ms', 30, '--trace', trace)}"
                      ",heuristic,random", "--move-ms", "5000", "--quiet")],
        env=arena_sandbox.env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True)
    try:
        assert wait_until(lambda: decisions(read_trace(trace)) >= 2, 20), "no bot was called"
        with open(f"/proc/{arena.pid}/status") as f:  # the arena itself ignored SIGINT...
            ignored = next(int(line.split()[1], 16) for line in f if line.startswith("SigIgn"))
        # ...as it started (Python's own handler is then not installed); now it is caught
        assert not ignored & (1 << (signal.SIGINT - 1))
        pid = read_trace(trace)[0]["pid"]
        arena.send_signal(signo)
        out, err = arena.communicate(timeout=20)
    finally:
        if arena.poll() is None:
            arena.kill()
            arena.communicate()
    assert arena.returncode == 130, err
    assert err == "arena: interrupted\n"
    assert "Final standings" not in out
    assert gone(pid)
