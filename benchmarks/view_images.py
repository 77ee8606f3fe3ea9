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
from collections.abc import Sequence
from typing import Any, TextIO

from arena.proc import images
from arena.proc.bwrap import sandbox_works
from benchmarks import Settings
from benchmarks.bot_ids import Kind, ab_starts

TITLE = "a view mounted from images of its own per bot process: start-up cost against host binds"


def _set_images(on: bool) -> None:
    if on:
        os.environ.pop("ARENA_NO_VIEW_IMAGES", None)
    else:
        os.environ["ARENA_NO_VIEW_IMAGES"] = "1"
    images.image_mechanism.cache_clear()


KINDS: list[Kind] = [("images", lambda: _set_images(True)),
                     ("host binds", lambda: _set_images(False))]


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    why = sandbox_works()
    if why is not None:
        raise RuntimeError(f"the sandbox does not work here: {why}")
    if not images.image_mechanism().active:
        raise RuntimeError(f"no view images here: {images.image_mechanism().why_not}")
    return ab_starts(settings, out, KINDS, "the view's folders from images of the bot's "
                     "own against host binds (ARENA_NO_VIEW_IMAGES)")


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.__main__ import main as bench_main

    return bench_main(["--only", "view_images", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
