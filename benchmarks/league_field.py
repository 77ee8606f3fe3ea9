"""A real league against a tournament on the same field: ``python -m benchmarks.league_field``.

50 bots (built-in ``random`` and ``heuristic`` under many names, and the Python sample
bots as ``cmd:`` bots in the sandbox), 4 seats. It runs ``arena tournament`` (the
balanced format, ``tables_per_bot`` chosen for about ``--games`` games) and ``arena
league run --games N`` on the same field, each under ``/usr/bin/time -v``, and prints
games per second and the peak memory (the largest resident set of the arena and of any
one of its children). While the league runs it changes the field from another process
(``add``, ``update``, ``retire``) and measures the time until each took effect: until
the command's answer, and for a bot that joins, until its first game started.
Figures go to ``docs/league.md``; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ARENA = [sys.executable, "-m", "arena"]
SAMPLES = REPO / "sample_bots" / "python"


def field(bots: int) -> list[tuple[str, str]]:
    """``bots`` bots: six sample bots (cmd:), then built-ins alternating."""
    out = [(f"py-random-{i}", f"cmd:python {SAMPLES / 'random_bot.py'}") for i in (1, 2, 3)]
    out += [(f"py-heuristic-{i}", f"cmd:python {SAMPLES / 'heuristic_bot.py'}")
            for i in (1, 2, 3)]
    i = 0
    while len(out) < bots:
        kind = "heuristic" if i % 2 else "random"
        out.append((f"{kind}-{i // 2 + 1}", kind))
        i += 1
    return out


def toml(name: str, bots: list[tuple[str, str]], extra: str) -> str:
    lines = [f'name = "{name}"', 'game = "wizard"', "seats = 4", "seed = 2026",
             "concurrency = 2", f'output = "out-{name}"', extra, ""]
    for bot, spec in bots:
        lines += ["[[bots]]", f'name = "{bot}"', f'spec = "{spec}"', ""]
    return "\n".join(lines)


def timed(args: list[str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    out = log.open("wb")
    return subprocess.Popen(["/usr/bin/time", "-v", *args], cwd=cwd, stdout=out,
                            stderr=subprocess.STDOUT)


def figures(log: Path) -> dict[str, Any]:
    text = log.read_text(errors="replace")
    played = re.search(r"played (\d+) games in ([0-9.]+) s \(([0-9.]+) games/s\)", text)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    update = re.search(r"live rating update ([0-9.]+) ms", text)
    return {"games": int(played[1]) if played else None,
            "seconds": float(played[2]) if played else None,
            "games_per_s": float(played[3]) if played else None,
            "peak_rss_mb": round(int(rss[1]) / 1024, 1) if rss else None,
            "rating_update_ms": float(update[1]) if update else None}


def stored_games(folder: Path) -> int:
    try:
        with sqlite3.connect(f"file:{folder / 'tournament.sqlite'}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'")
                       .fetchone()[0])
    except sqlite3.Error:
        return 0


def first_game(folder: Path, bot: str, timeout: float) -> float | None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with sqlite3.connect(f"file:{folder / 'tournament.sqlite'}?mode=ro",
                                 uri=True) as db:
                row = db.execute("SELECT MIN(started_at) FROM games WHERE bots LIKE ?",
                                 (f'%"{bot}"%',)).fetchone()
            if row and row[0] is not None:
                return float(row[0])
        except sqlite3.Error:
            pass
        time.sleep(0.2)
    return None


def change(cwd: Path, *args: str) -> tuple[float, str]:
    started = time.time()
    done = subprocess.run([*ARENA, "league", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    return started, (done.stdout + done.stderr).strip()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.league_field")
    parser.add_argument("--bots", type=int, default=50)
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--folder", type=Path)
    parser.add_argument("--skip-tournament", action="store_true")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="league-field-"))
    folder.mkdir(parents=True, exist_ok=True)
    bots = field(args.bots)
    per_bot = max(1, math.ceil(args.games / args.bots))  # 4 games a table, 4 seats a table
    (folder / "t.toml").write_text(toml("t", bots, f'[schedule]\nformat = "balanced"\n'
                                                   f"tables_per_bot = {per_bot}\n"))
    (folder / "l.toml").write_text(toml("l", bots, ""))
    result: dict[str, Any] = {"bots": len(bots), "cmd_bots": 6}
    if not args.skip_tournament:
        t = timed([*ARENA, "tournament", "t.toml", "--fresh", "--resamples", "100"], folder,
                  folder / "t.log")
        t.wait()
        result["tournament"] = figures(folder / "t.log")
    games = per_bot * args.bots  # the tournament's count
    league = timed([*ARENA, "league", "run", "l.toml", "--fresh", "--games", str(games),
                    "--resamples", "100"], folder, folder / "l.log")
    out = folder / "out-l"
    while stored_games(out) < games // 3 and league.poll() is None:
        time.sleep(1)
    changes: dict[str, Any] = {}
    at, text = change(folder, "add", "l.toml", "new-py",
                      f"cmd:python {SAMPLES / 'random_bot.py'}")
    answered = time.time()
    joined = first_game(out, "new-py", 300)
    changes["add"] = {"answer_s": round(answered - at, 2), "first_game_s":
                      None if joined is None else round(joined - at, 2), "said": text}
    at, text = change(folder, "update", "l.toml", "py-heuristic-1",
                      f"cmd:python {SAMPLES / 'heuristic_bot.py'}")
    answered = time.time()
    joined = first_game(out, "py-heuristic-1@2", 300)
    changes["update"] = {"answer_s": round(answered - at, 2), "first_game_s":
                         None if joined is None else round(joined - at, 2), "said": text}
    at, text = change(folder, "retire", "l.toml", "random-1")
    changes["retire"] = {"answer_s": round(time.time() - at, 2), "said": text}
    league.wait()
    result["league"] = figures(folder / "l.log")
    result["changes"] = changes
    if "tournament" in result and result["tournament"]["games_per_s"]:
        result["ratio"] = round(result["league"]["games_per_s"]
                                / result["tournament"]["games_per_s"], 3)
    print(json.dumps(result, indent=2))
    if args.folder is not None:  # kept where asked; a temporary folder of ours is removed
        (folder / "figures.json").write_text(json.dumps(result, indent=2))
    else:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
