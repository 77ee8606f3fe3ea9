"""The league's live page: a bot's page at 100, 1,000 and 25,000 games (loop and store
thread), threads under 1,000 half-sent requests, and the games' rate under a hostile
page client; each against the code before (``BEFORE``), in the same run.

``python -m benchmarks --only page``:

1. **A bot's page** (:meth:`arena.league_service.backend.RunnerBackend.bot`) on a league store
   grown with SQL to 100, 1,000 and 25,000 games (benchmarks/page_store.py), the league
   loaded (no game played). *Loop ms*: the time the game loop spends in the view's task
   steps (a trio instrument sums them); *store ms*: the time of the view's job in its
   store thread (the reader now; the writer before). *Before* is the view as it was
   (three queries of every row of the bot on the writer thread, then every latency list
   parsed on the loop), run here on the same stores; medians of ``repeat`` x 5 views.
2. **Threads under 1,000 half-sent requests**: the page's server of before (a
   ``ThreadingHTTPServer``) and the bounded server (:mod:`arena.http.server`, the page's
   limits), in this process: threads with the connections open, and the time of a whole
   request sent through them.
3. **The games' rate under a hostile page client**: ``arena league serve --web`` with
   built-in bots on a store of 25,000 games, this code and the code of ``BEFORE`` (from
   git), each measured quiet and with 50 clients (25 fetching ``/bots/b1`` in a loop, 25
   holding event streams): games a second, medians of phases of ``max(5, 5 x seconds)``
   seconds, the hostile phases interleaved with the quiet ones.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO
from urllib.request import urlopen

import trio

from arena.http.server import BoundedServer, Request, Response
from arena.league.config import load_league
from arena.league.runner import League, LeagueSummary
from arena.league.store import field_rows
from arena.league_service.backend import RunnerBackend
from arena.league_service.web import LIMITS
from arena.model.league_api import BotDetail, FieldBot
from arena.runs.readers import store_readers
from arena.runs.store import Store
from arena.runs.writer import store_writer
from benchmarks import Settings
from benchmarks.page_store import grow, play_league
from benchmarks.publish_memory import before_code

TITLE = ("the live page: a bot's page at 100/1k/25k games (loop and store ms), threads "
         "under 1,000 half-sent requests, games/s under a hostile page client; vs before")
BEFORE = "4319a43"
"""The commit before the bounded page and the readers."""
SIZES = (100, 1_000, 25_000)
REPO = Path(__file__).resolve().parent.parent


# -- 1. a bot's page ----------------------------------------------------------------------


class LoopTime(trio.abc.Instrument):
    """The time the loop spends in the steps of the tasks it is told to watch."""

    def __init__(self) -> None:
        self.watched: set[trio.lowlevel.Task] = set()
        self.total = 0.0
        self.began = 0.0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task in self.watched:
            self.began = time.perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        if task in self.watched:
            self.total += time.perf_counter() - self.began


async def old_bot(backend: RunnerBackend, name: str, clock: list[float]) -> BotDetail | None:
    """The bot's page as it was (``BEFORE``): the reads on the writer thread, the parse
    on the loop."""
    league = backend._league()

    async def read(fn: Any) -> Any:
        def timed(store: Store) -> Any:
            began = time.perf_counter()
            try:
                return fn(store)
            finally:
                clock[0] += time.perf_counter() - began
        return await league.writer.call(timed)

    rows = await read(field_rows)
    mine = [r for r in rows if r.name == name or r.base == name]
    if not mine:
        return None
    base = mine[0].base
    line = [r for r in rows if r.base == base]
    names = tuple(r.name for r in line)
    marks = ",".join("?" * len(names))

    def reads(store: Store) -> tuple[Any, list[Any], list[Any]]:
        games = store.db.execute(f"SELECT COUNT(DISTINCT game_id) FROM results WHERE bot IN"
                                 f" ({marks})", names).fetchone()[0]
        kinds = store.db.execute(f"SELECT kind, COUNT(*) FROM faults WHERE bot IN"
                                 f" ({marks}) GROUP BY kind", names).fetchall()
        times = store.db.execute(f"SELECT ms, cpu_ms FROM latencies WHERE bot IN"
                                 f" ({marks})", names).fetchall()
        return games, kinds, times

    games, kinds, times = await read(reads)
    walls: list[float] = []
    cpus: list[float] = []
    for ms, cpu in times:
        walls += [float(x) for x in json.loads(ms)]
        if cpu:
            cpus += [float(x) for x in json.loads(cpu) if x is not None]
    fault_kinds = {str(k): int(n) for k, n in kinds}
    return BotDetail(FieldBot("", base, "", "active", ""), (), int(games),
                     sum(fault_kinds.values()), fault_kinds, len(walls),
                     sum(cpus) / len(cpus) if cpus else None,
                     sum(walls) / len(walls) if walls else None, ())


def page_costs(folder: Path, views: int) -> dict[str, dict[str, float]]:
    """Loop and store milliseconds per view of ``/bots/b1``, now and before; medians."""
    config = load_league(folder / "league.toml")
    out: dict[str, dict[str, list[float]]] = {
        "now": {"loop_ms": [], "store_ms": []}, "before": {"loop_ms": [], "store_ms": []}}

    async def main() -> None:
        loop = LoopTime()
        trio.lowlevel.add_instrument(loop)
        store = Store.open(folder / "out")
        try:
            async with store_writer(store) as writer, \
                    store_readers(folder / "out") as readers, trio.open_nursery() as pools:
                league = League(config, store, writer, pools, LeagueSummary(), None, None,
                                None, readers)
                backend = RunnerBackend(config, sandbox=False)
                backend.attach(league)
                reader_clock = [0.0]
                plain = readers.call

                async def timed_call(fn: Any) -> Any:
                    def timed(s: Store) -> Any:
                        began = time.perf_counter()
                        try:
                            return fn(s)
                        finally:
                            reader_clock[0] += time.perf_counter() - began
                    return await plain(timed)

                readers.call = timed_call  # type: ignore[method-assign]
                for kind in ("now", "before"):  # apart: one's garbage is not the other's
                    gc.collect()
                    for _ in range(views):
                        loop.total, reader_clock[0] = 0.0, 0.0
                        clock = [0.0]
                        loop.watched = {trio.lowlevel.current_task()}
                        loop.began = time.perf_counter()  # this step, from here
                        if kind == "now":
                            detail = await backend.bot("b1")
                            store_s = reader_clock[0]
                        else:
                            detail = await old_bot(backend, "b1", clock)
                            store_s = clock[0]
                        await trio.lowlevel.checkpoint()  # the view's last step ends here
                        loop.watched = set()
                        assert detail is not None and detail.games > 0
                        out[kind]["loop_ms"].append(loop.total * 1000)
                        out[kind]["store_ms"].append(store_s * 1000)
        finally:
            store.close()
            trio.lowlevel.remove_instrument(loop)

    trio.run(main)
    return {k: {m: statistics.median(v) for m, v in d.items()} for k, d in out.items()}


# -- 2. threads under half-sent requests -----------------------------------------------


class _Old(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _OldServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # as the page's server of before: a client that left is no error


def flood(port: int, n: int) -> tuple[list[socket.socket], int, float]:
    """``n`` half-sent requests to ``port``; (the sockets, the threads of this process with
    them open, the seconds a whole request then takes)."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
    began = time.perf_counter()
    with urlopen(f"http://127.0.0.1:{port}/", timeout=30) as reply:
        reply.read()
    took = time.perf_counter() - began
    deadline = time.monotonic() + 10  # the accepting thread catches up
    count = threading.active_count()
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = threading.active_count()
        if now == count:
            break
        count = now
    return socks, count, took


