"""What isolation and the sandbox cost: tournament games/s, and a bot's start-up time.

- **Throughput**: whole tournaments, each run as ``python -m arena tournament FILE --fresh
  --out DIR --resamples 100``, a subprocess started from the repository root with a
  private ``TMPDIR`` (its bots' socket folders, and the sweep of stale ones, stay in it).
  Games/s come from the arena's own ``played N games in X s`` line: bot start-ups
  included (every process a pool starts is in that time), the leaderboard excluded.
  Three variants of the same file:

  - ``deal``: the file as it is, ``isolation = "deal"`` (the default), sandbox on;
  - ``shared``: ``isolation = "shared"``, sandbox still on: deal / shared is the cost of
    the process policy alone;
  - ``old``: ``isolation = "shared"`` and ``sandbox = false`` for every ``cmd:`` bot: the
    arena's behaviour before isolation and the sandbox.

  Two fields: the demo (``tournaments/demo.toml``: Wizard, 4 seats, its 5 bots, the
  default concurrency; :data:`DEMO_DEALS` deals; the Node.js sample left out where it
  cannot run) and a Trumps field (:data:`TRUMPS_BOTS`: 2 Python sample ``cmd:`` bots and
  3 built-ins, 4 seats, :data:`TRUMPS_DEALS` deals). Each round runs every variant of
  every field once, the variants' order rotated from round to round; medians over the
  rounds. The bar: deal / shared >= :data:`BAR` (the goal :data:`GOAL`).
- **Start-up**: from :meth:`arena.proc.process.BotProcess.spawn` to the first answered
  ``Bid``: :meth:`arena.proc.connection.BotConnection.open` (spawn, health check, ``Hello``), then
  :meth:`arena.play.players.RemotePlayer.decide` on the first view of a Wizard game, for the
  Python sample heuristic bot and, where node and its packages are installed, the
  Node.js sample; sandboxed (bubblewrap) and not (``Confinement(sandbox=False)``: the
  cgroup, rlimits and idle start-up priority stay, so the difference is bubblewrap's,
  and the environment: unsandboxed, a bot inherits the arena's, e.g. a
  ``NODE_EXTRA_CA_CERTS`` that Node.js reads at start). The starts alternate between
  the two, one untimed start of each first; medians.

- **The allowlisted /proc** (``arena/proc/procfs.py``): a fourth start-up kind,
  ``full-proc``, the same sandboxed start with ``ARENA_NO_PROC_MASK`` (the whole procfs,
  as before issue 35), in the same rotation: the ratio is the masking's cost.
- **Counters of the machine** (issue 35): the hostile bots of ``tests/bots/hostile``
  through real tournaments, each carrier with its defences and with them off (the
  controls stand for the code before): ``counters.py`` (the lock counter of
  ``/proc/vmstat`` and the fork counter of ``/proc/stat``) sandboxed, sandboxed with
  ``ARENA_NO_PROC_MASK``, and out of the sandbox; ``pagecache.py --channel pagemap``
  (locked pages kept past the reclaim) sandboxed, out of the sandbox with the check
  after the reclaim, and without it (``ARENA_NO_HELD_CHECK``). Six tournaments, some
  two minutes.

Rounds: :data:`ROUNDS` at the default ``--repeat`` (5), in proportion to it otherwise
(each round is six whole tournaments, about two minutes on two cores); starts:
``2 x --repeat`` of each kind. The whole takes some 6-8 minutes by default. Run alone as
``python -m benchmarks.isolation [--repeat N] [--json FILE]``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any, TextIO

import trio

from arena.model.limits import Confinement
from arena.model.spec import BotSpec
from arena.play.players import RemotePlayer
from arena.proc.bwrap import sandbox_works
from arena.proc.cgroup import limit_mechanism
from arena.proc.connection import BotConnection
from arena.proc.tasks import usable_cores
from arena.rules import Decision, View, new_game
from arena.runs.config import TournamentConfig, load_config
from arena.runs.schedule import tables
from benchmarks import DEFAULT_REPEAT, Settings
from benchmarks.grpc import ROOT
from benchmarks.tournament import DEMO_FILE, demo_without_node, node_ready

TITLE = ("isolation and sandbox cost: tournament games/s under isolation deal vs shared "
         "vs shared without sandbox; bot start-up to the first Bid with and without "
         "bubblewrap, and with the whole /proc; the counters of issue 35 with and without "
         "their defences")

DEMO_DEALS = 8
"""Deals of the demo runs (the demo's own): 5 tables x 4 rotations = 20 games a deal.
Under ``deal`` isolation a bot needs a process per lane (table and rotation), each
playing up to ``deals`` games: the start-up cost per game falls as 1 / deals."""
TRUMPS_DEALS = 16
TRUMPS_BOTS = (
    ("heuristic-py", f"cmd:python {ROOT / 'sample_bots/python/heuristic_bot.py'}"),
    ("random-py", f"cmd:python {ROOT / 'sample_bots/python/random_bot.py'}"),
    ("heuristic", "heuristic"),
    ("random", "random"),
    ("random-2", "random"),
)
ROUNDS = 2
"""Tournament rounds at the default ``--repeat``; in proportion to it otherwise (at least
1). A round of both fields takes about three minutes on two cores."""
STARTS_PER_REPEAT = 2
"""Timed start-ups of each kind: ``STARTS_PER_REPEAT x --repeat``."""
BAR = 0.5
GOAL = 0.8
"""deal / shared games/s: at least BAR, aimed at GOAL."""
RESAMPLES = 100
RUN_TIMEOUT_S = 600.0
STARTUP_S = 30.0
"""The start-up limit of a measured bot (generous: the machine may be busy)."""
BID_DEADLINE_MS = 30_000
PLAYED = re.compile(r"played (\d+) games in ([0-9.]+) s \([0-9.]+ games/s\), (\d+) faults")

PYTHON_BOT = "cmd:python sample_bots/python/heuristic_bot.py"
NODE_BOT = "cmd:node sample_bots/node/bot.js"


@dataclass(frozen=True, slots=True)
class Variant:
    key: str
    isolation: str
    sandbox: bool
    label: str


VARIANTS = (
    Variant("deal", "deal", True, 'isolation = "deal" (the default), sandbox on'),
    Variant("shared", "shared", True, 'isolation = "shared", sandbox on'),
    Variant("old", "shared", False,
            'isolation = "shared", sandbox = false for every cmd: bot (before isolation)'),
)


# -- tournament files ---------------------------------------------------------------------


def variant_text(text: str, variant: Variant) -> str:
    """A tournament file's text with the variant's ``isolation`` and, without the sandbox,
    ``sandbox = false`` in every ``cmd:`` bot's table."""
    text, count = re.subn(r'(?m)^isolation\s*=.*$', f'isolation = "{variant.isolation}"', text)
    if not count:  # a top-level key: before the first table
        text = f'isolation = "{variant.isolation}"\n' + text
    if not variant.sandbox:
        text = re.sub(r'(?m)^sandbox\s*=.*\n', "", text)
        text = re.sub(r'(?m)^(spec\s*=\s*"cmd:.*)$', r"\1\nsandbox = false", text)
    return text


def demo_text() -> tuple[str, list[tuple[str, str]]]:
    """The demo file with :data:`DEMO_DEALS` deals, without the Node.js bot where it
    cannot run; and the bots left out (name, reason)."""
    text, left_out = demo_without_node()
    text, count = re.subn(r"(?m)^deals\s*=\s*\d+", f"deals = {DEMO_DEALS}", text)
    if count != 1:
        raise RuntimeError(f"{DEMO_FILE}: expected one 'deals = N' line, found {count}")
    return text, left_out


def trumps_text() -> str:
    lines = ['name = "bench-isolation-trumps"', 'game = "trumps"', "seats = 4", "seed = 1",
             "", "[schedule]", 'format = "round-robin"', f"deals = {TRUMPS_DEALS}"]
    for name, spec in TRUMPS_BOTS:
        lines += ["", "[[bots]]", f'name = "{name}"', f'spec = "{spec}"']
    return "\n".join(lines) + "\n"


@dataclass(slots=True)
class Field:
    """One field's three files, and what the runs gave."""

    key: str
    title: str
    files: dict[str, Path]
    config: TournamentConfig
    games: int
    left_out: list[tuple[str, str]]
    runs: dict[str, list[ArenaRun]] = field(default_factory=dict)

    def rates(self, key: str) -> list[float]:
        return [r.games_per_s for r in self.runs[key]]

    def median_rate(self, key: str) -> float:
        return median(self.rates(key))

    def ratio(self, ours: str, theirs: str) -> float:
        base = self.median_rate(theirs)
        return self.median_rate(ours) / base if base else 0.0

    def paired(self, ours: str, theirs: str) -> list[float]:
        return [a.games_per_s / b.games_per_s if b.games_per_s else 0.0
                for a, b in zip(self.runs[ours], self.runs[theirs], strict=True)]


def make_field(key: str, title: str, text: str, left_out: list[tuple[str, str]],
               folder: Path) -> Field:
    files: dict[str, Path] = {}
    configs: dict[str, TournamentConfig] = {}
    for variant in VARIANTS:
        path = folder / f"{key}-{variant.key}.toml"
        path.write_text(variant_text(text, variant))
        config = configs[variant.key] = load_config(path)
        cmd = [b for b in config.bots if b.spec.kind == "cmd"]
        if config.isolation != variant.isolation or any(
                b.confinement.sandbox != variant.sandbox for b in cmd):
            raise RuntimeError(f"{path}: not the {variant.key} variant")
        files[variant.key] = path
    config = configs["deal"]
    per_deal = len(tables(config.format, config.field_names, config.seats,
                          config.candidates)) * config.seats
    return Field(key, title, files, config, per_deal * config.deals,
                 left_out + list(config.skipped), {v.key: [] for v in VARIANTS})


# -- running the arena --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArenaRun:
    games: int
    seconds: float
    """From the 'played' line: the games, bot start-ups included, not the leaderboard."""
    faults: int
    processes: int
    """Bot processes started (a log file each), spares included."""
    wall_s: float

    @property
    def games_per_s(self) -> float:
        return self.games / self.seconds if self.seconds > 0 else 0.0


def run_arena(file: Path, work: Path, tag: str) -> ArenaRun:
    """``arena tournament FILE --fresh --out DIR`` with a private TMPDIR, to its end."""
    out = work / f"{tag}-out"
    tmpdir = work / f"{tag}-tmp"
    tmpdir.mkdir()
    args = [sys.executable, "-m", "arena", "tournament", str(file), "--fresh", "--out",
            str(out), "--resamples", str(RESAMPLES)]
    env = dict(os.environ, TMPDIR=str(tmpdir), PYTHONUNBUFFERED="1")
    stdout_path, stderr_path = work / f"{tag}.stdout", work / f"{tag}.stderr"
    start = time.perf_counter()
    with open(stdout_path, "wb") as so, open(stderr_path, "wb") as se:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                stdout=so, stderr=se)
    try:
        try:
            code = proc.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"arena tournament {file.name} still running after "
                               f"{RUN_TIMEOUT_S:g} s") from None
    except BaseException:
        proc.terminate()  # the arena stops cleanly on SIGTERM and ends its bots
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    wall = time.perf_counter() - start
    stdout = stdout_path.read_text(errors="replace")
    found = PLAYED.search(stdout)
    if code != 0 or found is None:
        stderr = stderr_path.read_text(errors="replace")
        tail = (stderr.strip() or stdout.strip()).splitlines()[-3:]
        raise RuntimeError(f"arena tournament {file.name} exited with {code}"
                           f"{'' if found else ' without a played line'}: " + " | ".join(tail))
    logs = out / "logs"
    processes = sum(1 for p in logs.rglob("*.log")) if logs.is_dir() else 0
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(tmpdir, ignore_errors=True)
    return ArenaRun(int(found[1]), float(found[2]), int(found[3]), processes, wall)


