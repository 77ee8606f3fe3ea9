"""The league service on the wire: the ``arena.v1.LeagueService`` servicer, its server,
the client ``arena submit`` uses, and the conversions between its messages and the values
of :mod:`arena.model.league_api`.

The servicer calls a :class:`LeagueHandler` (the service's logic,
:class:`arena.league.service.LeagueService`, which lives in trio). grpcio serves each call
on a thread of its pool; the servicer enters trio through the run's token
(``trio.from_thread``): a unary call waits for its trio function; a streaming call runs
its trio side as a task of the server's nursery and passes messages through a queue, and
a call the client ends (or whose deadline passes) cancels that task. Every call but the
health check needs ``authorization: Bearer TOKEN`` (checked by the handler: a missing or
unknown token is UNAUTHENTICATED). The server listens on 127.0.0.1 unless told otherwise,
and anywhere else only with TLS.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from concurrent import futures
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Generic, Protocol, TypeVar

import grpc
import trio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from arena.model.league_api import (
    ACTIVE,
    BOT_JOINED,
    BOT_RETIRED,
    CHECK,
    DONE,
    FAILED_CHECKS,
    FAILED_PRECONDITION,
    GAME_FINISHED,
    GAME_PROGRESS,
    GAME_STARTED,
    INVALID_ARGUMENT,
    NOT_FOUND,
    PERMISSION_DENIED,
    RECEIVED,
    REFUSED,
    RESOURCE_EXHAUSTED,
    RETIRED,
    STANDINGS,
    SUBMISSION,
    UNAUTHENTICATED,
    UNAVAILABLE,
    UNPACKED,
    AuthorLimits,
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

CHUNK_BYTES = 1 << 20
"""The largest chunk of a submission or a log (one message)."""
MAX_MESSAGE_BYTES = CHUNK_BYTES + (64 << 10)
MAX_WORKERS = 64
"""Calls served at once (each streaming call holds a thread); more are RESOURCE_EXHAUSTED."""
EVENT_QUEUE = 256
SERVICE_NAME = league_pb2.DESCRIPTOR.services_by_name["LeagueService"].full_name

C = TypeVar("C")


class LeagueHandler(Protocol[C]):
    """What the servicer calls: the service's logic, in trio. ``C`` is its caller (an
    author); every method raises :class:`~arena.model.league_api.ServiceError` to refuse."""

    def authenticate(self, token: str | None) -> C: ...

    async def submit(self, caller: C, size: int, chunks: AsyncIterator[bytes],
                     report: Callable[[SubmitStep], Awaitable[None]]) -> SubmitStep: ...

    async def retire(self, caller: C, name: str) -> FieldBot: ...

    async def status(self, caller: C) -> AuthorStatus: ...

    async def standings(self) -> Sequence[Standing]: ...

    async def games_of(self, caller: C, limit: int = 100) -> Sequence[GameSummary]: ...

    async def log_file(self, caller: C, game_id: str) -> Path: ...

    def events(self, caller: C | None) -> AbstractAsyncContextManager[
            AsyncIterator[LeagueEvent]]: ...


# -- conversions ----------------------------------------------------------------------

_STAGES = {RECEIVED: league_pb2.SUBMIT_STAGE_RECEIVED, UNPACKED: league_pb2.SUBMIT_STAGE_UNPACKED,
           CHECK: league_pb2.SUBMIT_STAGE_CHECK, DONE: league_pb2.SUBMIT_STAGE_DONE}
_VERDICTS = {"": league_pb2.SUBMIT_VERDICT_UNSPECIFIED,
             "accepted": league_pb2.SUBMIT_VERDICT_ACCEPTED,
             REFUSED: league_pb2.SUBMIT_VERDICT_REFUSED,
             FAILED_CHECKS: league_pb2.SUBMIT_VERDICT_FAILED_CHECKS}
_STATUSES = {ACTIVE: league_pb2.BOT_STATUS_ACTIVE, RETIRED: league_pb2.BOT_STATUS_RETIRED}
_EVENTS = {GAME_STARTED: league_pb2.EVENT_KIND_GAME_STARTED,
           GAME_PROGRESS: league_pb2.EVENT_KIND_GAME_PROGRESS,
           GAME_FINISHED: league_pb2.EVENT_KIND_GAME_FINISHED,
           STANDINGS: league_pb2.EVENT_KIND_STANDINGS,
           BOT_JOINED: league_pb2.EVENT_KIND_BOT_JOINED,
           BOT_RETIRED: league_pb2.EVENT_KIND_BOT_RETIRED,
           SUBMISSION: league_pb2.EVENT_KIND_SUBMISSION}
_CODES = {UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
          PERMISSION_DENIED: grpc.StatusCode.PERMISSION_DENIED,
          NOT_FOUND: grpc.StatusCode.NOT_FOUND,
          RESOURCE_EXHAUSTED: grpc.StatusCode.RESOURCE_EXHAUSTED,
          INVALID_ARGUMENT: grpc.StatusCode.INVALID_ARGUMENT,
          FAILED_PRECONDITION: grpc.StatusCode.FAILED_PRECONDITION,
          UNAVAILABLE: grpc.StatusCode.UNAVAILABLE}


def _back(table: dict[str, Any]) -> dict[int, str]:
    return {int(v): k for k, v in table.items()}


def step_to_pb(step: SubmitStep) -> league_pb2.SubmitResponse:
    return league_pb2.SubmitResponse(
        stage=_STAGES.get(step.stage, league_pb2.SUBMIT_STAGE_UNSPECIFIED), text=step.text,
        verdict=_VERDICTS.get(step.verdict, league_pb2.SUBMIT_VERDICT_UNSPECIFIED),
        name=step.name, version=step.version, bundle_sha256=step.bundle, ok=step.ok)


def step_from_pb(msg: league_pb2.SubmitResponse) -> SubmitStep:
    return SubmitStep(_back(_STAGES).get(msg.stage, ""), msg.text,
                      _back(_VERDICTS).get(msg.verdict, ""), msg.name, msg.version,
                      msg.bundle_sha256, msg.ok)


def bot_to_pb(bot: FieldBot) -> league_pb2.FieldBot:
    return league_pb2.FieldBot(author=bot.author, name=bot.name, version=bot.version,
                               status=_STATUSES.get(bot.status,
                                                    league_pb2.BOT_STATUS_UNSPECIFIED),
                               bundle_sha256=bot.bundle)


def bot_from_pb(msg: league_pb2.FieldBot) -> FieldBot:
    return FieldBot(msg.author, msg.name, msg.version,
                    _back(_STATUSES).get(msg.status, "unknown"), msg.bundle_sha256)


def status_to_pb(status: AuthorStatus) -> league_pb2.GetStatusResponse:
    limits = status.limits
    return league_pb2.GetStatusResponse(
        author=status.author, bots=[bot_to_pb(b) for b in status.bots],
        limits=league_pb2.AuthorLimits(
            submissions_per_hour=limits.submissions_per_hour,
            submissions_last_hour=status.submissions_last_hour,
            max_bundle_bytes=limits.max_bundle_bytes,
            max_unpacked_bytes=limits.max_unpacked_bytes, max_files=limits.max_files),
        runtimes=list(status.runtimes))


def status_from_pb(msg: league_pb2.GetStatusResponse) -> AuthorStatus:
    limits = msg.limits
    return AuthorStatus(msg.author, AuthorLimits(limits.submissions_per_hour,
                                                 limits.max_bundle_bytes,
                                                 limits.max_unpacked_bytes, limits.max_files),
                        limits.submissions_last_hour, tuple(msg.runtimes),
                        tuple(bot_from_pb(b) for b in msg.bots))


def standing_to_pb(row: Standing) -> league_pb2.Standing:
    return league_pb2.Standing(rank=row.rank, name=row.name, author=row.author,
                               version=row.version, elo=row.elo, sigma=row.sigma,
                               games=row.games)


def standing_from_pb(msg: league_pb2.Standing) -> Standing:
    return Standing(msg.rank, msg.name, msg.author, msg.version, msg.elo, msg.sigma, msg.games)


def game_to_pb(game: GameSummary) -> league_pb2.GameSummary:
    return league_pb2.GameSummary(game_id=game.game_id, game=game.game, seats=list(game.seats),
                                  totals=list(game.totals), places=list(game.places),
                                  faults=list(game.faults),
                                  finished_unix_ms=round(game.finished * 1000))


def game_from_pb(msg: league_pb2.GameSummary) -> GameSummary:
    return GameSummary(msg.game_id, msg.game, tuple(msg.seats), tuple(msg.totals),
                       tuple(msg.places), tuple(msg.faults), msg.finished_unix_ms / 1000)


def event_to_pb(event: LeagueEvent) -> league_pb2.WatchEventsResponse:
    return league_pb2.WatchEventsResponse(
        kind=_EVENTS.get(event.kind, league_pb2.EVENT_KIND_UNSPECIFIED),
        time_unix_ms=round(event.time * 1000), game_id=event.game_id, bots=list(event.bots),
        text=event.text)


def event_from_pb(msg: league_pb2.WatchEventsResponse) -> LeagueEvent:
    return LeagueEvent(_back(_EVENTS).get(msg.kind, "unknown"), msg.time_unix_ms / 1000,
                       msg.text, msg.game_id, tuple(msg.bots))


# -- the server -----------------------------------------------------------------------


def bearer_token(context: grpc.ServicerContext) -> str | None:
    """The call's ``authorization: Bearer TOKEN``, or None."""
    for key, value in context.invocation_metadata() or ():
        if key.lower() == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


