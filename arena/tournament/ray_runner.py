"""Running a tournament's games on a Ray cluster; the driver stays the store's only writer.

The games are hosted by the run's game hosts (:class:`arena.play.worker.GameHost`), Ray
actors of one CPU each, one a CPU of the cluster, so a node never plays more games at
once than it has cores. A host plays one game at a time with the bot processes it keeps
for the run, in the pools a local run leases from (sandboxed, limits applied, never a
deal twice in a process, reclaimed between games), and returns the outcome as JSON; the
driver gives a game to a free host only when no game in flight shares its deal and a
bot (:class:`arena.play.pool.DealsInFlight`, as a local run), and closes the hosts at
the end of the run. A game lost to the cluster (a host or node that died) is played
again from its start, up to ``[cluster] retries`` times: the driver resubmits it, counts
it, never blames a bot, and starts a host in the lost one's place.
Ray is optional: ``pip install 'trick-arena[ray]'``.
"""

from __future__ import annotations

import importlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import trio

from arena.model.errors import one_line
from arena.model.job import GameJob, GameOutcome, SeatJob
from arena.play.game import hello_blocking
from arena.play.pool import DealsInFlight
from arena.play.worker import GameHost
from arena.runs.config import TournamentConfig
from arena.runs.field import job_of, register_bot, register_builtins, seat_jobs
from arena.runs.preamble import TournamentError, run_framed
from arena.runs.schedule import ScheduledGame
from arena.runs.store import Store
from arena.runs.writer import StoreWriter, store_writer
from arena.tournament.runner import RunSummary, start_run

INSTALL = "pip install 'trick-arena[ray]'"
EXCLUDES = (".git", ".venv", "__pycache__", "node_modules/.cache")
"""Left out of ``[cluster] working_dir`` when Ray copies it to the nodes."""


def import_ray() -> Any:
    """The ``ray`` module, or :class:`TournamentError` saying how to install it."""
    try:
        return importlib.import_module("ray")
    except ImportError as e:
        raise TournamentError(f"--ray needs Ray, which is not installed here ({e}); "
                              f"install it with: {INSTALL}") from None


def _hello_task(seat_json: str, game: str, startup_ms: int) -> dict[str, object]:
    job = GameJob.from_json(seat_json)
    return hello_blocking(job.seats[0], game, startup_ms, job.cwd)


async def run_ray(config: TournamentConfig, store: Store, seed: int, address: str,
                  on_start: Callable[[int, int], None] | None = None,
                  on_game: Callable[[ScheduledGame, GameOutcome], None] | None = None,
                  ) -> RunSummary:
    """Play every game of the schedule not yet in ``store`` on the Ray cluster at
    ``address`` ("" : Ray's own choice, RAY_ADDRESS else a local instance). Same
    contract as :func:`arena.tournament.runner.run`."""
    ray = import_ray()
    pending, done, summary = start_run(config, store, seed)
    runtime_env = None if config.working_dir is None else {
        "working_dir": str(config.working_dir), "excludes": list(EXCLUDES)}
    try:
        await trio.to_thread.run_sync(partial(
            ray.init, address=address or None, include_dashboard=False,
            logging_level=logging.WARNING, log_to_driver=False, runtime_env=runtime_env))
    except Exception as e:  # Ray raises many kinds: one line for all
        raise TournamentError(f"{config.path}: cannot start or reach Ray"
                              f"{' at ' + address if address else ''}: "
                              f"{one_line(str(e), 200)}") from None

    async def body() -> None:
        await _hello_all(ray, config, store)
        if on_start is not None:
            on_start(summary.total, summary.done_before)
        async with store_writer(store) as writer:
            await _play_all(ray, config, seed, pending, done, writer, summary, on_game)

    try:
        await run_framed(summary, body)
    finally:
        ray.shutdown()
    return summary


def _cwd(config: TournamentConfig) -> str:
    """Where a node runs the bot commands: the tournament file's folder (present on every
    node), or with ``working_dir`` the node's copy of it (a task's own working folder)."""
    return "" if config.working_dir is not None else str(config.folder)


async def _wait(ray: Any, refs: list[Any]) -> list[Any]:
    ready, _ = await trio.to_thread.run_sync(partial(
        ray.wait, refs, num_returns=1, timeout=0.2))
    return list(ready)


async def _hello_all(ray: Any, config: TournamentConfig, store: Store) -> None:
    """Check every external bot's hand-shake once, on a node of the cluster."""
    hello = ray.remote(num_cpus=1, max_retries=config.retries)(_hello_task)
    seats = seat_jobs(config)
    refs: dict[Any, str] = {}
    for bot in config.bots:
        if bot.spec.kind != "builtin":
            job = GameJob(config.game, {}, 0, "", "", ("", ""), (seats[bot.name],),
                          cwd=_cwd(config))
            refs[hello.remote(job.to_json(), config.game, config.startup_ms)] = bot.name
    errors: list[str] = []
    waiting = list(refs)
    while waiting:
        for ref in await _wait(ray, waiting):
            waiting.remove(ref)
            name = refs[ref]
            try:
                info = ray.get(ref)
            except ray.exceptions.RayError as e:
                errors.append(f"{config.path}: bot {name}: cannot be started on the "
                              f"cluster: {one_line(str(e), 200)}")
                continue
            if "error" in info:
                errors.append(f"{config.path}: {info['error']}")
                continue
            register_bot(config, store, name, str(info["version"]), str(info["author"]),
                         int(info["protocol_version"]), info["games"])
    register_builtins(config, store, errors)


