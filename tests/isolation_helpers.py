"""Hostile bots against the sandbox: real tournaments through the CLI, one attack each.

Each bot of ``tests/bots/hostile/`` plays legally while it tries one attack, and reports
what it achieved as ``HOSTILE {json}`` lines on its stderr, which the arena keeps in the
bot's log files (``logs/*.log`` in the output folder). With the defaults (every ``cmd:``
bot under bubblewrap with cgroup limits, isolation ``deal``) each attack must achieve
nothing and hurt no other bot. Where it is cheap, a control runs the same attack on a
trusted bot (``sandbox = false``) with ``isolation = "shared"`` and shows that it works
there: the test can fail.

The tests that rely on the sandbox are skipped where bubblewrap is not installed, except
in CI (``CI`` set), where it must be. Every test has its own ``TMPDIR`` and a tag in its
hostile bots' command lines; no process with the tag or with a socket in that TMPDIR,
and no socket folder, may be left afterwards.

The tests are in ``tests/test_isolation_*.py``, a file per topic (so pytest-xdist,
which gives a worker a file at a time, spreads them); what they share is here.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import LEFT_WAIT_S, REPO, bot_cmd

HOSTILE = str(REPO / "tests/bots/hostile")
PY_HEURISTIC = bot_cmd(REPO / "sample_bots/python/heuristic_bot.py")
PY_RANDOM = bot_cmd(REPO / "sample_bots/python/random_bot.py")
"""Absolute: a tournament file's relative paths are taken from its folder (a temporary one)."""
RUN_TIMEOUT_S = 150

needs_sandbox = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap (bwrap) is not installed (in CI it must be)")



# -- the test's world: TMPDIR, a tag, and nothing left behind -------------------------


