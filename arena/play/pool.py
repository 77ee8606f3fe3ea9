"""Bot processes for many games: which process plays which game.

The invariant of the default isolation, ``deal``: a bot process plays one game at a
time and never two games with the same deal (the same deal seed: every rotation of a
duplicate set, and the same deal at other tables). What a bot remembers, in memory or
in its private /tmp, then tells it nothing about the game in front of it.

A :class:`DealLedger` holds the rule; a :class:`BotPool` keeps a bot's idle processes
(frozen) and hands one out per game: one that has not seen the game's deal, else a
spare started ahead of need, else a new one. It is the one pool of every runner: a
tournament, ``arena match`` and the league on this machine, and a Ray node's game host
(:class:`~arena.play.worker.WorkerPools`) for the games it is given.
A process that has seen every deal of the run, or that failed, is ended. ``game``
isolation ends every process after one game; ``shared`` keeps today's single process
per bot that serves every game, several at once (trusted bots only).

Start-ups happen before a game begins, never on a bot's clock.

An :class:`~arena.play.bound.IdleBound` caps the processes all pools of a run keep idle
or start ahead, together, by the machine's memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol, TypeVar

import trio

from arena.model.job import GameJob, SeatJob
from arena.model.limits import Confinement
from arena.model.results import BotInfo
from arena.model.spec import BotSpec
from arena.play import bound as _bound
from arena.play.bound import MIB, IdleBound
from arena.play.players import RemotePlayer, UnreachablePlayer
from arena.play.referee import Player
from arena.play.seats import seat_all
from arena.proc.connection import BotConnection, HandshakeError
from arena.proc.logs import LogFolder

DEALS_FOREVER = 1 << 62
"""A pool's ``deals`` where its processes never run out of deals: a league's (each set
has its own), a Ray node's for a run that did not say how many it has."""


class DealLedger:
    """The ``deal`` invariant, in one place, for the local pool and a Ray worker alike:
    the idle processes of one bot, which of them may play a game of a deal (one that has
    not seen it, and still works), and which to end when too many are idle (the one that
    has seen most deals: it can serve fewest)."""

    def __init__(self, max_idle: int) -> None:
        self.max_idle = max_idle
        self.idle: list[BotConnection] = []

    def take(self, deal: int) -> BotConnection | None:
        """An idle process that may play a game of ``deal``, no longer idle; or None."""
        for conn in self.idle:
            if deal not in conn.deals and conn.usable:
                self.idle.remove(conn)
                return conn
        return None

    @staticmethod
    def lease(conn: BotConnection, deal: int) -> None:
        """``conn`` plays a game of ``deal``: it may never play that deal again."""
        conn.deals.add(deal)
        conn.games += 1

    def put_back(self, conn: BotConnection) -> BotConnection | None:
        """Keep ``conn`` idle after its game; the process to end now (one too many), or
        None."""
        self.idle.append(conn)
        if len(self.idle) <= self.max_idle:
            return None
        worst = max(self.idle, key=lambda c: len(c.deals))
        self.idle.remove(worst)
        return worst

    def clear(self) -> list[BotConnection]:
        """Every idle process, forgotten (for the caller to end)."""
        idle, self.idle = self.idle, []
        return idle


class Dealt(Protocol):
    """A game as :class:`DealsInFlight` sees it (a scheduled game of any runner)."""

    @property
    def deal_seed(self) -> int: ...

    @property
    def bots(self) -> tuple[str, ...]: ...


G = TypeVar("G", bound=Dealt)


class DealsInFlight:
    """The rule between games in flight, for ``deal`` and ``game`` isolation: no two
    games in flight share a deal and a bot process's bot.

    Two processes of one bot that play the same deal at once (two rotations of a
    duplicate set, or the same deal at two tables) hold different hands of the same
    cards at the same moment. They share the machine's caches (the page cache of the
    bot's own files, the cache of directory entries), which no call refused by the
    seccomp filter is needed to time: one could tell the other its hand. So a runner
    starts a game only when :meth:`clashes` says no, and waits for :meth:`changed`
    otherwise. ``watched``: the bots the rule is for (those with processes of their own;
    the built-in bots play inside the arena)."""

    def __init__(self, watched: Callable[[str], bool]) -> None:
        self.watched = watched
        self._live: dict[int, tuple[object, frozenset[str]]] = {}
        self._tokens = 0
        self._changed = trio.Event()

    def clashes(self, deal: object, bots: tuple[str, ...]) -> bool:
        """Whether a game of ``deal`` with ``bots`` would meet a game in flight."""
        mine = {b for b in bots if self.watched(b)}
        return bool(mine) and any(d == deal and not mine.isdisjoint(b)
                                  for d, b in self._live.values())

    def take(self, queue: deque[G]) -> G | None:
        """The first game of ``queue`` that meets no game in flight, taken out of it (near
        the front as a rule: what clashes is in flight); None if every one would."""
        for i, game in enumerate(queue):
            if not self.clashes(game.deal_seed, game.bots):
                del queue[i]
                return game
        return None

    def enter(self, deal: object, bots: tuple[str, ...]) -> int:
        """A game of ``deal`` with ``bots`` starts; its token for :meth:`leave`."""
        self._tokens += 1
        self._live[self._tokens] = (deal, frozenset(b for b in bots if self.watched(b)))
        return self._tokens

    def leave(self, token: int) -> None:
        """The game of ``token`` ended (or was dropped): wake whoever waits."""
        self._live.pop(token, None)
        self._changed.set()
        self._changed = trio.Event()

    async def changed(self) -> None:
        """Wait until a game leaves."""
        await self._changed.wait()


