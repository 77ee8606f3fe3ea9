"""Running a tournament: bots started once and shared, games run concurrently with trio,
every finished game stored at once, and a clean stop on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path

import trio

from arena import __version__
from arena.model.job import GameJob, GameOutcome, SeatJob
from arena.model.spec import command_args
from arena.play.bound import IdleBound
from arena.play.host import host_game
from arena.play.pool import BotPool, DealsInFlight, prepare_pools
from arena.proc.connection import HandshakeError
from arena.proc.gate import own_folders
from arena.tournament.config import BotEntry, TournamentConfig
from arena.tournament.preamble import (
    RunState,
    hidden_paths,
    lane_order,
    run_framed,
    unplayed,
)
from arena.tournament.preamble import TournamentError as TournamentError
from arena.tournament.preamble import stop_on_signal as stop_on_signal
from arena.tournament.schedule import ScheduledGame, schedule, seed_commitment
from arena.tournament.store import Store
from arena.tournament.writer import StoreWriter, store_writer


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
    lane order unless the isolation is ``shared``; :func:`arena.tournament.preamble.unplayed`),
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


async def with_field(config: TournamentConfig, store: Store, state: RunState,
                     play: Callable[[dict[str, BotPool]], Awaitable[None]]) -> None:
    """Start the field's bot pools, greet every bot, then ``play(pools)``; end every bot
    process after; all in a run's frame (:func:`arena.tournament.preamble.run_framed`:
    SIGINT/SIGTERM marks ``state`` interrupted and cancels it all, finished games stay
    stored; ``state.seconds`` is set). A bot that fails its hand-shake raises
    :class:`TournamentError`, once every process has ended."""

    async def body() -> None:
        async with AsyncExitStack() as stack:
            pools = await open_pools(config, stack)
            try:
                await open_all(config, pools, store)
            except TournamentError as e:
                refused = e  # raised once the pools have ended every process
            else:
                await play(pools)
                return
        raise refused

    await run_framed(state, body)


def wire_ids(seed: int, scheduled: ScheduledGame) -> tuple[str, str]:
    """The game and table ids a game's bots are sent: keyed hashes of the schedule id
    under the secret seed. Opaque to the bots (they reveal neither the deal nor the
    rotation, and differ for every game), yet the same when a stopped run is resumed, so
    a bot that seeds itself from the id plays the same game again."""
    key = str(seed).encode()
    return (hmac.new(key, f"game/{scheduled.id}".encode(), hashlib.sha256).hexdigest()[:16],
            hmac.new(key, f"table/{scheduled.id}".encode(), hashlib.sha256).hexdigest()[:16])


def seat_jobs(config: TournamentConfig) -> dict[str, SeatJob]:
    """Each bot of the field as a job's seat: its spec, confinement, and the folders it
    must not see (the output, and every other ``cmd:`` bot's folders)."""
    folders = bot_folders(config)
    seats: dict[str, SeatJob] = {}
    for bot in config.bots:
        c, remote = bot.confinement, bot.spec.remote
        seats[bot.name] = SeatJob(
            bot.name, bot.spec.kind, bot.spec.value, c.sandbox,
            tuple(asdict(c.limits).items()), tuple(str(p) for p in c.read_only), c.env,
            tuple(map(str, hidden_paths(config.output, folders, bot.name))),
            None if remote.tls_ca is None else remote.tls_ca.decode(), remote.server_name,
            remote.token, remote.insecure, c.view, cwd=seat_cwd(config, bot))
    return seats


def job_of(config: TournamentConfig, seed: int, scheduled: ScheduledGame,
           seats: dict[str, SeatJob]) -> GameJob:
    """The job that plays ``scheduled``, wherever it is played."""
    return GameJob(
        config.game, dict(config.options), scheduled.deal_seed, scheduled.id,
        scheduled.table_id, wire_ids(seed, scheduled),
        tuple(seats[name] for name in scheduled.bots), config.move_ms, config.bank_ms,
        config.max_faults, config.startup_ms, config.isolation,
        str((config.output / "logs").absolute()), str(config.folder), config.deals)


def seat_cwd(config: TournamentConfig, bot: BotEntry) -> str:
    """A bot's own working folder for its seat: "" (the job's, the file's folder), or its
    ``cwd`` relative to the file's folder where it lies inside it (so that a Ray node's
    copy of that folder finds it), else absolute."""
    if bot.cwd is None:
        return ""
    if bot.cwd.is_relative_to(config.folder):
        return str(bot.cwd.relative_to(config.folder))
    return str(bot.cwd)


def bot_folders(config: TournamentConfig) -> dict[str, list[Path]]:
    """The folders of each of the field's ``cmd:`` bots (hidden from every other bot)."""
    return {bot.name: own_folders(command_args(bot.spec.value)[1:], bot.cwd or config.folder,
                                  bot.confinement.within)
            for bot in config.bots if bot.spec.kind == "cmd"}


async def open_pools(config: TournamentConfig, stack: AsyncExitStack) -> dict[str, BotPool]:
    """A pool of processes for each of the field's external bots, entered on ``stack``
    (which ends them): each hides the output and the other bots' folders."""
    log_dir = config.output / "logs"
    folders = bot_folders(config)
    pools: dict[str, BotPool] = {}
    bound = IdleBound(config.pool.idle_bytes)  # one for all the pools
    for bot in config.bots:
        if bot.spec.kind != "builtin":
            spares, max_idle, _ = config.pool.resolved(config.concurrency)
            pools[bot.name] = await stack.enter_async_context(BotPool(
                bot.name, bot.spec, log_dir, config.startup_ms / 1000,
                bot.confinement, config.isolation, config.deals,
                hide=hidden_paths(config.output, folders, bot.name),
                spares=spares, max_idle=max_idle, cwd=bot.cwd or config.folder,
                bound=bound))
    return pools


async def open_all(config: TournamentConfig, pools: dict[str, BotPool],
                    store: Store) -> None:
    errors: list[str] = []

    async def open_one(name: str, pool: BotPool) -> None:
        try:
            info = await pool.open(config.game)
        except HandshakeError as e:
            errors.append(f"{config.path}: {e}")
            return
        register_bot(config, store, name, info.version, info.author, info.protocol_version,
                     info.games)

    async with trio.open_nursery() as nursery:
        for name, pool in pools.items():
            nursery.start_soon(open_one, name, pool)
    register_builtins(config, store, errors)


def register_bot(config: TournamentConfig, store: Store, name: str, version: str,
                 author: str, protocol_version: int, games: Sequence[str]) -> None:
    """Store bot ``name`` as its hand-shake described it, with how it is confined."""
    spec = next(b for b in config.bots if b.name == name).spec
    store.set_bot(name, str(spec), version, author, protocol_version, tuple(games),
                  sandboxed=_sandboxed(config, name), isolation=config.isolation,
                  insecure=spec.plain_remote)


def register_builtins(config: TournamentConfig, store: Store, errors: list[str]) -> None:
    """Store the built-in bots; then, if a bot's hand-shake failed (``errors``), raise the
    first of them (by text, so the same field always names the same one)."""
    for bot in config.bots:
        if bot.spec.kind == "builtin":
            store.set_bot(bot.name, str(bot.spec), __version__, "trick-arena", None,
                          ("wizard", "trumps"), sandboxed=True, isolation=config.isolation)
    if errors:
        raise TournamentError(sorted(errors)[0])


def _sandboxed(config: TournamentConfig, name: str) -> bool:
    """Whether the arena confines the bot (built-ins run in the arena; remote bots run on
    their author's machine, out of the arena's reach, and count as not sandboxed)."""
    for bot in config.bots:
        if bot.name == name:
            return bot.spec.kind == "builtin" or (bot.spec.kind == "cmd"
                                                  and bot.confinement.sandbox)
    return False


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
