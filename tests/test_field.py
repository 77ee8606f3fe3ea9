"""A field of many ``cmd:`` bots, the mechanism of ``python -m benchmarks.field`` at a
smaller size (issue 36): 18 copies of a small bot under names of their own, 6 seats, a
real ``python -m arena tournament`` killed -9 once a third of its games are stored, then
resumed to its end. Every bot plays; every log of the resumed run holds every line its
bot wrote (each bot counts its lines in a file of its own as it writes them); the pools
keep no more processes alive than the machine's bound says (the bots' memory limit is
chosen so that it allows a handful); nothing is left running after the kill and after
the end: no bot process, no cgroup folder of either arena.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from conftest import REPO, Sandbox

from arena.play.bound import GIB, IDLE_FLOOR, MIB, idle_budget, memory_available
from benchmarks.field import (
    Peaks,
    copy_bots,
    count_done,
    left_after,
    run_arena,
    stored,
    tournament_file,
)

BOTS = 18
SEATS = 6
CONCURRENCY = 2
IDLE = 4
"""The idle and spare processes the test's memory limit leaves room for, about."""

BOT = '''
import os, random, sys
from arena.sdk import Bot, View, serve

COUNTS = {counts!r}


class Counted(Bot):
    """Plays at random; a numbered line to stderr at every decision, then its count in
    COUNTS/PID (so every line counted there was written before)."""

    name = "counted"
    said = 0

    def decide(self, view: View) -> int:
        self.said += 1
        print(f"decision {{self.said}}", file=sys.stderr, flush=True)
        with open(os.path.join(COUNTS, str(os.getpid())), "w") as f:
            f.write(str(self.said))
        return random.Random(str((self.game_id, view.seat, len(view.tricks),
                                  len(view.trick.cards)))).choice(view.legal)

    bid = play = choose_trump = decide


if __name__ == "__main__":
    print(f"pid {{os.getpid()}}", file=sys.stderr, flush=True)
    serve(Counted())
'''


def _memory_mb() -> int:
    """A bot memory limit for which the machine's bound leaves room for about :data:`IDLE`
    idle processes at the least each counts (the processes in games take the rest; the
    arena reads ``MemAvailable`` again: a little more or less room)."""
    available = memory_available()
    assert available is not None
    margin = max(GIB, available // 10)
    mb = (available - margin - IDLE * IDLE_FLOOR) // (CONCURRENCY * SEATS) // MIB
    assert idle_budget(available, mb * MIB, CONCURRENCY * SEATS) // IDLE_FLOOR <= IDLE + 1
    return mb


def test_a_field_killed_and_resumed_plays_every_bot_hears_every_line_leaves_nothing(
        arena_sandbox: Sandbox, tmp_path: Path) -> None:
    counts = tmp_path / "counts"
    counts.mkdir()
    bots = copy_bots(tmp_path, BOTS, BOT.format(counts=str(counts)))
    file = tournament_file(tmp_path, bots, SEATS, deals=2, tables_per_bot=1,
                           concurrency=CONCURRENCY, memory_mb=_memory_mb(), move_ms=10000,
                           python=sys.executable)
    # trusted bots, outside the sandbox: they write their counts where the test reads
    text = file.read_text().replace('spec = "cmd:', 'sandbox = false\nspec = "cmd:')
    file.write_text(text)
    out = tmp_path / "out"
    env = dict(arena_sandbox.env)
    marker = f"TMPDIR={arena_sandbox.tmp}\0".encode()
    args = ["tournament", str(file), "--out", str(out), "--resamples", "5"]
    total = 2 * BOTS  # a table of 6 for each 6 bots, 6 rotations of 2 deals
    first = run_arena(args, REPO, env, Peaks(), lambda: count_done(out) >= total // 3)
    assert first.killed, first.stderr[-2000:]
    killed_at = count_done(out)
    assert 0 < killed_at < total
    # the reaper ends the killed arena's bots, and their cgroups
    assert left_after(marker, [first.pid], 60) == ([], [])

    before = {p.name for p in (out / "logs").glob("*.log")}
    peaks = Peaks()
    second = run_arena(args, REPO, env, peaks)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "Traceback" not in second.stderr and "Exception in thread" not in second.stderr
    bound = re.search(r"^pool: (\d+) MiB for idle and spare processes", second.stderr, re.M)
    assert bound is not None, second.stderr[-2000:]
    rows = stored(out)
    assert len(rows) == total
    assert {b for bots_, _ in rows for b in bots_} == {n for n, _ in bots}  # all played
    # the bound: the games' processes, the idle and spare ones it allows, and one
    # game's processes on their way out
    # each idle process counts at least IDLE_FLOOR against the bound
    room = int(bound[1]) * MIB // IDLE_FLOOR
    assert peaks.bots <= CONCURRENCY * SEATS + room + SEATS, (peaks, bound[0])

    # every log of the resumed run holds every line its bot counted, in order
    new = [p for p in (out / "logs").glob("*.log") if p.name not in before]
    assert new
    heard = 0
    for log in new:
        lines = log.read_text().splitlines()
        pid = next((int(line[4:]) for line in lines if line.startswith("pid ")), None)
        if pid is None or not (counts / str(pid)).exists():
            continue  # ended before its first line, or before its first decision
        said = int((counts / str(pid)).read_text())
        decisions = [int(line.split()[1]) for line in lines if line.startswith("decision ")]
        assert decisions[:said] == list(range(1, said + 1)), (log.name, said, lines[-3:])
        heard += 1
    assert heard > 0

    # nothing left: no process of either run, no cgroup folder of either arena
    assert left_after(marker, [first.pid, second.pid], 60) == ([], [])