def threads_under_flood(n: int = 1000) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    base = threading.active_count()
    old = _OldServer(("127.0.0.1", 0), _Old)
    thread = threading.Thread(target=old.serve_forever, kwargs={"poll_interval": 0.2},
                              daemon=True)
    thread.start()
    socks, count, took = flood(old.server_address[1], n)
    out["before"] = {"threads": count - base, "whole_request_ms": took * 1000}
    for s in socks:
        s.close()
    old.shutdown()
    old.server_close()
    deadline = time.monotonic() + 30
    while threading.active_count() > base + 1 and time.monotonic() < deadline:
        time.sleep(0.1)

    async def answer(request: Request) -> Response:
        return Response(200, b"ok")

    base = threading.active_count()
    new = BoundedServer("127.0.0.1", 0, answer, limits=LIMITS)
    new.start()
    socks, count, took = flood(new.port, n)
    out["now"] = {"threads": count - base, "whole_request_ms": took * 1000}
    for s in socks:
        s.close()
    new.close()
    return out


# -- 3. the games' rate under a hostile page client -------------------------------------


def _serve(folder: Path, pythonpath: str) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env.update(PYTHONPATH=pythonpath, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "arena", "league", "serve",
                             str(folder / "league.toml"), "--json", "--address",
                             "127.0.0.1:0", "--web", "127.0.0.1:0"], cwd=folder, env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("{"):
            url = str(json.loads(line)["web"])
            while time.monotonic() < deadline and not _ready(url):
                time.sleep(0.1)  # the page's state is read once the league is going
            return proc, url
    proc.kill()
    proc.wait()
    raise RuntimeError("arena league serve did not start")


def _ready(url: str) -> bool:
    """Whether the page has read the league's state."""
    with urlopen(url + "state.json", timeout=30) as reply:
        return json.loads(reply.read())["season"] is not None


def _stored(folder: Path) -> int:
    """The games the league has stored (read-only, from the store: the page of before
    stopped following the league when it fell behind its events)."""
    with closing(sqlite3.connect(f"file:{folder / 'out' / 'tournament.sqlite'}?mode=ro",
                                 uri=True, timeout=30)) as db:
        return int(db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'"
                              ).fetchone()[0])


