"""Serve a sample bot with more server threads, without editing the sample.

``python -m benchmarks.threaded_bot --workers 4 sample_bots/python/random_bot.py`` loads
the file (not as ``__main__``, so its own ``serve(bot)`` call does not run), takes the
one :class:`arena.sdk.Bot` subclass it defines and calls ``serve(bot, workers=4)``. The
samples call ``serve(bot)`` with one worker and the SDK reads no setting for it, so
this is how the referee benchmark measures bots with ``workers`` above 1. Run it as a
module from the repository root: run as a script, this directory (which holds
``benchmarks/grpc.py``) would shadow the ``grpc`` package.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from collections.abc import Sequence

from arena.sdk import Bot, serve


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.threaded_bot")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("path", help="a sample bot's .py file")
    args = parser.parse_args(argv)
    namespace = runpy.run_path(args.path, run_name="__sample_bot__")
    classes = [v for v in namespace.values()
               if isinstance(v, type) and issubclass(v, Bot) and v is not Bot]
    if len(classes) != 1:
        print(f"{args.path}: expected one Bot subclass, found {len(classes)}", file=sys.stderr)
        return 2
    serve(classes[0](), argv=[], workers=args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
