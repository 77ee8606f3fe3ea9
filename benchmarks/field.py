"""A field of 200 ``cmd:`` bots: ``python -m benchmarks.field [--bots 200] [--games 400]``.

Copies of the cheap Python sample bots (``random_bot.py`` and ``heuristic_bot.py``,
alternately), each in a folder of its own under a name of its own, sandboxed, at 6 seats.
A tournament (a balanced schedule of about ``--games`` games) is run twice: once to its
end, for the figures, then again afresh with a ``kill -9`` of the arena once a third of
its games are stored, and a resume to the end. ``--league``: a league of the same field
too (``arena league run FILE --games N``, killed and resumed the same way).

Each run reports: the wall time and games/s, the bot processes started per game against
the least the isolation rule needs (a process plays each deal at most once: a bot needs
as many processes as it has games of its most played deal), the most bot processes alive
at once and the resident memory of all of them then (every process of their sandboxes,
polled every half second), the most descriptors the arena held, whether every bot
played, whether the arena said anything of a log thread or a traceback, and what was
left running after the run (bot processes, cgroup folders of the arena). The kill's
figures: what was left a few seconds after it, and after the resume's end.

The mechanism at a smaller field is ``tests/test_field.py``; figures go to
``docs/tournaments.md``; nothing is asserted here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_bots" / "python"
BOTS = ("random_bot.py", "heuristic_bot.py")
PAGE = os.sysconf("SC_PAGE_SIZE")
KILLED_WAIT_S = 30.0
"""After a kill -9 of the arena, how long its bots may take to go (its reaper ends them)."""


# -- the field ----------------------------------------------------------------------------


def copy_bots(folder: Path, bots: int, source: str | None = None) -> list[tuple[str, Path]]:
    """``bots`` bots, each a copy of a sample (or of ``source``, a bot's text) in a folder
    of its own: (name, script)."""
    out = []
    for i in range(bots):
        name = f"f{i:03d}"
        script = folder / "bots" / name / "bot.py"
        script.parent.mkdir(parents=True, exist_ok=True)
        text = source if source is not None else (SAMPLES / BOTS[i % 2]).read_text()
        script.write_text(text)
        out.append((name, script))
    return out


def field_text(name: str, bots: list[tuple[str, Path]], seats: int, concurrency: int,
               memory_mb: int, extra: list[str], move_ms: int = 5000,
               python: str = "python") -> str:
    lines = [f'name = "{name}"', 'game = "trumps"', f"seats = {seats}", "seed = 36",
             f"concurrency = {concurrency}", "[options]", "draw = false", "[time]",
             f"move_ms = {move_ms}", "startup_ms = 120000", "[limits]",
             f"memory_mb = {memory_mb}", *extra]
    for bot, script in bots:
        lines += ["[[bots]]", f'name = "{bot}"', f'spec = "cmd:{python} {script}"']
    return "\n".join(lines) + "\n"


def tournament_file(folder: Path, bots: list[tuple[str, Path]], seats: int, deals: int,
                    tables_per_bot: int, concurrency: int, memory_mb: int,
                    move_ms: int = 5000, python: str = "python") -> Path:
    path = folder / "field.toml"
    path.write_text(field_text("field", bots, seats, concurrency, memory_mb,
                               ["[schedule]", 'format = "balanced"', f"deals = {deals}",
                                f"tables_per_bot = {tables_per_bot}"], move_ms, python))
    return path


def league_file(folder: Path, bots: list[tuple[str, Path]], seats: int, concurrency: int,
                memory_mb: int, move_ms: int = 5000, python: str = "python") -> Path:
    path = folder / "league.toml"
    path.write_text(field_text("league", bots, seats, concurrency, memory_mb, [], move_ms,
                               python))
    return path


# -- what runs ----------------------------------------------------------------------------


def _processes() -> dict[int, int]:
    """Every process of the machine and its parent."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            parents[int(entry)] = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return parents


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def bots_of(arena: int) -> tuple[int, int]:
    """The bot processes the arena ``arena`` runs now (its children but its reaper, each
    a bot's sandbox or process) and the resident bytes of all their processes."""
    parents = _processes()
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    bots = [p for p in children.get(arena, []) if b"arena.proc.reaper" not in _cmdline(p)]
    rss, todo = 0, list(bots)
    while todo:
        pid = todo.pop()
        rss += _rss(pid)
        todo += children.get(pid, [])
    return len(bots), rss


def marked(marker: bytes) -> list[int]:
    """Live processes whose environment holds ``marker`` (the run's TMPDIR: the arena,
    its reaper, its bots' sandboxes)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def descriptors(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def cgroups_of(pids: list[int]) -> list[Path]:
    """The cgroup folders the arenas ``pids`` made that are still there (``arena-PID-*``
    of their bots, ``trick-arena-PID`` on v2), anywhere under /sys/fs/cgroup within
    four levels."""
    names = tuple(f"arena-{p}-" for p in pids)
    whole = {f"trick-arena-{p}" for p in pids}
    found: list[Path] = []
    todo = [(Path("/sys/fs/cgroup"), 0)]
    while todo:
        folder, depth = todo.pop()
        try:
            entries = [e for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(names) or entry.name in whole:
                found.append(Path(entry.path))
            elif depth < 4:
                todo.append((Path(entry.path), depth + 1))
    return found


@dataclass
class Peaks:
    bots: int = 0
    rss: int = 0
    descriptors: int = 0


@dataclass
class Run:
    """One arena process run to its end (or killed)."""

    pid: int
    seconds: float
    returncode: int
    stderr: str
    peaks: Peaks
    killed: bool = False


def run_arena(args: list[str], cwd: Path, env: dict[str, str], peaks: Peaks,
              kill_when: Callable[[], bool] | None = None) -> Run:
    """Run ``python -m arena ARGS``, watching its bots and descriptors every half second;
    ``kill_when``: a kill -9 of the arena as soon as it says so."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "arena", *args], cwd=cwd, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        killed = False
        while proc.poll() is None:
            count, rss = bots_of(proc.pid)
            peaks.bots, peaks.rss = max(peaks.bots, count), max(peaks.rss, rss)
            peaks.descriptors = max(peaks.descriptors, descriptors(proc.pid))
            if kill_when is not None and not killed and kill_when():
                proc.send_signal(signal.SIGKILL)
                killed = True
            time.sleep(0.5)
        proc.wait()
        err.seek(0)
        text = err.read().decode(errors="replace")
    return Run(proc.pid, time.monotonic() - started, proc.returncode, text, peaks, killed)


def stored(out: Path) -> list[tuple[list[str], str]]:
    """The finished games of the store in ``out``: (bots, deal seed)."""
    path = out / "tournament.sqlite"
    if not path.exists():
        return []
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT bots, deal_seed FROM games WHERE status = 'done'"
                              ).fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return []
    return [(json.loads(b), str(d)) for b, d in rows]