class BotPool:
    """The processes of one external bot, leased one game at a time.

    Use as ``async with BotPool(...) as pool``: :meth:`open` starts the first process and
    checks the hand-shake (the info every later process must repeat); :meth:`lease` and
    :meth:`release` bracket each game.
    """

    def __init__(self, name: str, spec: BotSpec, log_dir: Path, startup_s: float,
                 confinement: Confinement, isolation: str, deals: int,
                 hide: tuple[Path, ...] = (), spares: int = 1, max_idle: int = 8,
                 cwd: Path | None = None, bound: IdleBound | None = None) -> None:
        """``spares``: the most processes this pool starts ahead of a game at once, for
        the games :meth:`prepare` says are coming (none is started for nothing);
        ``max_idle``: the most it keeps idle between games (past it, the one that has seen
        most deals ends); ``bound``: the memory all pools of the run keep idle and spare
        processes in (:class:`IdleBound`; None: no bound but these)."""
        self.name = name
        self.spec = spec
        self.isolation = isolation
        self.deals = deals
        """How many different deals the run has: a process that saw them all is done."""
        self.info: BotInfo | None = None
        self.started = 0
        """Processes started, the first included."""
        logs = LogFolder(log_dir)
        self._make: Callable[[bool], BotConnection] = lambda idle: BotConnection(
            name, spec, logs, startup_s, cwd, confinement, hide, self.info, idle)
        self._game = ""
        self._spares_cap = spares if spec.kind == "cmd" and isolation != "shared" else 0
        self._leased: set[BotConnection] = set()
        """Processes in a game now (back to the idle ones when it ends)."""
        self._spares_wanted = 0
        """How many spares the coming games need (:meth:`prepare`), at most the cap."""
        self._ledger = DealLedger(max_idle)
        self._spares: list[BotConnection] = []
        self._starting: list[_Starting] = []
        """Spares still starting, oldest first."""
        self._shared: BotConnection | None = None
        self._nursery: trio.Nursery | None = None
        self._closed = False
        self._bound = bound if bound is not None else IdleBound(None)
        self._cost = (confinement.limits.memory_mb or 1024) * MIB
        """What one process counts against the bound: the bot's memory limit."""

    async def __aenter__(self) -> BotPool:
        self._nursery_manager = trio.open_nursery()
        self._nursery = await self._nursery_manager.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closed = True
        assert self._nursery is not None
        self._nursery.cancel_scope.cancel()
        try:
            await self._nursery_manager.__aexit__(None, None, None)
        finally:  # even when the run around it is cancelled (shielded inside)
            await self.aclose()

    @property
    def shared(self) -> BotConnection | None:
        """The one connection of ``shared`` isolation (or of a bot the arena does not
        start), which serves every game; None under ``deal`` and ``game``."""
        return self._shared

    async def open(self, game: str) -> BotInfo:
        """Start the first process and check its hand-shake; :class:`HandshakeError`."""
        conn = self._make(False)
        counted = self.spec.kind == "cmd" and self.isolation != "shared"
        if counted:
            await self._end(await self._bound.open_first(self._cost))
        self.started += 1
        try:
            self.info = await conn.open(game)
        finally:
            if counted:
                self._bound.opened(self._cost)
        self._game = game
        if self.isolation == "shared" or self.spec.kind != "cmd":
            self._shared = conn
        else:
            cost = await self._idle_cost(conn)
            self._ledger.idle.append(conn)
            await self._end(self._bound.keep(self, conn, cost))
            self._top_up()
        return self.info

    def prepare(self, deals: Sequence[int], now: int = 1) -> None:
        """The bot's coming games, by their deals (the next few of the queue, in order;
        the first ``now`` of them are being seated now): start a spare for each that no
        process could play (each plays at most one of them, and none a deal it saw): for
        the games seated now an idle one, for the later ones also one in a game now,
        which will be idle again by then. At most the pool's cap of spares, and no more
        than that (a spare no game needs is never started: on a busy machine they took
        a sixth of the processes started and never played)."""
        if self._spares_cap == 0:
            return
        free = [c for c in self._ledger.idle if c.usable]
        later = [c for c in self._leased if c.usable and len(c.deals) < self.deals]
        needed = 0
        for i, deal in enumerate(deals):
            pool = free if i < now else free + later
            fit = next((c for c in pool if deal not in c.deals), None)
            if fit is None:
                needed += 1
            elif fit in free:
                free.remove(fit)
            else:
                later.remove(fit)
        self._spares_wanted = min(needed, self._spares_cap)
        self._top_up()

    async def lease(self, deal: int, core: int | None = None) -> BotConnection:
        """A connection for a game of ``deal``, used by nothing else until released. A
        process started for it starts at normal priority, held to the game's ``core``
        (nobody else's), since the game waits for it.

        Raises :class:`HandshakeError` when a new process cannot be started.
        """
        if self._shared is not None:
            return self._shared
        conn = self._ledger.take(deal)
        if conn is not None:
            self._bound.drop(conn)
        else:
            conn = await self._fresh(core)
        self._ledger.lease(conn, deal)
        self._leased.add(conn)
        return conn

    async def release(self, conn: BotConnection) -> None:
        """Take a connection back after its game: kept for later deals, or ended."""
        if conn is self._shared:
            return
        self._leased.discard(conn)
        done = (self.isolation == "game" or not conn.usable or len(conn.deals) >= self.deals
                or self._closed)
        if done:
            # its cgroup reclaimed before this returns, not on a thread of its own: the
            # bot's next game (of this deal, once this one has left the flight) may start
            # a process that looks for the pages this one brought in (issue 35)
            await conn.aclose(background=False)
        else:
            # the page cache and the directory entries it brought in go before its next
            # game (another rotation of the deal may then meet what it left: issue 17);
            # a process still holding pages then (locked, pinned) is ended: it keeps
            # them for a later process of its bot to read (issue 35)
            if await conn.reclaim() is not None:
                await conn.aclose(background=False)  # its pages gone before the next game
            else:
                cost = await self._idle_cost(conn)
                extra = self._ledger.put_back(conn)
                if extra is not None:
                    self._bound.drop(extra)
                    await extra.aclose()
                if extra is not conn:
                    await self._end(self._bound.keep(self, conn, cost))
        self._top_up()

    async def _idle_cost(self, conn: BotConnection) -> int:
        """What ``conn``, about to go idle, counts against the bound: the memory its
        process holds now (stopped, after the reclaim: it cannot grow while idle, since
        it is frozen), at least :data:`~arena.play.bound.IDLE_FLOOR` and at most the
        bot's limit; the limit where nothing measures it (rlimits only). A process
        leased again counts among the processes in games, at its limit
        (:func:`~arena.play.bound.idle_budget`)."""
        if self._bound.limit is None:
            return self._cost
        held = await conn.memory_bytes()
        if held is None:
            return self._cost
        return min(self._cost, max(_bound.IDLE_FLOOR, held))

    def _forget(self, conn: BotConnection) -> None:
        """The bound ends ``conn``, idle in this pool: it is idle no more."""
        if conn in self._ledger.idle:
            self._ledger.idle.remove(conn)

    @staticmethod
    async def _end(conns: Sequence[BotConnection]) -> None:
        """End processes the bound took out of their pools (idle, so at once)."""
        for conn in conns:
            await conn.aclose()

    async def _fresh(self, core: int | None) -> BotConnection:
        if self._spares:
            self._spares_wanted = max(0, self._spares_wanted - 1)
            self._bound.unreserve(self._cost)
            return self._spares.pop(0)
        for starting in self._starting:
            if starting.claimed:
                continue
            # no spare ready, but one is on its way: the game waits for that one, now
            # at normal priority on the game's core (its start so far is not wasted)
            starting.claimed = True
            self._bound.unreserve(self._cost)  # in a game from now on, not a spare
            starting.conn.hurry(core)
            try:
                await starting.done.wait()
            except BaseException:  # the game was called off: it is a spare again
                starting.claimed = False
                if not starting.done.is_set():
                    self._bound.recount(self._cost)  # _start_spare keeps it
                elif starting.ok and not self._closed and self._nursery is not None:
                    # its start ended in the step the game was called off, and
                    # _start_spare left it to this claim: it is a ready spare now
                    self._bound.recount(self._cost)
                    self._spares.append(starting.conn)
                elif starting.ok and self._nursery is not None:
                    self._nursery.start_soon(starting.conn.aclose)  # the pool is closing
                raise
            if starting.ok:
                self._spares_wanted = max(0, self._spares_wanted - 1)
                self._top_up()
                return starting.conn
            break  # it could not start: try once more, and report the failure
        # nothing on its way: start one now rather than wait for a spare at idle priority
        conn = self._make(False)
        conn.pin(core)
        self.started += 1
        await conn.open(self._game)
        self._top_up()
        return conn

    def _top_up(self) -> None:
        """Start the spare processes the coming games need (:meth:`prepare`), in the
        background, so a game rarely waits for one."""
        if self._nursery is None or self._closed:
            return
        while (len(self._spares) + sum(not s.claimed for s in self._starting)
               < self._spares_wanted):
            ended = self._bound.reserve(self._cost)
            if ended is None:
                return  # no room under the machine's bound: a lease starts one then
            for conn in ended:  # idle, their ends need no wait
                self._nursery.start_soon(conn.aclose)
            starting = _Starting(self._make(True))
            self._starting.append(starting)
            self.started += 1
            self._nursery.start_soon(self._start_spare, starting)

    async def _start_spare(self, starting: _Starting) -> None:
        conn = starting.conn
        try:
            await conn.open(self._game)
        except HandshakeError:
            if not starting.claimed:
                self._bound.unreserve(self._cost)
            return  # a lease starts one itself, and reports the failure in its game
        except BaseException:
            if not starting.claimed:
                self._bound.unreserve(self._cost)
            await conn.aclose()
            raise
        else:
            starting.ok = True
        finally:
            self._starting.remove(starting)
            starting.done.set()
        if starting.claimed:
            return  # a game took it while it started
        if self._closed:
            self._bound.unreserve(self._cost)
            await conn.aclose()
        else:
            self._spares.append(conn)

    async def aclose(self) -> None:
        """End every process of the pool."""
        self._closed = True
        conns = [*self._ledger.clear(), *self._spares]
        for conn in conns:
            self._bound.drop(conn)
        for _ in self._spares:
            self._bound.unreserve(self._cost)
        if self._shared is not None:
            conns.append(self._shared)
        self._spares, self._shared = [], None
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for conn in conns:
                    nursery.start_soon(conn.aclose)