_END = object()


class _Servicer(league_pb2_grpc.LeagueServiceServicer, Generic[C]):
    def __init__(self, handler: LeagueHandler[C], token: trio.lowlevel.TrioToken,
                 spawn: Callable[..., None]) -> None:
        self.handler = handler
        self.token = token
        self.spawn = spawn

    # each call enters trio through the run's token
    def _sync(self, fn: Callable[..., Any], *args: Any) -> Any:
        return trio.from_thread.run_sync(fn, *args, trio_token=self.token)

    def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return trio.from_thread.run(fn, *args, trio_token=self.token)

    def _abort(self, context: grpc.ServicerContext, error: ServiceError) -> Any:
        context.abort(_CODES.get(error.code, grpc.StatusCode.UNKNOWN), str(error))

    def _caller(self, context: grpc.ServicerContext) -> C:
        try:
            caller: C = self._sync(self.handler.authenticate, bearer_token(context))
        except ServiceError as e:
            self._abort(context, e)
            raise
        except trio.RunFinishedError:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the league is stopping")
            raise
        return caller

    def _unary(self, context: grpc.ServicerContext, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return self._run(fn, *args)
        except ServiceError as e:
            return self._abort(context, e)
        except trio.RunFinishedError:
            return context.abort(grpc.StatusCode.UNAVAILABLE, "the league is stopping")

    def _stream(self, context: grpc.ServicerContext,
                body: Callable[[Callable[[Any], None]], Any]) -> Iterator[Any]:
        """Start ``body(put)`` as a trio task now; the messages it puts, until it returns.
        The task is cancelled when the call ends first."""
        out: queue.Queue[Any] = queue.Queue(EVENT_QUEUE)
        scope_box: list[trio.CancelScope] = []

        def put(item: Any) -> None:
            try:
                out.put_nowait(item)
            except queue.Full:  # the client does not keep up: its stream ends
                raise trio.BrokenResourceError("the client does not keep up") from None

        async def task() -> None:
            with trio.CancelScope() as scope:
                scope_box.append(scope)
                try:
                    await body(put)
                except ServiceError as e:
                    out.put(e)
                except trio.BrokenResourceError:
                    pass
                except Exception as e:  # one line to the client; never a dead thread
                    out.put(ServiceError(UNAVAILABLE, f"internal error: "
                                                      f"{type(e).__name__}: {e}"))
            out.put(_END)

        def cancel() -> None:
            def now() -> None:
                if scope_box:
                    scope_box[0].cancel()
            try:
                trio.from_thread.run_sync(now, trio_token=self.token)
            except trio.RunFinishedError:
                pass

        try:
            self._sync(self.spawn, task)
        except trio.RunFinishedError:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the league is stopping")
        context.add_callback(cancel)

        def drain() -> Iterator[Any]:
            try:
                while True:
                    try:
                        item = out.get(timeout=1.0)
                    except queue.Empty:
                        if not context.is_active():
                            return
                        continue
                    if item is _END:
                        return
                    if isinstance(item, ServiceError):
                        self._abort(context, item)
                    yield item
            finally:
                cancel()

        return drain()

    def Submit(self, request_iterator: Any, context: grpc.ServicerContext) -> Any:
        caller = self._caller(context)
        first = next(request_iterator, None)
        if first is None or first.WhichOneof("content") != "header":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "a submission starts with its header")
        header = first.header
        if header.format not in ("", "tar.gz"):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"unknown bundle format {header.format[:20]!r}; use tar.gz")
        send, receive = trio.open_memory_channel[bytes](4)
        aborted = threading.Event()

        async def chunks() -> AsyncIterator[bytes]:
            async for chunk in receive:
                yield chunk
            if aborted.is_set():  # the client went away mid-upload: nothing to keep
                raise ServiceError(UNAVAILABLE, "the upload was cut off")

        async def body(put: Callable[[Any], None]) -> None:
            async def report(step: SubmitStep) -> None:
                put(step_to_pb(step))
            try:
                await self.handler.submit(caller, header.size, chunks(), report)
            finally:
                receive.close()

        responses = self._stream(context, body)
        feeding = True
        try:
            for request in request_iterator:
                if request.WhichOneof("content") != "chunk":
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                  "only chunks follow the header")
                try:
                    self._run(send.send, request.chunk)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    feeding = False  # refused already: the rest is not read
                    break
        except grpc.RpcError:
            aborted.set()
        finally:
            if feeding and not context.is_active():
                aborted.set()
            try:
                self._sync(send.close)
            except trio.RunFinishedError:
                pass
        yield from responses

    def Retire(self, request: league_pb2.RetireRequest,
               context: grpc.ServicerContext) -> league_pb2.RetireResponse:
        caller = self._caller(context)
        bot = self._unary(context, self.handler.retire, caller, request.name)
        return league_pb2.RetireResponse(bot=bot_to_pb(bot))

    def GetStatus(self, request: league_pb2.GetStatusRequest,
                  context: grpc.ServicerContext) -> league_pb2.GetStatusResponse:
        caller = self._caller(context)
        return status_to_pb(self._unary(context, self.handler.status, caller))

    def GetStandings(self, request: league_pb2.GetStandingsRequest,
                     context: grpc.ServicerContext) -> league_pb2.GetStandingsResponse:
        self._caller(context)
        rows = self._unary(context, self.handler.standings)
        return league_pb2.GetStandingsResponse(standings=[standing_to_pb(r) for r in rows])

    def ListGames(self, request: league_pb2.ListGamesRequest,
                  context: grpc.ServicerContext) -> league_pb2.ListGamesResponse:
        caller = self._caller(context)
        games = self._unary(context, self.handler.games_of, caller, request.limit)
        return league_pb2.ListGamesResponse(games=[game_to_pb(g) for g in games])

    def GetLog(self, request: league_pb2.GetLogRequest,
               context: grpc.ServicerContext) -> Iterator[league_pb2.GetLogResponse]:
        caller = self._caller(context)
        path: Path = self._unary(context, self.handler.log_file, caller, request.game_id)
        try:
            with open(path, "rb") as f:
                while chunk := f.read(CHUNK_BYTES):
                    yield league_pb2.GetLogResponse(chunk=chunk)
        except OSError as e:
            context.abort(grpc.StatusCode.NOT_FOUND, f"the log cannot be read: {e.strerror}")

    def WatchEvents(self, request: league_pb2.WatchEventsRequest,
                    context: grpc.ServicerContext) -> Iterator[league_pb2.WatchEventsResponse]:
        caller = self._caller(context)

        async def body(put: Callable[[Any], None]) -> None:
            async with self.handler.events(caller) as events:
                async for event in events:
                    put(event_to_pb(event))

        yield from self._stream(context, body)


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
    """A running gRPC server of the league service."""

    server: grpc.Server
    port: int
    tls: bool
    health: health.HealthServicer

    def stop(self, grace_s: float = 1.0) -> None:
        self.health.enter_graceful_shutdown()
        self.server.stop(grace=grace_s).wait()