def count_done(out: Path) -> int:
    return len(stored(out))


def least_processes(rows: list[tuple[list[str], str]]) -> int:
    """The least processes the games ``rows`` need under ``isolation = "deal"``: a
    process plays each deal at most once, so a bot needs as many as it has games of its
    most played deal."""
    per_deal: Counter[tuple[str, str]] = Counter((b, d) for bots, d in rows for b in bots)
    most: dict[str, int] = {}
    for (bot, _), n in per_deal.items():
        most[bot] = max(most.get(bot, 0), n)
    return sum(most.values())


def log_trouble(text: str) -> list[str]:
    """Lines of the arena's standard error that tell of a dead thread, a traceback or an
    internal error."""
    return [line for line in text.splitlines()
            if "Traceback" in line or "Exception in thread" in line
            or "log pump" in line.lower() or "internal error" in line]


def left_after(marker: bytes, pids: list[int], wait_s: float) -> tuple[list[int], list[Path]]:
    """The processes of the run still alive and the cgroup folders of its arenas still
    there, after up to ``wait_s`` seconds for them to go."""
    deadline = time.monotonic() + wait_s
    while True:
        procs, groups = marked(marker), cgroups_of(pids)
        if (not procs and not groups) or time.monotonic() > deadline:
            return procs, groups
        time.sleep(0.5)