def _throughput(rounds: int, out: TextIO, work: Path) -> dict[str, Any]:
    demo_body, demo_left_out = demo_text()
    fields = [
        make_field("demo", "demo field (tournaments/demo.toml)", demo_body, demo_left_out,
                   work),
        make_field("trumps", "Trumps field", trumps_text(), [], work),
    ]
    n = 0
    for r in range(rounds):
        order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
        for fld in fields:
            for variant in order:
                n += 1
                run = run_arena(fld.files[variant.key], work, f"run-{n}")
                if run.games != fld.games:
                    raise RuntimeError(f"{fld.key}/{variant.key}: {run.games} games played, "
                                       f"{fld.games} expected")
                fld.runs[variant.key].append(run)

    print(f"tournaments: `arena tournament FILE --fresh --out DIR --resamples {RESAMPLES}` "
          "subprocesses, each with a private TMPDIR; games/s from the arena's 'played N "
          "games in X s' line (bot start-ups included, leaderboard excluded); "
          f"{rounds} round(s), variants interleaved (order rotated each round); medians",
          file=out)
    for variant in VARIANTS:
        print(f"  {variant.key:<7} {variant.label}", file=out)
    figures: dict[str, Any] = {}
    for fld in fields:
        config = fld.config
        bots = ", ".join(f"{b.name} ({b.spec})" for b in config.bots)
        how = ("default: usable cores" if not config.concurrency_given else "set in the file")
        print(f"{fld.title}: {config.game}, {config.seats} seats, {len(config.bots)} bots: "
              f"{bots}; concurrency {config.concurrency} ({how}); {config.deals} deals -> "
              f"{fld.games} games", file=out)
        for name, reason in fld.left_out:
            print(f"  left out: {name}: {reason}", file=out)
        print(f"  {'variant':<8} {'games/s':>8}  {'[min..max]':<15} {'seconds':>7}  "
              f"{'processes':>9}  {'wall s':>6}", file=out)
        for variant in VARIANTS:
            runs = fld.runs[variant.key]
            rates = fld.rates(variant.key)
            span = f"[{min(rates):.2f}..{max(rates):.2f}]"
            print(f"  {variant.key:<8} {median(rates):8.2f}  {span:<15} "
                  f"{median(r.seconds for r in runs):7.1f}  "
                  f"{median(r.processes for r in runs):9.0f}  "
                  f"{median(r.wall_s for r in runs):6.1f}", file=out)
        ratio = fld.ratio("deal", "shared")
        verdict = ("meets the goal" if ratio >= GOAL else "meets the bar, not the goal"
                   if ratio >= BAR else "BELOW THE BAR")
        print("  ratios of the median games/s [per round: each pair run in the same round]:",
              file=out)
        for ours, theirs, what in (("deal", "shared", "the process policy"),
                                   ("deal", "old", "isolation and sandbox together"),
                                   ("shared", "old", "the sandbox alone")):
            pairs = fld.paired(ours, theirs)
            line = (f"  {ours + ' / ' + theirs:<15} {fld.ratio(ours, theirs):5.2f}  "
                    f"[{', '.join(f'{p:.2f}' for p in pairs)}]  ({what})")
            if (ours, theirs) == ("deal", "shared"):
                line += f"  bar >= {BAR}, goal >= {GOAL}: {verdict}"
            print(line, file=out)
        faults = {v.key: sum(r.faults for r in fld.runs[v.key]) for v in VARIANTS}
        if any(faults.values()):
            print(f"  warning: faults in the games ({faults}); timeouts on a busy machine? "
                  "the figures are suspect", file=out)
        figures[fld.key] = {
            "game": config.game, "seats": config.seats, "bots": [b.name for b in config.bots],
            "left_out": [list(x) for x in fld.left_out], "deals": config.deals,
            "games": fld.games, "concurrency": config.concurrency,
            "variants": {v.key: {
                "label": v.label,
                "games_per_s": round(fld.median_rate(v.key), 3),
                "games_per_s_runs": [round(x, 3) for x in fld.rates(v.key)],
                "seconds_runs": [r.seconds for r in fld.runs[v.key]],
                "processes_runs": [r.processes for r in fld.runs[v.key]],
                "wall_s_runs": [round(r.wall_s, 2) for r in fld.runs[v.key]],
                "faults": faults[v.key],
            } for v in VARIANTS},
            "ratio_deal_to_shared": round(ratio, 3),
            "ratio_deal_to_shared_runs": [round(p, 3) for p in fld.paired("deal", "shared")],
            "ratio_deal_to_old": round(fld.ratio("deal", "old"), 3),
            "ratio_shared_to_old": round(fld.ratio("shared", "old"), 3),
            "bar": {"ratio_min": BAR, "goal": GOAL, "met": ratio >= BAR,
                    "goal_met": ratio >= GOAL},
        }
    return {"rounds": rounds, "fields": figures}


