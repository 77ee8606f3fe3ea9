"""The trio loop's longest task step while a league plays real bot processes and its live
page is fetched: the figure behind the trio-thread rule (docs/architecture.md, "What runs
on the trio thread"). Before (the branch point :data:`BEFORE`, from git) and now, in the
same run.

``python -m benchmarks.loop_steps [--seconds S]`` (or ``python -m benchmarks --only
loop_steps``):

``arena league serve FILE --web`` runs in a process of its own with a trio instrument
(:class:`StepClock`, put into every ``trio.run`` of that process) that times each task
step in the thread's CPU time (``time.thread_time``: what the step itself cost, which a
loaded machine cannot lengthen) and in wall time. The league (:data:`LEAGUE_TOML`) plays
Trumps with three sandboxed ``cmd:`` bots, a fresh process for every game (``isolation =
"game"``: a start and an end of a process per seat and game), while this process fetches
the page, its state and a bot's page in a loop. Reported: steps, the longest step (CPU
and wall) and the task that took it, and the steps over :data:`BOUND_S` of CPU.

The same driver serves the test (tests/test_loop_steps.py): :func:`measure`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO
from urllib.error import URLError
from urllib.request import urlopen

import trio

from benchmarks.publish_memory import before_code

REPO = Path(__file__).resolve().parent.parent
BEFORE = "bed6a94"
"""The code before the exits were awaited and the supervision's file work moved to
threads (the branch point of that work)."""

FETCH_PAUSE_S = 0.02
"""The page client's pause between its rounds of three fetches (it would take a core of
its own without one, on a machine of two)."""

TITLE = "the loop's longest task step (a league of process bots, its page fetched)"

BOUND_S = 0.25
"""The most CPU time one task step may take (the test's bound: generous, the steps of a
loop that keeps the rule take a few ms at most)."""

LISTED = 8
"""How many tasks the benchmark lists, longest step first."""

TOP = 5
"""How many of the longest steps are reported."""

LEAGUE_TOML = """name = "steps"
game = "trumps"
seats = 3
seed = 11
concurrency = 1
isolation = "game"
output = "out"
[options]
draw = false
[time]
move_ms = 5000
[[house]]
name = "heuristic"
spec = "heuristic"
rating = 1550
[[bots]]
name = "py1"
spec = "cmd:python {bot}"
read_only = ["{root}/arena"]
env = {{ PYTHONPATH = "{root}" }}
[[bots]]
name = "py2"
spec = "cmd:python {bot}"
read_only = ["{root}/arena"]
env = {{ PYTHONPATH = "{root}" }}
[[bots]]
name = "py3"
spec = "cmd:python {bot}"
read_only = ["{root}/arena"]
env = {{ PYTHONPATH = "{root}" }}
"""
"""Trumps at 3 seats without the draw (short games), three Python sample bots started
afresh for every game, one game at a time (the loop's steps, not the machine's cores);
their SDK is the arena's under test (``root``), shown to them read-only."""


