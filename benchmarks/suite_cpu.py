"""Where the test suite's time goes: the machine's CPU time spent in each test, a pytest
plugin.

    .venv/bin/python -m pytest -n 0 -p benchmarks.suite_cpu [tests ...]

(from the repository's root, so that ``benchmarks`` is importable). Around every test
(its setup, call and teardown) it reads the machine's busy CPU time from ``/proc/stat``
(user, nice, system, irq and softirq of every core: idle, I/O wait and the time a virtual
machine's host took are left out), because the suite's CPU is mostly not its own: bot
processes in sandboxes, ``python -m arena`` processes, browsers, Ray, compilers, which
``rusage`` misses (a sandboxed bot is not a child of pytest). So the figures are the
machine's: run it alone on an otherwise idle machine, one test at a time (``-n 0``).

At the end it prints the files that took most CPU, with their wall time and test count,
and writes every test's figures to ``suite-cpu.json`` (``SUITE_CPU_JSON`` sets another
path): ``{"test id": [cpu seconds, wall seconds], ...}``. Two runs compare file by file;
the machine's own speed moves between runs, so compare the files a change touched with
those it did not. ``docs/architecture.md`` ("The test suite's cost") has the figures.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path

import pytest

_TICKS = os.sysconf("SC_CLK_TCK")
_figures: dict[str, tuple[float, float]] = {}


def busy_seconds() -> float:
    """The machine's busy CPU time so far, all cores: user, nice, system, irq, softirq."""
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    return (user + nice + system + irq + softirq) / _TICKS


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, None, None]:
    cpu, wall = busy_seconds(), time.monotonic()
    yield
    _figures[item.nodeid] = (busy_seconds() - cpu, time.monotonic() - wall)


def by_file(figures: dict[str, tuple[float, float]]) -> list[tuple[str, float, float, int]]:
    """(file, CPU s, wall s, tests) per test file, most CPU first."""
    cpu: defaultdict[str, float] = defaultdict(float)
    wall: defaultdict[str, float] = defaultdict(float)
    tests: defaultdict[str, int] = defaultdict(int)
    for nodeid, (c, w) in figures.items():
        name = nodeid.split("::", 1)[0]
        cpu[name] += c
        wall[name] += w
        tests[name] += 1
    return [(name, cpu[name], wall[name], tests[name])
            for name in sorted(cpu, key=lambda name: -cpu[name])]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _figures:
        return
    path = Path(os.environ.get("SUITE_CPU_JSON", "suite-cpu.json"))
    path.write_text(json.dumps(_figures, indent=0, sort_keys=True), encoding="utf-8")
    rows = by_file(_figures)
    total_cpu = sum(c for c, _ in _figures.values())
    total_wall = sum(w for _, w in _figures.values())
    terminalreporter.write_sep("-", "the machine's CPU per test file (benchmarks.suite_cpu)")
    terminalreporter.write_line(f"{'CPU s':>8} {'wall s':>8} {'tests':>6}  file")
    for name, cpu, wall, tests in rows[:25]:
        terminalreporter.write_line(f"{cpu:8.1f} {wall:8.1f} {tests:6d}  {name}")
    terminalreporter.write_line(f"{total_cpu:8.1f} {total_wall:8.1f} {len(_figures):6d}  "
                                f"in all ({len(rows)} files); every test in {path}")