# -- start-up -----------------------------------------------------------------------------


def first_bid_view() -> View:
    """The first view of a Wizard game (4 players) whose first decision is a bid."""
    for seed in range(1, 1000):
        game = new_game("wizard", None, seed)
        if game.decision is Decision.BID and game.to_move is not None:
            return game.view(game.to_move)
    raise RuntimeError("no Wizard game starting with a bid")


@dataclass(slots=True)
class StartSeries:
    label: str
    to_hello: list[float] = field(default_factory=list)
    to_bid: list[float] = field(default_factory=list)


async def one_start(spec: BotSpec, confinement: Confinement, view: View, logs: Path,
                    n: int) -> tuple[float, float]:
    """Seconds from spawn to the answered Hello, and to the answered first Bid."""
    conn = BotConnection(f"start-{n}", spec, logs, STARTUP_S, ROOT, confinement)
    try:
        start = time.perf_counter()
        await conn.open("wizard")  # spawn, health check, Hello
        hello = time.perf_counter()
        await RemotePlayer(conn).decide(view, f"bench-{n}", "table-1", BID_DEADLINE_MS, 0)
        bid = time.perf_counter()
    finally:
        await conn.aclose()
    return hello - start, bid - start


async def _startups(starts: int, work: Path
                    ) -> list[tuple[str, StartSeries, StartSeries, StartSeries, StartSeries]]:
    view = first_bid_view()
    bots: list[tuple[str, tuple[Path, ...]]] = [(PYTHON_BOT, ())]
    if node_ready():
        bots.append((NODE_BOT, (ROOT / "proto",)))
    results: list[tuple[str, StartSeries, StartSeries, StartSeries, StartSeries]] = []
    n = 0
    for text, read_only in bots:
        spec = BotSpec.parse(text)
        sandboxed = Confinement(sandbox=True, read_only=read_only)
        kinds = [(StartSeries("sandboxed"), sandboxed),
                 (StartSeries("plain"), Confinement(sandbox=False, read_only=read_only)),
                 (StartSeries("system"), Confinement(sandbox=True, read_only=read_only,
                                                     view="system")),
                 (StartSeries(FULL_PROC), sandboxed)]
        for series, confinement in kinds:  # untimed: the files in the page cache
            n += 1
            with _full_proc(series.label == FULL_PROC):
                await one_start(spec, confinement, view, work / "logs", n)
        for i in range(starts):
            for series, confinement in kinds[i % 4:] + kinds[:i % 4]:
                n += 1
                with _full_proc(series.label == FULL_PROC):
                    to_hello, to_bid = await one_start(spec, confinement, view,
                                                       work / "logs", n)
                series.to_hello.append(to_hello)
                series.to_bid.append(to_bid)
        results.append((str(spec), kinds[0][0], kinds[1][0], kinds[2][0], kinds[3][0]))
    return results


