"""``python -m benchmarks [--only NAME] [--repeat N] [--seconds S] [--json FILE]``."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks import BENCHMARKS, DEFAULT_REPEAT, DEFAULT_SECONDS, Settings, load

FORMAT = "trick-arena.bench/1"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, not {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, not {text!r}")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Measure trick-arena. Repetitions are interleaved across workloads "
                    "and medians are quoted, because the machines are shared and noisy.")
    parser.add_argument("--only", action="append", choices=list(BENCHMARKS), metavar="NAME",
                        help=f"run only this benchmark (repeatable); one of: "
                             f"{', '.join(BENCHMARKS)}")
    parser.add_argument("--repeat", type=_positive_int, default=DEFAULT_REPEAT,
                        help="interleaved repetitions (default %(default)s)")
    parser.add_argument("--seconds", type=_positive_float, default=DEFAULT_SECONDS,
                        help="seconds per workload per repetition (default %(default)s)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    settings = Settings(repeat=args.repeat, seconds=args.seconds)
    names = [n for n in BENCHMARKS if args.only is None or n in args.only]
    figures: dict[str, Any] = {}
    for name in names:
        title, run = load(name)
        print(f"== {name}: {title}", flush=True)
        figures[name] = run(settings, sys.stdout)
    if args.json:
        document = {
            "format": FORMAT,
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "machine": platform.machine(),
            "settings": {"repeat": settings.repeat, "seconds": settings.seconds},
            "benchmarks": figures,
        }
        try:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(document, f, indent=2)
                f.write("\n")
        except OSError as e:
            print(f"cannot write {args.json}: {e.strerror}", file=sys.stderr)
            return 1
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
