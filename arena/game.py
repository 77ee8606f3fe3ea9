"""Playing one game from a :class:`~arena.job.GameJob`: the one way a game is played.

:func:`run_game` plays a job between players already seated (the local runner leases
them from its pools); :func:`run_game_blocking` starts the job's own bot processes
(sandboxed, limits applied), plays it, ends them, and returns the outcome: what a Ray
task calls on the node that plays the game.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path

import trio

from arena.botproc import BotSpec, Remote
from arena.bots import make_bot
from arena.job import GameJob, GameOutcome, SeatJob
from arena.players import (
    BotConnection,
    HandshakeError,
    LocalPlayer,
    RemotePlayer,
    UnreachablePlayer,
)
from arena.referee import Player, TimeControl, play_game
from arena.rules import new_game
from arena.sandbox import Confinement, Limits


def builtin_player(job: GameJob, seat: int) -> LocalPlayer:
    """A built-in bot for ``seat``, seeded from the deal, the game (or the job's
    ``bot_seed``) and the seat alone (so it plays the same wherever the game is played)."""
    entry = job.seats[seat]
    return LocalPlayer(make_bot(entry.value, f"{job.deal_seed}/{job.bot_seed or job.game_id}"
                                             f"/{seat}"), entry.name)


def spec_of(seat: SeatJob) -> BotSpec:
    return BotSpec(seat.kind, seat.value, Remote(
        None if seat.tls_ca is None else seat.tls_ca.encode(), seat.server_name,
        seat.token, seat.insecure))


def confinement_of(seat: SeatJob) -> Confinement:
    return Confinement(seat.sandbox, Limits().merged(dict(seat.limits)),
                       tuple(Path(p) for p in seat.read_only), seat.env)


async def run_game(job: GameJob, players: Sequence[Player]) -> GameOutcome:
    """Play ``job`` between ``players`` (by seat) and return its outcome."""
    conns = {p.name: p.connection for p in players if isinstance(p, RemotePlayer)}
    before = {name: conn.restarts for name, conn in conns.items()}
    report = await play_game(new_game(job.game, job.options, job.deal_seed), players,
                             TimeControl(job.move_ms, job.bank_ms, job.max_faults),
                             game_id=job.game_id, table_id=job.table_id,
                             wire_ids=job.wire_ids)
    return GameOutcome(
        job.game_id, report.record, report.latencies_ms, report.cpu_ms,
        bot_infos={name: _info(conn) for name, conn in conns.items() if conn.info},
        restarts={name: conn.restarts - before[name] for name, conn in conns.items()
                  if conn.restarts > before[name]})


def _info(conn: BotConnection) -> dict[str, object]:
    info = asdict(conn.info) if conn.info is not None else {}
    info["games"] = list(info.get("games", ()))
    return info


@asynccontextmanager
async def fresh_players(job: GameJob, log_dir: Path) -> AsyncIterator[list[Player]]:
    """The job's players, each external bot in a process of its own started for this game
    (confined as its seat says) and ended on exit. A bot that cannot start sits at the
    table as unreachable, as with the local runner."""
    seated: list[Player | None] = [None] * len(job.seats)
    conns: list[BotConnection] = []

    async def seat_one(seat: int, entry: SeatJob) -> None:
        _, seated[seat] = await _start(job, entry, log_dir, conns)

    try:
        yield await _seat_all(job, seated, seat_one)
    finally:
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for conn in conns:
                    nursery.start_soon(conn.aclose)


async def _seat_all(job: GameJob, seated: list[Player | None],
                    seat_one: Callable[[int, SeatJob], Awaitable[None]]) -> list[Player]:
    """Fill ``seated``: built-in bots at once, each external one by ``seat_one(seat,
    entry)``, side by side; the players by seat."""
    async with trio.open_nursery() as nursery:
        for seat, entry in enumerate(job.seats):
            if entry.kind == "builtin":
                seated[seat] = builtin_player(job, seat)
            else:
                nursery.start_soon(seat_one, seat, entry)
    return [player for player in seated if player is not None]


async def _start(job: GameJob, entry: SeatJob, log_dir: Path,
                 started: list[BotConnection]) -> tuple[BotConnection, Player]:
    """A process of its own for ``entry``'s bot, confined as the seat says (its
    connection appended to ``started`` before it starts, for the caller to close), and
    the player at its seat: unreachable if it cannot start, as with the local runner."""
    cwd = Path(job.cwd) if job.cwd and Path(job.cwd).is_dir() else None
    conn = BotConnection(entry.name, spec_of(entry), log_dir, job.startup_ms / 1000,
                         cwd=cwd, confinement=confinement_of(entry),
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
    conn = BotConnection(seat.name, spec_of(seat), log_dir, startup_ms / 1000, cwd=cwd,
                         confinement=confinement_of(seat),
                         hide=tuple(Path(p) for p in seat.hide))
    try:
        await conn.open(game)
        return _info(conn)
    finally:
        with trio.CancelScope(shield=True):
            await conn.aclose()


def hello_blocking(seat: SeatJob, game: str, startup_ms: int,
                   cwd: str = "") -> dict[str, object]:
    """Start ``seat``'s bot once, check its hand-shake, end it: its info, or
    ``{"error": "..."}`` (one line naming the bot). Run on a node before the games."""
    with tempfile.TemporaryDirectory(prefix="arena-hello-") as tmp:
        try:
            return trio.run(_hello, seat, game, startup_ms, Path(tmp),
                            Path(cwd) if cwd and Path(cwd).is_dir() else None)
        except HandshakeError as e:
            return {"error": str(e)}


class WorkerPools:
    """Bot processes a long-lived process (a Ray worker) keeps between the games it plays,
    under the ``deal`` invariant of :mod:`arena.pool`: a process plays one game at a time
    and never two games of one deal. Its own trio loop runs in a thread, so the
    connections outlive each game; they end with the process (bubblewrap's
    ``--die-with-parent``) or on :meth:`close`."""

    MAX_IDLE = 4
    """Idle processes kept per bot; past that the one that has seen most deals ends."""

    def __init__(self) -> None:
        self._idle: dict[str, list[BotConnection]] = {}
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        ready = threading.Event()

        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            self._stop = trio.Event()
            ready.set()
            await self._stop.wait()
            with trio.CancelScope(shield=True):
                for conns in self._idle.values():
                    for conn in conns:
                        await conn.aclose()

        self._thread = threading.Thread(target=trio.run, args=(main,), daemon=True,
                                        name="arena-worker-pools")
        self._thread.start()
        ready.wait()

    def play(self, job: GameJob, log_dir: Path) -> GameOutcome:
        """Play ``job`` with kept processes where they may play it, fresh ones otherwise."""
        return trio.from_thread.run(self._play, job, log_dir, trio_token=self._token)

    def close(self) -> None:
        assert self._stop is not None
        trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join()

    async def _play(self, job: GameJob, log_dir: Path) -> GameOutcome:
        seated: list[Player | None] = [None] * len(job.seats)
        leased: list[tuple[str, BotConnection]] = []
        starting: list[BotConnection] = []  # started, not leased: closed at the end

        async def seat_one(seat: int, entry: SeatJob) -> None:
            key = entry.to_key()
            idle = self._idle.setdefault(key, [])
            for conn in idle:
                if job.deal_seed not in conn.deals and conn.usable:
                    idle.remove(conn)
                    seated[seat] = RemotePlayer(conn, entry.name)
                    break
            else:
                conn, seated[seat] = await _start(job, entry, log_dir, starting)
                if isinstance(seated[seat], UnreachablePlayer):
                    return  # closed below
                starting.remove(conn)
            conn.deals.add(job.deal_seed)
            leased.append((key, conn))

        try:
            return await run_game(job, await _seat_all(job, seated, seat_one))
        finally:
            with trio.CancelScope(shield=True):
                for conn in starting:
                    await conn.aclose()
                for key, conn in leased:
                    idle = self._idle.setdefault(key, [])
                    if conn.usable:
                        idle.append(conn)
                    else:
                        await conn.aclose()
                    if len(idle) > self.MAX_IDLE:
                        worst = max(idle, key=lambda c: len(c.deals))
                        idle.remove(worst)
                        await worst.aclose()


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
        _worker_pools = WorkerPools()
    return _worker_pools.play(job, log_dir)