FULL_PROC = "full-proc"
"""The start-up kind with the whole procfs (``ARENA_NO_PROC_MASK``): the sandbox's /proc
before issue 35, the baseline of the allowlisted one."""


@contextmanager
def _full_proc(on: bool) -> Iterator[None]:
    """``ARENA_NO_PROC_MASK`` set while a bot starts (the spawn reads it)."""
    if not on:
        yield
        return
    os.environ["ARENA_NO_PROC_MASK"] = "1"
    try:
        yield
    finally:
        os.environ.pop("ARENA_NO_PROC_MASK", None)


def _startup_report(starts: int, out: TextIO, work: Path) -> dict[str, Any]:
    saved = tempfile.tempdir
    tempfile.tempdir = str(work / "startup-tmp")  # the bots' socket folders
    os.makedirs(tempfile.tempdir)
    try:
        results = trio.run(_startups, starts, work)
    finally:
        tempfile.tempdir = saved
    print(f"start-up: BotProcess.spawn() to the first answered Bid (BotConnection.open: "
          f"spawn, health, Hello; then RemotePlayer.decide on a Wizard bid); sandboxed = "
          f"bubblewrap with the default view (runtime: its files read into the page cache "
          f"first), system = bubblewrap showing all of /usr and /opt (nothing read in), "
          f"plain = Confinement(sandbox=False) (cgroup and rlimits kept), {FULL_PROC} = "
          f"sandboxed with the whole procfs (ARENA_NO_PROC_MASK: /proc before issue 35); "
          f"{starts} starts of each, rotated, after one untimed each; medians in ms",
          file=out)
    width = max(len(label) for label, _, _, _, _ in results)
    print(f"  {'bot':<{width}}  {'kind':<9}  {'to Hello':>8}  {'to Bid':>6}  {'[min..max]'}",
          file=out)
    figures: dict[str, Any] = {}
    for label, boxed, plain, system, full in results:
        for series in (boxed, full, system, plain):
            span = f"[{min(series.to_bid) * 1000:.0f}..{max(series.to_bid) * 1000:.0f}]"
            print(f"  {label:<{width}}  {series.label:<9}  "
                  f"{median(series.to_hello) * 1000:8.0f}  "
                  f"{median(series.to_bid) * 1000:6.0f}  {span}", file=out)
        ratio = median(boxed.to_bid) / median(plain.to_bid)
        extra = (median(boxed.to_bid) - median(plain.to_bid)) * 1000
        print(f"  {label:<{width}}  ratio sandboxed / plain, to Bid: {ratio:.2f} "
              f"({extra:+.0f} ms)", file=out)
        view_ratio = median(boxed.to_bid) / median(system.to_bid)
        print(f"  {label:<{width}}  ratio runtime view / system view, to Bid: "
              f"{view_ratio:.2f}", file=out)
        proc_ratio = median(boxed.to_bid) / median(full.to_bid)
        print(f"  {label:<{width}}  ratio allowlisted /proc / {FULL_PROC}, to Bid: "
              f"{proc_ratio:.2f} ({(median(boxed.to_bid) - median(full.to_bid)) * 1000:+.0f} "
              f"ms)", file=out)
        figures[label] = {
            "starts": starts,
            **{s.label: {"to_hello_ms": round(median(s.to_hello) * 1000, 1),
                         "to_bid_ms": round(median(s.to_bid) * 1000, 1),
                         "to_bid_ms_runs": [round(x * 1000, 1) for x in s.to_bid]}
               for s in (boxed, plain, system, full)},
            "ratio_sandboxed_to_plain": round(ratio, 3),
            "ratio_runtime_to_system_view": round(view_ratio, 3),
            "ratio_allowlisted_to_full_proc": round(proc_ratio, 3),
        }
    if not node_ready():
        print("  node sample left out: node or sample_bots/node/node_modules missing",
              file=out)
    return figures


