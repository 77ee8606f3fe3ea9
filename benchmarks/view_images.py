"""What mounting the view's shared folders from images of its own costs a bot process
at start-up (``arena/proc/images.py``).

The same sandboxed start, spawn to the first answered ``Bid`` (as in
:mod:`benchmarks.isolation`), of the Python sample heuristic bot and, where node is
ready, the Node.js sample, two ways, alternating, after one untimed start of each (which
makes the images, if missing):

- ``images``: as the arena runs it as root, each shared folder mounted from its image in
  the bot's own mount namespace (a cache of pages and directory entries of its own: the
  bot reads its runtime's files through it, not from pages another process read);
- ``host binds``: the same with ``ARENA_NO_VIEW_IMAGES`` (the folders bound from the
  host, as before).

Prints medians and the ratio images / host binds. Run alone as ``python -m
benchmarks.view_images [--repeat N] [--json FILE]``; ``2 x 4 x --repeat`` starts in all.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import median
from typing import Any, TextIO

import trio

from arena.model.limits import Confinement
from arena.model.spec import BotSpec
from arena.proc import images
from arena.proc.bwrap import sandbox_works
from benchmarks import Settings
from benchmarks.grpc import ROOT
from benchmarks.isolation import NODE_BOT, PYTHON_BOT, first_bid_view, one_start
from benchmarks.tournament import node_ready

TITLE = "a view mounted from images of its own per bot process: start-up cost against host binds"

STARTS_PER_REPEAT = 4


def _set_images(on: bool) -> None:
    if on:
        os.environ.pop("ARENA_NO_VIEW_IMAGES", None)
    else:
        os.environ["ARENA_NO_VIEW_IMAGES"] = "1"
    images.image_mechanism.cache_clear()


async def _measure(starts: int, work: Path) -> dict[str, dict[str, list[float]]]:
    view = first_bid_view()
    bots: list[tuple[str, tuple[Path, ...]]] = [(PYTHON_BOT, ())]
    if node_ready():
        bots.append((NODE_BOT, (ROOT / "proto",)))
    found: dict[str, dict[str, list[float]]] = {}
    n = 0
    for text, read_only in bots:
        spec = BotSpec.parse(text)
        confinement = Confinement(sandbox=True, read_only=read_only)
        series: dict[str, list[float]] = {"images": [], "host binds": []}
        kinds = [("images", True), ("host binds", False)]
        for _, on in kinds:
            _set_images(on)
            n += 1
            await one_start(spec, confinement, view, work / "logs", n)
        for i in range(starts):
            for label, on in (kinds if i % 2 == 0 else kinds[::-1]):
                _set_images(on)
                n += 1
                _, to_bid = await one_start(spec, confinement, view, work / "logs", n)
                series[label].append(to_bid)
        found[str(spec)] = series
    _set_images(True)
    return found


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    why = sandbox_works()
    if why is not None:
        raise RuntimeError(f"the sandbox does not work here: {why}")
    if not images.image_mechanism().active:
        raise RuntimeError(f"no view images here: {images.image_mechanism().why_not}")
    starts = STARTS_PER_REPEAT * settings.repeat
    load = os.getloadavg()[0]
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arena-bench-images-") as tmp:
        results = trio.run(_measure, starts, Path(tmp))
    print(f"start-up, spawn to the first answered Bid, sandboxed; the view's shared "
          f"folders from images of the bot's own against host binds "
          f"(ARENA_NO_VIEW_IMAGES); {starts} starts of each, "
          f"alternating; medians in ms (load average {load:.2f} at the start, "
          f"{time.perf_counter() - began:.0f} s)", file=out)
    figures: dict[str, Any] = {}
    for label, series in results.items():
        own, arena = median(series["images"]), median(series["host binds"])
        print(f"  {label}: images {own * 1000:.0f}, host binds {arena * 1000:.0f}, ratio "
              f"{own / arena:.3f} ({(own - arena) * 1000:+.0f} ms)", file=out)
        figures[label] = {"images_ms": round(own * 1000, 1),
                          "host_binds_ms": round(arena * 1000, 1),
                          "ratio": round(own / arena, 3),
                          "runs": {k: [round(x * 1000, 1) for x in v]
                                   for k, v in series.items()}}
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.__main__ import main as bench_main

    return bench_main(["--only", "view_images", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
