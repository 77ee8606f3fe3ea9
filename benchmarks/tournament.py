"""``arena tournament`` end to end: games and decisions per second, and peak memory.

Every tournament runs as ``python -m arena tournament FILE --out DIR --resamples 100``, a
subprocess started from the repository root, on a file and an output folder in a
temporary directory.

- **Throughput**: a copy of ``tournaments/demo.toml`` (its field: the Python sample bots
  as ``cmd:`` processes, the built-ins, and the Node.js sample where ``node`` and
  ``sample_bots/node/node_modules`` exist) with ``deals`` set for about
  :data:`DEMO_GAMES` games. The games are timed from the store (the first ``started_at``
  to the last ``ended_at``: bot start-up and the leaderboard left out), and the decisions
  (bids, trump choices, card plays) counted from the stored records. Beside it, the raw
  grpcio ping-pong with 8 calls in flight, as the referee benchmark measures it
  (:func:`benchmarks.grpc.raw_work`), half its samples before the tournament and half
  after; the ratio is decisions/s over raw calls/s.
- **Memory**: Trumps with built-in bots only (5 bots, 4 seats, round-robin: 20 games a
  deal), 5 and 50 deals, so 100 and 1,000 games. The peak is the arena process's
  ``ru_maxrss`` from :func:`os.wait4` (it has no child processes: built-in bots run in
  it), the leaderboard built at the end included. The bar: peak(1000) / peak(100) <=
  :data:`MEMORY_BAR`, since finished games go to the store, not to memory. VmHWM from
  ``/proc/PID/status``, last polled before the 'played' line, is the peak of the games
  alone. Runs with the default ``--resamples`` are shown for information: the
  leaderboard's bootstrap grows with the games.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any, TextIO

import trio

from arena.proc.process import BotProcess
from arena.runs.config import load_config
from arena.runs.schedule import tables
from arena.runs.store import Store
from benchmarks import Settings
from benchmarks.grpc import CONCURRENT, ROOT, raw_work, typical_request
from benchmarks.timing import Series

TITLE = ("arena tournament as a subprocess: demo field games and decisions per second vs "
         "raw grpcio; peak memory for 100 and 1,000 games")

DEMO_FILE = ROOT / "tournaments" / "demo.toml"
DEMO_GAMES = 140
"""About this many demo games (``deals`` rounded): some 20-40 s on two busy cores."""
RESAMPLES = 100
"""``--resamples`` for every run but the one that shows the default."""
DEFAULT_RESAMPLES = 1000
"""``arena tournament``'s default ``--resamples``."""
MEMORY_DEALS = (5, 50)
"""Deals of the memory runs: 5 tables x 4 rotations = 20 games a deal, so 100 and 1,000."""
MEMORY_BOTS = ("random", "heuristic", "random", "heuristic", "random")
MEMORY_BAR = 1.15
"""peak(1,000 games) / peak(100 games) must not exceed this: memory stays flat."""
RUN_TIMEOUT_S = 600.0
POLL_S = 0.02
PLAYED = re.compile(r"played (\d+) games in ([0-9.]+) s")


# -- running the arena ------------------------------------------------------------------


@dataclass(slots=True)
class ArenaRun:
    """One ``arena tournament`` subprocess: how it ended and what it used."""

    returncode: int
    wall_s: float
    max_rss_kb: int
    """``ru_maxrss`` from :func:`os.wait4`: the process, or a reaped child if larger."""
    hwm_games_kb: int | None
    """The last VmHWM polled before the 'played ...' line appeared: the games' peak, the
    leaderboard's not included (None if not seen)."""
    hwm_last_kb: int | None
    """The last VmHWM polled before the process ended."""
    stdout: str
    stderr: str

    @property
    def played_line(self) -> tuple[int, float] | None:
        """(games, seconds) of the 'played N games in S s' line (bot start-up included)."""
        found = PLAYED.search(self.stdout)
        return None if found is None else (int(found[1]), float(found[2]))


