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
2 in ``epoll_wait``; bubblewrap's monitor (``poll``) is kept out of the bot's freezer
cgroup, its init (``wait``) kept in (:meth:`Cgroup.release_wrappers`).

Then, on a live sandboxed Python sample bot (cgroup v1 only: v2 moves nothing), a stop
and a continue by where bubblewrap's two processes are, the arrangements alternating on
the same process: ``old`` (both out of the bot's freezer cgroup, as the arena was until
bubblewrap's init was found writable by the bot), ``now`` (the monitor out, the init in)
and ``all in``.

Then a bot that cannot be stopped at once (``tests/bots/stall.py``: 300 MiB populated in
the kernel after each answer): in-process, how long the stop's part on the referee's
thread took (``BotConnection.rest``) and the awaited rest (``BotConnection.stopped``,
the bot killed at its ``stop_ms``), against the same bot without the stall; and a
24-game tournament (``arena tournament``, a subprocess) with it, against the same
tournament with the bot answering without the stall, alternating: the wall time's
ratio (the bar: 1.5), and the faults (the stall bot's only).
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from statistics import median
from typing import Any, TextIO

import trio

from arena.model.faults import Fault
from arena.model.limits import Confinement, Limits
from arena.model.spec import BotSpec
from arena.play.players import RemotePlayer
from arena.proc.bwrap import sandbox_works
from arena.proc.cgroup import Cgroup, limit_mechanism
from arena.proc.connection import BotConnection
from arena.proc.process import BotProcess
from arena.rules import new_game
from benchmarks import Settings

ROOT = Path(__file__).resolve().parent.parent
STALL_BOT = ROOT / "tests" / "bots" / "stall.py"
SAMPLES = ROOT / "sample_bots" / "python"

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
    figures = _sleepers(settings, out)
    if sandbox_works() is not None:
        print(f"the rest skipped: no sandbox here ({sandbox_works()})", file=out)
        return figures
    figures["wrappers"] = _wrappers(settings, out)
    figures["stall_in_process"] = trio.run(_stall_in_process, out)
    figures["stall_tournament"] = _stall_tournaments(settings, out)
    return figures


def _sleepers(settings: Settings, out: TextIO) -> dict[str, Any]:
    mechanism = limit_mechanism()
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


# -- where bubblewrap's processes are ---------------------------------------------------

ARRANGEMENTS = {"old": (False, False), "now": (False, True), "all in": (True, True)}
"""Arrangement -> (bubblewrap's monitor in the bot's freezer cgroup, its init in it)."""


def _wrappers(settings: Settings, out: TextIO) -> dict[str, Any]:
    """Stop and continue of one live sandboxed Python sample, bubblewrap's two processes
    moved between the bot's freezer cgroup and the arena's before each batch."""
    mechanism = limit_mechanism()
    if mechanism.kind != "cgroup1" or "freezer" not in mechanism.base:
        print("where bubblewrap's processes are: skipped (cgroup v1 only)", file=out)
        return {"skipped": True}
    with tempfile.TemporaryDirectory(prefix="bf-", dir="/tmp") as tmp:
        proc = BotProcess("bench", f"python {SAMPLES / 'random_bot.py'}",
                          Path(tmp) / "bench.log", startup_s=120, idle=False,
                          confinement=Confinement(sandbox=True))
        trio.run(_started, proc)
        cgroup = proc._cgroup
        assert cgroup is not None and proc.pid is not None
        monitor, init = proc.pid, proc._child_pid
        arena = mechanism.base["freezer"] / "cgroup.procs"
        own = cgroup.dirs["freezer"] / "cgroup.procs"
        found: dict[str, tuple[list[float], list[float]]] = {a: ([], []) for a in ARRANGEMENTS}
        try:
            for _ in range(settings.repeat):
                for name, (monitor_in, init_in) in ARRANGEMENTS.items():
                    for pid, inside in ((monitor, monitor_in), (init, init_in)):
                        (own if inside else arena).write_text(str(pid))
                    stop_us, continue_us = _cycles(cgroup, CYCLES)
                    found[name][0].append(stop_us)
                    found[name][1].append(continue_us)
        finally:
            trio.run(proc.aclose)
    print(f"a live sandboxed Python sample, by where bubblewrap's processes are; {CYCLES} "
          f"cycles x {settings.repeat}, interleaved; us, medians; load "
          f"{os.getloadavg()[0]:.1f}", file=out)
    print(f"  {'arrangement':44s} {'stop':>8s} {'continue':>9s} {'both':>8s}", file=out)
    labels = {"old": "old: monitor and init out (init writable)",
              "now": "now: monitor out, init in", "all in": "all in"}
    figures: dict[str, Any] = {}
    for name, (stops, continues) in found.items():
        stop, cont = median(stops), median(continues)
        figures[name] = {"stop_us": stop, "continue_us": cont}
        print(f"  {labels[name]:44s} {stop:8.1f} {cont:9.1f} {stop + cont:8.1f}", file=out)
    cost = (figures["now"]["stop_us"] + figures["now"]["continue_us"]) / (
        figures["old"]["stop_us"] + figures["old"]["continue_us"])
    figures["now_over_old"] = cost
    print(f"  now / old (stop and continue): {cost:.2f}", file=out)
    return figures


async def _started(proc: BotProcess) -> None:
    channel = await proc.start()
    channel.close()
    await trio.sleep(0.5)  # every thread asleep


def _cycles(cgroup: Cgroup, n: int) -> tuple[float, float]:
    """Median us of a stop (the referee's: begun, and looked at until it holds) and of a
    continue, over ``n`` cycles."""
    stops, continues = [], []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        cgroup.freeze(settle=False)
        t1 = time.perf_counter_ns()
        time.sleep(0.0005)
        t2 = time.perf_counter_ns()
        cgroup.thaw()
        t3 = time.perf_counter_ns()
        time.sleep(0.001)
        stops.append((t1 - t0) / 1000)
        continues.append((t3 - t2) / 1000)
    return median(stops), median(continues)


# -- a bot that cannot be stopped at once -------------------------------------------------

STALL_DECISIONS = 6
STALL_BAR = 1.5
"""The stall tournament's wall time over its control's must stay under this."""


async def _stall_in_process(out: TextIO) -> dict[str, Any]:
    """``STALL_DECISIONS`` decisions of the stall bot, and of the same bot without the
    stall: the stop's part on the referee's thread (``rest``) and the part awaited
    (``stopped``), per decision, in ms."""
    figures = {how: await _stall_decisions(how) for how in ("none", "populate")}
    print(f"the stall bot, in-process, {STALL_DECISIONS} decisions (ms; load "
          f"{os.getloadavg()[0]:.1f}):", file=out)
    for how, found in figures.items():
        label = "no stall (control)" if how == "none" else "300 MiB populated after answering"
        print(f"  {label:34s} on the referee's thread: median {found['rest_ms_median']:.3f}, "
              f"max {found['rest_ms_max']:.3f}; awaited: median "
              f"{found['stopped_ms_median'] or 0:.2f}; faults {found['faults'] or 'none'}",
              file=out)
    return figures


async def _stall_decisions(how: str) -> dict[str, Any]:
    on_loop: list[float] = []
    awaited: list[float] = []
    faults: Counter[str] = Counter()
    rest, stopped = BotConnection.rest, BotConnection.stopped

    def timed_rest(self: BotConnection) -> None:
        start = time.perf_counter()
        try:
            rest(self)
        finally:
            on_loop.append((time.perf_counter() - start) * 1000)
            if not self.stop_pending:
                awaited.append(0.0)  # stopped already: nothing is awaited

    async def timed_stopped(self: BotConnection) -> str | None:
        start = time.perf_counter()
        try:
            return await stopped(self)
        finally:
            if len(awaited) < len(on_loop):  # the stop after a call (not the one before)
                awaited.append((time.perf_counter() - start) * 1000)

    with tempfile.TemporaryDirectory(prefix="bs-", dir="/tmp") as tmp:
        conn = BotConnection("stall", BotSpec.parse(
            "cmd:" + shlex.join(["python", str(STALL_BOT), "--stall", how])),
            Path(tmp), startup_s=120, confinement=Confinement(sandbox=True))
        player = RemotePlayer(conn)
        game = new_game("trumps", {"players": 2, "draw": False}, seed=1)
        view = game.view(game.to_move or 0)
        try:
            await conn.open()
            BotConnection.rest = timed_rest  # type: ignore[method-assign]
            BotConnection.stopped = timed_stopped  # type: ignore[method-assign]
            for _ in range(STALL_DECISIONS):
                try:
                    await player.decide(view, "g", "t", 5000, 0)
                except Fault as fault:
                    faults[fault.detail.split(" (")[0]] += 1
        finally:
            BotConnection.rest = rest  # type: ignore[method-assign]
            BotConnection.stopped = stopped  # type: ignore[method-assign]
            await conn.aclose()
    return {"rest_ms_max": max(on_loop), "rest_ms_median": median(on_loop),
            "stopped_ms_median": median(awaited) if awaited else None,
            "faults": dict(faults), "restarts": conn.restarts}


STALL_FIELD = (("stall", None), ("py-heuristic", SAMPLES / "heuristic_bot.py"),
               ("py-random", SAMPLES / "random_bot.py"), ("heuristic", None))


def _stall_file(folder: Path, how: str) -> Path:
    lines = [f'name = "stall-{how}"', 'game = "trumps"', "seats = 3", "seed = 7", "",
             "[options]", "draw = false", "", "[time]", "move_ms = 1000", "",
             "[schedule]", "deals = 2"]
    for name, script in STALL_FIELD:
        if name == "stall":
            spec = "cmd:" + shlex.join(["python", str(STALL_BOT), "--stall", how])
        elif script is None:
            spec = name
        else:
            spec = "cmd:" + shlex.join(["python", str(script)])
        lines += ["", "[[bots]]", f'name = "{name}"', f"spec = {json.dumps(spec)}"]
    path = folder / f"stall-{how}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _stall_tournament(folder: Path, how: str, k: int) -> tuple[float, Counter[str], int]:
    """One run: its wall time, its faults by bot and first words, its games done."""
    out = folder / f"out-{how}-{k}"
    env = dict(os.environ, TMPDIR=str(folder))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "arena", "tournament",
                           str(_stall_file(folder, how)), "--out", str(out), "--resamples",
                           "20"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"the stall tournament failed: {done.stderr[-500:]}")
    db = sqlite3.connect(f"file:{out / 'tournament.sqlite'}?mode=ro", uri=True)
    try:
        faults = Counter(f"{bot}: {detail.split(' (')[0].split(';')[0]}" for bot, detail in
                         db.execute("SELECT bot, detail FROM faults"))
        games = int(db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'")
                    .fetchone()[0])
    finally:
        db.close()
    return wall, faults, games


def _stall_tournaments(settings: Settings, out: TextIO) -> dict[str, Any]:
    walls: dict[str, list[float]] = {"none": [], "populate": []}
    faults: dict[str, Counter[str]] = {"none": Counter(), "populate": Counter()}
    games = 0
    with tempfile.TemporaryDirectory(prefix="bt-", dir="/tmp") as tmp:
        for k in range(settings.repeat):
            for how in walls:
                wall, found, games = _stall_tournament(Path(tmp), how, k)
                walls[how].append(wall)
                faults[how] += found
    control, stall = median(walls["none"]), median(walls["populate"])
    ratio = stall / control
    print(f"a {games}-game tournament with the stall bot against its control (the same bot "
          f"without the stall), {settings.repeat} runs each, alternating; s, medians; load "
          f"{os.getloadavg()[0]:.1f}", file=out)
    print(f"  control {control:6.1f} s  {sorted(round(w, 1) for w in walls['none'])}",
          file=out)
    print(f"  stall   {stall:6.1f} s  {sorted(round(w, 1) for w in walls['populate'])}",
          file=out)
    print(f"  stall / control: {ratio:.2f} (bar: at most {STALL_BAR})"
          f"{'' if ratio <= STALL_BAR else '  ABOVE THE BAR'}", file=out)
    for how, label in (("none", "control"), ("populate", "stall")):
        listed = "; ".join(f"{n} x {what}" for what, n in faults[how].most_common()) or "none"
        print(f"  faults, all {label} runs: {listed}", file=out)
    return {"control_s": walls["none"], "stall_s": walls["populate"], "ratio": ratio,
            "faults": {how: dict(c) for how, c in faults.items()}}
