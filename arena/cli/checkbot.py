"""``arena check-bot SPEC``: the command line of :mod:`arena.checkbot`."""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from arena.checkbot.checker import PROG, print_report, report_json, run_checks
from arena.cli.common import (
    add_remote_flags,
    add_sandbox_flags,
    confinement_from_args,
    game_options,
    remote_from_args,
)
from arena.cli.interrupt import run_interruptible
from arena.files import FolderError, private_dir, temp_dir
from arena.model.errors import SandboxError
from arena.model.names import clean
from arena.model.spec import BotSpec, BotSpecError
from arena.proc.connection import HandshakeError
from arena.proc.keeper import keeping
from arena.proc.reaper import start_cleanup
from arena.rules import GAMES, OptionError
from arena.runs.config import ConfigError, parse_game, read_toml

MOVE_MS_DEFAULT = 1000


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
    p.add_argument("--move-ms", type=int, default=MOVE_MS_DEFAULT, metavar="MS",
                   help="time per decision in milliseconds (default 1000)")
    p.add_argument("--games", type=int, default=2, metavar="N",
                   help="complete games per game kind (default 2)")
    p.add_argument("--log-dir", type=Path, metavar="DIR",
                   help="where the bot's stderr goes (default: a temporary folder)")
    p.add_argument("--players", type=int, metavar="N",
                   help="the first complete game of each game checked has N players (the "
                        "game your bot will play; later ones vary as usual)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a game option of the first complete game, e.g. hook_rule=true "
                        "(repeatable; needs --game or --from)")
    p.add_argument("--from", dest="from_file", type=Path, metavar="FILE",
                   help="a tournament or league file: check its game, with its seats and "
                        "options first, at its time per move (the flags above override)")
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
    try:
        games, move_ms, first = _first_game(args)
    except (ConfigError, OptionError) as e:
        return _usage(str(e))
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
        with keeping():
            report = run_interruptible(run_checks, spec, args.spec, games, move_ms,
                                       args.games, log_dir, confinement, None, first)
    except HandshakeError as e:
        print(f"{PROG}: {clean(str(e))}", file=sys.stderr)
        if args.json:
            print(json.dumps({"spec": args.spec, "bot": None, "ok": False, "error": str(e)}))
        return 1
    except BaseException:
        if not args.log_dir:
            shutil.rmtree(log_dir, ignore_errors=True)
        raise
    if not args.log_dir and report.ok:  # nothing to look at: nothing left behind
        shutil.rmtree(log_dir, ignore_errors=True)
    elif not args.log_dir:
        with contextlib.suppress(OSError):
            log_dir.rmdir()  # a temporary folder no bot wrote in (grpc:// and unix:)
    if args.json:
        print(json.dumps(report_json(report), indent=2))
    else:
        print_report(report, Console(highlight=False, soft_wrap=True, emoji=False))
        if not args.log_dir and not report.ok and log_dir.exists():
            print(f"the bot's log is kept in {log_dir} (a check that passes removes its "
                  f"temporary folder; --log-dir DIR keeps the logs anyway)")
    return 0 if report.ok else 1


def _first_game(args: argparse.Namespace
                ) -> tuple[list[str] | None, int, dict[str, dict[str, Any]] | None]:
    """The games checked, the time per move, and the options of each one's first
    complete game, from ``--game``, ``--players``, ``--option``, ``--from`` and
    ``--move-ms``; :class:`ConfigError` or :class:`OptionError` (one line)."""
    game: str | None = args.game
    move_ms: int = args.move_ms
    given: dict[str, Any] = {}
    if args.from_file is not None:
        where = str(args.from_file)
        _, data = read_toml(args.from_file, "tournament or league")
        _, file_game, seats, options = parse_game(where, data)
        if game is not None and game != file_game:
            raise ConfigError(f"--game {game}, but {where} plays {file_game}")
        game = file_game
        given = {**options, "players": seats}
        time_table = data.get("time", {})
        move = time_table.get("move_ms") if isinstance(time_table, dict) else None
        if isinstance(move, int) and move > 0 and args.move_ms == MOVE_MS_DEFAULT:
            move_ms = move
    if args.option and game is None:
        raise OptionError("--option needs --game (or --from): options are a game's own")
    if game is None:
        if args.players is None:
            return None, move_ms, None
        # --players alone: the first game of every game the bot plays has that many seats
        return None, move_ms, {name: game_options(name, args.players, [])
                               for name in GAMES}
    ours = game_options(game, args.players, args.option) if (args.players is not None or
                                                             args.option) else {}
    return [game], move_ms, ({game: {**given, **ours}} if given or ours else None)
