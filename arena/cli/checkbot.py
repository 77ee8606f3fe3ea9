"""``arena check-bot SPEC``: the command line of :mod:`arena.checkbot`."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from arena.checkbot.checker import PROG, print_report, report_json, run_checks
from arena.cli.common import (
    add_remote_flags,
    add_sandbox_flags,
    confinement_from_args,
    remote_from_args,
)
from arena.cli.interrupt import run_interruptible
from arena.model.errors import SandboxError
from arena.model.files import FolderError, private_dir, temp_dir
from arena.model.names import clean
from arena.model.spec import BotSpec, BotSpecError
from arena.proc.connection import HandshakeError
from arena.proc.reaper import start_cleanup
from arena.rules import GAMES


def add_parser(subparsers: Any) -> None:
    """Add the ``check-bot`` sub-command to ``subparsers`` (argparse's add_subparsers())."""
    p = subparsers.add_parser(
        "check-bot", help="check that a bot speaks the protocol and plays legally",
        description="Start or reach a bot, check its health and hand-shake, ask it about "
                    "scripted situations of every game it plays, and let it play complete "
                    "games against the built-in bots. Exit code 1 if any check fails.")
    p.add_argument("spec", metavar="SPEC",
                   help="the bot: cmd:COMMAND, grpc://HOST:PORT, grpcs://HOST:PORT or "
                   "unix:PATH")
    p.add_argument("--game", choices=list(GAMES),
                   help="check only this game (default: every game the bot claims)")
    p.add_argument("--move-ms", type=int, default=1000, metavar="MS",
                   help="time per decision in milliseconds (default 1000)")
    p.add_argument("--games", type=int, default=2, metavar="N",
                   help="complete games per game kind (default 2)")
    p.add_argument("--log-dir", type=Path, metavar="DIR",
                   help="where the bot's stderr goes (default: a temporary folder)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_sandbox_flags(p)
    add_remote_flags(p)


def _usage(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def cmd_check_bot(args: argparse.Namespace) -> int:
    """Run ``arena check-bot``: 0 when every check passes, 1 if any fails, 2 for bad usage."""
    try:
        (spec,) = remote_from_args([BotSpec.parse(args.spec)], args)
    except BotSpecError as e:
        return _usage(str(e))
    if spec.kind == "builtin":
        return _usage(f"{args.spec!r} is a built-in bot; give cmd:COMMAND, grpc://HOST:PORT, "
                      "grpcs://HOST:PORT or unix:PATH")
    if spec.plain_remote:
        print(f"{PROG}: warning: {spec} without TLS (--insecure): its moves and token "
              f"travel unencrypted", file=sys.stderr)
    if args.game is not None and args.game not in GAMES:
        return _usage(f"unknown game {args.game!r}; allowed: {', '.join(GAMES)}")
    if args.move_ms < 1:
        return _usage("--move-ms must be positive")
    if args.games < 0:
        return _usage("--games must be 0 or more")
    games = [args.game] if args.game else None
    try:
        confinement = confinement_from_args(args, spec.kind == "cmd")
    except SandboxError as e:
        return _usage(str(e))
    try:
        log_dir = (private_dir(args.log_dir) if args.log_dir
                   else temp_dir("trick-arena-check-bot-"))
    except FolderError as e:
        return _usage(str(e))
    try:
        start_cleanup()
        report = run_interruptible(run_checks, spec, args.spec, games, args.move_ms,
                                   args.games, log_dir, confinement)
    except HandshakeError as e:
        print(f"{PROG}: {clean(str(e))}", file=sys.stderr)
        if args.json:
            print(json.dumps({"spec": args.spec, "bot": None, "ok": False, "error": str(e)}))
        return 1
    finally:
        if not args.log_dir:  # a temporary folder no bot wrote in (grpc:// and unix:)
            with contextlib.suppress(OSError):
                log_dir.rmdir()
    if args.json:
        print(json.dumps(report_json(report), indent=2))
    else:
        print_report(report, Console(highlight=False, soft_wrap=True, emoji=False))
    return 0 if report.ok else 1
