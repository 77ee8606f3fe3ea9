"""Calling grpcio's synchronous stubs from trio without a thread per call.

grpcio has no trio API. :func:`unary_call` starts the call with the stub's ``.future``,
and the future's done-callback (which runs on grpcio's channel thread) wakes the trio
task through the run's token. A trio cancellation cancels the call, so the bot sees
CANCELLED at once. Every call has a deadline. docs/architecture.md ("Calling gRPC from
trio") gives the measurements behind this choice.
"""

from __future__ import annotations

import time
from typing import Any

import grpc
import trio


async def unary_call(method: Any, request: Any, timeout: float) -> Any:
    """Call the unary ``method`` (a stub attribute) with ``request`` and a deadline in seconds.

    Returns the response; raises :class:`grpc.RpcError` as the blocking call would.
    """
    return (await timed_unary_call(method, request, timeout))[0]


async def timed_unary_call(method: Any, request: Any, timeout: float) -> tuple[Any, float]:
    """:func:`unary_call`, and how long the call itself took, in seconds: from its start
    to its answer on grpcio's thread, before the trio task gets to run again (so a busy
    trio thread does not lengthen it)."""
    token = trio.lowlevel.current_trio_token()
    event = trio.Event()
    ended: list[float] = []

    def done(_future: Any) -> None:
        ended.append(time.perf_counter())
        try:
            token.run_sync_soon(event.set)
        except trio.RunFinishedError:  # the trio run ended before the call did
            pass

    started = time.perf_counter()
    future = method.future(request, timeout=timeout)
    future.add_done_callback(done)
    try:
        await event.wait()
    except BaseException:
        future.cancel()
        raise
    took = (ended[0] if ended else time.perf_counter()) - started
    return future.result(), took


def rpc_code(error: grpc.RpcError) -> grpc.StatusCode | None:
    """The status code of a failed call, or None when it has none."""
    code = getattr(error, "code", None)
    return code() if callable(code) else None


def rpc_details(error: grpc.RpcError) -> str:
    """The status details of a failed call, on one line."""
    details = getattr(error, "details", None)
    text = details() if callable(details) else str(error)
    return " ".join(str(text or "").split())[:300]
