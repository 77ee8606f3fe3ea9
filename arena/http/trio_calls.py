"""Calls from a :class:`arena.http.server.BoundedServer`'s handlers (its asyncio loop) into
a trio loop of another thread, without blocking a thread: :class:`TrioCalls`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

from arena.http.server import Unavailable

_T = TypeVar("_T")


class TrioCalls:
    """Async functions of a trio loop (another thread's) called from a
    :class:`BoundedServer`'s handlers, without blocking a thread: :meth:`serve` (a task of
    that loop) holds the nursery the calls run in; :meth:`call` (in the server's loop)
    starts one there and awaits its value. At most ``most`` calls run at once (a handler
    that gave up waiting leaves its call running to its end): past it, :class:`Unavailable`."""

    def __init__(self, token: trio.lowlevel.TrioToken, most: int = 16) -> None:
        self.token = token
        self.most = most
        self.running = 0
        """Calls started and not yet ended (read and written in the server's loop)."""
        self._nursery: trio.Nursery | None = None

    async def serve(self) -> None:
        """Run the calls until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None

    async def call(self, fn: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """``await fn(*args)`` in the trio loop; :class:`Unavailable` once it stopped, or
        while ``most`` calls run."""
        if self.running >= self.most:
            raise Unavailable("the server is busy; try again")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()

        def settle(value: Any, error: BaseException | None) -> None:
            self.running -= 1
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)

        def back(value: Any, error: BaseException | None) -> None:
            with contextlib.suppress(RuntimeError):  # the server's loop is closed
                loop.call_soon_threadsafe(settle, value, error)

        async def run() -> None:
            try:
                value = await fn(*args)
            except trio.Cancelled:
                back(None, Unavailable("the server is stopping"))
                raise
            except Exception as e:
                back(None, e)
            else:
                back(value, None)

        def start() -> None:
            if self._nursery is None:
                back(None, Unavailable("the server is stopping"))
            else:
                self._nursery.start_soon(run)

        self.running += 1
        try:
            self.token.run_sync_soon(start)
        except trio.RunFinishedError:
            self.running -= 1
            raise Unavailable("the server is stopping") from None
        return await future
