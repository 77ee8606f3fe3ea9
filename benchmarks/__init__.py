"""Benchmarks for trick-arena, run as ``python -m benchmarks`` (``make bench``).

Each benchmark is a module of this package that defines ``TITLE`` (one line) and
``run(settings, out) -> dict``: it measures, prints its table to ``out`` and returns its
figures, JSON-ready. :data:`BENCHMARKS` names them; ``--only NAME`` selects. Shared
timing helpers are in :mod:`benchmarks.timing`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO, cast

DEFAULT_REPEAT = 5
DEFAULT_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Settings:
    """How long to measure: ``repeat`` interleaved repetitions of about ``seconds`` each."""

    repeat: int = DEFAULT_REPEAT
    seconds: float = DEFAULT_SECONDS


Runner = Callable[[Settings, TextIO], dict[str, Any]]
"""A benchmark's ``run``: measure, print to the stream, return the figures."""

BENCHMARKS: dict[str, str] = {
    "rules": "benchmarks.rules",
    "referee": "benchmarks.grpc",
    "tournament": "benchmarks.tournament",
    "pool": "benchmarks.pool",
    "isolation": "benchmarks.isolation",
    "runtimes": "benchmarks.runtimes",
    "bot_ids": "benchmarks.bot_ids",
    "view_images": "benchmarks.view_images",
    "freezer": "benchmarks.freezer",
    "ray": "benchmarks.ray",
    "fairness": "benchmarks.fairness",
    "league": "benchmarks.league",
    "store": "benchmarks.store",
    "publish_memory": "benchmarks.publish_memory",
    "page": "benchmarks.page",
    "loop_steps": "benchmarks.loop_steps",
}
"""Every benchmark by name, with the module that implements it, in the order they run."""


def load(name: str) -> tuple[str, Runner]:
    """The title and ``run`` function of the benchmark called ``name``."""
    module = importlib.import_module(BENCHMARKS[name])
    return str(module.TITLE), cast(Runner, module.run)


__all__ = ["BENCHMARKS", "DEFAULT_REPEAT", "DEFAULT_SECONDS", "Runner", "Settings", "load"]
