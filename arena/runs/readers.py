"""The store's readers: a few threads with read-only connections, apart from the writer.

What a running league's pages and service read (the field, the standings' names, a bot's
totals, a game's record, an author's games) is a job for :class:`StoreReaders`: one of
its threads runs it on its own read-only connection (:meth:`Store.open_readonly`; the
store is in WAL mode, so readers never wait for the writer nor hold it up), inside one
read transaction (the job sees one state of the store), and the caller's trio task
awaits it on a :class:`trio.Event` set through its trio token. So a page view costs the
game loop a queue put and a wake-up, and costs the writer thread nothing: a game's
``game_finished`` never waits behind a page. A job's parsing (records, JSON) is done in
the reader thread too: what comes back to the loop is ready to use.

A job whose task is cancelled still runs to its end; its value is dropped.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import trio

from arena.runs.store import Store
from arena.runs.writer import wake

_T = TypeVar("_T")

READERS = 2
"""Reader threads (connections) of a running league."""


class _Job(Generic[_T]):
    def __init__(self, fn: Callable[[Store], _T], token: trio.lowlevel.TrioToken) -> None:
        self.fn = fn
        self.token = token
        self.done = trio.Event()
        self.value: _T | None = None
        self.error: BaseException | None = None


class StoreReaders:
    """``threads`` reader threads of the store in ``folder``; use :func:`store_readers`."""

    def __init__(self, folder: Path, threads: int = READERS) -> None:
        self.folder = folder
        self._jobs: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        self._token = trio.lowlevel.current_trio_token()
        self._stopped = [trio.Event() for _ in range(threads)]
        self.threads = [threading.Thread(target=self._serve, args=(stopped,), daemon=True,
                                         name=f"arena-store-reader-{i}")
                        for i, stopped in enumerate(self._stopped)]
        self.jobs_run = 0
        for thread in self.threads:
            thread.start()

    async def call(self, fn: Callable[[Store], _T]) -> _T:
        """``fn(store)`` on a reader's thread and read-only connection, in one read
        transaction; its value (or its error)."""
        job = _Job(fn, trio.lowlevel.current_trio_token())
        self._jobs.put(job)
        await job.done.wait()
        if job.error is not None:
            raise job.error
        return cast(_T, job.value)

    def _serve(self, stopped: trio.Event) -> None:
        store: Store | None = None
        failed: BaseException | None = None
        try:
            store = Store.open_readonly(self.folder)
        except BaseException as e:  # every job gets the reason
            failed = e
        try:
            while (job := self._jobs.get()) is not None:
                try:
                    if store is None:
                        assert failed is not None
                        raise failed
                    with store.snapshot():
                        job.value = job.fn(store)
                    self.jobs_run += 1
                except BaseException as e:
                    job.error = e
                wake(job.token, job.done.set)
        finally:
            if store is not None:
                store.close()
            wake(self._token, stopped.set)

    async def aclose(self) -> None:
        """End the threads once the jobs sent so far are done (waited for, shielded)."""
        for _ in self.threads:
            self._jobs.put(None)
        with trio.CancelScope(shield=True):
            for stopped in self._stopped:
                await stopped.wait()


@asynccontextmanager
async def store_readers(folder: Path, threads: int = READERS,
                        ) -> AsyncIterator[StoreReaders]:
    """A :class:`StoreReaders` of the store in ``folder`` for the block, closed after."""
    readers = StoreReaders(folder, threads)
    try:
        yield readers
    finally:
        await readers.aclose()
