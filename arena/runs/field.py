"""A run's field of bots: each bot as a job's seat (its confinement and what it must
not see), the job of a scheduled game, the pools of the field's external bots and
their hand-shakes, registered in the store. Shared by the tournament, match and
league runners."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import asdict
from pathlib import Path

import trio

from arena import __version__
from arena.model.job import GameJob, SeatJob
from arena.model.spec import command_args
from arena.play.bound import IdleBound
from arena.play.pool import BotPool
from arena.proc.connection import HandshakeError
from arena.proc.gate import own_folders
from arena.runs.config import BotEntry, TournamentConfig
from arena.runs.preamble import (
    RunState,
    TournamentError,
    hidden_paths,
    run_framed,
)
from arena.runs.schedule import ScheduledGame
from arena.runs.store import Store


async def with_field(config: TournamentConfig, store: Store, state: RunState,
                     play: Callable[[dict[str, BotPool]], Awaitable[None]]) -> None:
    """Start the field's bot pools, greet every bot, then ``play(pools)``; end every bot
    process after; all in a run's frame (:func:`arena.runs.preamble.run_framed`:
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
