"""Fair CPU under load: do thinking bots get their time, whatever else runs?

Two figures, each against a baseline measured in the same run (rounds interleaved,
medians quoted), with the hostile test bots of ``tests/bots/hostile``:

- **four thinkers**: a tournament of 4 ``thinker.py`` bots (600 ms of CPU on each of
  their first 2 decisions of a game, ``move_ms`` 1000) at the default concurrency (one
  game per core), against the same field at concurrency 1. The figure: a thinker's wall
  time per think over its CPU time (1.0: it had a core to itself), and the timeouts.
- **spinner**: a thinker at a table with ``spinner.py`` (busy threads between its calls)
  against the thinker at a table with a built-in bot in its place.

These were tests once; their outcome depends on what else the machine runs, so they are
figures here, and the tests check the mechanisms instead (bots stopped between calls,
one core per game). Run: ``python -m benchmarks --only fairness``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from benchmarks import Settings

TITLE = "fair CPU: thinking bots' wall time per think over their CPU time, and timeouts"
ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "bots" / "hostile"
THINK = ("--cpu-ms", "600", "--per-game", "2")


def _tournament(folder: Path, name: str, bots: list[tuple[str, str]], seats: int,
                concurrency: int | None) -> str:
    lines = [f'name = "{name}"', 'game = "trumps"', f"seats = {seats}",
             f"seed = {secrets.randbits(62)}"]
    if concurrency is not None:
        lines.append(f"concurrency = {concurrency}")
    lines += ["", "[options]", "draw = false", "", "[time]", "move_ms = 1000", "",
              "[schedule]", "deals = 1"]
    for bot, spec in bots:
        lines += ["", "[[bots]]", f'name = "{bot}"', f"spec = {json.dumps(spec)}"]
    path = folder / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _spec(script: str, *args: str) -> str:
    return "cmd:" + " ".join(["python", str(HOSTILE / script), "--tag", "bench", *args])


def _play(folder: Path, name: str, bots: list[tuple[str, str]], seats: int,
          concurrency: int | None) -> dict[str, Any]:
    """One tournament: the thinkers' worst wall/CPU ratio and the timeouts."""
    path = _tournament(folder, name, bots, seats, concurrency)
    out = folder / f"out-{name}"
    env = dict(os.environ, TMPDIR=str(folder))
    done = subprocess.run([sys.executable, "-m", "arena", "tournament", path, "--out",
                           str(out), "--resamples", "10", "--fresh"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name}: {done.stderr.strip()[-300:]}")
    ratios: list[float] = []
    for log in out.rglob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("HOSTILE "):
                report = json.loads(line[len("HOSTILE "):])
                if report.get("attack") == "think" and report.get("thinks"):
                    ratios.append(report["max_wall_ms"] / report["cpu_ms"])
    with sqlite3.connect(out / "tournament.sqlite") as db:
        timeouts = db.execute("SELECT COUNT(*) FROM faults WHERE kind = 'timeout'"
                              ).fetchone()[0]
    shutil.rmtree(out, ignore_errors=True)
    return {"worst_ratio": max(ratios) if ratios else None, "timeouts": int(timeouts)}


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    thinkers = [(f"thinker{i}", _spec("thinker.py", *THINK)) for i in range(4)]
    pairs = {
        "four thinkers": ((thinkers, 4, None), (thinkers, 4, 1)),
        "spinner": (([("spinner", _spec("spinner.py")), ("thinker", _spec("thinker.py", *THINK)),
                      ("heuristic", "heuristic")], 3, 1),
                    ([("random", "random"), ("thinker", _spec("thinker.py", *THINK)),
                      ("heuristic", "heuristic")], 3, 1)),
    }
    rounds = max(1, min(settings.repeat, 3))
    measured: dict[str, dict[str, list[Any]]] = {
        name: {"test": [], "base": []} for name in pairs}
    folder = Path(tempfile.mkdtemp(prefix="fair-", dir="/tmp"))
    try:
        for r in range(rounds):
            for name, (test, base) in pairs.items():
                order = [("test", test), ("base", base)]
                for kind, (bots, seats, concurrency) in order[r % 2:] + order[:r % 2]:
                    measured[name][kind].append(_play(folder, f"{name.split()[0]}-{kind}",
                                                      bots, seats, concurrency))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    figures: dict[str, Any] = {"rounds": rounds, "load": os.getloadavg()[0]}
    print(f"{rounds} rounds, load average {figures['load']:.1f} on {os.cpu_count()} cores",
          file=out)
    print(f"{'':16} {'wall/CPU':>9} {'baseline':>9} {'ratio':>7} {'timeouts':>9}", file=out)
    for name, runs in measured.items():
        test = statistics.median(x["worst_ratio"] for x in runs["test"])
        base = statistics.median(x["worst_ratio"] for x in runs["base"])
        timeouts = sum(x["timeouts"] for x in runs["test"])
        figures[name] = {"wall_over_cpu": test, "baseline": base, "ratio": test / base,
                         "timeouts": timeouts}
        print(f"{name:16} {test:9.2f} {base:9.2f} {test / base:7.2f} {timeouts:9d}", file=out)
    return figures
