"""The store's cost per game as it grows, and what the readers of a big store hold.

- **Write cost**: one store grown in place to 1,000, 10,000 and 100,000 finished games
  (:data:`SIZES`), and at each size :data:`WRITES` games stored the way a run stores them
  (:meth:`Store.game_started`, then :meth:`Store.game_finished` with the record, whose
  ``timing`` holds the answer and CPU times), timed one by one; the median per game, and
  its ratio to the 1,000-game figure. The bar: the 100,000 figure within :data:`BAR` of
  the 1,000 one. The games are copies of one real Wizard game (4 built-in bots, all 15 rounds, the
  record with its timing, about 20 KB), each under its own id and linked into the chain;
  the store is grown between the sizes in bulk (:func:`grow`: the rows ``game_finished``
  writes, a few thousand per transaction), which is what makes 100,000 games quick.
- **Before**: the same on the store as it was before issue 18 (its code taken from git at
  :data:`BEFORE`, its schema and its per-game queries), at 1,000 and 10,000 games (the
  old cost grows with the store: 100,000 would take an hour to grow game by game, and
  its figure is the issue's). Skipped, with a note, outside a git checkout.
- **Loop stall**: the longest a trio task waiting on a 1 ms sleep is late while
  :data:`WRITES` games are stored through :class:`arena.runs.writer.StoreWriter`
  (the writer thread), against the same writes made on the loop itself, at the largest
  size: the stall every game in flight suffers per finished game.
- **Readers**: ``arena verify DIR``, ``arena export DIR``, ``arena verify FILE`` (the
  export) and ``arena publish`` (with what the site holds) on the grown store at
  :data:`READER_SIZES` games (environment ``ARENA_BENCH_STORE_READERS``, e.g.
  ``10000,50000``; ``0`` to skip; ``ARENA_BENCH_STORE_SKIP`` leaves some out): their peak
  resident memory (``ru_maxrss`` of the process, through a fresh fork: see
  :data:`_SHIM`) and wall time. Verify re-plays every record by the rules, about 10 ms
  of CPU a Wizard game: at 10,000 games the three take some 5 minutes on an idle core.

The store needs about 2 GB of disk at 100,000 games, in a temporary folder removed after.
``--repeat`` and ``--seconds`` do not apply (each size is measured once, as the store
grows). Run alone as ``python -m benchmarks --only store``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import trio

from arena.bots import make_bot
from arena.model import chain
from arena.model.record import game_record
from arena.rules import new_game
from arena.runs.schedule import ScheduledGame, seed_commitment
from arena.runs.store import Store
from arena.runs.store_rows import timing_sums
from arena.runs.writer import store_writer
from benchmarks import Settings

TITLE = "the store's cost per game at 1k, 10k and 100k stored games; readers' peak memory"

SIZES = (1_000, 10_000, 100_000)
OLD_SIZES = (1_000, 10_000)
WRITES = 200
"""Games stored (and timed) at each size."""
OLD_WRITES = 20
BAR = 1.5
"""The cost at 100,000 games may be at most this times the cost at 1,000."""
BEFORE = "c85d65a"
"""The commit before issue 18's store: the code measured as "before"."""
READER_SIZES = tuple(int(x) for x in os.environ.get("ARENA_BENCH_STORE_READERS",
                                                    "10000").split(",") if int(x) > 0)
SEED = 2026
BOTS = ("heuristic", "random", "heuristic", "random")
REPO = Path(__file__).resolve().parent.parent


# -- the synthetic games ---------------------------------------------------------------


class Template:
    """One real Wizard game, as the texts a copy of it is made from."""

    def __init__(self) -> None:
        game = new_game("wizard", {"players": 4}, SEED)
        bots = [make_bot(kind, f"bench/{seat}") for seat, kind in enumerate(BOTS)]
        wall: list[list[float]] = [[] for _ in BOTS]
        while not game.is_over:
            seat = game.to_move
            assert seat is not None
            started = time.perf_counter()
            action = bots[seat].act(game.view(seat))
            wall[seat].append(round((time.perf_counter() - started) * 1000, 3))
            game.apply(action)
        self.seats = [f"bot{seat}" for seat in range(len(BOTS))]
        self.wall = wall
        self.cpu: list[list[float | None]] = [[round(ms * 0.9, 3) for ms in w] for w in wall]
        record = game_record(game, self.seats, forfeited=[False] * len(BOTS),
                             game_id="@@GAME@@", table_id="@@TABLE@@")
        record["timing"] = {"wall_ms": wall, "cpu_ms": self.cpu}
        self.record = record
        self.seed = SEED
        self.stored = json.dumps(record, separators=(",", ":")).split("@@")
        self.canonical = chain.canonical(record).split(b"@@")
        self.size = len(json.dumps(record, separators=(",", ":")))

    def ids(self, index: int) -> tuple[str, str]:
        return f"t{index}-d0-r0", f"t{index}"

    def text(self, index: int) -> str:
        game, table = self.ids(index)
        return "".join(game if p == "GAME" else table if p == "TABLE" else p
                       for p in self.stored)

    def link(self, prev: str, index: int) -> str:
        game, table = (s.encode() for s in self.ids(index))
        body = b"".join(game if p == b"GAME" else table if p == b"TABLE" else p
                        for p in self.canonical)
        return hashlib.sha256(bytes.fromhex(prev) + body).hexdigest()

    def game(self, index: int) -> ScheduledGame:
        return ScheduledGame(index, index, 0, 0, self.seed, tuple(self.seats))

    def record_of(self, index: int) -> dict[str, Any]:
        game, table = self.ids(index)
        return {**self.record, "game_id": game, "table_id": table}


