"""Processes started per game, against the least the isolation rule needs.

Under ``isolation = "deal"`` a bot process plays at most one game of each deal, so a bot
that plays ``g`` games of a run of ``d`` deals needs at least ``ceil(g / d)`` processes
(played lane by lane, one process per lane of its tables does it). A field of ``--bots``
``cmd:`` bots (the Python random sample, sandboxed), ``--seats`` at a table, a balanced
schedule of ``--tables-per-bot`` tables each and ``--deals`` deals, runs as ``python -m
arena tournament`` to its end; the processes started are the bots' log files (one a
process), the least is worked out from the stored games. Also the most bot processes
alive at once and their memory then (the sum of their resident sets, polled every 0.2
s), and the games per second. ``--baseline DIR``: the same field run first with the
arena's code in DIR (a checkout, e.g. before a change, with its own ``.venv``), for
before and after in one run.

``python -m benchmarks.pool [--bots 30] [--seats 6] [--tables-per-bot 4] [--deals 2]
[--concurrency 2] [--baseline DIR]``; ``python -m benchmarks --only pool`` runs a small
field (12 bots) once.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from benchmarks import Settings

TITLE = "bot processes started per game against the least the isolation rule needs"

REPO = Path(__file__).resolve().parents[1]
BOT = REPO / "sample_bots" / "python" / "random_bot.py"


def field_file(folder: Path, bots: int, seats: int, tables_per_bot: int, deals: int,
               concurrency: int, pool: str = "") -> Path:
    lines = ['name = "pool-bench"', 'game = "trumps"', f"seats = {seats}", "seed = 99",
             f"concurrency = {concurrency}", "[options]", "draw = false", "[time]",
             "move_ms = 5000", "startup_ms = 60000", "[schedule]", 'format = "balanced"',
             f"deals = {deals}", f"tables_per_bot = {tables_per_bot}"]
    if pool:
        lines += ["[pool]", *pool.split(",")]
    for i in range(bots):
        lines += ["[[bots]]", f'name = "b{i:03d}"', f'spec = "cmd:python {BOT}"']
    path = folder / "pool.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _bot_rss(marker: bytes) -> tuple[int, int]:
    """Live bot processes whose environment holds ``marker``, and their resident bytes."""
    count = rss = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker not in f.read():
                    continue
            with open(f"/proc/{entry}/statm") as f:
                rss += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            count += 1
        except (OSError, ValueError, IndexError):
            continue
    return count, rss


def run_field(file: Path, out: Path, code: Path) -> dict[str, Any]:
    """Run the field with the arena of ``code``; its figures."""
    tmp = Path(tempfile.mkdtemp(prefix="pb-", dir="/tmp"))
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONUNBUFFERED="1")
    marker = f"TMPDIR={tmp}".encode()
    # the checkout's own environment (its bots import its arena.sdk through it)
    python = code / ".venv" / "bin" / "python"
    started = time.monotonic()
    proc = subprocess.Popen([str(python) if python.exists() else sys.executable, "-m",
                             "arena", "tournament", str(file), "--out",
                             str(out), "--resamples", "20"], cwd=code, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak_count = peak_rss = 0
    while proc.poll() is None:
        count, rss = _bot_rss(marker)
        peak_count, peak_rss = max(peak_count, count), max(peak_rss, rss)
        time.sleep(0.2)
    _, err = proc.communicate()
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise RuntimeError(f"the field's run failed: {err[-500:]}")
    db = sqlite3.connect(f"file:{out / 'tournament.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT bots, started_at, ended_at FROM games WHERE status = 'done'"
                          ).fetchall()
        deals = int(db.execute("SELECT value FROM meta WHERE key = 'deals'").fetchone()[0])
    finally:
        db.close()
    games_of: Counter[str] = Counter(b for bots, _, _ in rows for b in json.loads(bots))
    least = sum(math.ceil(g / deals) for g in games_of.values())
    started_processes = len(list((out / "logs").glob("*.log")))
    span = max(r[2] for r in rows) - min(r[1] for r in rows)
    return {"games": len(rows), "processes": started_processes, "least": least,
            "ratio": started_processes / least, "per_game": started_processes / len(rows),
            "peak_bots": peak_count, "peak_rss_mb": peak_rss / (1 << 20),
            "games_per_s": len(rows) / span, "seconds": seconds}


def measure(bots: int, seats: int, tables_per_bot: int, deals: int, concurrency: int,
            baseline: Path | None, out: TextIO, pool: str = "") -> dict[str, Any]:
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="arena-bench-pool-") as folder:
        file = field_file(Path(folder), bots, seats, tables_per_bot, deals, concurrency, pool)
        runs = ([("before", baseline)] if baseline is not None else []) + [("now", REPO)]
        print(f"a field of {bots} cmd: bots (the Python random sample, sandboxed), {seats} "
              f"seats, balanced, {tables_per_bot} tables a bot, {deals} deals, concurrency "
              f"{concurrency}", file=out, flush=True)
        print(f"  {'code':<8} {'games':>6} {'started':>8} {'least':>6} {'ratio':>6} "
              f"{'per game':>9} {'most alive':>11} {'their RSS':>10} {'games/s':>8}",
              file=out, flush=True)
        for label, code in runs:
            f = run_field(file, Path(folder) / f"out-{label}", code)
            figures[label] = f
            print(f"  {label:<8} {f['games']:>6} {f['processes']:>8} {f['least']:>6} "
                  f"{f['ratio']:>6.2f} {f['per_game']:>9.2f} {f['peak_bots']:>11} "
                  f"{f['peak_rss_mb']:>7.0f} MB {f['games_per_s']:>8.2f}", file=out,
                  flush=True)
    return figures


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    return measure(12, 6, 2, 3, 2, None, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pool", description=__doc__)
    parser.add_argument("--bots", type=int, default=30)
    parser.add_argument("--seats", type=int, default=6)
    parser.add_argument("--tables-per-bot", type=int, default=4)
    parser.add_argument("--deals", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--pool", default="", metavar="KEY=N,...",
                        help="the field's [pool] settings, e.g. max_idle=8 (the baseline's "
                             "file gets them too: an older arena may refuse them)")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="a checkout of the arena to run the same field with first")
    args = parser.parse_args(argv)
    measure(args.bots, args.seats, args.tables_per_bot, args.deals, args.concurrency,
            args.baseline, sys.stdout, args.pool)
    return 0


if __name__ == "__main__":
    sys.exit(main())