class StepClock(trio.abc.Instrument):
    """Times every task step of the trio runs it is put into (several runs on several
    threads may share it): the longest in the thread's CPU time and in wall time, with
    the task's name, and how many steps took more than :data:`BOUND_S` of CPU, by task."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self.steps = 0
        self.longest_cpu_s = 0.0
        self.longest_cpu_task = ""
        self.longest_wall_s = 0.0
        self.longest_wall_task = ""
        self.over: dict[str, int] = {}
        self.by_task: dict[str, tuple[float, float, int]] = {}
        """Per task name: its longest step in CPU and in wall time (s), and its steps."""
        self.top: list[tuple[float, str]] = []
        """The :data:`TOP` longest steps in CPU time: (seconds, task)."""

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._local.start = (time.thread_time(), time.perf_counter())

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        start: tuple[float, float] | None = getattr(self._local, "start", None)
        if start is None:
            return
        cpu = time.thread_time() - start[0]
        wall = time.perf_counter() - start[1]
        with self._lock:
            self.steps += 1
            if cpu > self.longest_cpu_s:
                self.longest_cpu_s, self.longest_cpu_task = cpu, task.name
            if wall > self.longest_wall_s:
                self.longest_wall_s, self.longest_wall_task = wall, task.name
            most_cpu, most_wall, steps = self.by_task.get(task.name, (0.0, 0.0, 0))
            self.by_task[task.name] = (max(most_cpu, cpu), max(most_wall, wall), steps + 1)
            if len(self.top) < TOP or cpu > self.top[-1][0]:
                self.top = sorted([*self.top, (cpu, task.name)], reverse=True)[:TOP]
            if cpu > BOUND_S:
                self.over[task.name] = self.over.get(task.name, 0) + 1

    def report(self) -> dict[str, Any]:
        with self._lock:
            return {"steps": self.steps, "longest_cpu_ms": self.longest_cpu_s * 1000,
                    "longest_cpu_task": self.longest_cpu_task,
                    "longest_wall_ms": self.longest_wall_s * 1000,
                    "longest_wall_task": self.longest_wall_task, "over_bound": self.over,
                    "top_cpu_ms": [[round(cpu * 1000, 2), name] for cpu, name in self.top],
                    "by_task": {name: {"cpu_ms": round(cpu * 1000, 2),
                                       "wall_ms": round(wall * 1000, 2), "steps": steps}
                                for name, (cpu, wall, steps) in sorted(
                                    self.by_task.items(), key=lambda kv: -kv[1][0])}}


def serve_instrumented(report: Path, argv: Sequence[str]) -> int:
    """Run the arena's command line ``argv`` in this process with a :class:`StepClock` in
    every ``trio.run``; its figures written to ``report`` (JSON) at the end."""
    clock = StepClock()
    real_run: Callable[..., Any] = trio.run

    def run(*args: Any, **kwargs: Any) -> Any:
        kwargs["instruments"] = [*kwargs.get("instruments", ()), clock]
        return real_run(*args, **kwargs)

    trio.run = run  # type: ignore[assignment]
    import arena
    from arena.cli import main  # (imported here: the arena of PYTHONPATH, before or now)

    try:
        return main(list(argv))
    finally:
        report.write_text(json.dumps({**clock.report(), "arena": arena.__file__}))


def _fetch(url: str) -> bytes:
    with urlopen(url, timeout=30) as reply:
        data: bytes = reply.read()
        return data


def measure(folder: Path, games: int, arena_path: Path = REPO,
            timeout_s: float = 600) -> dict[str, Any]:
    """Serve the league of :data:`LEAGUE_TOML` in ``folder`` (the arena found at
    ``arena_path``), fetch its page in a loop until it has played ``games`` games (or
    ``timeout_s`` passed), stop it (SIGINT, as Ctrl-C) and return the steps' figures,
    with ``games`` (played) and ``fetches`` (pages fetched)."""
    bot = REPO / "sample_bots" / "python" / "random_bot.py"
    (folder / "league.toml").write_text(LEAGUE_TOML.format(bot=bot, root=arena_path))
    report = folder / "steps.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env.update(PYTHONPATH=str(arena_path), PYTHONUNBUFFERED="1",
               TMPDIR=tempfile.mkdtemp(prefix="s-", dir="/tmp"))
    # -P: run as a file, without its folder on the path (benchmarks/grpc.py is not grpc);
    # the arena is the one of PYTHONPATH
    command = [sys.executable, "-P", str(Path(__file__).resolve()), "serve", str(report), "--",
               "league", "serve", str(folder / "league.toml"), "--json", "--address",
               "127.0.0.1:0", "--web", "127.0.0.1:0"]
    with (folder / "serve.err").open("w") as err:
        proc = subprocess.Popen(command, cwd=folder, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=err)
    played = fetches = 0
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        url = None
        for line in proc.stdout:
            if line.startswith("{"):
                url = str(json.loads(line)["web"])
                break
        if url is None:
            raise RuntimeError("the league did not start: "
                               + (folder / "serve.err").read_text()[-2000:])
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                _fetch(url)
                state = json.loads(_fetch(url + "state.json"))
                _fetch(url + "bots/py1")
            except (URLError, OSError, ValueError):
                time.sleep(0.05)  # (the page's state comes once the league is going)
                continue
            fetches += 1
            time.sleep(FETCH_PAUSE_S)
            season = state.get("season") or {}
            played = int(season.get("games", 0))
            if played >= games:
                break
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    if not report.exists():
        raise RuntimeError("no figures: " + (folder / "serve.err").read_text()[-2000:])
    figures: dict[str, Any] = json.loads(report.read_text())
    figures.update(games=played, fetches=fetches)
    return figures


def run(settings: Any, out: TextIO, games: int | None = None) -> dict[str, Any]:
    """Before and now, ``games`` games each (from ``settings.seconds``: 2 a second)."""
    games = games or max(6, int(settings.seconds * 2))
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="arena-bench-steps-") as tmp:
        before = before_code(BEFORE, Path(tmp))
        for label, path in (("before", before), ("now", REPO)):
            if path is None:
                continue
            folder = Path(tmp) / label
            folder.mkdir()
            found = measure(folder, games, path)
            figures[label] = found
            print(f"{label:>6} ({BEFORE if label == 'before' else 'this tree'}): "
                  f"{found['games']} games, {found['fetches']} page fetches, "
                  f"{found['steps']} steps; longest step {found['longest_cpu_ms']:.1f} ms "
                  f"CPU ({found['longest_cpu_task']}), {found['longest_wall_ms']:.1f} ms "
                  f"wall ({found['longest_wall_task']}); over {BOUND_S * 1000:.0f} ms "
                  f"CPU: {found['over_bound'] or 'none'}", file=out, flush=True)
            for name, task in list(found["by_task"].items())[:LISTED]:
                print(f"        {task['cpu_ms']:8.1f} ms CPU {task['wall_ms']:8.1f} ms wall "
                      f"{task['steps']:7d} steps  {name}", file=out, flush=True)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["serve"]:  # the instrumented league (see measure)
        return serve_instrumented(Path(args[1]), args[3:])
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loop_steps")
    parser.add_argument("--games", type=int, default=20, help="games each (default 20)")
    ns = parser.parse_args(args)
    run(None, sys.stdout, ns.games)
    return 0


if __name__ == "__main__":
    sys.exit(main())