def new_store(folder: Path, opener: Any, template: Template) -> Any:
    """A store made by ``opener`` (this arena's :class:`Store`, or the old one), with the
    meta a verify needs (the seed and its commitment; no schedule: the copies are not a
    schedule's games) and its four bots."""
    store = opener.open(folder)
    store.set_meta({"name": "bench", "game": "wizard", "seed": str(template.seed),
                    "seed_commitment": seed_commitment(template.seed)})
    for name in template.seats:
        store.set_bot(name, "heuristic")
    return store


def finish(store: Any, game: ScheduledGame, record: dict[str, Any],
           template: Template) -> None:
    """``store.game_finished``: this arena's takes the record (its times in it); the
    store of :data:`BEFORE` also took the times apart, which it kept a second time."""
    if isinstance(store, Store):
        store.game_finished(game, record)
    else:
        store.game_finished(game, record, template.wall, template.cpu)


def grow(store: Any, template: Template, start: int, stop: int) -> None:
    """Add games ``start`` .. ``stop - 1`` to ``store``, finished and linked after its
    head, in bulk: the rows :meth:`Store.game_finished` writes (games, results with
    the sums of each seat's times, the head in meta; for the store of :data:`BEFORE`,
    results and latencies), 5,000 games per transaction."""
    db = store.db
    sums = "decisions" in {r[1] for r in db.execute("PRAGMA table_info(results)")}
    latency_rows = not sums
    meta = dict(db.execute("SELECT key, value FROM meta"))
    prev = meta.get("chain_head") or chain.genesis(meta["seed_commitment"])
    bots = json.dumps(template.seats)
    totals, places = template.record["totals"], template.record["places"]
    wall = [json.dumps(w) for w in template.wall]
    cpu = [json.dumps(c) for c in template.cpu]
    for first in range(start, stop, 5000):
        games, results, latencies = [], [], []
        for i in range(first, min(stop, first + 5000)):
            game_id = template.ids(i)[0]
            digest = template.link(prev, i)
            games.append((game_id, i, i, 0, 0, str(template.seed), bots, 1.0, 2.0,
                          template.text(i), i, prev, digest))
            prev = digest
            for seat, name in enumerate(template.seats):
                results.append((game_id, seat, name, totals[seat], places[seat],
                                *timing_sums(template.wall[seat], template.cpu[seat])))
                if latency_rows:
                    latencies.append((game_id, seat, name, wall[seat], cpu[seat]))
        db.execute("BEGIN IMMEDIATE")
        db.executemany(
            "INSERT INTO games (id, seq, table_no, deal_no, rotation, deal_seed, bots, status,"
            " started_at, ended_at, record, chain_seq, chain_prev, chain)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 'done', ?, ?, ?, ?, ?, ?)", games)
        if sums:
            db.executemany("INSERT INTO results (game_id, seat, bot, score, place, forfeited,"
                           " decisions, wall_ms, cpu_decisions, cpu_ms)"
                           " VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?)", results)
        else:
            db.executemany("INSERT INTO results (game_id, seat, bot, score, place, forfeited)"
                           " VALUES (?, ?, ?, ?, ?, 0)", [r[:5] for r in results])
        if latency_rows:
            db.executemany("INSERT INTO latencies (game_id, seat, bot, ms, cpu_ms)"
                           " VALUES (?, ?, ?, ?, ?)", latencies)
        db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                       [("chain_head", prev), ("chain_games", str(min(stop, first + 5000)))])
        db.execute("COMMIT")


