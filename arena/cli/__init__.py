"""The ``arena`` command line."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from arena import __version__
from arena.cli import _environment  # noqa: F401  (first: before grpc is imported)
from arena.cli.common import Parser, UsageError, open_store
from arena.model.errors import one_line

# A subcommand's module (and so the rules, trio, grpc, numpy, the league...) is imported
# only when that subcommand runs or its parser is asked for, so that ``arena`` and each
# command start fast. The root parser knows the others by name and help only.


def _add_play(sub: Any) -> None:
    from arena.cli.common import add_clock_flags, add_remote_flags, add_sandbox_flags
    from arena.model.spec import BUILTIN_BOTS
    from arena.rules import GAMES

    play = sub.add_parser(
        "play", help=_HELP["play"],
        description="Play one game and print it. A seat given as 'human' is played by you: "
                    "in the terminal, or with --web in the browser (docs/playing.md).")
    play.add_argument("--game", required=True, help=f"one of: {', '.join(GAMES)}")
    play.add_argument("--players", type=int, help="number of players (the game's default)")
    play.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                      help="a game option, e.g. hook_rule=true, trump=H (repeatable)")
    play.add_argument("--seed", type=int, help="the deal seed (default: random, printed)")
    play.add_argument("--bots", help="comma-separated bot spec per seat: "
                      f"{', '.join(BUILTIN_BOTS)}, cmd:COMMAND, grpc://HOST:PORT, "
                      "grpcs://HOST:PORT or unix:PATH, or human (you play that seat) "
                      "(default: heuristic and random alternating)")
    play.add_argument("--human-ms", type=int, metavar="MS",
                      help="time per decision of the human seat (default: no limit)")
    play.add_argument("--web", action="store_true",
                      help="play the human seat in the browser: serve a page on 127.0.0.1 "
                      "and print its URL; after the game it stays up until Ctrl-C")
    play.add_argument("--port", type=int, default=0, metavar="N",
                      help="the port for --web (default 0: a free one)")
    play.add_argument("--record", type=Path, metavar="FILE", help="write the game record here")
    play.add_argument("--quiet", action="store_true", help="print only the final standings")
    add_clock_flags(play)
    play.add_argument("--log-dir", type=Path, metavar="DIR",
                      help="where bot processes' stderr goes (default: a temporary folder)")
    add_sandbox_flags(play)
    add_remote_flags(play)


def _add_tournament(sub: Any) -> None:
    tour = sub.add_parser("tournament", help=_HELP["tournament"])
    tour.add_argument("file", type=Path, metavar="FILE", help="a tournament file (TOML)")
    tour.add_argument("--out", type=Path, metavar="DIR",
                      help="the output folder (default: the file's 'output')")
    tour.add_argument("--fresh", action="store_true",
                      help="start afresh, deleting the stored games of an earlier run")
    tour.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                      help="play the games on a Ray cluster (default address: RAY_ADDRESS, "
                           "else a local Ray instance); see docs/scaling.md")
    tour.add_argument("--resamples", type=int, default=1000, metavar="N",
                      help="bootstrap resamples for the rating intervals (default 1000)")


def _add_leaderboard(sub: Any) -> None:
    board = sub.add_parser("leaderboard", help=_HELP["leaderboard"])
    board.add_argument("folder", type=Path, metavar="DIR", help="the tournament's output folder")
    board.add_argument("--format", choices=("table", "md", "csv", "json"), default="table")
    board.add_argument("--resamples", type=int, default=1000, metavar="N",
                       help="bootstrap resamples for the rating intervals (default 1000)")


def _add_export(sub: Any) -> None:
    export = sub.add_parser("export", help=_HELP["export"])
    export.add_argument("folder", type=Path, metavar="DIR", help="the tournament's output folder")
    export.add_argument("--out", type=Path, metavar="FILE",
                        help="where to write (default: DIR/games.jsonl)")


def _add_verify(sub: Any) -> None:
    verify = sub.add_parser("verify", help=_HELP["verify"])
    verify.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="a record (JSON), records (JSON lines, e.g. an export) or a "
                             "tournament's output folder")
    verify.add_argument("--head", metavar="HEX", help="the published chain head: fail "
                        "unless the chain ends there")


def _add_from(module: str, function: str = "add_parser") -> Callable[[Any], None]:
    """The parser builder ``function`` of ``arena.cli.MODULE``, imported when called."""
    def add(sub: Any) -> None:
        getattr(importlib.import_module(f"arena.cli.{module}"), function)(sub)
    return add


_HELP = {
    "play": "play one game and print it",
    "tournament": "run (or resume) a tournament from a file",
    "leaderboard": "print a tournament's leaderboard",
    "export": "write every finished game's record as JSON lines",
    "verify": "re-check game records with the rules engine, and a tournament's results chain",
    "check-bot": "check that a bot speaks the protocol and plays legally",
    "match": "is the candidate better than the baseline? a sequential test",
    "league": "run an open league, and change its field while it runs",
    "publish": "write a tournament's or a league's static web site",
    "serve": "serve a published site on 127.0.0.1 for a quick look",
    "submit": "send a bot (a folder with bot.toml) to a league",
}
"""Each subcommand's one-line help, as ``arena --help`` lists it; the subcommand's own
parser gives the same line (tests/test_cli.py checks that they agree)."""

_BUILDERS: dict[str, Callable[[Any], None]] = {
    "play": _add_play, "tournament": _add_tournament, "leaderboard": _add_leaderboard,
    "export": _add_export, "verify": _add_verify,
    "check-bot": _add_from("checkbot"), "match": _add_from("match"),
    "league": _add_from("league"), "publish": _add_from("publish", "add_publish_parser"),
    "serve": _add_from("publish", "add_serve_parser"), "submit": _add_from("submit"),
}


def _chosen(argv: Sequence[str] | None) -> str | None:
    """The subcommand ``argv`` names (its first argument not an option; the root parser's
    only options, --help and --version, take no value), or None."""
    for arg in sys.argv[1:] if argv is None else argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


def _parser(argv: Sequence[str] | None = None, *, full: bool = False) -> argparse.ArgumentParser:
    """The command's parser: complete for the subcommand ``argv`` names (every one when
    ``full``), the others by name and help only, so that only the chosen one's module is
    imported."""
    parser = Parser(prog="arena", description="A bot-tournament arena for trick-taking games.")
    parser.add_argument("--version", action="version", version=f"trick-arena {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    chosen = _chosen(argv)
    for name, build in _BUILDERS.items():
        if full or name == chosen:
            build(sub)
        else:
            sub.add_parser(name, help=_HELP[name], add_help=False)
    return parser


def cmd_tournament(args: argparse.Namespace) -> int:
    from arena.cli.tournament import run_command
    from arena.runs.store import StoreError

    try:
        return run_command(args)
    except StoreError as e:  # a store damaged while it was read on resume
        raise UsageError(str(e)) from None


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from arena.cli.tournament import leaderboard_command
    from arena.runs.store import StoreError

    with open_store(args.folder) as store:
        try:
            return leaderboard_command(store, args.folder, args.format, args.resamples)
        except StoreError as e:
            raise UsageError(str(e)) from None
        except OSError as e:
            raise UsageError(f"{args.folder}: cannot write the leaderboard: "
                             f"{e.strerror or e}") from None


def cmd_match(args: argparse.Namespace) -> int:
    from arena.cli.match import MatchError
    from arena.cli.match import cmd_match as run_match_command

    try:
        return run_match_command(args)
    except MatchError as e:
        raise UsageError(f"arena match: {e}") from None


def cmd_league(args: argparse.Namespace) -> int:
    from arena.cli.league import LeagueUsage
    from arena.cli.league import cmd_league as run_league_command

    try:
        return run_league_command(args)
    except LeagueUsage as e:
        raise UsageError(str(e)) from None


def _lazy(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    """The command ``function`` of ``arena.cli.MODULE``, imported when it runs."""
    def run(args: argparse.Namespace) -> int:
        command: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(f"arena.cli.{module}"), function)
        return command(args)
    return run


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "play": _lazy("play", "cmd_play"), "verify": _lazy("records", "cmd_verify"),
    "tournament": cmd_tournament, "leaderboard": cmd_leaderboard,
    "export": _lazy("records", "cmd_export"), "check-bot": _lazy("checkbot", "cmd_check_bot"),
    "publish": _lazy("publish", "cmd_publish"), "serve": _lazy("publish", "cmd_serve"),
    "match": cmd_match, "league": cmd_league, "submit": _lazy("submit", "cmd_submit")}


def _escape_what_cannot_be_encoded() -> None:
    """Output that the terminal's encoding cannot hold (an ASCII locale, a pipe with
    ``PYTHONIOENCODING=ascii``) is written with backslash escapes (``\u2660``) instead of
    failing: a name or a suit symbol must never stop a command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or unusual stream: left as it is
                pass