# -- the figures --------------------------------------------------------------------------


def figures(out: Path, runs: list[Run], names: list[str], marker: bytes) -> dict[str, Any]:
    rows = stored(out)
    games_of: Counter[str] = Counter(b for bots, _ in rows for b in bots)
    least = least_processes(rows)
    started = len(list((out / "logs").glob("*.log")))
    procs, groups = left_after(marker, [r.pid for r in runs], KILLED_WAIT_S)
    seconds = sum(r.seconds for r in runs)
    return {
        "games": len(rows), "seconds": round(seconds, 1),
        "games_per_s": round(len(rows) / seconds, 3) if seconds else 0.0,
        "processes": started, "least": least,
        "per_game": round(started / len(rows), 2) if rows else None,
        "ratio": round(started / least, 2) if least else None,
        "peak_bots": max(r.peaks.bots for r in runs),
        "peak_rss_mb": round(max(r.peaks.rss for r in runs) / (1 << 20)),
        "peak_descriptors": max(r.peaks.descriptors for r in runs),
        "bots_played": sum(1 for n in names if games_of[n]), "bots": len(names),
        "log_trouble": [line for r in runs for line in log_trouble(r.stderr)][:5],
        "returncodes": [r.returncode for r in runs],
        "left_processes": len(procs), "left_cgroups": [str(g) for g in groups],
        "bound_line": next((line for r in runs for line in r.stderr.splitlines()
                            if line.startswith("pool: ")), ""),
    }


