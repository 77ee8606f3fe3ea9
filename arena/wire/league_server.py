"""The league service's gRPC server: the ``arena.v1.LeagueService`` servicer over a
:class:`LeagueHandler` (the service's logic, :class:`arena.league_service.service.LeagueService`,
which lives in trio), with health checking and reflection.

**Threads.** The server is grpcio's asyncio server (``grpc.aio``) on an event loop of its
own thread (``league-grpc``), not grpcio's thread-pool server. That one holds a pool thread
for every call in flight, streams included: one author's 64 ``WatchEvents`` streams took
all 64 workers and every other author's calls, ``Submit`` included, were refused
(RESOURCE_EXHAUSTED). Here a call is a coroutine: an event stream waits on a queue of the
loop, a unary call on a future, and neither holds a thread, so no number of streams can
starve the other calls of a worker. A call enters trio through the run's token
(:class:`arena.wire.league_bridge.TrioBridge`): its trio side runs as a task of the
server's nursery, its result or its messages come back through the loop
(``call_soon_threadsafe``), and a call the client ends (or whose deadline passes) cancels
that task. Neither thread ever waits for the other.

**Bounds** (:class:`ServiceCaps`; each refused with RESOURCE_EXHAUSTED and one line naming
the cap): per author, the calls in flight (every call but ``WatchEvents``) and the event
streams open; over all authors, the event streams (each holds two bounded queues). A
stream whose client falls :data:`arena.wire.league_bridge.EVENT_QUEUE` messages behind is
ended; a ``Submit`` must send its header within ``header_timeout_s``. Wrong tokens are
limited per client by the handler (``authenticate``'s ``client``: :func:`client_of` the
call's peer).

Every call but the health check needs ``authorization: Bearer TOKEN`` (checked by the
handler: a missing or unknown token is UNAUTHENTICATED). The server listens on 127.0.0.1
unless told otherwise, and anywhere else only with TLS.
"""

from __future__ import annotations

import asyncio
import ipaddress
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, NoReturn, Protocol, TypeVar
from urllib.parse import unquote

import grpc
import grpc.aio
import trio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from arena.model.errors import one_line
from arena.model.league_api import (
    INVALID_ARGUMENT,
    NOT_FOUND,
    RESOURCE_EXHAUSTED,
    UNAVAILABLE,
    AuthorStatus,
    FieldBot,
    GameSummary,
    LeagueEvent,
    ServiceError,
    Standing,
    SubmitStep,
    TlsFiles,
)
from arena.model.spec import is_loopback
from arena.v1 import league_pb2, league_pb2_grpc
from arena.wire.league_bridge import TrioBridge
from arena.wire.league_convert import (
    CHUNK_BYTES,
    CODES,
    MAX_MESSAGE_BYTES,
    bot_to_pb,
    event_to_pb,
    game_to_pb,
    standing_to_pb,
    status_to_pb,
    step_to_pb,
)

SERVICE_NAME = league_pb2.DESCRIPTOR.services_by_name["LeagueService"].full_name

C = TypeVar("C")


@dataclass(frozen=True, slots=True)
class ServiceCaps:
    """What one author, and all of them, may hold of the server at once."""

    calls_per_author: int = 8
    """Calls of one author in flight at once: every kind but ``WatchEvents`` (a
    ``Submit`` counts for its whole upload and check)."""
    streams_per_author: int = 4
    """``WatchEvents`` streams of one author open at once."""
    streams: int = 1024
    """``WatchEvents`` streams open at once, all authors together (each holds up to
    2 x :data:`arena.wire.league_bridge.EVENT_QUEUE` messages)."""
    header_timeout_s: float = 60.0
    """The longest wait for a ``Submit``'s header."""

    def __post_init__(self) -> None:
        for name in ("calls_per_author", "streams_per_author", "streams"):
            if getattr(self, name) < 1:
                raise ValueError(f"service caps: {name} must be at least 1")
        if not self.header_timeout_s > 0:
            raise ValueError("service caps: header_timeout_s must be positive")


