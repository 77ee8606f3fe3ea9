"""Bot processes a Ray worker keeps between the games it is given
(:class:`WorkerPools`), under the ``deal`` rule of :mod:`arena.play.pool`."""

from __future__ import annotations

import threading
from pathlib import Path

import trio

from arena.model.job import GameJob, GameOutcome, SeatJob
from arena.play.game import run_game, run_game_blocking, start_for_job
from arena.play.players import RemotePlayer, UnreachablePlayer
from arena.play.pool import DealLedger
from arena.play.referee import Player
from arena.play.seats import seat_all
from arena.proc.connection import BotConnection
from arena.proc.reaper import start_cleanup


class WorkerPools:
    """Bot processes a long-lived process (a Ray worker) keeps between the games it plays,
    under the ``deal`` invariant of :mod:`arena.play.pool`: a process plays one game at a time
    and never two games of one deal. Its own trio loop runs in a thread, so the
    connections outlive each game; they end with the process (bubblewrap's
    ``--die-with-parent``) or on :meth:`close`."""

    MAX_IDLE = 4
    """Idle processes kept per bot; past that the one that has seen most deals ends."""

    def __init__(self) -> None:
        self._ledgers: dict[str, DealLedger] = {}
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        ready = threading.Event()

        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            self._stop = trio.Event()
            ready.set()
            await self._stop.wait()
            with trio.CancelScope(shield=True):
                for ledger in self._ledgers.values():
                    for conn in ledger.clear():
                        await conn.aclose()

        self._thread = threading.Thread(target=trio.run, args=(main,), daemon=True,
                                        name="arena-worker-pools")
        self._thread.start()
        ready.wait()

    def play(self, job: GameJob, log_dir: Path) -> GameOutcome:
        """Play ``job`` with kept processes where they may play it, fresh ones otherwise."""
        return trio.from_thread.run(self._play, job, log_dir, trio_token=self._token)

    def close(self) -> None:
        """End every kept process, and the thread."""
        if self._stop is not None:
            trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join()

    async def _play(self, job: GameJob, log_dir: Path) -> GameOutcome:
        leased: list[tuple[DealLedger, BotConnection]] = []
        starting: list[BotConnection] = []  # started, not leased: closed at the end

        async def seat_one(seat: int, entry: SeatJob) -> Player:
            ledger = self._ledgers.setdefault(entry.to_key(), DealLedger(self.MAX_IDLE))
            conn = ledger.take(job.deal_seed)
            if conn is None:
                conn, player = await start_for_job(job, entry, log_dir, starting)
                if isinstance(player, UnreachablePlayer):
                    return player  # closed below
                starting.remove(conn)
            ledger.lease(conn, job.deal_seed)
            leased.append((ledger, conn))
            return RemotePlayer(conn, entry.name)

        try:
            return await run_game(job, await seat_all(job.seats, job.deal_seed, seat_one))
        finally:
            with trio.CancelScope(shield=True):
                for conn in starting:
                    await conn.aclose()
                for ledger, conn in leased:
                    # as BotPool.release: reclaimed before it is kept, ended if it
                    # still holds pages then
                    held = await conn.reclaim() if conn.usable else None
                    if held is not None:
                        await conn.aclose(background=False)
                        continue
                    extra = ledger.put_back(conn) if conn.usable else conn
                    if extra is not None:  # the one just played: reclaimed before return
                        await extra.aclose(background=extra is not conn)


_worker_pools: WorkerPools | None = None


def run_game_kept(job: GameJob) -> GameOutcome:
    """Like :func:`run_game_blocking`, but the bot processes stay in this process for its
    later games (``isolation = "deal"``); ``game`` isolation starts fresh ones."""
    global _worker_pools
    if job.isolation == "game" or not job.log_dir:
        return run_game_blocking(job)
    log_dir = Path(job.log_dir)
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
    except OSError:
        return run_game_blocking(job)
    if _worker_pools is None:
        start_cleanup()
        _worker_pools = WorkerPools()
    return _worker_pools.play(job, log_dir)
