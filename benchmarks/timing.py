"""Timing helpers shared by the benchmarks: interleaved repetitions and their medians.

The machines are shared and noisy, so every benchmark measures its workloads in turn
(A, B, A, B, ...) for several repetitions and quotes medians: a slow spell hits all
workloads alike instead of one.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Sample:
    """One timed run of a workload: units of work done (e.g. decisions), games, seconds."""

    units: int
    games: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.units / self.seconds if self.seconds > 0 else 0.0


Workload = Callable[[float], Sample]
"""Runs whole games for about the given number of seconds and says what it did."""


@dataclass(slots=True)
class Series:
    """The samples of one workload over the repetitions."""

    key: str
    label: str
    samples: list[Sample] = field(default_factory=list)

    @property
    def rates(self) -> list[float]:
        return [s.rate for s in self.samples]

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    @property
    def units(self) -> int:
        return sum(s.units for s in self.samples)

    @property
    def games(self) -> int:
        return sum(s.games for s in self.samples)

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "median": round(self.median, 1),
            "min": round(min(self.rates), 1),
            "max": round(max(self.rates), 1),
            "rates": [round(r, 1) for r in self.rates],
            "units": self.units,
            "games": self.games,
            "units_per_game": round(self.units / self.games, 2) if self.games else 0,
        }


def interleave(workloads: Sequence[tuple[str, str, Workload]], repeat: int,
               seconds: float, warmup: float = 0.1) -> list[Series]:
    """Measure ``(key, label, workload)`` in turn, ``repeat`` times, ``seconds`` per sample.

    Each workload first runs untimed for ``warmup`` seconds.
    """
    for _, _, work in workloads:
        work(warmup)
    series = [Series(key, label) for key, label, _ in workloads]
    for _ in range(repeat):
        for s, (_, _, work) in zip(series, workloads, strict=True):
            s.samples.append(work(seconds))
    return series


def paired_ratios(ours: Series, theirs: Series) -> list[float]:
    """Per-repetition ratios ``ours / theirs`` (each pair measured back to back)."""
    return [a.rate / b.rate if b.rate else 0.0
            for a, b in zip(ours.samples, theirs.samples, strict=True)]