# -- the allowlisted /proc alone ----------------------------------------------------------

MASK_RUNS_PER_REPEAT = 20


def _proc_mask_cost(runs: int, out: TextIO) -> dict[str, Any]:
    """bubblewrap alone, its view and namespaces as a bot gets them (``bwrap_args``,
    the runtime view of ``/usr/bin/true``, under the seccomp filter), ending at once:
    with the allowlisted /proc and with the whole procfs (``ARENA_NO_PROC_MASK``),
    alternating, after one untimed run of each; medians. The start-ups above carry the
    same difference inside a spread of hundreds of ms."""
    from arena.proc import procfs, seccomp
    from arena.proc.bwrap import bwrap_args

    times: dict[bool, list[float]] = {True: [], False: []}
    mounts: dict[bool, int] = {}
    for i in range(runs + 1):
        for masked in ((True, False) if i % 2 else (False, True)):
            with _full_proc(not masked):
                args = bwrap_args(["/usr/bin/true"], Path("/"), Confinement(),
                                  {"PATH": "/usr/bin"}, seccomp=(fd := seccomp.filter_fd()))
            mounts[masked] = sum(1 for a in args if a in ("--ro-bind", "--bind", "--tmpfs",
                                                             "--proc", "--dev", "--symlink"))
            try:
                start = time.perf_counter()
                subprocess.run(args, pass_fds=(fd,), check=True, capture_output=True,
                               timeout=60)
                took = time.perf_counter() - start
            finally:
                os.close(fd)
            if i:
                times[masked].append(took)
    masked_ms, full_ms = (median(times[k]) * 1000 for k in (True, False))
    covered = sum(1 for name, kind in procfs.kernel_entries().items()
                  if not name.isdigit() and name not in procfs.SHOWN and kind != "link")
    print(f"bubblewrap alone (bwrap_args of /usr/bin/true, runtime view, seccomp filter), "
          f"{runs} runs of each, alternating, medians: allowlisted /proc {masked_ms:.1f} ms "
          f"({mounts[True]} mounts: {covered} entries covered), whole procfs "
          f"{full_ms:.1f} ms ({mounts[False]} mounts); ratio {masked_ms / full_ms:.2f} "
          f"({masked_ms - full_ms:+.1f} ms)", file=out)
    return {"runs": runs, "allowlisted_ms": round(masked_ms, 2), "full_proc_ms": round(full_ms, 2),
            "ratio": round(masked_ms / full_ms, 3), "covered_entries": covered,
            "mounts": {"allowlisted": mounts[True], "full_proc": mounts[False]}}


