"""Playing one game from a :class:`~arena.model.job.GameJob`: the one way a game is played.

:func:`run_game` plays a job between players already seated, leased from the bots'
pools (:func:`arena.play.pool.leased_players`), on this machine or on a Ray node
(:mod:`arena.play.worker`); :func:`hello_blocking` checks a bot's hand-shake on a node
before the games.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import trio

from arena.model.job import GameJob, GameOutcome, SeatJob
from arena.play.players import RemotePlayer
from arena.play.referee import Player, TimeControl, play_game
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
