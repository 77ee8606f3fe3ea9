"""Running a tournament: bots started once and shared, games run concurrently with trio,
every finished game stored at once, and a clean stop on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import json
import os
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice

import trio

from arena import __version__
from arena.model.job import GameOutcome
from arena.play.host import host_game
from arena.play.pool import BotPool, DealsInFlight, prepare_pools
from arena.runs.config import TournamentConfig
from arena.runs.field import job_of, seat_jobs, with_field
from arena.runs.preamble import (
    TournamentError,
    lane_order,
    unplayed,
)
from arena.runs.schedule import ScheduledGame, schedule, seed_commitment
from arena.runs.store import Store
from arena.runs.writer import StoreWriter, store_writer


@dataclass(slots=True)
class RunSummary:
    total: int
    done_before: int
    played: int
    faults: int
    interrupted: bool
    seconds: float
    retries: int = 0
    """Games played again after a cluster failure (a Ray worker or node lost)."""


def prepare(config: TournamentConfig, store: Store) -> tuple[int, str]:
    """Check the store against the file and record the tournament; returns (seed, commitment).

    A store made from a different file is refused (``--fresh`` empties the store before
    this is called); a new tournament with no seed in its file draws a random 128-bit
    seed.
    """
    meta = store.meta()
    if "tournament_hash" in meta and meta["tournament_hash"] != config.digest:
        raise TournamentError(
            f"{config.path} has changed since the tournament in {config.output} was started "
            f"(file sha256 {config.digest[:12]}, stored {meta['tournament_hash'][:12]}); "
            f"restore the file, or run again with --fresh to start afresh")
    if "seed" in meta:
        seed = int(meta["seed"])
    elif config.seed is None and store.count_done():  # a new seed: other deals
        raise TournamentError(
            f"{store.path}: {store.count_done()} games are stored but not the seed they "
            f"were dealt from; run again with --fresh to start afresh")
    else:
        seed = config.seed if config.seed is not None else secrets.randbits(128)
    commitment = seed_commitment(seed)
    store.set_meta({
        "name": config.name, "game": config.game, "options": json.dumps(config.options),
        "seats": str(config.seats), "format": config.format, "deals": str(config.deals),
        "candidates": json.dumps(list(config.candidates)), "seed": str(seed),
        "seed_commitment": commitment, "move_ms": str(config.move_ms),
        "bank_ms": str(config.bank_ms), "max_faults": str(config.max_faults),
        "tournament_file": config.text, "tournament_path": str(config.path),
        "tournament_hash": config.digest, "arena_version": __version__,
        "bots": json.dumps([b.name for b in config.bots]),
        "skipped": json.dumps([list(s) for s in config.skipped]),
        "isolation": config.isolation,
        **({"tables_per_bot": str(config.tables_per_bot)}
           if config.tables_per_bot is not None else {}),
    })
    return seed, commitment


def games_of(config: TournamentConfig, seed: int) -> list[ScheduledGame]:
    return schedule(config.format, config.field_names, config.seats, config.deals, seed,
                    config.candidates, tables_per_bot=config.tables_per_bot)


def start_run(config: TournamentConfig, store: Store, seed: int
              ) -> tuple[list[ScheduledGame], set[str], RunSummary]:
    """A tournament run's start, on this machine or on a cluster: the games to play (in
    lane order unless the isolation is ``shared``; :func:`arena.runs.preamble.unplayed`),
    the ids of the games already stored, and the summary it fills in."""
    games = games_of(config, seed)
    todo, done = unplayed(store, games)
    pending = list(todo) if config.isolation == "shared" else lane_order(list(todo))
    return pending, done, RunSummary(len(games), len(games) - len(pending), 0, 0, False, 0.0)


async def run(config: TournamentConfig, store: Store, seed: int,
              on_start: Callable[[int, int], None] | None = None,
              on_game: Callable[[ScheduledGame, GameOutcome], None] | None = None
              ) -> RunSummary:
    """Play every game of the schedule not yet in ``store``.

    ``on_start(total, already_done)`` is called once the bots are ready, ``on_game(game,
    outcome)`` after each stored game (its record, faults and timings). Stops cleanly on
    SIGINT/SIGTERM: finished games are kept, games in flight are discarded, every bot
    process is ended.
    """
    pending, _, summary = start_run(config, store, seed)

    async def play(pools: dict[str, BotPool]) -> None:
        if on_start is not None:
            on_start(summary.total, summary.done_before)
        async with store_writer(store) as writer:
            await _play_all(config, seed, pending, pools, writer, summary, on_game)

    await with_field(config, store, summary, play)
    return summary


async def _play_all(config: TournamentConfig, seed: int, pending: list[ScheduledGame],
                    pools: dict[str, BotPool], store: StoreWriter,
                    summary: RunSummary,
                    on_game: Callable[[ScheduledGame, GameOutcome], None] | None) -> None:
    seats = seat_jobs(config)
    queue = deque(pending)
    # no two games in flight share a deal and a bot (shared isolation: trusted bots)
    flight = DealsInFlight((lambda name: name in pools) if config.isolation != "shared"
                           else (lambda name: False))

    lookahead = config.pool.resolved(config.concurrency)[2]

    async def next_game() -> ScheduledGame | None:
        """The first queued game that meets no game in flight (waiting while each one
        would); None when the queue is empty. The pools are told of the games coming
        next, to start the spares those need (and none that no game needs)."""
        while queue:
            if (game := flight.take(queue)) is not None:
                prepare_pools(pools, [game, *islice(queue, lookahead)])
                return game
            await flight.changed()
        return None

    cores = sorted(os.sched_getaffinity(0))

    async def worker(slot: int) -> None:
        # each worker plays its games on a core of its own (where cgroups allow): the
        # bots of its game are held to it, so no bot can slow another game's thinking
        core = cores[slot % len(cores)] if config.isolation != "shared" else None
        while (scheduled := await next_game()) is not None:
            outcome = await host_game(pools, job_of(config, seed, scheduled, seats),
                                      scheduled, core, store, flight)
            summary.played += 1
            summary.faults += len(outcome.faults)
            if on_game is not None:
                on_game(scheduled, outcome)

    async with trio.open_nursery() as nursery:
        for slot in range(min(config.concurrency, max(1, len(pending)))):
            nursery.start_soon(worker, slot)