def _vm_hwm_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def run_arena(file: Path, out: Path, resamples: int = RESAMPLES) -> ArenaRun:
    """Run ``python -m arena tournament FILE --out OUT --resamples N`` to its end.

    The process is reaped with :func:`os.wait4` for its own ``ru_maxrss``; its output goes
    to files in ``out``'s parent. Raises RuntimeError if it fails or takes too long.
    """
    args = [sys.executable, "-m", "arena", "tournament", str(file), "--out", str(out),
            "--resamples", str(resamples)]
    stdout_path = out.with_name(out.name + ".stdout")
    stderr_path = out.with_name(out.name + ".stderr")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    with open(stdout_path, "wb") as so, open(stderr_path, "wb") as se:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                stdout=so, stderr=se)
    hwm_games = hwm_last = None
    try:
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if hwm_games is None and b"played " in stdout_path.read_bytes():
                hwm_games = hwm_last  # polled before the line: the leaderboard not begun
            hwm = _vm_hwm_kb(proc.pid)
            if hwm is not None:
                hwm_last = hwm
            if time.perf_counter() - start > RUN_TIMEOUT_S:
                raise RuntimeError(f"arena tournament {file} still running after "
                                   f"{RUN_TIMEOUT_S:g} s")
            time.sleep(POLL_S)
    except BaseException:
        proc.terminate()  # the arena stops cleanly on SIGTERM and ends its bots
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    run = ArenaRun(proc.returncode, wall, usage.ru_maxrss, hwm_games, hwm_last,
                   stdout_path.read_text(errors="replace"),
                   stderr_path.read_text(errors="replace"))
    if run.returncode != 0:
        tail = (run.stderr.strip() or run.stdout.strip()).splitlines()[-3:]
        raise RuntimeError(f"arena tournament {file} exited with {run.returncode}: "
                           + " | ".join(tail))
    return run


# -- what the store says ----------------------------------------------------------------


def record_decisions(record: Mapping[str, Any]) -> list[int]:
    """The decisions in a stored record, by seat: bids made (non-null), the dealer's trump
    choice in a Wizard round whose turned card is a Wizard, and the cards played."""
    players = len(record["seats"])
    by_seat = [0] * players
    for rnd in record["rounds"]:
        for seat, bid in enumerate(rnd.get("bids") or ()):
            if bid is not None:
                by_seat[seat] += 1
        if record["game"] == "wizard" and rnd.get("trump_card") == "W":
            by_seat[rnd["dealer"]] += 1
        for trick in rnd["tricks"]:
            for i in range(len(trick["cards"])):
                by_seat[(trick["leader"] + i) % players] += 1
    return by_seat


@dataclass(slots=True)
class StoreFigures:
    """The finished games of a store: how many, over what time span, and their decisions."""

    games: int = 0
    decisions: int = 0
    remote_decisions: int = 0
    """Decisions by seats whose bot is not built in (each one a gRPC call)."""
    faults: int = 0
    first_start: float = math.inf
    last_end: float = -math.inf

    @property
    def seconds(self) -> float:
        return max(0.0, self.last_end - self.first_start)

    def rate(self, units: int) -> float:
        return units / self.seconds if self.seconds > 0 else 0.0


def read_store(folder: Path, remote: Callable[[str], bool] = lambda _: False) -> StoreFigures:
    """Count the games, decisions and faults stored in ``folder``; ``remote(name)`` says
    whether a bot's decisions went over gRPC."""
    figures = StoreFigures()
    with Store.open(folder) as store:
        for game in store.iter_games():
            by_seat = record_decisions(game.record)
            figures.games += 1
            figures.decisions += sum(by_seat)
            figures.remote_decisions += sum(n for n, name in zip(by_seat, game.bots, strict=True)
                                            if remote(name))
            figures.faults += len(game.record.get("faults") or ())
            figures.first_start = min(figures.first_start, game.started_at)
            figures.last_end = max(figures.last_end, game.ended_at)
    return figures


# -- tournament files -------------------------------------------------------------------


def node_ready() -> bool:
    """True where the Node.js sample bot can run: node on PATH, its packages installed."""
    return (shutil.which("node") is not None
            and (ROOT / "sample_bots" / "node" / "node_modules").is_dir())


@dataclass(frozen=True, slots=True)
class DemoCopy:
    """The demo file as benchmarked."""

    path: Path
    deals: int
    games: int
    left_out: tuple[tuple[str, str], ...]
    """Bots of the demo not in the copy's field: (name, reason)."""


