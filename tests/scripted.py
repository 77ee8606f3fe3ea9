"""A scripted bot: a real gRPC ``BotService`` in the test's own process that follows a
script, so the referee's side of every fault is a deterministic unit test.

Modelled on python-chess's ``MockTransport`` (``mock.expect("uci", ["uciok"])``): the test
says which calls come, in order, and what each gets::

    with scripted_bot() as bot:
        bot.expect("Hello", hello(INFO))
        bot.expect("Play", abort=grpc.StatusCode.UNAVAILABLE, details="gone")
        ...  # drive a BotConnection / RemotePlayer at bot.spec
    bot.check()  # every step taken, no call out of turn

A step answers with a message, aborts with a status (a real status on the wire, as a bot
or its transport would send it), or holds the call unanswered until the caller gives up
(its deadline or a cancel: the caller's clock decides, never a sleep here). A call that
does not match the next step is refused with ``FAILED_PRECONDITION`` and kept in
:attr:`ScriptedBot.problems`, which :meth:`ScriptedBot.check` reports.

The server listens on a unix socket in a short temporary folder and serves the standard
health service too (always SERVING; the arena's channels wait for it and keep one Watch
open), which is not part of the script.
"""

from __future__ import annotations

import tempfile
import threading
from collections import deque
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from arena.model.results import BotInfo
from arena.model.spec import BotSpec
from arena.v1 import bot_pb2
from arena.wire import serde

SERVICE = "arena.v1.BotService"

_REQUESTS: dict[str, tuple[Any, Any]] = {
    "Hello": (bot_pb2.HelloRequest, bot_pb2.HelloResponse),
    "Bid": (bot_pb2.BidRequest, bot_pb2.BidResponse),
    "ChooseTrump": (bot_pb2.ChooseTrumpRequest, bot_pb2.ChooseTrumpResponse),
    "Play": (bot_pb2.PlayRequest, bot_pb2.PlayResponse),
    "RoundEnded": (bot_pb2.RoundEndedRequest, bot_pb2.RoundEndedResponse),
    "GameEnded": (bot_pb2.GameEndedRequest, bot_pb2.GameEndedResponse),
}
"""Each call of the bot protocol: its request and response messages."""


def hello(info: BotInfo) -> bot_pb2.HelloResponse:
    """The Hello answer that says ``info``."""
    return serde.hello_response(info)


@dataclass
class Step:
    """One expected call and what it gets."""

    method: str
    answer: Any = None
    abort: grpc.StatusCode | None = None
    details: str = ""
    hold: bool = False
    taken: threading.Event = field(default_factory=threading.Event)
    """Set once the call arrived (before it is answered)."""
    ended: threading.Event = field(default_factory=threading.Event)
    """Set once the call ended on the server's side (answered, aborted, or given up by
    the caller)."""


@dataclass
class Call:
    """A call the bot received: its method and request."""

    method: str
    request: Any


class ScriptedBot:
    """The script and what happened; see :func:`scripted_bot`."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.spec = BotSpec.parse(address)
        self.calls: list[Call] = []
        self.problems: list[str] = []
        self._steps: deque[Step] = deque()
        self._lock = threading.Lock()

    def expect(self, method: str, answer: Any = None, *, abort: grpc.StatusCode | None = None,
               details: str = "", hold: bool = False) -> Step:
        """The next call is ``method``: answered with ``answer``, aborted with ``abort``
        (and ``details``), or held unanswered until the caller ends it (``hold``)."""
        if method not in _REQUESTS:
            raise ValueError(f"no call {method!r} in the bot protocol")
        if sum((answer is not None, abort is not None, hold)) != 1:
            raise ValueError("a step answers, aborts or holds: exactly one of them")
        step = Step(method, answer, abort, details, hold)
        with self._lock:
            self._steps.append(step)
        return step

    def check(self) -> None:
        """Every step was taken and no call came out of turn (AssertionError if not)."""
        with self._lock:
            left = [s.method for s in self._steps]
        assert not self.problems, self.problems
        assert not left, f"expected calls never came: {left}"

    def _handle(self, method: str, request: Any, context: grpc.ServicerContext) -> Any:
        with self._lock:
            self.calls.append(Call(method, request))
            step = self._steps.popleft() if self._steps else None
            if step is None or step.method != method:
                problem = (f"{method} came, not {step.method}" if step is not None else
                           f"{method} came after the script's end")
                self.problems.append(problem)
                if step is not None:
                    self._steps.appendleft(step)
        if step is None or step.method != method:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"script: {problem}")
        step.taken.set()
        try:
            if step.hold:
                gone = threading.Event()
                context.add_callback(gone.set)  # the caller's deadline or cancel
                gone.wait()
                return _REQUESTS[method][1]()  # nobody reads it
            if step.abort is not None:
                context.abort(step.abort, step.details)
            return step.answer
        finally:
            step.ended.set()

    def _handler(self, method: str) -> grpc.RpcMethodHandler[Any, Any]:
        request, response = _REQUESTS[method]

        def handle(req: Any, context: grpc.ServicerContext) -> Any:
            return self._handle(method, req, context)

        return grpc.unary_unary_rpc_method_handler(
            handle, request_deserializer=request.FromString,
            response_serializer=response.SerializeToString)


@contextmanager
def scripted_bot() -> Iterator[ScriptedBot]:
    """A :class:`ScriptedBot` serving on a unix socket for the block, stopped after it
    (calls still held are cancelled)."""
    with tempfile.TemporaryDirectory(prefix="arena-scripted-", dir="/tmp") as folder:
        bot = ScriptedBot(f"unix:{folder}/bot.sock")
        # threads: the arena keeps one health Watch open per channel, each holding one
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            SERVICE, {m: bot._handler(m) for m in _REQUESTS}),))
        checker = health.HealthServicer()
        checker.set("", health_pb2.HealthCheckResponse.SERVING)
        health_pb2_grpc.add_HealthServicer_to_server(checker, server)
        server.add_insecure_port(bot.address)
        server.start()
        try:
            yield bot
        finally:
            server.stop(None).wait()
