"""Shared by the hostile test bots: reports on stderr, a legal strategy, the command line.

Every hostile bot is an ordinary :mod:`arena.sdk` bot that plays legally (the built-in
heuristic) while it tries one attack on the arena, the machine or the other bots, and
reports what the attack achieved as lines ``HOSTILE {json}`` on its stderr, which the
arena writes to the bot's log file (``logs/*.log`` in the tournament's output folder).
Every report names its ``attack`` and ``proc``, a random id of the reporting process (a
sandbox's PID namespace gives every bot the same small pid), and carries the ``tag``
given on the command line, so that a test can tell its bots (and what they left behind)
from anything else on the machine. Reports are cumulative: the last one of a process
says everything it achieved.

The attacks that act on other processes (signals, sockets) act only on what belongs to
the bot's own arena (socket folders ``arena-bot-<arena pid>-*`` next to its own, the
arena's cgroups), whatever else they can see: a test must never stop or hijack processes
outside the arena under test, even when a sandbox fails to hide them.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import threading
from collections.abc import Sequence
from typing import Any

from arena import sdk
from arena.bots.heuristic import HeuristicBot
from arena.sdk import Bot, RoundResult, View

PROC = secrets.token_hex(6)
"""This process's id in reports."""
TAG = ""
"""The ``--tag`` given on the command line (set by :func:`parse`)."""
_lock = threading.Lock()


def report(attack: str, **fields: Any) -> None:
    """Write one ``HOSTILE {json}`` line to stderr, in one piece."""
    entry = {"attack": attack, "proc": PROC, "pid": os.getpid(), "tag": TAG, **fields}
    data = ("HOSTILE " + json.dumps(entry, sort_keys=True, default=str) + "\n").encode()
    with _lock:
        while data:
            try:
                written = os.write(2, data)
            except InterruptedError:
                continue
            except OSError:
                return
            data = data[written:]


class Legal(Bot):
    """Plays legally with the built-in heuristic; subclasses add the attack."""

    name = "hostile"
    version = "1.0"
    author = "trick-arena tests"

    def __init__(self) -> None:
        self.strategy = HeuristicBot()

    def bid(self, view: View) -> int:
        return self.strategy.act(view)

    def play(self, view: View) -> int:
        return self.strategy.act(view)

    def choose_trump(self, view: View) -> int:
        return self.strategy.act(view)


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--tag", default="", help="a marker copied into every report")
    return p


def parse(p: argparse.ArgumentParser, argv: Sequence[str] | None = None,
          ) -> tuple[argparse.Namespace, list[str]]:
    """The bot's own options, and the rest for the SDK (``--listen``, ``--workers``)."""
    global TAG
    args, rest = p.parse_known_args(sys.argv[1:] if argv is None else argv)
    TAG = args.tag
    return args, rest


def serve(bot: Bot, rest: Sequence[str], workers: int = 1) -> None:
    sdk.serve(bot, list(rest), workers=workers)


# -- processes ------------------------------------------------------------------------


def visible_pids() -> list[int]:
    try:
        return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    except OSError:
        return []


def read_proc(pid: int, name: str, limit: int = 1 << 16) -> bytes | None:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read(limit)
    except OSError:
        return None


def cmdline(pid: int) -> list[str]:
    raw = read_proc(pid, "cmdline") or b""
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def round_hands(result: RoundResult) -> list[list[int]]:
    """Every seat's hand of the round just ended, from its tricks (as the cards fell)."""
    n = result.players
    hands: list[list[int]] = [[] for _ in range(n)]
    for trick in result.tricks:
        for i, card in enumerate(trick.cards):
            hands[(trick.leader + i) % n].append(card)
    return hands


def own_socket() -> str:
    """This bot's socket path (from ``ARENA_BOT_LISTEN``), or ""."""
    listen = os.environ.get("ARENA_BOT_LISTEN", "")
    return listen[5:] if listen.startswith("unix:") else ""


def arena_pid() -> str:
    """The pid of the arena that started this bot (as the arena sees it), from the name
    of its socket folder, ``arena-bot-<arena pid>-*``; "" if it is not so named."""
    parts = os.path.basename(os.path.dirname(own_socket())).split("-")
    if len(parts) < 4 or parts[:2] != ["arena", "bot"] or not parts[2].isdigit():
        return ""
    return parts[2]


def arena_prefix() -> str:
    """What the socket paths of this arena's bots start with: the folder its socket
    folder is in, then ``arena-bot-<arena pid>-``; "" if unknown."""
    pid = arena_pid()
    if not pid:
        return ""
    return os.path.join(os.path.dirname(os.path.dirname(own_socket())), f"arena-bot-{pid}-")


def same_arena_socket(path: str) -> bool:
    prefix = arena_prefix()
    return bool(prefix) and path.startswith(prefix)


def same_arena(pid: int) -> bool:
    """Whether ``pid`` is a bot process of this bot's arena: its ``ARENA_BOT_LISTEN`` is in
    a socket folder of the same arena, or it is in one of the arena's cgroups
    (``arena-<arena pid>-*``; /proc/PID/cgroup is readable whatever the owner)."""
    prefix = arena_prefix()
    if not prefix:
        return False
    environ = read_proc(pid, "environ") or b""
    if f"ARENA_BOT_LISTEN=unix:{prefix}".encode() in environ:
        return True
    cgroups = read_proc(pid, "cgroup") or b""
    return f"/arena-{arena_pid()}-".encode() in cgroups


def may_attack(pid: int) -> bool:
    """Only the other processes of this bot's arena, whatever else it can see."""
    return pid not in (os.getpid(), os.getppid()) and same_arena(pid)
