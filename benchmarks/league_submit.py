"""Submission to first game: ``python -m benchmarks.league_submit [--runs N]``.

Starts ``arena league serve`` (trumps, 3 seats, two house bots, check-bot with one game
of each kind) on 127.0.0.1 port 0, adds an author, and submits ``--runs`` Python bots
(the sample random bot), one after another, then as many C++ binaries (the sample bot of
``make cpp-bot``, ``runtime = "native"``) if it is built. For each it measures the time
from the start of the upload to the ``accepted`` answer and to the first finished game of
that bot (the league's events). Prints p50 and the slowest; nothing is asserted. Every
process started is ended.

``--hostile`` (with ``--runs 0``: only this) then measures the service under a hostile
author (issue 35), in the same run: another author's ``GetStatus`` and ``Submit`` (of an
archive refused at once: the service's own path, no check) without and with the hostile
author holding 100 ``WatchEvents`` streams, medians and their ratio, and the calls that
failed; then how many wrong tokens one client gets heard a second (answered
UNAUTHENTICATED) over ``--wrong-s`` seconds, and how many are refused by the limit.
``--server-code DIR`` runs the league from another checkout of trick-arena (the code
before a change, for its figures beside these).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CPP = REPO / "sample_bots" / "cpp" / "build" / "cpp-sample"
LEAGUE = """name = "bench"
game = "trumps"
seats = 3
concurrency = 1
output = "out"
[options]
draw = false
[time]
move_ms = 300
[[house]]
name = "heuristic"
spec = "heuristic"
rating = 1550
[[house]]
name = "random"
spec = "random"
rating = 1400
"""


def folder_of(root: Path, name: str, native: bool) -> Path:
    folder = root / name
    folder.mkdir()
    if native:
        shutil.copy2(CPP, folder / "bot")
        runtime, command = "native", "./bot"
    else:
        shutil.copy(REPO / "sample_bots" / "python" / "random_bot.py", folder / "bot.py")
        runtime, command = "python3", "python3 bot.py"
    (folder / "bot.toml").write_text(f'name = "{name}"\nversion = "1"\n'
                                     f'runtime = "{runtime}"\ncommand = "{command}"\n')
    return folder


def _median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f} ms" if values else "-"


def _calls(target: str, token: str, n_status: int, n_submit: int) -> dict[str, Any]:
    """Latencies of ``n_status`` GetStatus and ``n_submit`` Submit calls of one author, and
    the codes of those that failed."""
    from arena.wire.league_client import LeagueCallError, LeagueClient

    status: list[float] = []
    submit: list[float] = []
    failed: list[str] = []
    with LeagueClient(target, token, timeout_s=30) as client:
        for _ in range(n_status):
            started = time.perf_counter()
            try:
                client.status()
                status.append(time.perf_counter() - started)
            except LeagueCallError as e:
                failed.append(f"GetStatus {e.code}")
        for _ in range(n_submit):
            started = time.perf_counter()
            try:
                list(client.submit(io.BytesIO(b"not an archive"), 14))
                submit.append(time.perf_counter() - started)
            except LeagueCallError as e:
                failed.append(f"Submit {e.code}")
    return {"status": status, "submit": submit, "failed": failed}


def _threads(pid: int) -> int:
    """The threads of process ``pid`` now."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def _open_streams(target: str, tokens: list[str], n: int) -> tuple[list[Any], list[Any]]:
    """``n`` WatchEvents streams, of ``tokens`` in turn, on 4 channels, once the server's
    refusals have settled (or it has taken every stream it will): (channels, streams)."""
    import grpc

    from arena.v1 import league_pb2, league_pb2_grpc

    channels = [grpc.insecure_channel(target) for _ in range(4)]
    streams: list[Any] = [league_pb2_grpc.LeagueServiceStub(channels[i % 4]).WatchEvents(
        league_pb2.WatchEventsRequest(), timeout=600,
        metadata=(("authorization", f"Bearer {tokens[i % len(tokens)]}"),))
        for i in range(n)]
    deadline = time.monotonic() + 5
    done = -1
    while time.monotonic() < deadline:
        now_done = sum(s.done() for s in streams)
        if now_done == done and (now_done > 0 or time.monotonic() > deadline - 3):
            break
        done = now_done
        time.sleep(0.5)
    return channels, streams


def _close(channels: list[Any], streams: list[Any]) -> None:
    for stream in streams:
        stream.cancel()
    for channel in channels:
        channel.close()


