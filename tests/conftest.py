"""Shared helpers for the referee and gRPC game tests.

:func:`replay` walks a game record through the rules engine, decision by decision, so a
test can say which decision a fault belongs to and what the referee applied there.
:func:`arena_sandbox` gives a test its own temporary folder (``TMPDIR``) and checks, at
the end, that no bot process the arena started and no ``arena-bot-*`` socket folder is
left behind.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from arena.rules import Decision, Game, View, new_game
from arena.rules.cards import parse_card, parse_suit

REPO = Path(__file__).resolve().parent.parent
TEST_BOTS = REPO / "tests" / "bots"
SAMPLE_BOTS = REPO / "sample_bots" / "python"


def bot_cmd(script: Path, *args: object) -> str:
    """A ``cmd:`` spec running a Python bot script with arguments."""
    return "cmd:" + shlex.join(["python", str(script), *map(str, args)])


def run_trio(fn: Callable[..., Awaitable[Any]], *args: Any, clock: Any = None) -> Any:
    return trio.run(fn, *args, clock=clock)


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The calls a test bot traced (see tests/bots/_common.py); [] when there were none."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass(frozen=True)
class Step:
    """One decision of a recorded game: who decided, what they saw, what was applied."""

    seat: int
    view: View
    action: int
    game: Game
    """The game before the action (valid only while :func:`replay` is paused on it)."""

    @property
    def decision(self) -> Decision:
        assert self.view.decision is not None
        return self.view.decision

    @property
    def where(self) -> tuple[int, int | None]:
        """(round, trick) as a fault entry names it."""
        trick = len(self.view.tricks) + 1 if self.decision is Decision.PLAY else None
        return (self.view.round, trick)


def replay(record: dict[str, Any]) -> Iterator[Step]:
    """Every decision of a recorded game in order; the record must be valid."""
    game = new_game(record["game"], record["options"], record["seed"])
    n = game.players
    for rnd in record["rounds"]:
        position = 0  # index into this round's tricks, as cards are played
        played = 0
        while not game.is_over and game.log[-1].number == rnd["number"]:
            seat = game.to_move
            assert seat is not None
            decision = game.decision
            if decision is Decision.TRUMP:
                action = parse_suit(rnd["trump"])
            elif decision is Decision.BID:
                action = rnd["bids"][seat]
            else:
                trick = rnd["tricks"][position]
                action = parse_card(trick["cards"][played])
                assert (trick["leader"] + played) % n == seat
                played += 1
                if played == n:
                    position, played = position + 1, 0
            yield Step(seat, game.view(seat), action, game)
            game.apply(action)
    assert game.is_over


def decisions_of(record: dict[str, Any], seat: int) -> list[Step]:
    return [s for s in replay(record) if s.seat == seat]


# -- leaks ----------------------------------------------------------------------------


def _proc_env(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return int(text.rpartition(")")[2].split()[1])


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def bot_processes(tmp: Path) -> list[int]:
    """Live processes started by the arena with a socket under ``tmp``."""
    needle = f"ARENA_BOT_LISTEN=unix:{tmp}/".encode()
    return [pid for pid in _pids() if needle in _proc_env(pid)]


def children(pid: int) -> list[int]:
    return [p for p in _pids() if _ppid(p) == pid]


def gone(pid: int) -> bool:
    """True when no process (not even a zombie) has ``pid``."""
    return not os.path.exists(f"/proc/{pid}")


def wait_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@dataclass(frozen=True)
class Sandbox:
    tmp: Path
    """The test's TMPDIR: bot socket folders and default bot logs go here."""
    env: dict[str, str]
    """The environment for subprocesses (``arena play``), with TMPDIR set."""


@pytest.fixture
def arena_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A private TMPDIR for the test; afterwards, no arena bot process nor socket folder
    may remain (any found are ended, and the test fails)."""
    # a short path: a unix socket's path must stay under 108 bytes
    tmp = Path(tempfile.mkdtemp(prefix="at-", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("TMPDIR", str(tmp))
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(REPO))
    try:
        yield Sandbox(tmp, env)
        leaked = bot_processes(tmp)
        for pid in leaked:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        assert not leaked, f"bot processes left running: {leaked}"
        own = children(os.getpid())
        assert not own, f"child processes left: {own}"
        dirs = sorted(p.name for p in tmp.glob("arena-bot-*"))
        assert not dirs, f"bot socket folders left: {dirs}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def arena_command(*argv: str) -> list[str]:
    return [sys.executable, "-m", "arena", *argv]
