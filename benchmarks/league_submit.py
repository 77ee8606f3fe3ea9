"""Submission to first game: ``python -m benchmarks.league_submit [--runs N]``.

Starts ``arena league serve`` (trumps, 3 seats, two house bots, check-bot with one game
of each kind) on 127.0.0.1 port 0, adds an author, and submits ``--runs`` Python bots
(the sample random bot), one after another, then as many C++ binaries (the sample bot of
``make cpp-bot``, ``runtime = "native"``) if it is built. For each it measures the time
from the start of the upload to the ``accepted`` answer and to the first finished game of
that bot (the league's events). Prints p50 and the slowest; nothing is asserted. Every
process started is ended.
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    from arena.league.bundle import pack_to_temp
    from arena.model.league_api import ACCEPTED, GAME_FINISHED
    from arena.wire.league import LeagueClient

    parser = argparse.ArgumentParser(prog="python -m benchmarks.league_submit")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-submit-"))
    (root / "league.toml").write_text(LEAGUE)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    arena = [sys.executable, "-m", "arena", "league"]
    token = subprocess.run([*arena, "author", "add", "league.toml", "bench",
                            "--submissions-per-hour", "1000"], cwd=root, env=env, text=True,
                           capture_output=True, check=True).stdout.strip()
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
        kinds = [("python", False)] + ([("c++", True)] if CPP.is_file() else [])
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
        if not CPP.is_file():
            print("c++: not built (make cpp-bot)")
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
