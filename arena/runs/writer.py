"""The store's writer: one thread that owns the write connection, off the game loop.

A run's games are stored by :class:`StoreWriter`: each write (a game started, a game
finished) is a job for one dedicated thread holding its own connection to the store, and
the game's trio task awaits it on a :class:`trio.Event` that the thread sets through the
run's trio token. So trio's loop never waits for SQLite: not for a write's few
milliseconds, not for a busy timeout, not for a checkpoint. The jobs run one at a time
in the order they are sent, so a game's start is always written before its end, and
the chain is extended in the order the games finish, from the head each write reads in
its own transaction.

A finished game's write is awaited shielded from cancellation (Ctrl-C, a verdict): the
game is stored and its task goes on as after the synchronous write it replaces. Any other
job whose task is cancelled still runs; an error of such a job, which no task is left
to receive, is raised when the writer closes. The writer holds the store's run lock (taken when it
starts, if the store does not hold it yet).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Generic, TypeVar, cast

import trio

from arena.runs.schedule import ScheduledGame
from arena.runs.store import Store

_T = TypeVar("_T")


class _Job(Generic[_T]):
    """One write: ``fn`` run on the writer's store, its value or error handed back."""

    def __init__(self, fn: Callable[[Store], _T], token: trio.lowlevel.TrioToken) -> None:
        self.fn = fn
        self.token = token
        self.done = trio.Event()
        self.value: _T | None = None
        self.error: BaseException | None = None
        self.finished = False
        self.abandoned = False
        """Its task stopped waiting (cancelled): an error goes to :meth:`StoreWriter.aclose`."""


class StoreWriter:
    """The writer thread of ``store``; use :func:`store_writer`."""

    def __init__(self, store: Store) -> None:
        store.claim()  # refused at once if another process runs this store
        self._store = store
        self._jobs: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        self._guard = threading.Lock()
        self._lost: list[BaseException] = []
        self._stopped = trio.Event()
        self._token = trio.lowlevel.current_trio_token()
        self._thread = threading.Thread(target=self._serve, name="arena-store-writer",
                                        daemon=True)
        self._thread.start()

    async def game_started(self, game: ScheduledGame) -> None:
        await self._call(lambda store: store.game_started(game))

    async def game_finished(self, game: ScheduledGame, record: Mapping[str, Any]) -> None:
        """Store a finished game; awaited shielded from cancellation, as the synchronous
        write was: a game whose play ended is stored and its task sees it stored."""
        with trio.CancelScope(shield=True):
            await self._call(lambda store: store.game_finished(game, record))

    async def call(self, fn: Callable[[Store], _T]) -> _T:
        """Run ``fn(store)`` on the writer's thread and connection; its value."""
        return await self._call(fn)

    async def _call(self, fn: Callable[[Store], _T]) -> _T:
        job = _Job(fn, trio.lowlevel.current_trio_token())
        self._jobs.put(job)
        try:
            await job.done.wait()
        except trio.Cancelled:
            with self._guard:
                job.abandoned = True
                if job.finished and job.error is not None:
                    self._lost.append(job.error)
            raise
        if job.error is not None:
            raise job.error
        return cast(_T, job.value)

    def _serve(self) -> None:
        """The thread: its own connection (SQLite objects stay in the thread that made
        them), then the jobs in order until the end mark."""
        store: Store | None = None
        failed: BaseException | None = None
        try:
            store = self._store.writer_copy()
        except BaseException as e:  # every job gets the reason
            failed = e
        try:
            while (job := self._jobs.get()) is not None:
                try:
                    if store is None:
                        assert failed is not None
                        raise failed
                    job.value = job.fn(store)
                except BaseException as e:
                    job.error = e
                with self._guard:
                    job.finished = True
                    if job.abandoned and job.error is not None:
                        self._lost.append(job.error)
                self._wake(job.token, job.done.set)
        finally:
            if store is not None:
                store.close()
            self._wake(self._token, self._stopped.set)

    @staticmethod
    def _wake(token: trio.lowlevel.TrioToken, fn: Callable[[], object]) -> None:
        wake(token, fn)  # (a method: tests/test_races.py holds the wake-up back)

    async def aclose(self, *, raise_lost: bool = True) -> None:
        """Let the thread finish the jobs sent so far and end it (waited for, shielded
        from cancellation: the games it stores are finished ones); then raise the first
        error of a job no task was left to receive (unless ``raise_lost`` is False)."""
        self._jobs.put(None)
        with trio.CancelScope(shield=True):
            await self._stopped.wait()
        if self._lost and raise_lost:
            raise self._lost[0]


@asynccontextmanager
async def store_writer(store: Store) -> AsyncIterator[StoreWriter]:
    """A :class:`StoreWriter` for ``store`` for the block, closed after it."""
    writer = StoreWriter(store)
    try:
        yield writer
    except trio.Cancelled:
        await writer.aclose()  # a write that failed meanwhile is worth more than a stop
        raise
    except BaseException:
        await writer.aclose(raise_lost=False)  # the error that ended the block comes first
        raise
    await writer.aclose()


def wake(token: trio.lowlevel.TrioToken, fn: Callable[[], object]) -> None:
    """Run ``fn`` on the trio loop of ``token`` soon, from a store thread; nothing if that
    run is over (nobody waits). The writer's and the readers' threads hand back so."""
    try:
        token.run_sync_soon(fn)
    except trio.RunFinishedError:
        pass  # the run is over: nobody waits