def main(argv: Sequence[str] | None = None) -> int:
    _escape_what_cannot_be_encoded()
    from arena.proc.descriptors import raise_descriptor_limit

    raise_descriptor_limit()  # a large field holds well over 1,024 descriptors
    try:
        args = _parser(argv).parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageError as e:
        print(one_line(str(e)), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("arena: interrupted", file=sys.stderr)
        return 130
    except BaseExceptionGroup as group:  # Ctrl-C while a trio nursery was open
        if group.subgroup(KeyboardInterrupt) is None:
            from arena.runs.store import StoreError

            stored = group.subgroup(StoreError)  # the store failed while games ran
            if stored is not None and stored.exceptions and os.environ.get("ARENA_DEBUG") != "1":
                print(one_line(str(_leaves(stored)[0])), file=sys.stderr)
                return 2
            return _internal_error(group)
        print("arena: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug: one line, not a traceback (bad input has its own errors)
        return _internal_error(e)


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The errors a (nested) exception group holds, in order."""
    return [leaf for item in group.exceptions
            for leaf in (_leaves(item) if isinstance(item, BaseExceptionGroup) else [item])]


def _internal_error(e: BaseException) -> int:
    """The last resort for an unexpected exception: one line and exit 70, or the traceback
    with ``ARENA_DEBUG=1``."""
    if os.environ.get("ARENA_DEBUG") == "1":
        raise e
    where = ""
    if isinstance(e, BaseExceptionGroup):  # from a nursery: the first error it holds
        leaves = _leaves(e)
        where = f" (in a task{f', and {len(leaves) - 1} more' if len(leaves) > 1 else ''})"
        e = leaves[0]
    print(f"arena: internal error: {type(e).__name__}: {one_line(str(e), 160)}{where} "
          f"(please report; ARENA_DEBUG=1 shows the traceback)", file=sys.stderr)
    return 70


if __name__ == "__main__":
    sys.exit(main())
