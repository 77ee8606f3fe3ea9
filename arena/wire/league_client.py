"""The client of the league service, which ``arena submit`` uses: an author's connection
(:class:`LeagueClient`, their token on every call) and the one-line errors of refused or
failed calls (:class:`LeagueCallError`). It imports nothing of the server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import grpc

from arena.model.league_api import (
    AuthorStatus,
    FieldBot,
    GameSummary,
    LeagueEvent,
    Standing,
    SubmitStep,
)
from arena.v1 import league_pb2, league_pb2_grpc
from arena.wire.league_convert import (
    CHUNK_BYTES,
    MAX_MESSAGE_BYTES,
    bot_from_pb,
    event_from_pb,
    game_from_pb,
    standing_from_pb,
    status_from_pb,
    step_from_pb,
)


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
