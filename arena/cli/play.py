"""``arena play``: one game, printed; a seat may be played by a person (``human``), in
the terminal or the browser."""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from arena.cli.common import (
    UsageError,
    confinement_from_args,
    game_options,
    remote_from_args,
    split_bots,
    write_json,
)
from arena.cli.interrupt import run_interruptible, sigterm_as_ctrl_c
from arena.files import FolderError, private_dir, temp_dir
from arena.human.terminal import HUMAN, TerminalPlayer
from arena.model.errors import SandboxError
from arena.model.limits import Confinement
from arena.model.names import clean
from arena.model.record import (
    game_record,
)
from arena.model.spec import BotSpec, BotSpecError
from arena.play.referee import Abandon, GameReport, TimeControl, play_game
from arena.play.seats import SeatSpec, seated_players
from arena.proc.connection import HandshakeError
from arena.proc.keeper import keeping
from arena.proc.reaper import start_cleanup
from arena.rules import Game, OptionError, new_game


def cmd_play(args: argparse.Namespace) -> int:
    try:
        options = game_options(args.game, args.players, args.option)
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
    seats = [SeatSpec(spec.value if spec.kind == "builtin" else None, spec) for spec in specs]
    web = None
    if humans:
        seats[humans[0]], web = _human_seat(args, game, humans[0])
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
            start_cleanup()
            with keeping():
                report = run_interruptible(_play, game, seats, clock, log_dir, seed,
                                           args.quiet, args.startup_ms / 1000, confinement)
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
        write_json(args.record, record)
        print(f"record written to {args.record}")
    if web is not None:
        from arena.human.web import replay_page

        web.table.finish(record, replay_page(record), str(args.record) if args.record else None)
        try:
            # Ctrl-C (or SIGTERM) is awaited from before the line that invites it: one that
            # came between the line and the wait would otherwise end the command as an
            # interruption (exit 130) with the game over and its record written
            with sigterm_as_ctrl_c():
                print(f"the game is over: the result and its replay are at {web.url} "
                      f"(Ctrl-C to stop)", flush=True)
                _until_stopped()
        except KeyboardInterrupt:
            pass
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


def _human_seat(args: argparse.Namespace, game: Game, seat: int) -> tuple[SeatSpec, Any]:
    """The seat a person plays: in the terminal, or with ``--web`` in the browser (its
    server started and its URL printed)."""
    if not args.web:
        return SeatSpec(HUMAN, BotSpec(HUMAN, HUMAN), TerminalPlayer(HUMAN, args.human_ms)), None
    from arena.human.web import HOST, WebPlayer, WebServer, WebTable, play_page

    table = WebTable()
    page = play_page(f"{game.name.capitalize()}: you against the bots", game.name,
                     game.players, seat, game.name == "wizard" or bool(game.options.get(
                         "announce")))
    try:
        web = WebServer(table, page, args.port)
    except OSError as e:
        raise UsageError(f"arena play: cannot listen on {HOST}:{args.port}: "
                         f"{e.strerror or e}") from None
    web.start()
    print(f"play in your browser: {web.url} (Ctrl-C to stop)", flush=True)
    return SeatSpec(HUMAN, BotSpec(HUMAN, HUMAN), WebPlayer(table, HUMAN, args.human_ms)), web


def _until_stopped() -> None:
    """Wait for Ctrl-C: the KeyboardInterrupt that SIGINT (or, under
    :func:`sigterm_as_ctrl_c`, SIGTERM) raises here. In short sleeps, not
    ``signal.pause()``: a signal the kernel hands to the web server's thread does not
    wake the main thread, whose handler then runs at its next bytecode."""
    while True:
        time.sleep(0.1)


async def _play(game: Game, seats: list[SeatSpec], clock: TimeControl, log_dir: Path,
                seed: int, quiet: bool, startup_s: float,
                confinement: Confinement) -> GameReport:
    from arena.report.printer import GamePrinter

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