class _Hosts:
    """The run's game hosts on the cluster: ``count`` Ray actors of
    :class:`~arena.play.worker.GameHost`, each with the bot processes it keeps for the
    run. :attr:`idle` are up and free; :attr:`starting` maps each one on its way (its
    answer to ``ready``, which comes once it is placed on a node and up) to itself. A
    host lost (with its node) is replaced by a new one, which starts when the cluster
    has a CPU for it; ``retries`` hosts in a row that fail to start fail the run."""

    def __init__(self, ray: Any, count: int, retries: int) -> None:
        self._ray = ray
        self._actor = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(GameHost)
        self._retries = retries
        self._failed = 0
        """Hosts that failed to start since one last started."""
        self._all: list[Any] = []
        self.idle: list[Any] = []
        self.starting: dict[Any, Any] = {}
        for _ in range(count):
            self._start()

    def _start(self) -> None:
        host = self._actor.remote()
        self._all.append(host)
        self.starting[host.ready.remote()] = host

    def started(self, ref: Any) -> None:
        """The answer ``ref`` of a host starting came: it is up, or it failed."""
        host = self.starting.pop(ref)
        try:
            self._ray.get(ref)
        except self._ray.exceptions.RayError as e:
            self._failed += 1
            if self._failed > self._retries:
                raise TournamentError(f"a game host cannot start on the cluster "
                                      f"({self._failed} tried): {one_line(str(e), 200)}"
                                      ) from None
            self.lost(host)
            return
        self._failed = 0
        self.idle.append(host)

    def lost(self, host: Any) -> None:
        """``host`` died (its worker or node): another in its place."""
        self._all.remove(host)
        self._kill(host)
        self._start()

    async def close(self) -> None:
        """At the end of the run: each host up ends its processes (reclaimed as they
        end), within a minute."""
        refs = [host.close.remote() for host in self.idle]
        if refs:
            await trio.to_thread.run_sync(partial(
                self._ray.wait, refs, num_returns=len(refs), timeout=60))

    def kill(self) -> None:
        """End every host, started or not (its bot processes die with it)."""
        for host in self._all:
            self._kill(host)
        self._all, self.idle, self.starting = [], [], {}

    def _kill(self, host: Any) -> None:
        try:
            self._ray.kill(host)
        except Exception:  # already gone
            pass


async def _play_all(ray: Any, config: TournamentConfig, seed: int,
                    pending: list[ScheduledGame], done: set[str], store: StoreWriter,
                    summary: RunSummary,
                    on_game: Callable[[ScheduledGame, GameOutcome], None] | None) -> None:
    seats: dict[str, SeatJob] = seat_jobs(config)
    # as a local run plays them: in the order of start_run (lane by lane), and never two
    # games of one deal with a bot in common in flight at once
    # (arena.play.pool.DealsInFlight), on any node
    queue: deque[ScheduledGame] = deque(pending)
    attempts: dict[str, int] = {}
    flight = DealsInFlight((lambda name: seats[name].kind != "builtin")
                           if config.isolation != "shared" else (lambda name: False))
    in_flight: dict[Any, tuple[ScheduledGame, int, int, Any]] = {}
    # a host a CPU of the cluster; no retries by Ray itself: the driver plays a lost
    # game again, so it can count it
    hosts = _Hosts(ray, max(1, int(ray.cluster_resources().get("CPU", 1))), config.retries)
    try:
        while queue or in_flight:
            while queue and hosts.idle:
                game = flight.take(queue)
                if game is None:
                    break  # each queued game meets one in flight: wait for one to end
                attempt = attempts.get(game.id, 0)
                if attempt == 0:
                    await store.game_started(game)
                job = replace(job_of(config, seed, game, seats), cwd=_cwd(config))
                token = flight.enter(game.deal_seed, game.bots)
                host = hosts.idle.pop()
                in_flight[host.play.remote(job.to_json())] = (game, attempt, token, host)
            for ref in await _wait(ray, [*in_flight, *hosts.starting]):
                if ref in hosts.starting:
                    hosts.started(ref)
                    continue
                game, attempt, token, host = in_flight.pop(ref)
                flight.leave(token)
                try:
                    outcome = GameOutcome.from_json(ray.get(ref))
                except ray.exceptions.RayTaskError as e:  # the arena's own failure
                    raise TournamentError(f"game {game.id} failed on the cluster: "
                                          f"{one_line(str(e), 200)}") from None
                except ray.exceptions.RayError as e:  # a host or node died: not a bot
                    hosts.lost(host)
                    summary.retries += 1
                    if attempt >= config.retries:
                        raise TournamentError(
                            f"game {game.id} was lost to cluster failures {attempt + 1} "
                            f"times (last: {one_line(str(e), 120)}); finished games are "
                            f"kept, run again to resume") from None
                    attempts[game.id] = attempt + 1
                    queue.appendleft(game)
                    continue
                hosts.idle.append(host)
                if game.id in done:  # played twice: the store has it once
                    continue
                await store.game_finished(game, outcome.record)
                done.add(game.id)
                summary.played += 1
                summary.faults += len(outcome.faults)
                if on_game is not None:
                    on_game(game, outcome)
        await hosts.close()
    finally:
        hosts.kill()
