"""The ``arena`` command line."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import trio

from arena import __version__
from arena.botproc import BotSpec, BotSpecError, add_remote_flags, remote_from_args
from arena.bots import BUILTIN_BOTS
from arena.chain import CHAIN_KEY, ChainError, ChainWalk, Link, is_hex_digest
from arena.checkbot import add_parser as add_check_bot_parser
from arena.checkbot import cmd_check_bot
from arena.errors import one_line
from arena.files import FolderError, atomic_writer, private_dir, temp_dir
from arena.human import HUMAN, TerminalPlayer
from arena.interrupt import sigterm_as_ctrl_c
from arena.match.command import add_parser as add_match_parser
from arena.names import clean
from arena.players import HandshakeError, SeatSpec, seated_players
from arena.publish import add_publish_parser, add_serve_parser, cmd_publish, cmd_serve
from arena.record import MAX_RECORD_BYTES, RecordError, game_record, parse_record, verify_record
from arena.referee import Abandon, GameReport, TimeControl, play_game
from arena.rules import GAMES, Game, OptionError, game_class, new_game, option_specs
from arena.rules.options import parse_option_texts
from arena.sandbox import Confinement, SandboxError, add_sandbox_flags, confinement_from_args


class UsageError(Exception):
    """A mistake in the command line: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="arena", description="A bot-tournament arena for trick-taking games.")
    parser.add_argument("--version", action="version", version=f"trick-arena {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    play = sub.add_parser(
        "play", help="play one game and print it",
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

    tour = sub.add_parser("tournament", help="run (or resume) a tournament from a file")
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

    board = sub.add_parser("leaderboard", help="print a tournament's leaderboard")
    board.add_argument("folder", type=Path, metavar="DIR", help="the tournament's output folder")
    board.add_argument("--format", choices=("table", "md", "csv", "json"), default="table")
    board.add_argument("--resamples", type=int, default=1000, metavar="N",
                       help="bootstrap resamples for the rating intervals (default 1000)")

    export = sub.add_parser("export", help="write every finished game's record as JSON lines")
    export.add_argument("folder", type=Path, metavar="DIR", help="the tournament's output folder")
    export.add_argument("--out", type=Path, metavar="FILE",
                        help="where to write (default: DIR/games.jsonl)")

    verify = sub.add_parser("verify", help="re-check game records with the rules engine, "
                            "and a tournament's results chain")
    verify.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="a record (JSON), records (JSON lines, e.g. an export) or a "
                             "tournament's output folder")
    verify.add_argument("--head", metavar="HEX", help="the published chain head: fail "
                        "unless the chain ends there")
    add_check_bot_parser(sub)
    add_match_parser(sub)
    add_publish_parser(sub)
    add_serve_parser(sub)
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


def add_clock_flags(parser: argparse.ArgumentParser) -> None:
    """The time control and fault policy of ``play`` and ``match``: --move-ms, --bank-ms,
    --max-faults, --startup-ms."""
    parser.add_argument("--move-ms", type=int, default=1000, metavar="MS",
                        help="time per decision in milliseconds (default 1000)")
    parser.add_argument("--bank-ms", type=int, default=0, metavar="MS",
                        help="a per-game time bank that slow answers draw down (default 0)")
    parser.add_argument("--max-faults", type=int, default=3, metavar="N",
                        help="faults in one game before a bot is forfeited (default 3)")
    parser.add_argument("--startup-ms", type=int, default=10000, metavar="MS",
                        help="how long a bot may take to start serving (default 10000)")


def split_bots(text: str) -> list[str]:
    """Split ``--bots`` at commas, keeping commas inside a ``cmd:`` command line."""
    out: list[str] = []
    for part in text.split(","):
        known = part.strip() in (*BUILTIN_BOTS, HUMAN) or part.strip().startswith(
            ("cmd:", "grpc://", "grpcs://", "unix:"))
        if out and not known and out[-1].startswith("cmd:"):
            out[-1] += "," + part
        else:
            out.append(part.strip())
    return out