def rebased(text: str) -> str:
    """The demo file's text with its relative paths (``../sample_bots/...``, taken from
    the file's folder) made absolute, for a copy written to another folder."""
    return re.sub(r'(?<=[" \[])\.\./[^" \]]*',
                  lambda m: os.path.normpath(DEMO_FILE.parent / m[0]), text)


def demo_without_node() -> tuple[str, list[tuple[str, str]]]:
    """The demo file's text (its paths absolute), without the Node.js bot where it cannot
    run; and the bots left out (name, reason)."""
    text = rebased(DEMO_FILE.read_text())
    left_out: list[tuple[str, str]] = []
    if not node_ready():
        blocks = re.split(r"(?m)^(?=\[\[bots\]\])", text)
        dropped = [b for b in blocks if 'spec = "cmd:node' in b]
        text = "".join(b for b in blocks if b not in dropped)
        reason = ("node is not installed" if shutil.which("node") is None
                  else "sample_bots/node/node_modules is missing")
        for block in dropped:
            found = re.search(r'(?m)^name\s*=\s*"([^"]*)"', block)
            left_out.append((found[1] if found else "?", reason))
    return text, left_out


def demo_copy(folder: Path, target_games: int = DEMO_GAMES) -> DemoCopy:
    """Write the demo file with ``deals`` set for about ``target_games`` games, without the
    Node.js bot where it cannot run."""
    text, left_out = demo_without_node()
    path = folder / "demo.toml"
    path.write_text(text)
    config = load_config(path)
    left_out += config.skipped
    per_deal = len(tables(config.format, config.field_names, config.seats,
                          config.candidates)) * config.seats
    deals = max(1, round(target_games / per_deal))
    text, count = re.subn(r"(?m)^deals\s*=\s*\d+", f"deals = {deals}", text)
    if count != 1:
        raise RuntimeError(f"{DEMO_FILE}: expected one 'deals = N' line, found {count}")
    path.write_text(text)
    return DemoCopy(path, deals, deals * per_deal, tuple(left_out))


def memory_file(folder: Path, deals: int) -> Path:
    """A Trumps round-robin of built-in bots only, ``deals`` deals."""
    lines = [f'name = "bench-memory-{deals}"', 'game = "trumps"', "seats = 4", "seed = 1",
             "concurrency = 4", "", "[schedule]", 'format = "round-robin"', f"deals = {deals}"]
    for i, kind in enumerate(MEMORY_BOTS, start=1):
        lines += ["", "[[bots]]", f'name = "{kind}-{i}"', f'spec = "{kind}"']
    path = folder / f"memory-{deals}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


# -- the benchmark ----------------------------------------------------------------------


@dataclass(slots=True)
class MemoryRuns:
    """The repetitions of one memory workload."""

    deals: int
    resamples: int
    runs: list[ArenaRun] = field(default_factory=list)
    stores: list[StoreFigures] = field(default_factory=list)

    @property
    def peak_kb(self) -> float:
        return median(r.max_rss_kb for r in self.runs)

    @property
    def games_hwm_kb(self) -> float | None:
        values = [r.hwm_games_kb for r in self.runs if r.hwm_games_kb is not None]
        return median(values) if values else None

    @property
    def games_per_s(self) -> float:
        return median(s.rate(s.games) for s in self.stores)

    @property
    def games(self) -> int:
        return self.stores[0].games if self.stores else 0

    def as_dict(self) -> dict[str, Any]:
        hwm = self.games_hwm_kb
        return {
            "deals": self.deals, "games": self.games, "resamples": self.resamples,
            "runs": len(self.runs),
            "peak_rss_mb": round(self.peak_kb / 1024, 1),
            "peak_rss_mb_runs": [round(r.max_rss_kb / 1024, 1) for r in self.runs],
            "hwm_after_games_mb": None if hwm is None else round(hwm / 1024, 1),
            "games_per_s": round(self.games_per_s, 1),
            "games_per_s_runs": [round(s.rate(s.games), 1) for s in self.stores],
            "wall_s": round(median(r.wall_s for r in self.runs), 2),
        }


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    """Measure, print the tables to ``out``, return the figures."""
    with tempfile.TemporaryDirectory(prefix="arena-bench-tournament-") as tmp:
        return trio.run(_run, settings, out, Path(tmp))


