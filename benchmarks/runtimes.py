"""What a runtime's view costs (arena/proc/runtimes.py), on the Ruby sample bot.

- **Start-up**: from :meth:`arena.proc.process.BotProcess.spawn` to the first answered
  ``Bid`` (:func:`benchmarks.isolation.one_start`: spawn, health check, ``Hello``, then
  a Wizard bid) of ``cmd:ruby sample_bots/ruby/bot.rb``, started plainly: sandboxed with
  the default view (``runtime``: the base view and Ruby's runtime, its Debian packages'
  folders read into the page cache, and mounted from images of their own where that is
  in force), sandboxed with the ``system`` view (all of ``/usr`` and ``/opt``, nothing
  read in), and not sandboxed (``Confinement(sandbox=False)``: cgroups and rlimits
  kept). The starts rotate between the three, after one untimed start of each (the
  first builds the images and reads the view in); medians, and the ratio sandboxed /
  plain measured in the same run.
- **The runtime's view**: :func:`arena.proc.runtimes.package_view` of Ruby's packages
  worked out from dpkg (``dpkg-query -W``, ``dpkg-query -L``, the walk of the folders),
  read back from the cache file (a new arena process), and from the process's memory;
  medians of ``--repeat`` each.

Run alone as ``python -m benchmarks --only runtimes [--repeat N]``; about a minute at the
default ``--repeat`` (5): ``2 x --repeat`` starts of each kind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any, TextIO

import trio

from arena.model.limits import Confinement
from arena.model.spec import BotSpec
from arena.proc import runtimes
from arena.proc.bwrap import sandbox_works
from arena.proc.images import image_mechanism
from benchmarks import Settings
from benchmarks.isolation import StartSeries, first_bid_view, one_start

TITLE = ("runtimes: the Ruby sample's start-up sandboxed with its runtime's view vs the "
         "system view vs no sandbox; a runtime's view from dpkg, cold and cached")

RUBY_BOT = "cmd:ruby sample_bots/ruby/bot.rb"
STARTS_PER_REPEAT = 2


def ruby_ready() -> str | None:
    """None where the Ruby sample can run; else why not."""
    if shutil.which("ruby") is None:
        return "ruby is not installed"
    done = subprocess.run(["ruby", "-e", "require 'grpc'"], capture_output=True, timeout=60,
                          check=False)
    return None if done.returncode == 0 else "ruby-grpc is not installed"


async def _startups(starts: int, work: Path) -> list[StartSeries]:
    view = first_bid_view()
    spec = BotSpec.parse(RUBY_BOT)
    kinds = [(StartSeries("sandboxed"), Confinement(sandbox=True)),
             (StartSeries("plain"), Confinement(sandbox=False)),
             (StartSeries("system"), Confinement(sandbox=True, view="system"))]
    n = 0
    for _, confinement in kinds:  # untimed: images made, the view read in
        n += 1
        await one_start(spec, confinement, view, work / "logs", n)
    for i in range(starts):
        for series, confinement in kinds[i % 3:] + kinds[:i % 3]:
            n += 1
            to_hello, to_bid = await one_start(spec, confinement, view, work / "logs", n)
            series.to_hello.append(to_hello)
            series.to_bid.append(to_bid)
    return [series for series, _ in kinds]


def _view_costs(repeat: int, work: Path) -> dict[str, list[float]]:
    """Seconds of :func:`runtimes.package_view` cold (dpkg), from the file, in memory."""
    packages = runtimes.installed_packages(runtimes.BUILTIN["ruby"].packages)
    saved = os.environ.get("XDG_CACHE_HOME")
    times: dict[str, list[float]] = {"dpkg": [], "cache file": [], "memory": []}
    try:
        for i in range(repeat):
            os.environ["XDG_CACHE_HOME"] = str(work / f"cache-{i}")  # nothing kept yet
            for kind in times:
                if kind != "memory":
                    runtimes._memory.clear()
                start = time.perf_counter()
                runtimes.package_view(packages)
                times[kind].append(time.perf_counter() - start)
    finally:
        if saved is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = saved
        runtimes._memory.clear()
    return times


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    why = ruby_ready() or sandbox_works()
    if why is not None:
        print(f"  skipped: {why}", file=out)
        return {"skipped": why}
    starts = STARTS_PER_REPEAT * settings.repeat
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="arena-bench-runtimes-") as tmp:
        work = Path(tmp)
        costs = _view_costs(settings.repeat, work)
        saved = tempfile.tempdir
        tempfile.tempdir = str(work / "startup-tmp")  # the bots' socket folders
        os.makedirs(tempfile.tempdir)
        try:  # (the command runs in the repository's root, as the README enters it)
            series = trio.run(_startups, starts, work)
        finally:
            tempfile.tempdir = saved
    view = runtimes.package_view(runtimes.installed_packages(
        runtimes.BUILTIN["ruby"].packages))
    print(f"ruby runtime: {len(view.packages)} Debian packages, {len(view.folders)} folders "
          f"bound whole, {len(view.files)} files alone; worked out (medians of "
          f"{settings.repeat}, ms): " + ", ".join(
              f"{kind} {median(values) * 1000:.1f}" for kind, values in costs.items()),
          file=out)
    print(f"start-up of {RUBY_BOT}: spawn to the first answered Bid; {starts} starts of "
          f"each, rotated, after one untimed each; medians in ms "
          f"({image_mechanism().describe().split(',')[0]})", file=out)
    print(f"  {'kind':<9}  {'to Hello':>8}  {'to Bid':>6}  [min..max]", file=out)
    for s in series:
        print(f"  {s.label:<9}  {median(s.to_hello) * 1000:8.0f}  "
              f"{median(s.to_bid) * 1000:6.0f}  [{min(s.to_bid) * 1000:.0f}.."
              f"{max(s.to_bid) * 1000:.0f}]", file=out)
    boxed, plain, system = series
    ratio = median(boxed.to_bid) / median(plain.to_bid)
    print(f"  ratio sandboxed / plain, to Bid: {ratio:.2f} "
          f"({(median(boxed.to_bid) - median(plain.to_bid)) * 1000:+.0f} ms); runtime view / "
          f"system view: {median(boxed.to_bid) / median(system.to_bid):.2f}; load average "
          f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after", file=out)
    return {
        "view": {"packages": len(view.packages), "folders": len(view.folders),
                 "files": len(view.files),
                 **{f"{kind}_ms": round(median(v) * 1000, 2) for kind, v in costs.items()}},
        "startup": {s.label: {"to_hello_ms": round(median(s.to_hello) * 1000, 1),
                              "to_bid_ms": round(median(s.to_bid) * 1000, 1),
                              "to_bid_ms_runs": [round(x * 1000, 1) for x in s.to_bid]}
                    for s in series},
        "ratio_sandboxed_to_plain": round(ratio, 3),
        "ratio_runtime_to_system_view": round(median(boxed.to_bid) / median(system.to_bid), 3),
        "load_before": round(load_before, 2),
    }