def cmd_play(args: argparse.Namespace) -> int:
    try:
        options = _game_options(args.game, args.players, args.option)
        seed = args.seed if args.seed is not None else secrets.randbits(32)
        game = new_game(args.game, options, seed)
    except OptionError as e:
        raise UsageError(f"arena play: {e}") from None
    n = game.players
    names = (split_bots(args.bots) if args.bots
             else ["heuristic" if s % 2 == 0 else "random" for s in range(n)])
    if len(names) != n:
        raise UsageError(f"arena play: {len(names)} bots for {n} players; "
                         f"give --bots with exactly {n} names")
    humans = [seat for seat, name in enumerate(names) if name == HUMAN]
    _check_human_flags(args, humans)
    try:
        bot_specs = iter(remote_from_args([BotSpec.parse(name) for name in names
                                           if name != HUMAN], args))
        specs = [BotSpec(HUMAN, HUMAN) if name == HUMAN else next(bot_specs) for name in names]
    except BotSpecError as e:
        raise UsageError(f"arena play: {e}") from None
    for spec in specs:
        if spec.plain_remote:
            print(f"warning: {spec} without TLS (--insecure): its moves and token travel "
                  f"unencrypted", file=sys.stderr)
    # a remote bot's seat takes the name it gives in the hand-shake
    seats = [SeatSpec(spec.value if spec.kind == "builtin" else f"seat{seat} ({spec})", spec)
             for seat, spec in enumerate(specs)]
    web = None
    if humans:
        seats[humans[0]], web = _human_seat(args, game)
    for flag in ("move_ms", "bank_ms", "max_faults", "startup_ms"):
        if getattr(args, flag) < (1 if flag != "bank_ms" else 0):
            raise UsageError(f"arena play: --{flag.replace('_', '-')} must be positive")
    clock = TimeControl(args.move_ms, args.bank_ms, args.max_faults)
    try:
        confinement = confinement_from_args(args, any(spec.kind == "cmd" for spec in specs))
    except SandboxError as e:
        raise UsageError(f"arena play: {e}") from None
    try:
        log_dir = (private_dir(args.log_dir) if args.log_dir
                   else temp_dir(f"trick-arena-play-{seed}-"))
    except FolderError as e:
        raise UsageError(f"arena play: {e}") from None
    try:
        try:
            with sigterm_as_ctrl_c():
                report = trio.run(_play, game, seats, clock, log_dir, seed, args.quiet,
                                  args.startup_ms / 1000, confinement)
        except BaseException:
            if web is not None:
                web.close()
            raise
    except HandshakeError as e:
        print(f"arena play: {clean(str(e))}", file=sys.stderr)
        return 1
    except Abandon as e:
        print(f"arena play: {e}; the game was left unfinished, no record written",
              file=sys.stderr)
        return 1
    finally:
        if not args.log_dir:
            _remove_if_empty(log_dir)
    record = report.record
    if args.record:
        _write_json(args.record, record)
        print(f"record written to {args.record}")
    if web is not None:
        from arena.human_web import replay_page

        web.table.finish(record, replay_page(record), str(args.record) if args.record else None)
        print(f"the game is over: the result and its replay are at {web.url} "
              f"(Ctrl-C to stop)", flush=True)
        try:
            trio.run(_until_stopped)
        finally:
            web.close()
        print("stopped", flush=True)
    return 0


def _check_human_flags(args: argparse.Namespace, humans: list[int]) -> None:
    if len(humans) > 1:
        raise UsageError(f"arena play: {len(humans)} human seats (seats "
                         f"{', '.join(map(str, humans))}); one person plays one seat")
    if args.web and not humans:
        raise UsageError("arena play: --web needs a human seat in --bots (e.g. "
                         "--bots human,heuristic,random)")
    if args.human_ms is not None and args.human_ms < 1:
        raise UsageError("arena play: --human-ms must be positive")
    if not 0 <= args.port <= 65535:
        raise UsageError("arena play: --port must be 0..65535")
    if args.port and not args.web:
        raise UsageError("arena play: --port is the browser seat's port; it needs --web")