def store_games(store: Any, template: Template, start: int,
                count: int) -> tuple[list[float], list[float]]:
    """Store games ``start`` .. as a run does, one at a time; each one's wall and CPU
    seconds (the process's CPU time, system time included: on a shared machine a
    steadier figure than the wall clock)."""
    wall, cpu = [], []
    for i in range(start, start + count):
        scheduled = template.game(i)
        record = template.record_of(i)
        began, began_cpu = time.perf_counter(), time.process_time()
        store.game_started(scheduled)
        finish(store, scheduled, record, template)
        wall.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
    return wall, cpu


def old_store_class() -> Any:
    """The ``Store`` of :data:`BEFORE` (from git), or None outside a checkout."""
    try:
        source = subprocess.run(["git", "-C", str(REPO), "show",
                                 f"{BEFORE}:arena/runs/store.py"], capture_output=True,
                                text=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    module = types.ModuleType("arena_store_before")
    module.__file__ = f"{BEFORE}:arena/runs/store.py"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module.Store


# -- the measurements ------------------------------------------------------------------


def write_costs(folder: Path, opener: Any, template: Template, sizes: Sequence[int],
                writes: int, out: TextIO, label: str) -> dict[str, dict[str, float]]:
    """Grow one store through ``sizes``, timing ``writes`` games at each: the median ms
    per game, wall and CPU."""
    figures: dict[str, dict[str, float]] = {}
    store = new_store(folder, opener, template)
    try:
        count = 0
        for size in sizes:
            began = time.perf_counter()
            grow(store, template, count, size)
            grown = time.perf_counter() - began
            wall, cpu = store_games(store, template, size, writes)
            count = size + writes
            figures[str(size)] = {"wall_ms": round(statistics.median(wall) * 1000, 3),
                                  "cpu_ms": round(statistics.median(cpu) * 1000, 3)}
            first = figures[str(sizes[0])]
            now = figures[str(size)]
            print(f"  {label:6} {size:>7,} games: {now['wall_ms']:8.2f} ms wall, "
                  f"{now['cpu_ms']:8.2f} ms CPU per game stored (medians of {writes}); "
                  f"{now['wall_ms'] / first['wall_ms']:5.2f}x wall, "
                  f"{now['cpu_ms'] / first['cpu_ms']:5.2f}x CPU of the {sizes[0]:,} "
                  f"figure (grown in {grown:.0f} s)", file=out, flush=True)
    finally:
        store.close()
    return figures


def loop_stall(store: Store, template: Template, start: int, writes: int,
               threaded: bool) -> float:
    """The longest (ms) a trio task sleeping 1 ms at a time was late while ``writes``
    games were stored: through the writer thread, or on the loop as before."""
    async def main() -> float:
        late = 0.0
        done = trio.Event()

        async def ticker() -> None:
            nonlocal late
            while not done.is_set():
                began = trio.current_time()
                await trio.sleep(0.001)
                late = max(late, trio.current_time() - began - 0.001)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker)
            await trio.sleep(0.01)
            if threaded:
                async with store_writer(store) as writer:
                    for i in range(start, start + writes):
                        await writer.game_started(template.game(i))
                        await writer.game_finished(template.game(i), template.record_of(i))
            else:
                for i in range(start, start + writes):
                    store.game_started(template.game(i))
                    store.game_finished(template.game(i), template.record_of(i))
                    await trio.lowlevel.checkpoint()
            done.set()
        return late * 1000

    return float(trio.run(main))