def hostile_figures(target: str, pid: int, honest: str, hostile: str, many: list[str],
                    wrong_s: float) -> None:
    """The server's threads with 100 streams of 25 authors; another author's calls
    without and with 100 hostile streams; wrong tokens heard a second."""
    from arena.wire.league_client import LeagueCallError, LeagueClient

    idle = _threads(pid)
    channels, streams = _open_streams(target, many, 100)
    try:
        held = sum(not s.done() for s in streams)
        busy = _threads(pid)
    finally:
        _close(channels, streams)
    print(f"server threads: {idle} idle, {busy} with {held} WatchEvents streams of "
          f"{len(many)} authors held (of 100 opened)")
    alone = _calls(target, honest, 50, 5)
    channels, streams = _open_streams(target, [hostile], 100)
    try:
        held = sum(not s.done() for s in streams)
        besieged = _calls(target, honest, 50, 5)
    finally:
        _close(channels, streams)
    print(f"hostile author: 100 WatchEvents streams opened, {held} held, "
          f"{100 - held} refused")
    for what, call in (("status", "GetStatus"), ("submit", "Submit")):
        ratio = (f"{statistics.median(besieged[what]) / statistics.median(alone[what]):.2f}x"
                 if alone[what] and besieged[what] else "-")
        failed = sum(f.startswith(call) for f in besieged["failed"])
        print(f"another author's {call}: p50 alone {_median_ms(alone[what])}, with the "
              f"hostile streams {_median_ms(besieged[what])} ({ratio}); served "
              f"{len(besieged[what])} of {len(besieged[what]) + failed}")
    if besieged["failed"]:
        print(f"  failed with the hostile streams: {sorted(set(besieged['failed']))}")
    heard = refused = 0
    wrong = "arena_" + "W" * 43
    with LeagueClient(target, wrong, timeout_s=30) as client:
        started = time.monotonic()
        while time.monotonic() - started < wrong_s:
            try:
                client.status()
            except LeagueCallError as e:
                if e.code == "UNAUTHENTICATED":
                    heard += 1
                else:
                    refused += 1
        elapsed = time.monotonic() - started
    print(f"wrong tokens from one client over {elapsed:.1f} s: {heard / elapsed:.1f} a second "
          f"heard ({heard}), {refused} refused by the limit")


def main(argv: list[str] | None = None) -> int:
    from arena.league.bundle import pack_to_temp
    from arena.model.league_api import ACCEPTED, GAME_FINISHED
    from arena.wire.league import LeagueClient

    parser = argparse.ArgumentParser(prog="python -m benchmarks.league_submit")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hostile", action="store_true",
                        help="then measure another author's calls under a hostile one")
    parser.add_argument("--wrong-s", type=float, default=3.0,
                        help="seconds of wrong tokens (--hostile)")
    parser.add_argument("--server-code", type=Path, default=REPO, metavar="DIR",
                        help="the trick-arena checkout the league runs (default: this one)")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-submit-"))
    (root / "league.toml").write_text(LEAGUE)
    env = dict(os.environ, PYTHONPATH=str(args.server_code.resolve()))
    arena = [sys.executable, "-m", "arena", "league"]

    def author(name: str) -> str:
        return subprocess.run([*arena, "author", "add", "league.toml", name,
                               "--submissions-per-hour", "1000"], cwd=root, env=env,
                              text=True, capture_output=True, check=True).stdout.strip()

    token = author("bench")
    others = (author("honest"), author("hostile")) if args.hostile else None
    proc = subprocess.Popen([*arena, "serve", "league.toml", "--json", "--address",
                             "127.0.0.1:0"], cwd=root, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        line = ""
        # a plain readline (select on a buffered pipe misses lines already in its buffer),
        # with the server ended if it has not said its port within 60 s
        watchdog = threading.Timer(60, proc.kill)
        watchdog.start()
        try:
            while not line.startswith("{"):
                line = proc.stdout.readline()
                if not line:
                    raise SystemExit("the league did not start")
        finally:
            watchdog.cancel()
        port = json.loads(line)["port"]
        (root / "bots").mkdir()
        kinds = ([("python", False)] + ([("c++", True)] if CPP.is_file() else [])
                 if args.runs else [])
        for kind, native in kinds:
            accepted, first = [], []
            for i in range(args.runs):
                name = f"{kind.replace('+', 'p')}-{i}"
                archive, size = pack_to_temp(folder_of(root / "bots", name, native))
                with LeagueClient(f"127.0.0.1:{port}", token) as client, archive:
                    started = time.time()
                    steps = list(client.submit(archive, size))
                    if steps[-1].verdict != ACCEPTED:
                        print(f"{name}: {steps[-1].text}")
                        continue
                    accepted.append(time.time() - started)
                    for event in client.events(timeout_s=120):
                        if event.kind == GAME_FINISHED and name in event.bots:
                            first.append(event.time - started)
                            break
                    client.retire(name)  # the next one gets the table
            if first:
                print(f"{kind}: {len(first)} bots; upload to accepted p50 "
                      f"{statistics.median(accepted):.2f} s, slowest {max(accepted):.2f} s; "
                      f"to its first finished game p50 {statistics.median(first):.2f} s, "
                      f"slowest {max(first):.2f} s")
        if not CPP.is_file() and args.runs:
            print("c++: not built (make cpp-bot)")
        if others is not None:
            from arena.league.authors import AuthorFile, add_author

            store = AuthorFile.in_folder(root / "out")
            many = [add_author(store, f"reader-{i}") for i in range(25)]
            hostile_figures(f"127.0.0.1:{port}", proc.pid, *others, many, args.wrong_s)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
