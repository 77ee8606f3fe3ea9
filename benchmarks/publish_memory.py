"""``arena publish``'s peak memory as the games grow: flat, or close to it.

One store (copies of one real Wizard game, as :mod:`benchmarks.store` makes them: 4
bots, about 20 KB of record a game) is grown through :data:`SIZES` games (environment
``ARENA_BENCH_PUBLISH_SIZES``, default ``1000,10000,50000``); at each size ``arena
publish DIR --out SITE --resamples 10`` runs as a fresh process and its peak resident
memory (``ru_maxrss``, through :data:`benchmarks.store._SHIM`'s fork) and wall time are
printed, with the ratio of the peak to the first size's (the baseline, measured in the
same run) and the memory added per game. The bar: :data:`BAR_MB` at 50,000 games.

``ARENA_BENCH_PUBLISH_BEFORE=COMMIT`` (e.g. ``main``) also runs the publish of that
commit's ``arena`` package (taken from git into a temporary folder) on the same store
at each size, for a before and after.

Run alone: ``python -m benchmarks.publish_memory`` (or ``python -m benchmarks --only
publish_memory``). On an idle core the default sizes take about 5 minutes (twice that
with the before) and 1.5 GB of disk for the store and the site, removed after.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from arena.runs.store import Store
from benchmarks import Settings
from benchmarks.store import _SHIM, REPO, Template, grow, new_store

TITLE = "arena publish's peak memory at 1k, 10k and 50k games, and its ratio to 1k"

SIZES = tuple(int(x) for x in os.environ.get("ARENA_BENCH_PUBLISH_SIZES",
                                             "1000,10000,50000").split(",") if int(x) > 0)
BEFORE = os.environ.get("ARENA_BENCH_PUBLISH_BEFORE", "")
BAR_MB = 200.0
"""Issue 18's bar: publish under this peak at 50,000 games."""
RESAMPLES = "10"


def publish(store: Path, site: Path, code: Path | None) -> tuple[float, float, str]:
    """Run ``arena publish`` (this checkout's, or the ``arena`` package in ``code``) as a
    fresh process: its peak resident memory (MB), wall time (s) and last line."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    cwd = code or REPO  # the working folder comes first on sys.path
    with tempfile.NamedTemporaryFile("r", suffix=".rusage") as report:
        began = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _SHIM, report.name, "publish",
                               str(store), "--out", str(site), "--resamples", RESAMPLES],
                              cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, check=False)
        seconds = time.perf_counter() - began
        maxrss, code_ = (int(x) for x in report.read().split())
    shutil.rmtree(site, ignore_errors=True)
    last = (done.stdout.strip().splitlines() or [""])[-1]
    if code_ != 0:
        last = f"exit {code_}: {last}"
    return maxrss / 1024, seconds, last


def before_code(commit: str, into: Path) -> Path | None:
    """The ``arena`` package of ``commit``, extracted into ``into`` (None outside git)."""
    try:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "arena"],
                                 capture_output=True, check=True, timeout=60).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return into


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    del settings  # each size is measured once, as the store grows
    base = Path(tempfile.mkdtemp(prefix="arena-bench-publish-"))
    figures: dict[str, Any] = {"sizes": list(SIZES), "bar_mb": BAR_MB}
    try:
        old: Path | None = None
        if BEFORE:
            (base / "before").mkdir()
            old = before_code(BEFORE, base / "before")
            if old is None:
                print(f"  before: skipped ({BEFORE} is not in git here)", file=out)
        labels = [("now", None)] + ([(BEFORE, old)] if old is not None else [])
        template = Template()
        store = new_store(base / "store", Store, template)
        rows: dict[str, dict[str, Any]] = {label: {} for label, _ in labels}
        try:
            count = 0
            for size in SIZES:
                grow(store, template, count, size)
                count = size
                store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                for label, code in labels:
                    mb, seconds, last = publish(base / "store", base / "site", code)
                    first = rows[label].get(str(SIZES[0]), {}).get("peak_mb", mb)
                    per_game = ((mb - first) * 1e6 / (size - SIZES[0])
                                if size > SIZES[0] else 0.0)
                    rows[label][str(size)] = {"peak_mb": round(mb, 1),
                                              "seconds": round(seconds, 1),
                                              "ratio": round(mb / first, 3),
                                              "bytes_per_game": round(per_game)}
                    print(f"  {label:>8} {size:>7,} games: publish peak {mb:6.1f} MB, "
                          f"{mb / first:5.2f}x the {SIZES[0]:,}-game peak "
                          f"({per_game:5.0f} bytes a game more), {seconds:6.1f} s  "
                          f"({last[:60]})", file=out, flush=True)
        finally:
            store.close()
        figures.update(rows)
        at = rows["now"].get("50000")
        if at is not None:
            print(f"  bar: under {BAR_MB:.0f} MB at 50,000 games: {at['peak_mb']} MB: "
                  f"{'met' if at['peak_mb'] < BAR_MB else 'NOT met'}", file=out)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return figures


if __name__ == "__main__":
    run(Settings(), sys.stdout)
