"""The ``arena`` command line."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from arena import __version__
from arena.bots import BUILTIN_BOTS, UnknownBot, make_bot
from arena.record import RecordError, game_record, round_record, verify_record
from arena.rules import GAMES, OptionError, game_class, new_game, option_specs
from arena.rules.options import parse_option_texts


class UsageError(Exception):
    """A mistake in the command line: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="arena", description="A bot-tournament arena for trick-taking games.")
    parser.add_argument("--version", action="version", version=f"trick-arena {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    play = sub.add_parser("play", help="play one game and print it")
    play.add_argument("--game", required=True, help=f"one of: {', '.join(GAMES)}")
    play.add_argument("--players", type=int, help="number of players (the game's default)")
    play.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                      help="a game option, e.g. hook_rule=true, trump=H (repeatable)")
    play.add_argument("--seed", type=int, help="the deal seed (default: random, printed)")
    play.add_argument("--bots", help="comma-separated bot per seat "
                      f"(built-in: {', '.join(BUILTIN_BOTS)}; default: heuristic and random "
                      "alternating)")
    play.add_argument("--record", type=Path, metavar="FILE", help="write the game record here")
    play.add_argument("--quiet", action="store_true", help="print only the final standings")

    verify = sub.add_parser("verify", help="re-check game records with the rules engine")
    verify.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="a record (JSON) or records (JSON lines)")
    return parser


def _game_options(game: str, players: int | None, pairs: list[str]) -> dict[str, Any]:
    game_class(game)
    specs = option_specs(game)
    given = parse_option_texts(game, specs, pairs)
    if players is not None:
        if "players" in given and given["players"] != players:
            raise OptionError("--players and --option players= disagree")
        given["players"] = specs["players"].coerce(players)
    return given


def cmd_play(args: argparse.Namespace) -> int:
    try:
        options = _game_options(args.game, args.players, args.option)
        seed = args.seed if args.seed is not None else secrets.randbits(32)
        game = new_game(args.game, options, seed)
    except OptionError as e:
        raise UsageError(f"arena play: {e}") from None
    n = game.players
    names = (args.bots.split(",") if args.bots
             else ["heuristic" if s % 2 == 0 else "random" for s in range(n)])
    if len(names) != n:
        raise UsageError(f"arena play: {len(names)} bots for {n} players; "
                         f"give --bots with exactly {n} names")
    try:
        bots = [make_bot(name.strip(), f"{seed}/{seat}") for seat, name in enumerate(names)]
    except UnknownBot as e:
        raise UsageError(f"arena play: {e}") from None
    seats = [b.name for b in bots]

    from arena.render import GamePrinter

    printer = GamePrinter(game_record(game, seats))
    if not args.quiet:
        printer.header()
    shown = 0
    while not game.is_over:
        seat = game.to_move
        assert seat is not None
        game.apply(bots[seat].act(game.view(seat)))
        finished = len(game.log) - (0 if game.is_over else 1)
        while shown < finished:
            if not args.quiet:
                printer.round(round_record(game.log[shown]), game.rounds)
            shown += 1
    record = game_record(game, seats)
    printer.record = record
    printer.final()
    if args.record:
        _write_json(args.record, record)
        printer.console.print(f"record written to {args.record}")
    return 0


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        tmp.replace(path)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from None


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    """The records in a file: one JSON document, or JSON lines; yields (where, record)."""
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    try:
        yield str(path), json.loads(text)
        return
    except json.JSONDecodeError:
        pass
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield f"{path}:{number}", json.loads(line)
        except json.JSONDecodeError as e:
            yield f"{path}:{number}", RecordError(f"not JSON: {e.msg} at column {e.colno}")


def cmd_verify(args: argparse.Namespace) -> int:
    for path in args.files:
        count = 0
        for where, record in _records(path):
            try:
                if isinstance(record, RecordError):
                    raise record
                verify_record(record)
            except RecordError as e:
                print(f"{where}: {e}", file=sys.stderr)
                return 1
            count += 1
        print(f"{path}: ok ({count} record{'s' if count != 1 else ''})")
    return 0


COMMANDS = {"play": cmd_play, "verify": cmd_verify}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("arena: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