@dataclass(frozen=True)
class World:
    tag: str
    """In every hostile bot's command line (``--tag``) and its daemon's marker."""
    tmp: Path
    """The arena's TMPDIR (short: a unix socket's path must stay under 108 bytes)."""
    folder: Path
    """Tournament files and output folders."""
    env: dict[str, str]


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def live_pids(pick: Callable[[int], bool]) -> list[int]:
    """Live processes (zombies aside) but this one that ``pick`` picks."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        state = _read(f"/proc/{entry}/stat").rpartition(b")")[2].split()[:1]
        if state not in ([], [b"Z"]) and pick(int(entry)):
            found.append(int(entry))
    return found


def with_marker(marker: str) -> list[int]:
    """Live processes whose command line contains ``marker``."""
    return live_pids(lambda pid: marker.encode() in _read(f"/proc/{pid}/cmdline"))


def leftovers(world: World) -> list[int]:
    """Live processes of this test: a hostile bot or its daemon (the tag in the command
    line), or any bot of its arenas (a socket in the test's TMPDIR)."""
    socket = f"ARENA_BOT_LISTEN=unix:{world.tmp}/".encode()
    return live_pids(lambda pid: world.tag.encode() in _read(f"/proc/{pid}/cmdline")
                     or socket in _read(f"/proc/{pid}/environ"))


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def wait_until_gone(find: Callable[[], list[int]], timeout_s: float = 5.0) -> list[int]:
    """What ``find`` still finds after up to ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (left := find()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    tmp = Path(tempfile.mkdtemp(prefix="hi-", dir="/tmp"))
    tag = f"hostile-{secrets.token_hex(5)}"
    here = World(tag, tmp, tmp_path, dict(os.environ, TMPDIR=str(tmp)))
    try:
        yield here
        left = wait_until_gone(lambda: leftovers(here), LEFT_WAIT_S)
        kill_all(left)
        assert not left, f"processes of this test left running: {left}"
        folders = sorted(p.name for p in tmp.glob("arena-bot-*"))
        assert not folders, f"bot socket folders left: {folders}"
    finally:
        kill_all(leftovers(here))
        shutil.rmtree(tmp, ignore_errors=True)


# -- tournament files -----------------------------------------------------------------


def toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {value!r}")


def tournament_text(name: str, bots: list[dict[str, Any]], *, seed: int, seats: int = 3,
                    deals: int = 1, move_ms: int = 1000, game: str = "trumps",
                    options: dict[str, Any] | None = None, **top: Any) -> str:
    """A tournament file; ``top`` adds top-level keys (``isolation``, ``concurrency``,
    ``limits`` as an inline table). Trumps without drawing by default: 7 tricks."""
    if options is None:
        options = {"draw": False} if game == "trumps" else {}
    lines = [f"name = {toml(name)}", f"game = {toml(game)}", f"seats = {seats}",
             f"seed = {seed}"]
    lines += [f"{key} = {toml(value)}" for key, value in top.items()]
    lines += ["", "[options]"] + [f"{k} = {toml(v)}" for k, v in options.items()]
    lines += ["", "[time]", f"move_ms = {move_ms}", "", "[schedule]", f"deals = {deals}"]
    for bot in bots:
        lines += ["", "[[bots]]"] + [f"{k} = {toml(v)}" for k, v in bot.items()]
    return "\n".join(lines) + "\n"


def hostile(world: World, script: str, *args: object) -> str:
    """The spec of a hostile bot, tagged with the test's tag."""
    words = ["python", f"{HOSTILE}/{script}", "--tag", world.tag, *map(str, args)]
    return "cmd:" + " ".join(words)


def trusted(bots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The control's field: every ``cmd:`` bot out of the sandbox."""
    return [{**b, "sandbox": False} if b["spec"].startswith("cmd:") else b for b in bots]


CONTROL = {"isolation": "shared"}
"""The control's top-level keys: one process per bot for every game (the old way)."""


# -- running one and reading what happened --------------------------------------------


@dataclass
class Run:
    out: Path
    done: subprocess.CompletedProcess[str]
    seed: int

    def check(self) -> Run:
        assert self.done.returncode == 0, self.done.stdout + self.done.stderr
        return self

    def reports(self, attack: str) -> list[dict[str, Any]]:
        """Every HOSTILE report of ``attack`` in the tournament's logs, in order per file."""
        found = []
        for log in sorted(self.out.rglob("*.log")):
            for line in log.read_text(errors="replace").splitlines():
                if not line.startswith("HOSTILE "):
                    continue
                try:
                    entry = json.loads(line[len("HOSTILE "):])
                except ValueError:
                    continue
                if entry.get("attack") == attack:
                    found.append({**entry, "log": log.name})
        return found

    def last_reports(self, attack: str) -> list[dict[str, Any]]:
        """The last report of each process (reports are cumulative)."""
        last: dict[str, dict[str, Any]] = {}
        for entry in self.reports(attack):
            last[entry["proc"]] = entry
        return list(last.values())

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        with contextlib.closing(sqlite3.connect(self.out / "tournament.sqlite")) as db:
            return db.execute(sql).fetchall()

    def faults(self) -> list[tuple[str, str, str]]:
        """(bot, kind, detail) of every fault of the tournament."""
        return [tuple(row) for row in self.query("SELECT bot, kind, detail FROM faults")]

    def faults_of_others(self, hostile_bot: str) -> list[tuple[str, str, str]]:
        return [f for f in self.faults() if f[0] != hostile_bot]

    def games_done(self) -> int:
        return int(self.query("SELECT COUNT(*) FROM games WHERE status = 'done'")[0][0])


def run_tournament(world: World, name: str, bots: list[dict[str, Any]],
                   env: dict[str, str] | None = None, out: Path | None = None,
                   **kw: Any) -> Run:
    seed = secrets.randbits(62)
    path = world.folder / f"{name}.toml"
    path.write_text(tournament_text(name, bots, seed=seed, **kw))
    out = out or world.folder / f"out-{name}"
    done = subprocess.run(
        [sys.executable, "-m", "arena", "tournament", str(path), "--out", str(out),
         "--resamples", "20"],
        cwd=REPO, env={**world.env, **(env or {})}, text=True, capture_output=True,
        timeout=RUN_TIMEOUT_S, check=False)
    return Run(out, done, seed)


def same_deal_overlaps(run: Run) -> list[tuple[str, str]]:
    """Pairs of stored games of one deal (its seed) with a bot in common whose times
    overlapped: what :class:`arena.play.pool.DealsInFlight` forbids."""
    import sqlite3

    db = sqlite3.connect(f"file:{run.out / 'tournament.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT id, deal_seed, bots, started_at, ended_at FROM games"
                          " WHERE status = 'done'").fetchall()
    finally:
        db.close()
    found = []
    for i, (a, seed_a, bots_a, start_a, end_a) in enumerate(rows):
        for b, seed_b, bots_b, start_b, end_b in rows[i + 1:]:
            shared = set(json.loads(bots_a)) & set(json.loads(bots_b)) - {"heuristic"}
            if seed_a == seed_b and shared and start_a < end_b and start_b < end_a:
                found.append((a, b))
    return found


def games(seats: int, deals: int) -> int:
    """Games of a round robin of exactly ``seats`` bots."""
    return seats * deals


def learned(run: Run, attack: str) -> list[dict[str, Any]]:
    reports = run.last_reports(attack)
    assert reports, f"no {attack} report in the logs"
    return reports