def _human_seat(args: argparse.Namespace, game: Game) -> tuple[SeatSpec, Any]:
    """The seat a person plays: in the terminal, or with ``--web`` in the browser (its
    server started and its URL printed)."""
    if not args.web:
        return SeatSpec(HUMAN, BotSpec(HUMAN, HUMAN), TerminalPlayer(HUMAN, args.human_ms)), None
    from arena.human_web import HOST, WebPlayer, WebServer, WebTable

    table = WebTable()
    try:
        web = WebServer(table, f"{game.name.capitalize()}: you against the bots", args.port)
    except OSError as e:
        raise UsageError(f"arena play: cannot listen on {HOST}:{args.port}: "
                         f"{e.strerror or e}") from None
    web.start()
    print(f"play in your browser: {web.url} (Ctrl-C to stop)", flush=True)
    return SeatSpec(HUMAN, BotSpec(HUMAN, HUMAN), WebPlayer(table, HUMAN, args.human_ms)), web


async def _until_stopped() -> None:
    """Wait for Ctrl-C (SIGINT) or SIGTERM."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            return


async def _play(game: Game, seats: list[SeatSpec], clock: TimeControl, log_dir: Path,
                seed: int, quiet: bool, startup_s: float,
                confinement: Confinement) -> GameReport:
    from arena.render import GamePrinter

    async with seated_players(seats, game.name, log_dir, seed, startup_s,
                              confinement) as players:
        for player in players:  # a person's seat shows the others' names
            set_names = getattr(player, "set_names", None)
            if set_names is not None:
                set_names([p.name for p in players])
        printer = GamePrinter(game_record(game, [p.name for p in players]))
        if not quiet:
            printer.header()

        def show(rnd: dict[str, Any]) -> None:
            if not quiet:
                printer.round(rnd, game.rounds)

        report = await play_game(game, players, clock, game_id=f"play-{seed}",
                                 table_id="play", on_round=show)
    printer.record = report.record
    printer.final()
    logs = sorted(p for p in log_dir.glob("*.log") if p.stat().st_size) if log_dir.exists() else []
    if report.faults and logs:
        printer.console.print(f"bot logs: {log_dir}")
    return report


def _remove_if_empty(folder: Path) -> None:
    """Remove a temporary log folder that no bot wrote in."""
    try:
        folder.rmdir()
    except OSError:
        pass


def _write_json(path: Path, data: Any) -> None:
    try:
        with atomic_writer(path) as out:
            out.write(json.dumps(data, separators=(",", ":")) + "\n")
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from None


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    """The records in a file: one JSON document, or JSON lines; yields (where, record),
    or (where, RecordError) for input that is not a record (see :func:`parse_record`)."""
    try:
        with path.open("rb") as f:
            head = f.read(MAX_RECORD_BYTES + 1)
            if len(head) <= MAX_RECORD_BYTES:  # the whole file may be one record
                try:
                    whole = parse_record(head)
                except RecordError:
                    pass
                else:
                    yield str(path), whole
                    return
            f.seek(0)
            number = 0
            while line := f.readline(MAX_RECORD_BYTES + 1):
                number += 1
                if len(line) > MAX_RECORD_BYTES:
                    yield f"{path}:{number}", RecordError(
                        f"a line longer than {MAX_RECORD_BYTES} bytes")
                    return
                if not line.strip():
                    continue
                try:
                    yield f"{path}:{number}", parse_record(line)
                except RecordError as e:
                    yield f"{path}:{number}", e
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None


def cmd_verify(args: argparse.Namespace) -> int:
    head = args.head.lower() if args.head else None
    if head is not None and not is_hex_digest(head):
        raise UsageError(f"arena verify: --head {args.head!r} is not a SHA-256 hex digest")
    for path in args.files:
        code = _verify_folder(path, head) if path.is_dir() else _verify_file(path, head)
        if code != 0:
            return code
    return 0


def _verify_file(path: Path, head: str | None) -> int:
    """``arena verify FILE``: each record re-played and its link checked as it is read,
    one record held at a time; stops at the first that does not hold."""
    count = 0
    walk: ChainWalk | None = None  # once a record carries a link
    plain: Link | None = None  # the first record without one, while none had one
    try:
        for where, record in _records(path):
            try:
                if isinstance(record, RecordError):
                    raise record
                verify_record(record)
            except RecordError as e:
                print(one_line(f"{where}: {e}"), file=sys.stderr)
                return 1
            count += 1
            lk = _link(record, where[len(str(path)):])
            if walk is None and lk.hash is not None:
                walk = ChainWalk(None, head, find=lambda digest: _find_link(path, digest))
                if plain is not None:
                    walk.add(plain)  # the chain starts with a record that has no link
            if walk is not None:
                walk.add(lk)
            elif plain is None:
                plain = Link(lk.game_id, None, None, None, {}, lk.where)
        end = walk.end() if walk is not None else None
    except ChainError as e:
        print(f"{path}: {e}", file=sys.stderr)
        return 1
    ok = f"{path}: ok ({count} record{'s' if count != 1 else ''})"
    if end is not None:
        print(f"{ok}, chain head {end}")
    elif head is not None:
        print(f"{path}: head mismatch: the records carry no chain", file=sys.stderr)
        return 1
    else:
        print(f"{ok}, no chain")
    return 0


def _find_link(path: Path, digest: str) -> str | None:
    """The game of the first record in ``path`` whose link is ``digest`` (a second pass
    over the file, made only when a link does not follow the one before it)."""
    for where, record in _records(path):
        if isinstance(record, dict):
            lk = _link(record, where[len(str(path)):])
            if lk.hash == digest:
                return lk.game_id
    return None


def _link(record: Any, where: str) -> Link:
    """An exported record as a link of the chain (its ``chain`` key taken off)."""
    body = dict(record)
    link = body.pop(CHAIN_KEY, None)
    game_id = str(body.get("game_id", "?"))
    at = f" at line {where[1:]}" if where.startswith(":") else ""
    if not isinstance(link, dict):
        return Link(game_id, None, None, None, body, at)
    seq = link.get("seq")
    prev, digest = link.get("prev"), link.get("hash")
    return Link(game_id, seq if isinstance(seq, int) and not isinstance(seq, bool) else -1,
                prev if isinstance(prev, str) else "", digest if isinstance(digest, str)
                else "", body, at)


def _verify_folder(folder: Path, head: str | None) -> int:
    """``arena verify DIR``: the tournament store, read only. Exit 1 for a store that
    does not hold, 3 for one that could not be read (a full disk or temporary space, an
    I/O error): that says nothing about what it holds."""
    from arena.tournament.audit import AuditError, verify_store
    from arena.tournament.store import STORE_NAME, Store, StoreError, StoreIOError, store_error

    if not Store.exists(folder):
        raise UsageError(f"{folder}: no tournament here (no tournament.sqlite)")
    try:
        with Store.open_readonly(folder) as store:
            count, end = verify_store(store, head)
    except StoreIOError as e:
        print(str(e), file=sys.stderr)
        return 3
    except StoreError as e:  # a store cut short or overwritten does not hold either
        print(str(e), file=sys.stderr)
        return 1
    except AuditError as e:
        print(f"{folder}: {e}", file=sys.stderr)
        return 1
    except sqlite3.DatabaseError as e:  # a query of the audit's own
        error = store_error(e, folder / STORE_NAME, "read")
        print(str(error), file=sys.stderr)
        return 3 if isinstance(error, StoreIOError) else 1
    except (ValueError, TypeError, KeyError) as e:
        print(f"{folder}: the store cannot be read: {type(e).__name__}: {e}"[:300],
              file=sys.stderr)
        return 1
    chain = f"chain head {end}" if end is not None else "no chain"
    print(f"{folder}: ok ({count} game{'s' if count != 1 else ''}), {chain}")
    return 0


def _open_store(folder: Path) -> Any:
    """The store in ``folder`` for a command that only reads it (opened read-only: it
    works in a read-only folder and while a run writes)."""
    from arena.tournament.store import Store, StoreError

    if not Store.exists(folder):
        raise UsageError(f"{folder}: no tournament here (no tournament.sqlite)")
    try:
        return Store.open_readonly(folder)
    except StoreError as e:
        raise UsageError(str(e)) from None


def cmd_tournament(args: argparse.Namespace) -> int:
    from arena.tournament.command import run_command
    from arena.tournament.store import StoreError

    try:
        return run_command(args)
    except StoreError as e:  # a store damaged while it was read on resume
        raise UsageError(str(e)) from None


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from arena.tournament.command import leaderboard_command
    from arena.tournament.store import StoreError

    with _open_store(args.folder) as store:
        try:
            return leaderboard_command(store, args.folder, args.format, args.resamples)
        except StoreError as e:
            raise UsageError(str(e)) from None
        except OSError as e:
            raise UsageError(f"{args.folder}: cannot write the leaderboard: "
                             f"{e.strerror or e}") from None


def cmd_export(args: argparse.Namespace) -> int:
    from arena.tournament.runner import export_records
    from arena.tournament.store import StoreError

    out = args.out or args.folder / "games.jsonl"
    with _open_store(args.folder) as store:
        try:
            count = export_records(store, out)
        except OSError as e:
            raise UsageError(f"cannot write {out}: {e.strerror}") from None
        except StoreError as e:  # the export is written whole or not at all
            raise UsageError(str(e)) from None
    print(f"{count} records written to {out}")
    return 0


def cmd_match(args: argparse.Namespace) -> int:
    from arena.match.command import MatchError
    from arena.match.command import cmd_match as run_match_command

    try:
        return run_match_command(args)
    except MatchError as e:
        raise UsageError(f"arena match: {e}") from None


COMMANDS = {"play": cmd_play, "verify": cmd_verify, "tournament": cmd_tournament,
            "leaderboard": cmd_leaderboard, "export": cmd_export, "check-bot": cmd_check_bot,
            "publish": cmd_publish, "serve": cmd_serve, "match": cmd_match}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageError as e:
        print(one_line(str(e)), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("arena: interrupted", file=sys.stderr)
        return 130
    except BaseExceptionGroup as group:  # Ctrl-C while a trio nursery was open
        if group.subgroup(KeyboardInterrupt) is None:
            from arena.tournament.store import StoreError

            stored = group.subgroup(StoreError)  # the store failed while games ran
            if stored is not None and stored.exceptions and os.environ.get("ARENA_DEBUG") != "1":
                first: BaseException = stored
                while isinstance(first, BaseExceptionGroup):
                    first = first.exceptions[0]
                print(one_line(str(first)), file=sys.stderr)
                return 2
            return _internal_error(group)
        print("arena: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug: one line, not a traceback (bad input has its own errors)
        return _internal_error(e)


def _internal_error(e: BaseException) -> int:
    """The last resort for an unexpected exception: one line and exit 70, or the traceback
    with ``ARENA_DEBUG=1``."""
    if os.environ.get("ARENA_DEBUG") == "1":
        raise e
    print(f"arena: internal error: {type(e).__name__}: {one_line(str(e), 160)} (please "
          f"report; ARENA_DEBUG=1 shows the traceback)", file=sys.stderr)
    return 70


if __name__ == "__main__":
    sys.exit(main())
