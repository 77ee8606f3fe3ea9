"""What a uid of its own per bot process costs at start-up (``arena/proc/ids.py``).

The same sandboxed start, spawn to the first answered ``Bid`` (as in
:mod:`benchmarks.isolation`), of the Python sample heuristic bot and, where node is
ready, the Node.js sample, two ways, alternating, after one untimed start of each:

- ``own uid``: as the arena runs it as root, a uid leased per process, with the staging
  of sources its uid cannot reach (here the Python under ``/root/.pyenv``);
- ``arena uid``: the same with ``ARENA_NO_BOT_IDS`` (the sandbox as it was: 65534 is the
  arena's own user outside).

Prints medians and the ratio own / arena. Run alone as ``python -m benchmarks.bot_ids
[--repeat N] [--json FILE]``; ``2 x 4 x --repeat`` starts in all.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import median
from typing import Any, TextIO

import trio

from arena.model.limits import Confinement
from arena.model.spec import BotSpec
from arena.proc import ids
from arena.proc.bwrap import sandbox_works
from benchmarks import Settings
from benchmarks.grpc import ROOT
from benchmarks.isolation import NODE_BOT, PYTHON_BOT, first_bid_view, one_start
from benchmarks.tournament import node_ready

TITLE = "a uid of its own per bot process: start-up cost against the arena's uid"

STARTS_PER_REPEAT = 4


def _set_ids(on: bool) -> None:
    if on:
        os.environ.pop("ARENA_NO_BOT_IDS", None)
    else:
        os.environ["ARENA_NO_BOT_IDS"] = "1"
    ids.id_mechanism.cache_clear()


Kind = tuple[str, Callable[[], None]]
"""A way to start a bot: its label, and what sets it up (an environment variable)."""


async def alternating_starts(starts: int, work: Path, kinds: Sequence[Kind]
                             ) -> dict[str, dict[str, list[float]]]:
    """Spawn-to-first-Bid times of the sample bots started each of two ``kinds`` of way,
    alternating, after one untimed start of each: {bot: {label: [seconds]}}."""
    view = first_bid_view()
    bots: list[tuple[str, tuple[Path, ...]]] = [(PYTHON_BOT, ())]
    if node_ready():
        bots.append((NODE_BOT, (ROOT / "proto",)))
    found: dict[str, dict[str, list[float]]] = {}
    n = 0
    for text, read_only in bots:
        spec = BotSpec.parse(text)
        confinement = Confinement(sandbox=True, read_only=read_only)
        series: dict[str, list[float]] = {label: [] for label, _ in kinds}
        for _, set_up in kinds:
            set_up()
            n += 1
            await one_start(spec, confinement, view, work / "logs", n)
        for i in range(starts):
            for label, set_up in (kinds if i % 2 == 0 else kinds[::-1]):
                set_up()
                n += 1
                _, to_bid = await one_start(spec, confinement, view, work / "logs", n)
                series[label].append(to_bid)
        found[str(spec)] = series
    kinds[0][1]()
    return found


def ratios(results: dict[str, dict[str, list[float]]], kinds: Sequence[Kind],
           out: TextIO) -> dict[str, Any]:
    """Print and return each bot's medians of the two kinds, and their ratio."""
    (first, _), (second, _) = kinds
    figures: dict[str, Any] = {}
    for label, series in results.items():
        a, b = median(series[first]), median(series[second])
        print(f"  {label}: {first} {a * 1000:.0f}, {second} {b * 1000:.0f}, ratio "
              f"{a / b:.3f} ({(a - b) * 1000:+.0f} ms)", file=out)
        figures[label] = {f"{first.replace(' ', '_')}_ms": round(a * 1000, 1),
                          f"{second.replace(' ', '_')}_ms": round(b * 1000, 1),
                          "ratio": round(a / b, 3),
                          "runs": {k: [round(x * 1000, 1) for x in v]
                                   for k, v in series.items()}}
    return figures


KINDS: list[Kind] = [("own uid", lambda: _set_ids(True)),
                     ("arena uid", lambda: _set_ids(False))]


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    why = sandbox_works()
    if why is not None:
        raise RuntimeError(f"the sandbox does not work here: {why}")
    if not ids.id_mechanism().active:
        raise RuntimeError(f"no uid per bot process here: {ids.id_mechanism().why_not}")
    return ab_starts(settings, out, KINDS, "own uid (leased, staged sources) against the "
                     "arena's uid (ARENA_NO_BOT_IDS)")


def ab_starts(settings: Settings, out: TextIO, kinds: Sequence[Kind], what: str
              ) -> dict[str, Any]:
    """:func:`alternating_starts` of ``kinds`` (``what`` says which against which) for
    ``settings.repeat``, printed with the load and the time taken, then :func:`ratios`."""
    starts = STARTS_PER_REPEAT * settings.repeat
    load = os.getloadavg()[0]
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arena-bench-starts-") as tmp:
        results = trio.run(alternating_starts, starts, Path(tmp), kinds)
    print(f"start-up, spawn to the first answered Bid, sandboxed; {what}; {starts} starts "
          f"of each, alternating; medians in ms (load average {load:.2f} at the start, "
          f"{time.perf_counter() - began:.0f} s)", file=out)
    return ratios(results, kinds, out)


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.__main__ import main as bench_main

    return bench_main(["--only", "bot_ids", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