_SHIM = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, "-m", "arena", *sys.argv[2:]])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}")
"""
"""Runs the command as its child and writes the child's peak RSS (KiB) and exit code. A
process's ``ru_maxrss`` starts at the peak of the memory it had before its ``exec``:
spawned straight from this benchmark (which holds the grown store's pages), every
command would report at least this process's size; the shim's fresh fork holds little."""


def reader(argv: Sequence[str], cwd: Path) -> tuple[float, float, str]:
    """Run ``python -m arena ARGV``: its peak resident memory (MB), wall time (s) and
    last line of output."""
    with tempfile.NamedTemporaryFile("r", suffix=".rusage") as report:
        began = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _SHIM, report.name, *argv], cwd=cwd,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              check=False)
        seconds = time.perf_counter() - began
        maxrss, code = (int(x) for x in report.read().split())
    last = (done.stdout.strip().splitlines() or [""])[-1]
    if code != 0:
        last = f"exit {code}: {last}"
    return maxrss / 1024, seconds, last


SKIP_READERS = {n.strip() for n in os.environ.get("ARENA_BENCH_STORE_SKIP", "").split(",")
                if n.strip()}
"""Readers left out (environment ``ARENA_BENCH_STORE_SKIP``, e.g. ``verify DIR,export``)."""


def site_figures(site: Path) -> dict[str, Any]:
    """What a published site holds: its size, the largest page and data file, and the
    most entries in one folder."""
    sizes = {p: p.stat().st_size for p in site.rglob("*") if p.is_file()}
    folders = [site, *(p for p in site.rglob("*") if p.is_dir())]
    return {"mb": round(sum(sizes.values()) / 1e6, 1),
            "games_html_kb": round(sizes.get(site / "games.html", 0) / 1e3, 1),
            "data_mb": round(sum(v for p, v in sizes.items()
                                 if p.parent == site / "data") / 1e6, 1),
            "list_pages": 1 + len(list((site / "games" / "list").glob("*.html"))),
            "most_in_a_folder": max(len(list(f.iterdir())) for f in folders)}


def readers(folder: Path, template: Template, sizes: Sequence[int],
            out: TextIO) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    store = new_store(folder, Store, template)
    try:
        count = 0
        for size in sizes:
            grow(store, template, count, size)
            count = size
            store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            export = folder / "games.jsonl"
            site = folder.parent / "readers-site"
            rows: dict[str, Any] = {}
            for name, argv in (("verify DIR", ["verify", str(folder)]),
                               ("export", ["export", str(folder), "--out", str(export)]),
                               ("verify FILE", ["verify", str(export)]),
                               ("publish", ["publish", str(folder), "--out", str(site),
                                            "--resamples", "10"])):
                if name in SKIP_READERS:
                    continue
                mb, seconds, last = reader(argv, REPO)
                rows[name] = {"peak_mb": round(mb, 1), "seconds": round(seconds, 1)}
                print(f"  {size:>7,} games  {name:12} peak {mb:7.1f} MB  {seconds:7.1f} s  "
                      f"({last[:70]})", file=out, flush=True)
            if site.is_dir():
                rows["site"] = site_figures(site)
                print(f"  {size:>7,} games  site: {rows['site']}", file=out, flush=True)
                shutil.rmtree(site)
            figures[str(size)] = rows
            export.unlink(missing_ok=True)
    finally:
        store.close()
    return figures


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    del settings  # each size is measured once, as the store grows
    template = Template()
    base = Path(tempfile.mkdtemp(prefix="arena-bench-store-"))
    figures: dict[str, Any] = {"record_bytes": template.size, "writes": WRITES}
    print(f"a game: Wizard, 4 seats, a record of {template.size:,} bytes; {WRITES} games "
          f"stored and timed at each size", file=out)
    try:
        now = write_costs(base / "now", Store, template, SIZES, WRITES, out, "now")
        figures["now"] = now
        ratios = {kind: now[str(SIZES[-1])][kind] / now[str(SIZES[0])][kind]
                  for kind in ("wall_ms", "cpu_ms")}
        figures["ratio"] = {kind: round(r, 3) for kind, r in ratios.items()}
        met = all(r <= BAR for r in ratios.values())
        print(f"  bar: {SIZES[-1]:,} within {BAR}x of {SIZES[0]:,}: "
              f"{ratios['wall_ms']:.2f}x wall, {ratios['cpu_ms']:.2f}x CPU: "
              f"{'met' if met else 'NOT met'}", file=out, flush=True)
        with Store.open(base / "now") as store:
            start = SIZES[-1] + len(SIZES) * WRITES
            on_loop = loop_stall(store, template, start, WRITES, threaded=False)
            threaded = loop_stall(store, template, start + WRITES, WRITES, threaded=True)
        figures["loop_stall_ms"] = {"on_loop": round(on_loop, 2),
                                    "writer_thread": round(threaded, 2)}
        print(f"  loop stall at {SIZES[-1]:,} games, {WRITES} games stored: longest "
              f"{on_loop:.1f} ms written on the loop, {threaded:.1f} ms through the "
              f"writer thread", file=out, flush=True)
        shutil.rmtree(base / "now")
        old = old_store_class()
        if old is None:
            print(f"  before: skipped (the code of {BEFORE} is not in git here)", file=out)
        else:
            before = write_costs(base / "before", old, template, OLD_SIZES, OLD_WRITES, out,
                                 "before")
            figures["before"] = before
            shutil.rmtree(base / "before")
        if READER_SIZES:
            print("readers (peak resident memory and wall time, one process each):",
                  file=out, flush=True)
            figures["readers"] = readers(base / "readers", template, READER_SIZES, out)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return figures


if __name__ == "__main__":
    run(Settings(), sys.stdout)
