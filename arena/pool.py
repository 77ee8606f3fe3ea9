"""Bot processes for many games: which process plays which game.

The invariant of the default isolation, ``deal``: a bot process plays one game at a
time and never two games with the same deal (the same deal seed: every rotation of a
duplicate set, and the same deal at other tables). What a bot remembers, in memory or
in its private /tmp, then tells it nothing about the game in front of it.

A :class:`BotPool` keeps a bot's idle processes (frozen) and hands one out per game: one
that has not seen the game's deal, else a spare started ahead of need, else a new one.
A process that has seen every deal of the run, or that failed, is ended. ``game``
isolation ends every process after one game; ``shared`` keeps today's single process
per bot that serves every game, several at once (trusted bots only).

Start-ups happen before a game begins, never on a bot's clock.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import trio

from arena.botproc import BotSpec
from arena.players import BotConnection, HandshakeError
from arena.sandbox import Confinement
from arena.wire import BotInfo


class BotPool:
    """The processes of one external bot, leased one game at a time.

    Use as ``async with BotPool(...) as pool``: :meth:`open` starts the first process and
    checks the hand-shake (the info every later process must repeat); :meth:`lease` and
    :meth:`release` bracket each game.
    """

    def __init__(self, name: str, spec: BotSpec, log_dir: Path, startup_s: float,
                 confinement: Confinement, isolation: str, deals: int,
                 hide: tuple[Path, ...] = (), spares: int = 1, max_idle: int = 8,
                 cwd: Path | None = None) -> None:
        self.name = name
        self.spec = spec
        self.isolation = isolation
        self.deals = deals
        """How many different deals the run has: a process that saw them all is done."""
        self.info: BotInfo | None = None
        self.started = 0
        """Processes started, the first included."""
        self._make: Callable[[bool], BotConnection] = lambda idle: BotConnection(
            name, spec, log_dir, startup_s, cwd, confinement, hide, self.info, idle)
        self._game = ""
        self._max_idle = max_idle
        self._spares_wanted = spares if spec.kind == "cmd" and isolation != "shared" else 0
        self._idle: list[BotConnection] = []
        self._spares: list[BotConnection] = []
        self._starting: list[_Starting] = []
        """Spares still starting, oldest first."""
        self._shared: BotConnection | None = None
        self._nursery: trio.Nursery | None = None
        self._closed = False

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
        self.started += 1
        self.info = await conn.open(game)
        self._game = game
        if self.isolation == "shared" or self.spec.kind != "cmd":
            self._shared = conn
        else:
            self._idle.append(conn)
            self._top_up()
        return self.info

    async def lease(self, deal: int, core: int | None = None) -> BotConnection:
        """A connection for a game of ``deal``, used by nothing else until released. A
        process started for it starts at normal priority, held to the game's ``core``
        (nobody else's), since the game waits for it.

        Raises :class:`HandshakeError` when a new process cannot be started.
        """
        if self._shared is not None:
            return self._shared
        for conn in self._idle:
            if deal not in conn.deals and conn.usable:
                self._idle.remove(conn)
                break
        else:
            conn = await self._fresh(core)
        conn.deals.add(deal)
        conn.games += 1
        return conn

    async def release(self, conn: BotConnection) -> None:
        """Take a connection back after its game: kept for later deals, or ended."""
        if conn is self._shared:
            return
        done = (self.isolation == "game" or not conn.usable or len(conn.deals) >= self.deals
                or self._closed)
        if done:
            await conn.aclose()
        else:
            self._idle.append(conn)
            if len(self._idle) > self._max_idle:  # end the one that can serve fewest deals
                worst = max(self._idle, key=lambda c: len(c.deals))
                self._idle.remove(worst)
                await worst.aclose()
        self._top_up()

    async def _fresh(self, core: int | None) -> BotConnection:
        if self._spares:
            return self._spares.pop(0)
        for starting in self._starting:
            if starting.claimed:
                continue
            # no spare ready, but one is on its way: the game waits for that one, now
            # at normal priority on the game's core (its start so far is not wasted)
            starting.claimed = True
            starting.conn.hurry(core)
            try:
                await starting.done.wait()
            except BaseException:  # the game was called off: it is a spare again
                starting.claimed = False
                raise
            if starting.ok:
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
        """Start spare processes in the background, so a game rarely waits for one."""
        if self._nursery is None or self._closed:
            return
        while (len(self._spares) + sum(not s.claimed for s in self._starting)
               < self._spares_wanted):
            starting = _Starting(self._make(True))
            self._starting.append(starting)
            self._nursery.start_soon(self._start_spare, starting)

    async def _start_spare(self, starting: _Starting) -> None:
        conn = starting.conn
        self.started += 1
        try:
            await conn.open(self._game)
        except HandshakeError:
            return  # a lease starts one itself, and reports the failure in its game
        except BaseException:
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
            await conn.aclose()
        else:
            self._spares.append(conn)

    async def aclose(self) -> None:
        """End every process of the pool."""
        self._closed = True
        conns = [*self._idle, *self._spares]
        if self._shared is not None:
            conns.append(self._shared)
        self._idle, self._spares, self._shared = [], [], None
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for conn in conns:
                    nursery.start_soon(conn.aclose)


class _Starting:
    """A spare process on its way, which a game may claim before it is ready."""

    def __init__(self, conn: BotConnection) -> None:
        self.conn = conn
        self.done = trio.Event()
        self.ok = False
        self.claimed = False