async def _run(settings: Settings, out: TextIO, tmp: Path) -> dict[str, Any]:
    throughput = await _throughput(settings, out, tmp)
    memory = await trio.to_thread.run_sync(_memory, settings, out, tmp)
    return {"throughput": throughput, "memory": memory}


async def _throughput(settings: Settings, out: TextIO, tmp: Path) -> dict[str, Any]:
    demo_file = demo_copy(tmp)
    deals, expected = demo_file.deals, demo_file.games
    config = load_config(demo_file.path)
    remote = {b.name for b in config.bots if b.spec.kind != "builtin"}
    payload, _ = typical_request()
    server = BotProcess("pingpong-0", "python -m benchmarks.pingpong_server --workers 1",
                        tmp / "pingpong-0.log", cwd=ROOT)
    raw = Series("raw_8", f"raw ping-pong, {CONCURRENT} calls in flight")
    before = (settings.repeat + 1) // 2
    channel = await server.start()
    try:
        work = raw_work([channel.unary_unary("/arena.v1.BotService/Play")], payload,
                        CONCURRENT)
        await work(0.1)  # warm-up
        for _ in range(before):
            raw.samples.append(await work(settings.seconds))
        demo = await trio.to_thread.run_sync(run_arena, demo_file.path, tmp / "demo-out")
        for _ in range(settings.repeat - before):
            raw.samples.append(await work(settings.seconds))
    finally:
        channel.close()
        await trio.to_thread.run_sync(server.stop_now)

    stored = read_store(tmp / "demo-out", lambda name: name in remote)
    if stored.games != expected:
        raise RuntimeError(f"demo tournament: {stored.games} games stored, {expected} expected")
    decisions_s = stored.rate(stored.decisions)
    remote_s = stored.rate(stored.remote_decisions)
    raw_rates = raw.rates
    ratio = decisions_s / raw.median if raw.median else 0.0
    played = demo.played_line
    field_names = ", ".join(f"{b.name} ({b.spec})" for b in config.bots)
    print(f"demo field ({len(config.bots)} bots, {config.game}, {config.seats} seats, "
          f"concurrency {config.concurrency}): {field_names}", file=out)
    for name, reason in demo_file.left_out:
        print(f"  left out: {name}: {reason}", file=out)
    print(f"deals {deals} -> {stored.games} games; timed from the store (first start to "
          f"last end: bot start-up and leaderboard excluded): {stored.seconds:.1f} s; the "
          f"arena's own line: {played[0] if played else '?'} games in "
          f"{played[1] if played else float('nan'):.1f} s (start-up included); whole "
          f"process {demo.wall_s:.1f} s", file=out)
    print(f"  games/s                      {stored.rate(stored.games):9.2f}", file=out)
    print(f"  decisions/s (all seats)      {decisions_s:9,.0f}   "
          f"({stored.decisions:,} decisions, {stored.decisions / stored.games:.1f} a game)",
          file=out)
    print(f"  decisions/s over gRPC        {remote_s:9,.0f}   (seats of cmd: bots, "
          f"{stored.remote_decisions / max(stored.decisions, 1):.0%} of all)", file=out)
    print(f"  raw ping-pong, {CONCURRENT} in flight, calls/s: median {raw.median:,.0f} "
          f"[{min(raw_rates):,.0f}..{max(raw_rates):,.0f}] over {len(raw_rates)} samples of "
          f"~{settings.seconds:g} s ({before} before the tournament, "
          f"{len(raw_rates) - before} after)", file=out)
    print(f"  ratio decisions/s / raw calls/s: {ratio:.3f} (all seats), "
          f"{remote_s / raw.median if raw.median else 0.0:.3f} (gRPC seats only)", file=out)
    if demo.hwm_last_kb is not None:
        print(f"  arena process VmHWM (polled): {demo.hwm_last_kb / 1024:.1f} MB", file=out)
    if stored.faults:
        print(f"warning: {stored.faults} faults in the demo games (timeouts on a busy "
              "machine?); the figures are suspect", file=out)
    return {
        "file": "tournaments/demo.toml", "deals": deals, "games": stored.games,
        "bots": [b.name for b in config.bots],
        "left_out": [list(x) for x in demo_file.left_out],
        "games_seconds": round(stored.seconds, 2),
        "played_line": None if played is None else {"games": played[0], "seconds": played[1]},
        "process_wall_s": round(demo.wall_s, 2),
        "games_per_s": round(stored.rate(stored.games), 2),
        "decisions": stored.decisions,
        "decisions_per_s": round(decisions_s, 1),
        "remote_decisions": stored.remote_decisions,
        "remote_decisions_per_s": round(remote_s, 1),
        "faults": stored.faults,
        "raw_8": raw.as_dict(),
        "ratio_decisions_to_raw": round(ratio, 4),
        "ratio_remote_decisions_to_raw": round(remote_s / raw.median, 4) if raw.median else 0.0,
        "arena_vm_hwm_mb": None if demo.hwm_last_kb is None
        else round(demo.hwm_last_kb / 1024, 1),
    }


