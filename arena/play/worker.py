"""A run's game host on a Ray node: :class:`GameHost`, the class of the driver's Ray
actors (one a CPU, for the run's life), and the bot pools it keeps between the games it
is given (:class:`WorkerPools`).

Those are the pools of a local run (:class:`~arena.play.pool.BotPool`, one a seat's bot),
and a game is hosted by the same :func:`~arena.play.host.host_game` (its store the
driver's), so every rule a local run keeps on its processes holds on the node, by the
same code: a process plays one game at a
time and never a deal twice, is reclaimed between games, and is ended when it holds
pages after the reclaim, has seen every deal of the run, or plays under ``game``
isolation (ended, and its cgroup reclaimed, before the game's result leaves the node).
The rule between games, :class:`~arena.play.pool.DealsInFlight`, is the driver's, which
sees every node.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio

from arena.model.job import GameJob, GameOutcome, SeatJob
from arena.play.bound import IdleBound
from arena.play.host import host_game
from arena.play.pool import DEALS_FOREVER, BotPool, RefusedPool
from arena.proc.connection import HandshakeError
from arena.proc.reaper import start_cleanup


class WorkerPools:
    """The bot pools of a long-lived process (a Ray node's game host), a
    :class:`~arena.play.pool.BotPool` for each seat's bot it is given, opened at the
    bot's first game there and kept until :meth:`close`. Its own trio loop runs in a
    thread, so the pools outlive each game; their processes end on :meth:`close`, or
    with the process (bubblewrap's ``--die-with-parent``).

    Set as a local run's pools, but for what a node knows: no spare is started ahead
    (a node is given one game at a time and does not know its next), no core is pinned
    (Ray counts the CPUs), at most :attr:`MAX_IDLE` idle processes a bot, and no bound
    by the machine's memory beyond that (several hosts share a node, and each would
    count the node's memory as its own)."""

    MAX_IDLE = 4
    """Idle processes kept per bot; past that the one that has seen most deals ends."""

    def __init__(self) -> None:
        self._pools: dict[str, BotPool] = {}
        self._bound = IdleBound(None)
        self._temp: Path | None = None
        """Bot logs of jobs whose log folder is not on this node."""
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._stop: trio.Event | None = None
        ready = threading.Event()

        async def main() -> None:
            self._stop = trio.Event()
            async with trio.open_nursery() as nursery:
                self._token = trio.lowlevel.current_trio_token()
                self._nursery = nursery
                ready.set()
                await self._stop.wait()
                nursery.cancel_scope.cancel()  # each pool ends its processes

        self._thread = threading.Thread(target=trio.run, args=(main,), daemon=True,
                                        name="arena-worker-pools")
        self._thread.start()
        ready.wait()

    def play(self, job: GameJob) -> GameOutcome:
        """Play ``job`` with its bots' pools (blocking: from any thread but the pools')."""
        return trio.from_thread.run(self._play, job, trio_token=self._token)

    def close(self) -> None:
        """End every pool's processes, and the thread."""
        if self._stop is not None and self._thread.is_alive():
            trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)

    async def _play(self, job: GameJob) -> GameOutcome:
        pools: dict[str, BotPool] = {}

        async def pool_of(entry: SeatJob) -> None:
            pools[entry.name] = await self._pool(job, entry)

        async with trio.open_nursery() as nursery:  # first processes side by side
            for entry in {e.name: e for e in job.seats if e.kind != "builtin"}.values():
                nursery.start_soon(pool_of, entry)
        # hosted as every runner hosts a game; the driver stores it, and keeps the rule
        # between games in flight (it sees every node)
        return await host_game(pools, job, job, None, _DRIVER_STORES)

    async def _pool(self, job: GameJob, entry: SeatJob) -> BotPool:
        """The pool of ``entry``'s bot for ``job``'s run, opened at its first game; a
        :class:`RefusedPool` for this game if its first process cannot start (the next
        game tries again)."""
        log_dir = self._log_dir(job)
        key = json.dumps([entry.to_key(), job.game, job.isolation, job.deals,
                          job.startup_ms, str(log_dir), job.cwd])
        pool = self._pools.get(key)
        if pool is not None:
            return pool
        folder = entry.folder(job.cwd)
        pool = BotPool(entry.name, entry.spec(), log_dir, job.startup_ms / 1000,
                       entry.confinement(), job.isolation, job.deals or DEALS_FOREVER,
                       hide=tuple(Path(p) for p in entry.hide), spares=0,
                       max_idle=self.MAX_IDLE,
                       cwd=folder if folder is not None and folder.is_dir() else None,
                       bound=self._bound)
        assert self._nursery is not None
        scope: trio.CancelScope = await self._nursery.start(self._keep, pool)
        try:
            await pool.open(job.game)
        except HandshakeError as e:
            scope.cancel()
            return RefusedPool(entry.name, f"cannot start a process for this game: {e}")
        except BaseException:
            scope.cancel()
            raise
        self._pools[key] = pool
        return pool

    @staticmethod
    async def _keep(pool: BotPool,
                    task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED
                    ) -> None:
        """Hold ``pool`` open (entered and left in this task of the loop's own) until
        its scope is cancelled, or the loop's."""
        with trio.CancelScope() as scope:
            async with pool:
                task_status.started(scope)
                await trio.sleep_forever()

    def _log_dir(self, job: GameJob) -> Path:
        """Where the bots of ``job`` log: its folder where this node has it, else a
        temporary folder of this host's."""
        if job.log_dir:
            try:
                Path(job.log_dir).mkdir(parents=True, exist_ok=True)
            except OSError:
                pass  # not on this node
            else:
                return Path(job.log_dir)
        if self._temp is None:
            self._temp = Path(tempfile.mkdtemp(prefix="arena-job-"))
        return self._temp


class _DriverStores:
    """The store of a game hosted on a node: the driver's, which stores it when its
    outcome comes back (its only writer); nothing here."""

    async def game_started(self, game: GameJob) -> None:
        pass

    async def game_finished(self, game: GameJob, record: Mapping[str, Any]) -> None:
        pass


_DRIVER_STORES = _DriverStores()


class GameHost:
    """One game at a time, with the bot processes it keeps for the run: what each of
    the Ray driver's actors is (``ray.remote(num_cpus=1)(GameHost)``, so this module
    needs no Ray). The driver closes it at the end of the run; a host lost with its
    node takes its processes with it."""

    def __init__(self) -> None:
        start_cleanup()
        self._pools = WorkerPools()

    def ready(self) -> bool:
        """Answered once the host is up (the driver sends games only to hosts that are)."""
        return True

    def play(self, job_json: str) -> str:
        """Play one game (a :class:`GameJob` as JSON); its outcome as JSON."""
        return self._pools.play(GameJob.from_json(job_json)).to_json()

    def close(self) -> None:
        """End every kept process (each reclaimed as it ends)."""
        self._pools.close()
