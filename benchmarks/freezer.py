"""What a stop and a continue of the fair clock cost, by what the bot's threads sleep in.

A bot is stopped between its calls by the cgroup freezer (:meth:`Cgroup.freeze`: the
write, the wait until the kernel says the cgroup is frozen, the reading of its CPU time)
and continued (:meth:`Cgroup.thaw`: the CPU check, the write). Since Linux 6.1 the v1
freezer parks a task asleep in a futex on the spot, and wakes one asleep in ``poll``,
``epoll_wait`` (or ``wait``) to stop it; the thaw wakes it again. So the cost depends on
what the threads sleep in, not on how many there are. Measured here: a Python process
of 1 and of 10 threads, every thread asleep in a futex (``Event.wait``), ``epoll_wait``
or ``poll``, in a cgroup of the arena's, stopped and continued in turn (the workloads
interleaved, 200 cycles each per repetition, medians of the per-repetition medians).

For the fair clock: grpc's Python server has 9 threads, 2 of them in ``epoll_wait``
(its event engine's poller and the completion queue's); the Node.js sample 7 threads,
2 in ``epoll_wait``; bubblewrap's own two processes (``poll``, ``wait``) are kept out of
the bot's freezer cgroup (:meth:`Cgroup.release_wrappers`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from statistics import median
from typing import Any, TextIO

from arena.model.limits import Limits
from arena.proc.cgroup import Cgroup, limit_mechanism
from benchmarks import Settings

TITLE = "the fair clock's stop and continue: cost by what a bot's threads sleep in"

CYCLES = 200
KINDS = ("futex", "epoll", "poll")
THREADS = (1, 10)

_SLEEPER = """
import os, select, sys, threading
kind, n = sys.argv[1], int(sys.argv[2])
def sleep():
    if kind == "futex":
        threading.Event().wait()
    elif kind == "epoll":
        select.epoll().poll()
    else:
        r, _ = os.pipe(); p = select.poll(); p.register(r); p.poll()
for _ in range(n - 1):
    threading.Thread(target=sleep, daemon=True).start()
print("ready", flush=True)
sleep()
"""


class _Sleepers:
    """A process of ``threads`` threads asleep in ``kind``, in a cgroup of its own."""

    def __init__(self, kind: str, threads: int) -> None:
        self.cgroup = Cgroup(limit_mechanism(), Limits(), f"bench-{kind}-{threads}")
        self.proc = subprocess.Popen([sys.executable, "-c", _SLEEPER, kind, str(threads)],
                                     stdout=subprocess.PIPE, text=True)
        for procs in self.cgroup.procs_files():
            with open(procs, "w") as f:
                f.write(str(self.proc.pid))
        assert self.proc.stdout is not None
        self.proc.stdout.readline()
        time.sleep(0.2)  # every thread asleep
        self.stops: list[float] = []
        self.continues: list[float] = []

    def cycles(self, n: int) -> tuple[float, float]:
        stops, continues = [], []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            self.cgroup.freeze()
            t1 = time.perf_counter_ns()
            time.sleep(0.0005)
            t2 = time.perf_counter_ns()
            self.cgroup.thaw()
            t3 = time.perf_counter_ns()
            time.sleep(0.001)  # asleep again
            stops.append((t1 - t0) / 1000)
            continues.append((t3 - t2) / 1000)
        return median(stops), median(continues)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.cgroup.remove()


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    mechanism = limit_mechanism()
    if os.environ.get("ARENA_NO_FREEZER") or not (
            "freezer" in mechanism.base or mechanism.kind == "cgroup2"):
        print(f"skipped: no cgroup freezer here ({mechanism.note or mechanism.kind})",
              file=out)
        return {"skipped": True}
    sets = [_Sleepers(k, n) for k in KINDS for n in THREADS]
    try:
        for s in sets:
            s.cycles(20)  # warm-up
        for _ in range(settings.repeat):
            for s in sets:
                stop, cont = s.cycles(CYCLES)
                s.stops.append(stop)
                s.continues.append(cont)
    finally:
        for s in sets:
            s.close()
    print(f"{mechanism.kind}; {CYCLES} cycles x {settings.repeat} repetitions, interleaved;"
          f" us, median of the repetitions' medians; load {os.getloadavg()[0]:.1f}",
          file=out)
    print(f"  {'threads asleep in':20s} {'threads':>7s} {'stop':>8s} {'continue':>9s}",
          file=out)
    figures: dict[str, Any] = {"kind": mechanism.kind}
    for s, (kind, n) in zip(sets, [(k, n) for k in KINDS for n in THREADS], strict=True):
        stop, cont = median(s.stops), median(s.continues)
        print(f"  {kind:20s} {n:7d} {stop:8.1f} {cont:9.1f}", file=out)
        figures[f"{kind}_{n}"] = {"stop_us": stop, "continue_us": cont}
    for kind in KINDS:
        one, ten = figures[f"{kind}_1"], figures[f"{kind}_10"]
        per = ((ten["stop_us"] - one["stop_us"]) + (ten["continue_us"] - one["continue_us"])) / 9
        figures[f"{kind}_per_thread_us"] = per
        print(f"  each more thread in {kind}: {per:+.1f} us per stop and continue", file=out)
    return figures