def start_server(handler: LeagueHandler[Any], address: str, tls: TlsFiles | None,
                 spawn: Callable[..., None], max_workers: int = MAX_WORKERS) -> LeagueServer:
    """Serve ``handler`` on ``address``; call from trio (its token is taken), with
    ``spawn`` a nursery's ``start_soon`` for the streaming calls' tasks. ValueError (one
    line) for an address it may not or cannot listen on."""
    problem = address_problem(address, tls)
    if problem is not None:
        raise ValueError(problem)
    credentials = None
    if tls is not None:
        credentials = grpc.ssl_server_credentials(
            [(read_pem(tls.key, "key"), read_pem(tls.cert, "certificate"))])
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="league-grpc"),
        maximum_concurrent_rpcs=max_workers,
        options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                 ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                 ("grpc.so_reuseport", 0)])
    league_pb2_grpc.add_LeagueServiceServicer_to_server(
        _Servicer(handler, trio.lowlevel.current_trio_token(), spawn), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME,
                                         reflection.SERVICE_NAME), server)
    try:
        port = (server.add_secure_port(address, credentials) if credentials is not None
                else server.add_insecure_port(address))
    except RuntimeError as e:
        raise ValueError(f"cannot listen on {address}: {e}") from None
    server.start()
    for service in ("", SERVICE_NAME):
        health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
    return LeagueServer(server, port, credentials is not None, health_servicer)


