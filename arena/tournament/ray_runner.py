"""Running a tournament's games on a Ray cluster; the driver stays the store's only writer.

Each game is a Ray task asking for one CPU, so a node never plays more games at once than
it has cores; the task starts the game's bots (sandboxed, limits applied) on the node that
plays it (:func:`arena.play.game.run_game_blocking`) and returns the outcome as JSON. A game
lost to the cluster (a worker or node that died) is played again from its start, up to
``[cluster] retries`` times: the driver resubmits it, counts it, and never blames a bot.
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
from arena.play.worker import run_game_kept
from arena.tournament.config import TournamentConfig
from arena.tournament.preamble import TournamentError, run_framed
from arena.tournament.runner import (
    RunSummary,
    job_of,
    register_bot,
    register_builtins,
    seat_jobs,
    start_run,
)
from arena.tournament.schedule import ScheduledGame
from arena.tournament.store import Store
from arena.tournament.writer import StoreWriter, store_writer

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


def _play_task(job_json: str) -> str:
    """What a Ray task runs: one game, with the bot processes this worker keeps."""
    return run_game_kept(GameJob.from_json(job_json)).to_json()


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


async def _play_all(ray: Any, config: TournamentConfig, seed: int,
                    pending: list[ScheduledGame], done: set[str], store: StoreWriter,
                    summary: RunSummary,
                    on_game: Callable[[ScheduledGame, GameOutcome], None] | None) -> None:
    # no retries by Ray itself: the driver plays a lost game again, so it can count it
    play = ray.remote(num_cpus=1, max_retries=0)(_play_task)
    seats: dict[str, SeatJob] = seat_jobs(config)
    # as a local run plays them: in the order of start_run (lane by lane), and never two
    # games of one deal with a bot in common in flight at once
    # (arena.play.pool.DealsInFlight), on any node
    queue: deque[ScheduledGame] = deque(pending)
    attempts: dict[str, int] = {}
    flight = DealsInFlight((lambda name: seats[name].kind != "builtin")
                           if config.isolation != "shared" else (lambda name: False))
    in_flight: dict[Any, tuple[ScheduledGame, int, int]] = {}
    # enough queued to keep every CPU of the cluster busy, not the whole schedule
    limit = 2 * max(1, int(ray.cluster_resources().get("CPU", 1)))
    try:
        while queue or in_flight:
            while queue and len(in_flight) < limit:
                game = flight.take(queue)
                if game is None:
                    break  # each queued game meets one in flight: wait for one to end
                attempt = attempts.get(game.id, 0)
                if attempt == 0:
                    await store.game_started(game)
                job = replace(job_of(config, seed, game, seats), cwd=_cwd(config))
                token = flight.enter(game.deal_seed, game.bots)
                in_flight[play.remote(job.to_json())] = (game, attempt, token)
            for ref in await _wait(ray, list(in_flight)):
                game, attempt, token = in_flight.pop(ref)
                flight.leave(token)
                try:
                    outcome = GameOutcome.from_json(ray.get(ref))
                except ray.exceptions.RayTaskError as e:  # the arena's own failure
                    raise TournamentError(f"game {game.id} failed on the cluster: "
                                          f"{one_line(str(e), 200)}") from None
                except ray.exceptions.RayError as e:  # a worker or node died: not a bot
                    summary.retries += 1
                    if attempt >= config.retries:
                        raise TournamentError(
                            f"game {game.id} was lost to cluster failures {attempt + 1} "
                            f"times (last: {one_line(str(e), 120)}); finished games are "
                            f"kept, run again to resume") from None
                    attempts[game.id] = attempt + 1
                    queue.appendleft(game)
                    continue
                if game.id in done:  # played twice: the store has it once
                    continue
                await store.game_finished(game, outcome.record)
                done.add(game.id)
                summary.played += 1
                summary.faults += len(outcome.faults)
                if on_game is not None:
                    on_game(game, outcome)
    finally:
        for ref in in_flight:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # already finished or gone
                pass
