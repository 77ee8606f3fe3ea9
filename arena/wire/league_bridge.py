"""Between grpc.aio's event loop and trio, for the league service's server
(:mod:`arena.wire.league_server`): a call of the loop runs as a task of the trio run's
nursery (:class:`TrioBridge`), its result or its messages come back through the loop
(``call_soon_threadsafe``), and a call the client ends cancels that task. Neither thread
ever waits for the other."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from arena.model.errors import one_line
from arena.model.league_api import RESOURCE_EXHAUSTED, UNAVAILABLE, ServiceError

EVENT_QUEUE = 256
"""Messages a stream's client may fall behind by before the stream is ended."""
STOPPING = "the league is stopping"

_END = object()


class _Job:
    """A trio task started for a call. Touched on the trio thread only."""

    __slots__ = ("cancelled", "scope")

    def __init__(self) -> None:
        self.scope: trio.CancelScope | None = None
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        if self.scope is not None:
            self.scope.cancel()


class _Pipe:
    """Messages from a trio task to a coroutine of the loop, in order; at most
    :data:`EVENT_QUEUE` waiting: past that the stream ends with an error. Touched on the
    loop's thread only."""

    def __init__(self) -> None:
        self.items: deque[Any] = deque()
        self.ready = asyncio.Event()
        self.closed = False

    def offer(self, item: Any) -> None:
        if self.closed:
            return
        if item is _END or isinstance(item, ServiceError):
            self.closed = True
        elif len(self.items) >= EVENT_QUEUE:
            self.items.clear()
            self.closed = True
            item = ServiceError(RESOURCE_EXHAUSTED, f"this stream fell {EVENT_QUEUE} "
                                                    f"messages behind and was ended; open "
                                                    f"it again")
        self.items.append(item)
        self.ready.set()

    async def get(self) -> Any:
        while not self.items:
            self.ready.clear()
            await self.ready.wait()
        return self.items.popleft()


class _Stream:
    """The messages a trio task puts, as the loop's async iterator; :meth:`cancel` ends
    the task (it ends on its own when the messages do)."""

    def __init__(self, bridge: TrioBridge, pipe: _Pipe, job: _Job) -> None:
        self.bridge = bridge
        self.pipe = pipe
        self.job = job

    def __aiter__(self) -> _Stream:
        return self

    async def __anext__(self) -> Any:
        item = await self.pipe.get()
        if item is _END:
            raise StopAsyncIteration
        if isinstance(item, ServiceError):
            raise item
        return item

    def cancel(self) -> None:
        self.bridge.soon(self.job.cancel)


class TrioBridge:
    """Calls from the loop into the trio run of ``token``: each runs as a task of the
    nursery (``spawn``); its result, error or messages come back through ``loop``."""

    def __init__(self, token: trio.lowlevel.TrioToken, spawn: Callable[..., None],
                 loop: asyncio.AbstractEventLoop) -> None:
        self.token = token
        self.spawn = spawn
        self.loop = loop

    def post(self, fn: Callable[..., None], *args: Any) -> bool:
        """Run ``fn(*args)`` on the loop soon (from the trio thread); False once the loop
        is closed."""
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            return False
        return True

    def soon(self, fn: Callable[..., object], *args: Any) -> None:
        """Run the plain ``fn(*args)`` on the trio thread soon; nothing if trio is done."""
        try:
            self.token.run_sync_soon(fn, *args)
        except trio.RunFinishedError:
            pass

    def _start(self, body: Callable[[], Awaitable[None]], done: Callable[[bool], None]
               ) -> _Job:
        """Start ``body()`` as a task of the nursery; ``done(finished)`` on the trio thread
        when it ends (False: cancelled, or never started because the league is stopping)."""
        job = _Job()

        async def task() -> None:
            finished = False
            try:
                with trio.CancelScope() as scope:
                    job.scope = scope
                    if job.cancelled:
                        scope.cancel()
                    await body()
                    finished = True
            finally:
                done(finished)

        def start() -> None:
            try:
                self.spawn(task)
            except RuntimeError:  # the nursery is closed: the league is stopping
                done(False)

        try:
            self.token.run_sync_soon(start)
        except trio.RunFinishedError:
            raise ServiceError(UNAVAILABLE, STOPPING) from None
        return job

    async def call(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """``await fn(*args)`` in trio; its value, or its exception raised here. Cancelling
        the caller cancels the trio task."""
        result: asyncio.Future[Any] = self.loop.create_future()
        outcome: list[tuple[bool, Any]] = []

        def settle() -> None:
            if result.done():
                return
            if not outcome:
                result.set_exception(ServiceError(UNAVAILABLE, STOPPING))
            elif outcome[0][0]:
                result.set_result(outcome[0][1])
            else:
                result.set_exception(outcome[0][1])

        async def body() -> None:
            try:
                outcome.append((True, await fn(*args)))
            except Exception as e:
                outcome.append((False, e))

        def done(finished: bool) -> None:
            self.post(settle)

        job = self._start(body, done)
        try:
            return await result
        except asyncio.CancelledError:
            self.soon(job.cancel)
            raise

    def stream(self, body: Callable[[Callable[[Any], None]], Awaitable[None]]) -> _Stream:
        """Start ``body(put)`` in trio now; the messages it puts, in order, until it
        returns (a ServiceError it raises ends the stream with that error)."""
        pipe = _Pipe()

        def put(item: Any) -> None:
            if not self.post(pipe.offer, item):
                raise trio.BrokenResourceError("the server has stopped")

        async def run() -> None:
            try:
                await body(put)
            except ServiceError as e:
                self.post(pipe.offer, e)
            except trio.BrokenResourceError:
                pass
            except Exception as e:  # one line to the client; never a dead stream
                self.post(pipe.offer, ServiceError(
                    UNAVAILABLE, f"internal error: {type(e).__name__}: {one_line(str(e))}"))

        def done(finished: bool) -> None:
            self.post(pipe.offer, _END if finished else ServiceError(UNAVAILABLE, STOPPING))

        return _Stream(self, pipe, self._start(run, done))