class RefusedPool(BotPool):
    """The place of a bot whose pool could not start its first process: every lease
    fails with that reason, so its seat is played as unreachable (``crash`` faults), as
    a seat whose process cannot start (:func:`leased_players`). A league keeps one for a
    set that must be finished; a Ray node's game host for the game in front of it."""

    def __init__(self, name: str, reason: str) -> None:  # no processes: no pool's state
        self.name = name
        self.reason = reason

    def prepare(self, deals: Sequence[int], now: int = 1) -> None:
        """No process to start ahead."""

    async def lease(self, deal: int, core: int | None = None) -> BotConnection:
        raise HandshakeError(self.reason)


def prepare_pools(pools: Mapping[str, BotPool], coming: Sequence[Dealt]) -> None:
    """Tell each pool the deals of its bot's coming games (``coming``: the game being
    seated now, then the next few of a runner's queue, in order), so that it starts the
    spares they need, and only those."""
    deals: dict[str, list[int]] = {}
    now: dict[str, int] = {}
    for i, game in enumerate(coming):
        for name in game.bots:
            if name in pools:
                deals.setdefault(name, []).append(game.deal_seed)
                if i == 0:
                    now[name] = 1
    for name, pool in pools.items():
        pool.prepare(deals.get(name, []), now.get(name, 0))


@asynccontextmanager
async def leased_players(pools: Mapping[str, BotPool], job: GameJob,
                         core: int | None) -> AsyncIterator[list[Player]]:
    """The players of ``job`` by seat, each external bot's process leased from its pool
    (held to ``core``) and released on exit whatever happens; a bot whose process cannot
    start sits at the table as unreachable. The processes start side by side."""
    leased: list[tuple[BotPool, BotConnection]] = []

    async def lease(seat: int, entry: SeatJob) -> Player:
        pool = pools[entry.name]
        try:
            conn = await pool.lease(job.deal_seed, core)
        except HandshakeError as e:
            return UnreachablePlayer(entry.name, f"cannot start a process for this game: {e}")
        leased.append((pool, conn))
        if conn is not pool.shared:
            conn.pin(core)
        return RemotePlayer(conn, entry.name)

    try:
        yield await seat_all(job.seats, job.deal_seed, lease)
    finally:
        with trio.CancelScope(shield=True):
            for pool, conn in leased:
                await pool.release(conn)


class _Starting:
    """A spare process on its way, which a game may claim before it is ready."""

    def __init__(self, conn: BotConnection) -> None:
        self.conn = conn
        self.done = trio.Event()
        self.ok = False
        self.claimed = False