class LeagueHandler(Protocol[C]):
    """What the servicer calls: the service's logic, in trio. ``C`` is its caller (an
    author); every method raises :class:`~arena.model.league_api.ServiceError` to refuse."""

    async def authenticate(self, token: str | None, client: str) -> C:
        """The caller whose token this is; ``client`` names where the call comes from
        (for the limit on wrong tokens)."""
        ...

    def name_of(self, caller: C) -> str:
        """The caller's name, which the caps count by (pure: called on the loop's thread)."""
        ...

    async def submit(self, caller: C, size: int, chunks: AsyncIterator[bytes],
                     report: Callable[[SubmitStep], Awaitable[None]]) -> SubmitStep: ...

    async def retire(self, caller: C, name: str) -> FieldBot: ...

    async def status(self, caller: C) -> AuthorStatus: ...

    async def standings(self) -> Sequence[Standing]: ...

    async def games_of(self, caller: C, limit: int = 100) -> Sequence[GameSummary]: ...

    async def log_file(self, caller: C, game_id: str) -> Path: ...

    def events(self, caller: C | None) -> AbstractAsyncContextManager[
            AsyncIterator[LeagueEvent]]: ...


def bearer_token(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The call's ``authorization: Bearer TOKEN``, or None."""
    for key, value in context.invocation_metadata() or ():
        if key.lower() == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def client_of(peer: str) -> str:
    """Where a call comes from, for the limit on wrong tokens: the peer's IP address
    without its port (``ipv4:192.0.2.7:50312`` is ``192.0.2.7``); for IPv6, its /64
    (one machine usually holds a whole /64, so a new address per guess gains nothing); the
    peer as given otherwise (a unix socket's ``unix:...``)."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return peer
    host = unquote(rest).rpartition(":")[0].strip("[]")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host or peer
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


# -- the servicer ------------------------------------------------------------------------


Context = grpc.aio.ServicerContext[Any, Any]


class _Servicer(league_pb2_grpc.LeagueServiceServicer, Generic[C]):
    """Runs on the loop's thread: the counts need no lock."""

    def __init__(self, handler: LeagueHandler[C], bridge: TrioBridge, caps: ServiceCaps) -> None:
        self.handler = handler
        self.trio = bridge
        self.caps = caps
        self.calls: dict[str, int] = {}
        self.streams: dict[str, int] = {}
        self.all_streams = 0

    async def _abort(self, context: Context, error: ServiceError) -> NoReturn:
        await context.abort(CODES.get(error.code, grpc.StatusCode.UNKNOWN), str(error))

    async def _caller(self, context: Context) -> C:
        caller: C = await self._unary(context, self.handler.authenticate,
                                      bearer_token(context), client_of(context.peer()))
        return caller

    @asynccontextmanager
    async def _held(self, context: Context, caller: C, stream: bool) -> AsyncIterator[None]:
        """The call counted against its author's caps while it runs; refused past them."""
        name = self.handler.name_of(caller)
        table = self.streams if stream else self.calls
        cap = self.caps.streams_per_author if stream else self.caps.calls_per_author
        held = table.get(name, 0)
        if held >= cap:
            what = (f"event streams: {held} open" if stream
                    else f"calls at once: {held} in flight")
            await self._abort(context, ServiceError(
                RESOURCE_EXHAUSTED, f"too many {what} for author {name}, the cap is {cap} "
                                    f"per author"))
        if stream and self.all_streams >= self.caps.streams:
            await self._abort(context, ServiceError(
                RESOURCE_EXHAUSTED, f"too many event streams: the league serves "
                                    f"{self.all_streams}, its cap; try again later"))
        table[name] = held + 1
        self.all_streams += int(stream)
        try:
            yield
        finally:
            self.all_streams -= int(stream)
            table[name] -= 1
            if not table[name]:
                del table[name]

    async def _unary(self, context: Context, fn: Callable[..., Awaitable[Any]],
                     *args: Any) -> Any:
        try:
            return await self.trio.call(fn, *args)
        except ServiceError as e:
            await self._abort(context, e)
        except Exception as e:  # one line to the client, as a stream does
            await self._abort(context, ServiceError(
                UNAVAILABLE, f"internal error: {type(e).__name__}: {one_line(str(e))}"))

    async def Submit(self, request_iterator: AsyncIterator[league_pb2.SubmitRequest],
                     context: Context) -> AsyncIterator[league_pb2.SubmitResponse]:
        caller = await self._caller(context)
        async with self._held(context, caller, stream=False):
            requests = aiter(request_iterator)
            try:
                first = await asyncio.wait_for(anext(requests, None),
                                               self.caps.header_timeout_s)
            except TimeoutError:
                await self._abort(context, ServiceError(
                    INVALID_ARGUMENT, f"no submission header within "
                                      f"{self.caps.header_timeout_s:g} s"))
            if first is None or first.WhichOneof("content") != "header":
                await self._abort(context, ServiceError(
                    INVALID_ARGUMENT, "a submission starts with its header"))
            header = first.header
            if header.format not in ("", "tar.gz"):
                await self._abort(context, ServiceError(
                    INVALID_ARGUMENT, f"unknown bundle format {header.format[:20]!r}; use "
                                      f"tar.gz"))
            send, receive = trio.open_memory_channel[bytes](4)
            cut: list[ServiceError] = []

            async def chunks() -> AsyncIterator[bytes]:
                async for chunk in receive:
                    yield chunk
                if cut:  # the client went away mid-upload, or sent something else
                    raise cut[0]

            async def body(put: Callable[[Any], None]) -> None:
                async def report(step: SubmitStep) -> None:
                    put(step_to_pb(step))
                try:
                    await self.handler.submit(caller, header.size, chunks(), report)
                finally:
                    receive.close()

            async def feed() -> None:
                try:
                    async for request in requests:
                        if request.WhichOneof("content") != "chunk":
                            cut.append(ServiceError(INVALID_ARGUMENT,
                                                    "only chunks follow the header"))
                            return
                        try:
                            await self.trio.call(send.send, request.chunk)
                        except (trio.BrokenResourceError, trio.ClosedResourceError):
                            return  # refused already: the rest is not read
                except Exception:
                    cut.append(ServiceError(UNAVAILABLE, "the upload was cut off"))
                finally:
                    self.trio.soon(send.close)

            responses = self.trio.stream(body)
            feeder = asyncio.create_task(feed())
            try:
                async for message in responses:
                    yield message
            except ServiceError as e:
                await self._abort(context, e)
            finally:
                feeder.cancel()
                responses.cancel()

    async def Retire(self, request: league_pb2.RetireRequest,
                     context: Context) -> league_pb2.RetireResponse:
        caller = await self._caller(context)
        async with self._held(context, caller, stream=False):
            bot = await self._unary(context, self.handler.retire, caller, request.name)
        return league_pb2.RetireResponse(bot=bot_to_pb(bot))

    async def GetStatus(self, request: league_pb2.GetStatusRequest,
                        context: Context) -> league_pb2.GetStatusResponse:
        caller = await self._caller(context)
        async with self._held(context, caller, stream=False):
            status = await self._unary(context, self.handler.status, caller)
        return status_to_pb(status)

    async def GetStandings(self, request: league_pb2.GetStandingsRequest,
                           context: Context) -> league_pb2.GetStandingsResponse:
        caller = await self._caller(context)
        async with self._held(context, caller, stream=False):
            rows = await self._unary(context, self.handler.standings)
        return league_pb2.GetStandingsResponse(standings=[standing_to_pb(r) for r in rows])

    async def ListGames(self, request: league_pb2.ListGamesRequest,
                        context: Context) -> league_pb2.ListGamesResponse:
        caller = await self._caller(context)
        async with self._held(context, caller, stream=False):
            games = await self._unary(context, self.handler.games_of, caller, request.limit)
        return league_pb2.ListGamesResponse(games=[game_to_pb(g) for g in games])

    async def GetLog(self, request: league_pb2.GetLogRequest,
                     context: Context) -> AsyncIterator[league_pb2.GetLogResponse]:
        caller = await self._caller(context)
        async with self._held(context, caller, stream=False):
            path: Path = await self._unary(context, self.handler.log_file, caller,
                                           request.game_id)
            try:
                log = await asyncio.to_thread(path.open, "rb")
            except OSError as e:
                await self._abort(context, ServiceError(
                    NOT_FOUND, f"the log cannot be read: {e.strerror}"))
            try:
                while chunk := await asyncio.to_thread(log.read, CHUNK_BYTES):
                    yield league_pb2.GetLogResponse(chunk=chunk)
            except OSError as e:
                await self._abort(context, ServiceError(
                    NOT_FOUND, f"the log cannot be read: {e.strerror}"))
            finally:
                log.close()

    async def WatchEvents(self, request: league_pb2.WatchEventsRequest,
                          context: Context) -> AsyncIterator[league_pb2.WatchEventsResponse]:
        caller = await self._caller(context)
        async with self._held(context, caller, stream=True):
            async def body(put: Callable[[Any], None]) -> None:
                async with self.handler.events(caller) as events:
                    async for event in events:
                        put(event_to_pb(event))

            messages = self.trio.stream(body)
            try:
                async for message in messages:
                    yield message
            except ServiceError as e:
                await self._abort(context, e)
            finally:
                messages.cancel()


# -- the server --------------------------------------------------------------------------


def address_problem(address: str, tls: TlsFiles | None) -> str | None:
    """Why the league may not listen on ``address`` (HOST:PORT), or None: any address but
    loopback needs TLS."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return f"listen address {address!r}: expected HOST:PORT (e.g. 127.0.0.1:50051)"
    if tls is None and not is_loopback(host.strip("[]")):
        return (f"listen address {address!r} is not loopback: serving beyond this machine "
                f"needs TLS (--tls-cert and --tls-key)")
    return None


def read_pem(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise ValueError(f"cannot read the TLS {what} {path}: {e.strerror}") from None


@dataclass
class LeagueServer:
    """A running gRPC server of the league service, on its loop's thread."""

    port: int
    tls: bool
    loop: asyncio.AbstractEventLoop
    server: grpc.aio.Server
    health: health.aio.HealthServicer
    thread: threading.Thread
    finished: asyncio.Event

    def stop(self, grace_s: float = 1.0) -> None:
        """Refuse new calls, give those in flight ``grace_s``, cancel the rest, and end the
        loop's thread. It blocks: call it from a thread (``trio.to_thread``), never from
        trio's, which the calls being ended still need."""
        async def down() -> None:
            try:
                await self.health.enter_graceful_shutdown()
                await self.server.stop(grace_s)
            finally:
                self.finished.set()

        try:
            asyncio.run_coroutine_threadsafe(down(), self.loop).result(grace_s + 30)
        except RuntimeError:
            pass  # stopped already: the loop is closed
        self.thread.join(30)


def start_server(handler: LeagueHandler[Any], address: str, tls: TlsFiles | None,
                 spawn: Callable[..., None], token: trio.lowlevel.TrioToken,
                 caps: ServiceCaps = ServiceCaps()) -> LeagueServer:
    """Serve ``handler`` on ``address``, the calls entering the trio run of ``token``,
    with ``spawn`` a nursery's ``start_soon`` for their tasks. It blocks while the server
    starts on its own thread: call it from a thread (``trio.to_thread``). ValueError (one
    line) for an address it may not or cannot listen on."""
    problem = address_problem(address, tls)
    if problem is not None:
        raise ValueError(problem)
    credentials = None
    if tls is not None:
        credentials = grpc.ssl_server_credentials(
            [(read_pem(tls.key, "key"), read_pem(tls.cert, "certificate"))])
    started: Future[LeagueServer] = Future()

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        finished = asyncio.Event()
        try:
            server = grpc.aio.server(options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 0)])
            league_pb2_grpc.add_LeagueServiceServicer_to_server(
                _Servicer(handler, TrioBridge(token, spawn, loop), caps), server)
            health_servicer = health.aio.HealthServicer()
            health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
            reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME,
                                                 reflection.SERVICE_NAME), server)
            try:
                port = (server.add_secure_port(address, credentials)
                        if credentials is not None else server.add_insecure_port(address))
            except RuntimeError as e:
                raise ValueError(f"cannot listen on {address}: {e}") from None
            await server.start()
            for service in ("", SERVICE_NAME):
                await health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
        except BaseException as e:
            started.set_exception(e)
            return
        started.set_result(LeagueServer(port, credentials is not None, loop, server,
                                        health_servicer, threading.current_thread(),
                                        finished))
        await finished.wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), name="league-grpc",
                              daemon=True)
    thread.start()
    try:
        return started.result(timeout=60)
    except BaseException:
        thread.join(10)
        raise
