"""Playing one game from a :class:`~arena.model.job.GameJob`: the one way a game is played.

:func:`run_game` plays a job between players already seated (the local runner leases
them from its pools); :func:`run_game_blocking` starts the job's own bot processes
(sandboxed, limits applied), plays it, ends them, and returns the outcome: what a Ray
task calls on the node that plays the game.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from functools import partial
from pathlib import Path

import trio

from arena.model.job import GameJob, GameOutcome, SeatJob
from arena.play.players import RemotePlayer, UnreachablePlayer
from arena.play.referee import Player, TimeControl, play_game
from arena.play.seats import seat_all
from arena.proc.connection import BotConnection, HandshakeError
from arena.proc.reaper import start_cleanup
from arena.rules import new_game


async def run_game(job: GameJob, players: Sequence[Player]) -> GameOutcome:
    """Play ``job`` between ``players`` (by seat) and return its outcome."""
    conns = {p.name: p.connection for p in players if isinstance(p, RemotePlayer)}
    before = {name: conn.restarts for name, conn in conns.items()}
    report = await play_game(new_game(job.game, job.options, job.deal_seed), players,
                             TimeControl(job.move_ms, job.bank_ms, job.max_faults),
                             game_id=job.game_id, table_id=job.table_id,
                             wire_ids=job.wire_ids)
    return GameOutcome(
        job.game_id, report.record,
        bot_infos={name: bot_info(conn) for name, conn in conns.items() if conn.info},
        restarts={name: conn.restarts - before[name] for name, conn in conns.items()
                  if conn.restarts > before[name]})


def bot_info(conn: BotConnection) -> dict[str, object]:
    info = asdict(conn.info) if conn.info is not None else {}
    info["games"] = list(info.get("games", ()))
    return info


@asynccontextmanager
async def fresh_players(job: GameJob, log_dir: Path) -> AsyncIterator[list[Player]]:
    """The job's players, each external bot in a process of its own started for this game
    (confined as its seat says) and ended on exit. A bot that cannot start sits at the
    table as unreachable, as with the local runner."""
    conns: list[BotConnection] = []

    async def start(seat: int, entry: SeatJob) -> Player:
        return (await start_for_job(job, entry, log_dir, conns))[1]

    try:
        yield await seat_all(job.seats, job.deal_seed, start)
    finally:
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for conn in conns:  # reclaimed before the next job (issue 35)
                    nursery.start_soon(partial(conn.aclose, background=False))


async def start_for_job(job: GameJob, entry: SeatJob, log_dir: Path,
                        started: list[BotConnection]) -> tuple[BotConnection, Player]:
    """A process of its own for ``entry``'s bot, confined as the seat says (its
    connection appended to ``started`` before it starts, for the caller to close), and
    the player at its seat: unreachable if it cannot start, as with the local runner."""
    folder = entry.folder(job.cwd)
    cwd = folder if folder is not None and folder.is_dir() else None
    conn = BotConnection(entry.name, entry.spec(), log_dir, job.startup_ms / 1000,
                         cwd=cwd, confinement=entry.confinement(),
                         hide=tuple(Path(p) for p in entry.hide))
    started.append(conn)
    try:
        await conn.open(job.game)
    except HandshakeError as e:
        return conn, UnreachablePlayer(entry.name, f"cannot start a process for this "
                                                   f"game: {e}")
    return conn, RemotePlayer(conn, entry.name)


async def run_fresh(job: GameJob, log_dir: Path) -> GameOutcome:
    """Start the job's bots, play it, end them."""
    async with fresh_players(job, log_dir) as players:
        return await run_game(job, players)


def run_game_blocking(job: GameJob) -> GameOutcome:
    """Play ``job`` with bot processes of its own, in this thread; the entry point of a
    Ray task. Bot logs go to ``job.log_dir`` when set, else to a temporary folder."""
    start_cleanup()
    if job.log_dir:
        log_dir: Path | None = Path(job.log_dir)
        try:
            Path(job.log_dir).mkdir(parents=True, exist_ok=True)
        except OSError:
            log_dir = None  # not on this node: a temporary folder instead
        if log_dir is not None:
            return trio.run(run_fresh, job, log_dir)
    with tempfile.TemporaryDirectory(prefix="arena-job-") as tmp:
        return trio.run(run_fresh, job, Path(tmp))


async def _hello(seat: SeatJob, game: str, startup_ms: int, log_dir: Path,
                 cwd: Path | None) -> dict[str, object]:
    conn = BotConnection(seat.name, seat.spec(), log_dir, startup_ms / 1000, cwd=cwd,
                         confinement=seat.confinement(),
                         hide=tuple(Path(p) for p in seat.hide))
    try:
        await conn.open(game)
        return bot_info(conn)
    finally:
        with trio.CancelScope(shield=True):
            await conn.aclose()


def hello_blocking(seat: SeatJob, game: str, startup_ms: int,
                   cwd: str = "") -> dict[str, object]:
    """Start ``seat``'s bot once, check its hand-shake, end it: its info, or
    ``{"error": "..."}`` (one line naming the bot). Run on a node before the games."""
    start_cleanup()
    with tempfile.TemporaryDirectory(prefix="arena-hello-") as tmp:
        try:
            folder = seat.folder(cwd)
            return trio.run(_hello, seat, game, startup_ms, Path(tmp),
                            folder if folder is not None and folder.is_dir() else None)
        except HandshakeError as e:
            return {"error": str(e)}