@dataclass
class Field:
    folder: Path
    bots: int
    games: int
    seats: int = 6
    deals: int = 2
    concurrency: int = 2
    memory_mb: int = 256
    move_ms: int = 5000
    kill_at: float = 1 / 3
    source: str | None = None
    names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix="fb-", dir="/tmp"))
        self.marker = f"TMPDIR={self.tmp}\0".encode()
        python = Path(sys.executable)
        self.env = dict(os.environ, TMPDIR=str(self.tmp), PYTHONUNBUFFERED="1",
                        PATH=f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}")
        bots = copy_bots(self.folder, self.bots, self.source)
        self.names = [n for n, _ in bots]
        per_bot = max(1, round(self.games / (self.bots * self.deals)))
        self.tournament = tournament_file(self.folder, bots, self.seats, self.deals,
                                          per_bot, self.concurrency, self.memory_mb,
                                          self.move_ms)
        self.league = league_file(self.folder, bots, self.seats, self.concurrency,
                                  self.memory_mb, self.move_ms)

    def tournament_run(self, label: str, kill: bool) -> dict[str, Any]:
        """The tournament to its end; ``kill``: killed -9 at ``kill_at`` of its games,
        then resumed."""
        out = self.folder / f"out-{label}"
        args = ["tournament", str(self.tournament), "--out", str(out), "--fresh",
                "--resamples", "20"]
        total = self._total(out, args) if kill else 0
        runs = [run_arena(args, self.folder, self.env, Peaks(),
                          (lambda: count_done(out) >= total * self.kill_at) if kill
                          else None)]
        result: dict[str, Any] = {}
        if kill:
            result.update(self._after_kill(runs[0], out))
            runs.append(run_arena([*args[:-3], "--resamples", "20"], self.folder,
                                  self.env, Peaks()))
        result.update(figures(out, runs, self.names, self.marker))
        return result

    def league_run(self, label: str, games: int, kill: bool) -> dict[str, Any]:
        out = self.folder / f"out-{label}"
        args = ["league", "run", str(self.league), "--out", str(out), "--fresh",
                "--games", str(games), "--resamples", "20"]
        runs = [run_arena(args, self.folder, self.env, Peaks(),
                          (lambda: count_done(out) >= games * self.kill_at) if kill
                          else None)]
        result: dict[str, Any] = {}
        if kill:
            result.update(self._after_kill(runs[0], out))
            rest = games - count_done(out)
            runs.append(run_arena(["league", "run", str(self.league), "--out", str(out),
                                   "--games", str(max(rest, 1)), "--resamples", "20"],
                                  self.folder, self.env, Peaks()))
        result.update(figures(out, runs, self.names, self.marker))
        return result

    def _total(self, out: Path, args: list[str]) -> int:
        from arena.runs.config import load_config
        from arena.runs.schedule import game_count

        c = load_config(self.tournament)
        return game_count(c.format, len(c.bots), c.seats, c.deals, len(c.candidates),
                          tables_per_bot=c.tables_per_bot)

    def _after_kill(self, run: Run, out: Path) -> dict[str, Any]:
        at = count_done(out)
        procs, groups = left_after(self.marker, [run.pid], KILLED_WAIT_S)
        return {"killed": run.killed, "killed_at_games": at,
                "after_kill_processes": len(procs), "after_kill_cgroups": len(groups)}

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def show(label: str, f: dict[str, Any], out: TextIO) -> None:
    print(f"  {label}: {f['games']} games in {f['seconds']} s ({f['games_per_s']} games/s); "
          f"{f['processes']} processes started, {f['per_game']} a game, the least "
          f"{f['least']} (x{f['ratio']}); at most {f['peak_bots']} bot processes alive, "
          f"{f['peak_rss_mb']} MB resident; the arena at most {f['peak_descriptors']} "
          f"descriptors; {f['bots_played']} of {f['bots']} bots played; log trouble: "
          f"{f['log_trouble'] or 'none'}; left after: {f['left_processes']} processes, "
          f"{len(f['left_cgroups'])} cgroup folders; exit {f['returncodes']}", file=out,
          flush=True)
    if "killed" in f:
        print(f"    kill -9 at {f['killed_at_games']} games stored: then "
              f"{f['after_kill_processes']} processes and {f['after_kill_cgroups']} cgroup "
              f"folders left after up to {KILLED_WAIT_S:.0f} s; resumed to the end",
              file=out, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.field", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bots", type=int, default=200)
    parser.add_argument("--games", type=int, default=400,
                        help="about this many games (the tournament; the league's N)")
    parser.add_argument("--seats", type=int, default=6)
    parser.add_argument("--deals", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--memory-mb", type=int, default=256,
                        help="each bot's memory limit ([limits] memory_mb)")
    parser.add_argument("--league", action="store_true", help="a league of the field too")
    parser.add_argument("--no-tournament", action="store_true",
                        help="leave out the tournament (with --league: the league only)")
    parser.add_argument("--no-kill", action="store_true",
                        help="skip the runs with a kill -9 and a resume")
    parser.add_argument("--folder", type=Path, help="keep the field and its output here")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    folder = args.folder or Path(tempfile.mkdtemp(prefix="arena-field-"))
    f = Field(folder, args.bots, args.games, args.seats, args.deals, args.concurrency,
              args.memory_mb)
    result: dict[str, Any] = {}
    try:
        print(f"a field of {args.bots} cmd: bots (copies of the Python random and heuristic "
              f"samples, each in its own folder, sandboxed, memory_mb {args.memory_mb}), "
              f"{args.seats} seats, concurrency {args.concurrency}; in {folder}", flush=True)
        if not args.no_tournament:
            print(f"tournament (balanced, {args.deals} deals):", flush=True)
            result["tournament"] = f.tournament_run("tournament", False)
            show("to its end", result["tournament"], sys.stdout)
            if result["tournament"]["bound_line"]:
                print(f"  {result['tournament']['bound_line']}", flush=True)
            if not args.no_kill:
                result["tournament_kill"] = f.tournament_run("tournament-kill", True)
                show("killed and resumed", result["tournament_kill"], sys.stdout)
        if args.league:
            print(f"league ({args.games} games):", flush=True)
            result["league"] = f.league_run("league", args.games, False)
            show("to its end", result["league"], sys.stdout)
            if result["league"]["bound_line"]:
                print(f"  {result['league']['bound_line']}", flush=True)
            if not args.no_kill:
                result["league_kill"] = f.league_run("league-kill", args.games, True)
                show("killed and resumed", result["league_kill"], sys.stdout)
    finally:
        f.close()
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