# -- counters of the machine (issue 35) -----------------------------------------------------

HOSTILE = ROOT / "tests/bots/hostile"
CARRIER_TIMEOUT_S = 300.0


def _hostile_tournament(work: Path, tag: str, bots: list[tuple[str, str, dict[str, str]]],
                        deals: int, env: dict[str, str], attack: str
                        ) -> list[dict[str, Any]]:
    """A Trumps tournament of 3 seats (``bots``: name, spec, extra keys) run as ``arena
    tournament``; the last ``HOSTILE`` report of ``attack`` of each bot process."""
    import json
    import secrets

    lines = [f'name = "bench-{tag}"', 'game = "trumps"', "seats = 3",
             f"seed = {secrets.randbits(40)}", "", "[options]", "draw = false", "",
             "[time]", "move_ms = 5000", "", "[schedule]", f"deals = {deals}"]
    for name, spec, extra in bots:
        lines += ["", "[[bots]]", f'name = "{name}"', f"spec = {json.dumps(spec)}"]
        lines += [f"{k} = {v}" for k, v in extra.items()]
    path = work / f"{tag}.toml"
    path.write_text("\n".join(lines) + "\n")
    out, tmpdir = work / f"{tag}-out", work / f"{tag}-tmp"
    tmpdir.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "arena", "tournament", str(path), "--out", str(out),
         "--resamples", "20"], cwd=ROOT, env={**os.environ, "TMPDIR": str(tmpdir), **env},
        text=True, capture_output=True, timeout=CARRIER_TIMEOUT_S, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
        raise RuntimeError(f"{tag}: arena tournament exited with {done.returncode}: "
                           + " | ".join(tail))
    last: dict[str, dict[str, Any]] = {}
    for log in sorted(out.rglob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("HOSTILE "):
                entry = json.loads(line[len("HOSTILE "):])
                if entry.get("attack") == attack:
                    last[entry["proc"]] = entry
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(tmpdir, ignore_errors=True)
    return list(last.values())


def _counters(work: Path, tag: str, sandbox: bool, env: dict[str, str]) -> dict[str, Any]:
    """Two ``counters.py`` bots at one table (one deal, 3 games): what the receiver read
    of each counter."""
    extra = {} if sandbox else {"sandbox": "false"}
    script = str(HOSTILE / "counters.py")
    bots = [(role, f"cmd:python {script} --role {role} --carrier all", extra)
            for role in ("send", "recv")] + [("heuristic", "heuristic", {})]
    reports = _hostile_tournament(work, tag, bots, 1, env, "counters")
    receivers = [r for r in reports if r["role"] == "recv"]
    errors: dict[str, str] = {}
    for r in reports:
        if r["role"] == "send":
            errors.update(r["send_errors"])
    return {"send_errors": errors,
            **{c: {k: sum(r["channels"][c][k] for r in receivers)
                   for k in ("reads", "unreadable", "moved", "frames", "frames_right",
                             "frames_wrong")} for c in ("mlock", "fork")}}


def cold_file(path: Path, mib: int = 24) -> Path:
    """``path``, made a NON-sparse file of ``mib`` MiB of random bytes (a hole reads
    without I/O), on disk (fsync) and out of the page cache: what a page-cache bit is
    read from. The page-cache tests (``tests/test_isolation_pagecache.py``,
    ``tests/test_view.py``) make theirs with it too."""
    block = os.urandom(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for _ in range(mib):
            os.write(fd, block)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return path


def _fresh_file(folder: Path, mib: int = 24) -> Path:
    """A cold file in a new folder that the bots' users may enter."""
    folder.mkdir()
    path = cold_file(folder / "pagecache.bin", mib)
    os.chmod(folder, 0o755)
    return path


def _deal_memory(work: Path, tag: str, sandbox: bool, env: dict[str, str]
                 ) -> dict[str, Any]:
    """``pagecache.py --channel pagemap`` (locked pages, read by a later process through
    /proc/self/pagemap), ``view = "system"``, two deals (6 games)."""
    data = _fresh_file(work / f"{tag}-data")
    extra = {"view": '"system"', **({} if sandbox else {"sandbox": "false"})}
    bots = [("pages", f"cmd:python {HOSTILE / 'pagecache.py'} --channel pagemap "
                      f"--data {data}", extra),
            ("heuristic", "heuristic", {}), ("random", "random", {})]
    reports = _hostile_tournament(work, tag, bots, 2, env, "pagecache")
    return {"processes": len(reports),
            "games_seen": sum(r["games_seen"] for r in reports),
            "deal_recognised": sum(r["deal_recognised"] for r in reports),
            "cards_right": sum(r["cards_right"] for r in reports),
            "cards_wrong": sum(r["cards_wrong"] for r in reports),
            "mlock_refused": any(r["errors"].get("mlock") == "EPERM" for r in reports)}


CARRIER_RUNS: tuple[tuple[str, str, bool, dict[str, str]], ...] = (
    ("counters", "sandboxed", True, {}),
    ("counters", "sandboxed, ARENA_NO_PROC_MASK (control)", True,
     {"ARENA_NO_PROC_MASK": "1"}),
    ("counters", "sandbox = false (control: before)", False, {}),
    ("deal memory", "sandboxed", True, {}),
    ("deal memory", "sandbox = false, held check on", False, {}),
    ("deal memory", "sandbox = false, ARENA_NO_HELD_CHECK (control: before)", False,
     {"ARENA_NO_HELD_CHECK": "1"}),
)


def _carriers(out: TextIO, work: Path) -> list[dict[str, Any]]:
    print("counters of the machine (issue 35): hostile bots of tests/bots/hostile, Trumps, 3 "
          "seats; counters: a sender locks 64+p pages and forks 24+4p children per "
          "decision, a receiver reads /proc/vmstat and /proc/stat (one deal, 3 games); "
          "deal memory: pagecache.py --channel pagemap, view system, two deals (6 games). "
          "The controls stand for the code before (the same carrier, the defence off)",
          file=out)
    figures = []
    for n, (carrier, label, sandbox, env) in enumerate(CARRIER_RUNS):
        tag = f"carrier-{n}"
        if carrier == "counters":
            got = _counters(work, tag, sandbox, env)
            lock, fork = got["mlock"], got["fork"]
            print(f"  {carrier:<11} {label:<58} vmstat: {lock['frames_right']} frames right, "
                  f"{lock['frames_wrong']} wrong, {lock['unreadable']}/{lock['reads']} "
                  f"reads empty; stat: moved {fork['moved']}/{fork['reads']}, "
                  f"{fork['frames_right']} right, {fork['frames_wrong']} wrong; sender "
                  f"errors {got['send_errors'] or '-'}", file=out)
        else:
            got = _deal_memory(work, tag, sandbox, env)
            print(f"  {carrier:<11} {label:<58} {got['deal_recognised']} deals recognised "
                  f"by {got['processes']} processes, cards {got['cards_right']} right "
                  f"{got['cards_wrong']} wrong; mlock refused: {got['mlock_refused']}",
                  file=out)
        figures.append({"carrier": carrier, "run": label, **got})
    return figures


# -- the benchmark --------------------------------------------------------------------------


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    """Measure, print the tables to ``out``, return the figures."""
    why = sandbox_works()
    if why is not None:
        raise RuntimeError(f"the sandbox does not work here: {why}")
    rounds = max(1, round(settings.repeat * ROUNDS / DEFAULT_REPEAT))
    starts = STARTS_PER_REPEAT * settings.repeat
    load_before = os.getloadavg()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arena-bench-isolation-") as tmp:
        work = Path(tmp)
        throughput = _throughput(rounds, out, work)
        startup = _startup_report(starts, out, work)
        proc_mask = _proc_mask_cost(MASK_RUNS_PER_REPEAT * settings.repeat, out)
        carriers = _carriers(out, work)
    load_after = os.getloadavg()
    took = time.perf_counter() - began
    mechanism = limit_mechanism()
    print(f"machine: {usable_cores()} usable cores, limits by {mechanism.kind}; load average "
          f"(1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after; this benchmark "
          f"took {took:.0f} s", file=out)
    return {"throughput": throughput, "startup": startup, "proc_mask": proc_mask,
            "carriers": carriers,
            "cores": usable_cores(), "mechanism": mechanism.kind,
            "load_before": round(load_before[0], 2), "load_after": round(load_after[0], 2),
            "seconds": round(took, 1)}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.isolation [--repeat N] [--json FILE]``: this benchmark alone."""
    from benchmarks.__main__ import main as bench_main

    return bench_main(["--only", "isolation", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