class Hostile:
    """50 page clients: 25 fetching ``/bots/b1`` in a loop, 25 holding event streams."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stop = threading.Event()
        self.views = 0
        self.threads = [threading.Thread(target=self._views, daemon=True) for _ in range(25)]
        self.threads += [threading.Thread(target=self._stream, daemon=True)
                         for _ in range(25)]

    def __enter__(self) -> Hostile:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def _views(self) -> None:
        while not self.stop.is_set():
            try:
                with urlopen(self.url + "bots/b1", timeout=30) as reply:
                    reply.read()
                self.views += 1
            except OSError:
                time.sleep(0.05)

    def _stream(self) -> None:
        while not self.stop.is_set():
            try:
                with urlopen(self.url + "events", timeout=5) as stream:
                    while not self.stop.is_set():
                        stream.readline()
            except OSError:
                time.sleep(0.05)


def games_rate(folder: Path, pythonpath: str, phase_s: float, repeat: int,
               ) -> dict[str, float]:
    proc, url = _serve(folder, pythonpath)
    quiet: list[float] = []
    hostile: list[float] = []
    views: list[float] = []
    try:
        for _ in range(repeat):
            for kind in ("quiet", "hostile"):
                if kind == "quiet":
                    began, t0 = _stored(folder), time.monotonic()
                    time.sleep(phase_s)
                    quiet.append((_stored(folder) - began) / (time.monotonic() - t0))
                else:
                    with Hostile(url) as h:
                        began, t0 = _stored(folder), time.monotonic()
                        time.sleep(phase_s)
                        hostile.append((_stored(folder) - began) / (time.monotonic() - t0))
                        views.append(h.views / phase_s)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return {"quiet_games_s": statistics.median(quiet),
            "hostile_games_s": statistics.median(hostile),
            "ratio": statistics.median(hostile) / max(statistics.median(quiet), 1e-9),
            "bot_views_s": statistics.median(views)}


# -- the run -------------------------------------------------------------------------------


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    figures: dict[str, Any] = {"page": {}}
    with tempfile.TemporaryDirectory(prefix="arena-bench-page-") as tmp:
        root = Path(tmp)
        base = root / "base"
        base.mkdir()
        play_league(base, 6)
        print("1. a bot's page (/bots/NAME): ms per view, medians", file=out)
        print(f"{'games':>8} {'loop now':>9} {'before':>8} {'store now':>10} {'before':>8}"
              f" {'loop x':>7} {'store x':>8}", file=out)
        for size in SIZES:
            folder = root / f"s{size}"
            shutil.copytree(base, folder)
            grow(folder / "out", size)
            costs = page_costs(folder, 5 * settings.repeat)
            now, before = costs["now"], costs["before"]
            figures["page"][str(size)] = costs
            print(f"{size:>8} {now['loop_ms']:>9.3f} {before['loop_ms']:>8.2f}"
                  f" {now['store_ms']:>10.3f} {before['store_ms']:>8.2f}"
                  f" {before['loop_ms'] / max(now['loop_ms'], 1e-9):>7.0f}"
                  f" {before['store_ms'] / max(now['store_ms'], 1e-9):>8.0f}", file=out,
                  flush=True)
            if size != SIZES[-1]:
                shutil.rmtree(folder)
        print("\n2. 1,000 half-sent requests: threads gained, and a whole request then",
              file=out)
        threads = threads_under_flood()
        figures["threads"] = threads
        for kind in ("before", "now"):
            print(f"{kind:>8}: {threads[kind]['threads']:>5.0f} threads, a whole request in"
                  f" {threads[kind]['whole_request_ms']:.1f} ms", file=out, flush=True)
        phase = max(5.0, 5 * settings.seconds)
        print(f"\n3. games/s of arena league serve --web (built-in bots, 25,000 games "
              f"stored), quiet and with 50 hostile page clients; {phase:.0f} s phases, "
              f"medians of {settings.repeat}", file=out, flush=True)
        big = root / f"s{SIZES[-1]}"
        trees = {"now": str(REPO)}
        (root / "before").mkdir(parents=True, exist_ok=True)
        old = before_code(BEFORE, root / "before")
        if old is not None:
            trees["before"] = str(old)
        figures["rate"] = {}
        for kind, tree in trees.items():
            folder = root / f"rate-{kind}"
            shutil.copytree(big, folder)
            rate = games_rate(folder, tree, phase, settings.repeat)
            figures["rate"][kind] = rate
            print(f"{kind:>8}: quiet {rate['quiet_games_s']:.1f} games/s, hostile "
                  f"{rate['hostile_games_s']:.1f} games/s (x{rate['ratio']:.2f}); "
                  f"{rate['bot_views_s']:.0f} bot-page views/s served", file=out, flush=True)
            shutil.rmtree(folder)
    return figures


if __name__ == "__main__":
    run(Settings(), sys.stdout)
