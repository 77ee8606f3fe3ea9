"""What a runtime's view costs (arena/proc/runtimes.py), on the Ruby sample bot.

- **Start-up**: from :meth:`arena.proc.process.BotProcess.spawn` to the first answered
  ``Bid`` (:func:`benchmarks.isolation.one_start`: spawn, health check, ``Hello``, then
  a Wizard bid) of ``cmd:ruby sample_bots/ruby/bot.rb``, started plainly, and of the
  Python sample (the baseline: its view was there before runtimes): sandboxed with
  the default view (``runtime``: the base view and Ruby's runtime, its Debian packages'
  folders read into the page cache, and mounted from images of their own where that is
  in force), sandboxed with the ``system`` view (all of ``/usr`` and ``/opt``, nothing
  read in), and not sandboxed (``Confinement(sandbox=False)``: cgroups and rlimits
  kept). The starts rotate between the three and alternate between the two bots,
  after one untimed start of each (the first builds the images and reads the view in);
  medians, and the ratio sandboxed / plain of each bot measured in the same run.
- **The runtime's view**: :func:`arena.proc.runtimes.package_view` of Ruby's packages
  worked out from dpkg (``dpkg-query -W``, ``dpkg-query -L``, the walk of the folders),
  read back from the cache file (a new arena process), and from the process's memory;
  medians of ``--repeat`` each.

Run alone as ``python -m benchmarks --only runtimes [--repeat N]``; about a minute at the
default ``--repeat`` (5): ``2 x --repeat`` starts of each kind and bot.
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
from arena.proc import packages as dpkg
from arena.proc import runtimes
from arena.proc.bwrap import sandbox_works
from arena.proc.images import image_mechanism
from benchmarks import Settings
from benchmarks.isolation import StartSeries, first_bid_view, one_start

TITLE = ("runtimes: the Ruby sample's start-up sandboxed with its runtime's view vs the "
         "system view vs no sandbox; a runtime's view from dpkg, cold and cached")

RUBY_BOT = "cmd:ruby sample_bots/ruby/bot.rb"
PYTHON_BOT = "cmd:python sample_bots/python/heuristic_bot.py"
"""The baseline: the Python sample, whose view (the arena's Python) was there before."""
STARTS_PER_REPEAT = 2


def ruby_ready() -> str | None:
    """None where the Ruby sample can run; else why not."""
    if shutil.which("ruby") is None:
        return "ruby is not installed"
    done = subprocess.run(["ruby", "-e", "require 'grpc'"], capture_output=True, timeout=60,
                          check=False)
    return None if done.returncode == 0 else "ruby-grpc is not installed"


async def _startups(starts: int, work: Path) -> dict[str, list[StartSeries]]:
    """Each bot's three series; the bots' starts interleaved, the kinds rotated."""
    view = first_bid_view()
    bots = {text: [(StartSeries("sandboxed"), Confinement(sandbox=True)),
                   (StartSeries("plain"), Confinement(sandbox=False)),
                   (StartSeries("system"), Confinement(sandbox=True, view="system"))]
            for text in (RUBY_BOT, PYTHON_BOT)}
    n = 0
    for text, kinds in bots.items():
        for _, confinement in kinds:  # untimed: images made, the view read in
            n += 1
            await one_start(BotSpec.parse(text), confinement, view, work / "logs", n)
    for i in range(starts):
        for text, kinds in bots.items():
            for series, confinement in kinds[i % 3:] + kinds[:i % 3]:
                n += 1
                to_hello, to_bid = await one_start(BotSpec.parse(text), confinement, view,
                                                   work / "logs", n)
                series.to_hello.append(to_hello)
                series.to_bid.append(to_bid)
    return {text: [series for series, _ in kinds] for text, kinds in bots.items()}


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
                    dpkg._memory.clear()
                start = time.perf_counter()
                runtimes.package_view(packages)
                times[kind].append(time.perf_counter() - start)
    finally:
        if saved is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = saved
        dpkg._memory.clear()
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
          f"bound whole ({len(view.covered)} covered inside), {len(view.files)} files alone; "
          f"worked out (medians of "
          f"{settings.repeat}, ms): " + ", ".join(
              f"{kind} {median(values) * 1000:.1f}" for kind, values in costs.items()),
          file=out)
    print(f"start-up: spawn to the first answered Bid; {starts} starts of each kind and "
          f"bot, interleaved and rotated, after one untimed each; medians in ms "
          f"({image_mechanism().describe().split(',')[0]})", file=out)
    width = max(len(text) for text in series)
    print(f"  {'bot':<{width}}  {'kind':<9}  {'to Hello':>8}  {'to Bid':>6}  [min..max]",
          file=out)
    figures: dict[str, Any] = {}
    for text, (boxed, plain, system) in series.items():
        for s in (boxed, plain, system):
            print(f"  {text:<{width}}  {s.label:<9}  {median(s.to_hello) * 1000:8.0f}  "
                  f"{median(s.to_bid) * 1000:6.0f}  [{min(s.to_bid) * 1000:.0f}.."
                  f"{max(s.to_bid) * 1000:.0f}]", file=out)
        ratio = median(boxed.to_bid) / median(plain.to_bid)
        versus = median(boxed.to_bid) / median(system.to_bid)
        print(f"  {text:<{width}}  ratio sandboxed / plain, to Bid: {ratio:.2f} "
              f"({(median(boxed.to_bid) - median(plain.to_bid)) * 1000:+.0f} ms); runtime "
              f"view / system view: {versus:.2f}", file=out)
        figures[text] = {
            **{s.label: {"to_hello_ms": round(median(s.to_hello) * 1000, 1),
                         "to_bid_ms": round(median(s.to_bid) * 1000, 1),
                         "to_bid_ms_runs": [round(x * 1000, 1) for x in s.to_bid]}
               for s in (boxed, plain, system)},
            "ratio_sandboxed_to_plain": round(ratio, 3),
            "ratio_runtime_to_system_view": round(versus, 3)}
    print(f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after", file=out)
    return {
        "view": {"packages": len(view.packages), "folders": len(view.folders),
                 "files": len(view.files), "covered": len(view.covered),
                 **{f"{kind}_ms": round(median(v) * 1000, 2) for kind, v in costs.items()}},
        "startup": figures, "load_before": round(load_before, 2),
    }