def _memory(settings: Settings, out: TextIO, tmp: Path) -> dict[str, Any]:
    small, large = (MemoryRuns(d, RESAMPLES) for d in MEMORY_DEALS)
    files = {d: memory_file(tmp, d) for d in MEMORY_DEALS}
    n = 0

    def once(runs: MemoryRuns) -> None:
        nonlocal n
        n += 1
        folder = tmp / f"memory-{n}"
        runs.runs.append(run_arena(files[runs.deals], folder, runs.resamples))
        runs.stores.append(read_store(folder))
        shutil.rmtree(folder, ignore_errors=True)

    for _ in range(settings.repeat):
        once(small)
        once(large)
    defaults = [MemoryRuns(d, DEFAULT_RESAMPLES) for d in MEMORY_DEALS]
    for runs in defaults:
        once(runs)
    for runs in (small, large, *defaults):
        expected = 20 * runs.deals
        if any(s.games != expected for s in runs.stores):
            raise RuntimeError(f"memory run: {[s.games for s in runs.stores]} games stored, "
                               f"{expected} expected")

    ratio = large.peak_kb / small.peak_kb
    flat = ratio <= MEMORY_BAR
    print(f"memory: trumps, 4 seats, {len(MEMORY_BOTS)} built-in bots "
          f"({', '.join(MEMORY_BOTS)}), round-robin, concurrency 4; peak = ru_maxrss of the "
          f"arena process (os.wait4); 'after games' = VmHWM last polled (every "
          f"{POLL_S * 1000:g} ms) before the 'played' line, the leaderboard not begun; "
          "medians", file=out)
    print(f"  {'games':>5}  {'resamples':>9}  {'runs':>4}  {'peak MB':>7}  "
          f"{'after games MB':>14}  {'games/s':>7}  {'wall s':>6}", file=out)
    for runs in (small, large, *defaults):
        hwm = runs.games_hwm_kb
        print(f"  {runs.games:5d}  {runs.resamples:9d}  {len(runs.runs):4d}  "
              f"{runs.peak_kb / 1024:7.1f}  "
              f"{'-' if hwm is None else f'{hwm / 1024:.1f}':>14}  "
              f"{runs.games_per_s:7.0f}  {median(r.wall_s for r in runs.runs):6.2f}",
              file=out)
    default_ratio = defaults[1].peak_kb / defaults[0].peak_kb
    small_games, large_games = small.games_hwm_kb, large.games_hwm_kb
    games_ratio = (large_games / small_games if small_games and large_games else None)
    print(f"  peak(1000) / peak(100), --resamples {RESAMPLES}: {ratio:.3f}: "
          + (f"flat (bar <= {MEMORY_BAR})" if flat else f"NOT FLAT (bar <= {MEMORY_BAR})"),
          file=out)
    print(f"  peak(1000) / peak(100), --resamples {DEFAULT_RESAMPLES} (the default; for "
          f"information): {default_ratio:.3f}", file=out)
    if games_ratio is not None:
        print(f"  after games(1000) / after games(100), the games alone: {games_ratio:.3f}",
              file=out)
    return {
        "game": "trumps", "bots": list(MEMORY_BOTS), "seats": 4,
        "runs": {f"{r.games}_games_resamples_{r.resamples}": r.as_dict()
                 for r in (small, large, *defaults)},
        "ratio": round(ratio, 3),
        "ratio_default_resamples": round(default_ratio, 3),
        "ratio_games_only": None if games_ratio is None else round(games_ratio, 3),
        "bar": {"ratio_max": MEMORY_BAR, "met": flat},
    }

