"""The referee's calls to one bot: domain values in, domain values out.

A :class:`BotClient` wraps the generated stub of one channel. Every call has a deadline
and is awaited from trio without a thread (:mod:`.trio_grpc`). A call that fails on the
wire raises :class:`CallFailed` with the status's name, an answer that is not what the
protocol allows raises :class:`~arena.wire.serde.WireError`: the layers above turn them
into faults and never see gRPC or protobuf.
"""

from __future__ import annotations

from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from arena.model.results import BotInfo, GameResult, RoundResult
from arena.rules import Decision, View
from arena.v1 import bot_pb2_grpc
from arena.wire.channels import Channel
from arena.wire.serde import (
    action_from_response,
    bot_info_from_response,
    decision_request,
    game_ended_request,
    hello_request,
    round_ended_request,
)
from arena.wire.trio_grpc import rpc_code, rpc_details, timed_unary_call, unary_call


class CallFailed(Exception):
    """A call to a bot failed on the wire.

    ``code`` is the gRPC status name (``DEADLINE_EXCEEDED``, ``UNAVAILABLE``,
    ``UNAUTHENTICATED``, ...; ``UNKNOWN`` when the failure has none), ``details`` the
    status text on one line."""

    def __init__(self, code: str, details: str) -> None:
        super().__init__(f"{code} {details}".rstrip())
        self.code = code
        self.details = details


def _failed(error: grpc.RpcError) -> CallFailed:
    code = rpc_code(error)
    return CallFailed(code.name if code is not None else "UNKNOWN", rpc_details(error))


class BotClient:
    """The calls of the bot protocol over one channel (which the caller owns)."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self._stub = bot_pb2_grpc.BotServiceStub(channel)
        self._keeper: Any = None

    def keep_polling(self) -> None:
        """Keep grpcio's polling thread for this channel alive between calls.

        grpcio's sync channel starts that thread whenever a call begins with none in
        flight and ends it when the count drops to zero: about one thread per decision.
        One long-lived call (a health Watch nobody reads) keeps it. Ended by
        :meth:`close`."""
        if self._keeper is None:
            watch = self._channel.unary_stream(
                "/grpc.health.v1.Health/Watch",
                request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                response_deserializer=health_pb2.HealthCheckResponse.FromString)
            self._keeper = watch(health_pb2.HealthCheckRequest(service=""))

    def close(self) -> None:
        """End the keeper call (the channel itself is closed by its owner)."""
        if self._keeper is not None:
            self._keeper.cancel()
            self._keeper = None

    async def hello(self, arena_version: str, timeout_s: float) -> BotInfo:
        """The bot's hand-shake; :class:`CallFailed`, or ``WireError`` for a bad answer."""
        try:
            reply = await unary_call(self._stub.Hello, hello_request(arena_version),
                                     timeout=timeout_s)
        except grpc.RpcError as e:
            raise _failed(e) from None
        return bot_info_from_response(reply)

    async def decide(self, view: View, game_id: str, table_id: str, deadline_ms: int,
                     bank_ms: int) -> tuple[int, float]:
        """The bot's action for ``view`` and how long the call took on the wire, in
        seconds (start to answer, on grpcio's thread: a busy trio thread does not
        lengthen it). ``deadline_ms`` bounds the call; :class:`CallFailed` or
        ``WireError`` (an answer that is not an action of this game)."""
        request = decision_request(view, game_id, table_id, deadline_ms, bank_ms)
        decision = view.decision
        method = (self._stub.Play if decision is Decision.PLAY else
                  self._stub.Bid if decision is Decision.BID else self._stub.ChooseTrump)
        try:
            response, took = await timed_unary_call(method, request, deadline_ms / 1000)
        except grpc.RpcError as e:
            raise _failed(e) from None
        return action_from_response(response, view.game), took

    async def round_ended(self, result: RoundResult, timeout_s: float) -> None:
        """The RoundEnded notification; :class:`CallFailed`."""
        try:
            await unary_call(self._stub.RoundEnded, round_ended_request(result), timeout_s)
        except grpc.RpcError as e:
            raise _failed(e) from None

    async def game_ended(self, result: GameResult, timeout_s: float) -> None:
        """The GameEnded notification; :class:`CallFailed`."""
        try:
            await unary_call(self._stub.GameEnded, game_ended_request(result), timeout_s)
        except grpc.RpcError as e:
            raise _failed(e) from None