# -- the client -----------------------------------------------------------------------


class LeagueCallError(RuntimeError):
    """A call the league refused or that failed: ``code`` (the gRPC status name) and one
    line."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _call_error(error: grpc.RpcError, target: str) -> LeagueCallError:
    code = error.code() if callable(getattr(error, "code", None)) else None
    details = error.details() if callable(getattr(error, "details", None)) else str(error)
    text = " ".join(str(details or "").split())[:300]
    name = code.name if code is not None else "UNKNOWN"
    if code is grpc.StatusCode.UNAVAILABLE:
        if "CERTIFICATE_VERIFY_FAILED" in text:
            text = f"TLS: the league's certificate is not signed by a CA we trust ({text})"
        else:
            text = f"cannot reach the league at {target}: {text}"
    return LeagueCallError(name, text)


class LeagueClient:
    """An author's connection to a league: ``target`` HOST:PORT, with TLS when ``tls`` (the
    CA certificates to trust, None for the system's) and the author's ``token`` on every
    call."""

    def __init__(self, target: str, token: str, tls: bool = False, ca: bytes | None = None,
                 server_name: str = "", timeout_s: float = 30.0) -> None:
        self.target = target
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES), ("grpc.enable_retries", 0)]
        if server_name:
            options.append(("grpc.ssl_target_name_override", server_name))
        if tls:
            self.channel = grpc.secure_channel(
                target, grpc.ssl_channel_credentials(root_certificates=ca), options=options)
        else:
            self.channel = grpc.insecure_channel(target, options=options)
        self.stub = league_pb2_grpc.LeagueServiceStub(self.channel)
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.timeout_s = timeout_s

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> LeagueClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, archive: IO[bytes], size: int,
               timeout_s: float = 900.0) -> Iterator[SubmitStep]:
        """Send the bundle ``archive`` (``size`` bytes) in chunks; its progress, step by
        step, the verdict last."""
        def requests() -> Iterator[league_pb2.SubmitRequest]:
            yield league_pb2.SubmitRequest(header=league_pb2.SubmitHeader(size=size,
                                                                           format="tar.gz"))
            while chunk := archive.read(CHUNK_BYTES):
                yield league_pb2.SubmitRequest(chunk=chunk)

        call = self.stub.Submit(requests(), timeout=timeout_s, metadata=self.metadata)
        try:
            for msg in call:
                yield step_from_pb(msg)
        except grpc.RpcError as e:
            raise _call_error(e, self.target) from None
        finally:
            call.cancel()

    def _unary(self, method: Any, request: Any) -> Any:
        try:
            return method(request, timeout=self.timeout_s, metadata=self.metadata)
        except grpc.RpcError as e:
            raise _call_error(e, self.target) from None

    def status(self) -> AuthorStatus:
        return status_from_pb(self._unary(self.stub.GetStatus, league_pb2.GetStatusRequest()))

    def standings(self) -> list[Standing]:
        reply = self._unary(self.stub.GetStandings, league_pb2.GetStandingsRequest())
        return [standing_from_pb(r) for r in reply.standings]

    def games(self, limit: int = 0) -> list[GameSummary]:
        reply = self._unary(self.stub.ListGames, league_pb2.ListGamesRequest(limit=limit))
        return [game_from_pb(g) for g in reply.games]

    def retire(self, name: str) -> FieldBot:
        reply = self._unary(self.stub.Retire, league_pb2.RetireRequest(name=name))
        return bot_from_pb(reply.bot)

    def log(self, game_id: str) -> bytes:
        try:
            return b"".join(m.chunk for m in self.stub.GetLog(
                league_pb2.GetLogRequest(game_id=game_id), timeout=self.timeout_s,
                metadata=self.metadata))
        except grpc.RpcError as e:
            raise _call_error(e, self.target) from None

    def events(self, timeout_s: float | None = None) -> Iterator[LeagueEvent]:
        """The league's events from now on, until ``timeout_s`` (None: for ever)."""
        call = self.stub.WatchEvents(league_pb2.WatchEventsRequest(), timeout=timeout_s,
                                     metadata=self.metadata)
        try:
            for msg in call:
                yield event_from_pb(msg)
        except grpc.RpcError as e:
            if e.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
                return
            raise _call_error(e, self.target) from None
        finally:
            call.cancel()

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        """Wait until the channel connects (LeagueCallError when it does not)."""
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout_s)
        except grpc.FutureTimeoutError:
            raise LeagueCallError("UNAVAILABLE", f"cannot reach the league at {self.target} "
                                                 f"within {timeout_s:g} s") from None

