"""Channels to bots: the referee's limits on every channel, TLS and a bearer token for a
bot already running elsewhere, and the wait until a bot serves (the standard health
service)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import grpc
import trio
from grpc_health.v1 import health_pb2

from arena.model.errors import BotStartError
from arena.model.spec import BotSpec
from arena.wire.trio_grpc import rpc_code, rpc_details, unary_call

MAX_MESSAGE_BYTES = 256 * 1024
"""The largest message the referee accepts from a bot (and sends): far above any real one."""


CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_retries", 0),
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 500),
]


def new_channel(target: str) -> grpc.Channel:
    """A channel to a bot with the referee's limits (message size, no retries)."""
    return grpc.insecure_channel(target, options=CHANNEL_OPTIONS)


def remote_channel(spec: BotSpec, name: str) -> grpc.Channel:
    """A channel to a bot already running: TLS for ``grpcs://`` (checked against its
    ``tls_ca``), and its bearer token on every call. :class:`BotStartError` for a plain
    ``grpc://`` address beyond loopback that is not allowed."""
    problem = spec.transport_problem()
    if problem is not None:
        raise BotStartError(f"bot {name}: {problem}")
    remote = spec.remote
    if spec.kind == "grpcs":
        options: list[tuple[str, str | int]] = list(CHANNEL_OPTIONS)
        if remote.server_name:
            options.append(("grpc.ssl_target_name_override", remote.server_name))
        channel = grpc.secure_channel(
            spec.target, grpc.ssl_channel_credentials(root_certificates=remote.tls_ca),
            options=options)
    else:
        channel = new_channel(spec.target)
    if remote.token:
        channel = grpc.intercept_channel(channel, _BearerToken(remote.token))
    return channel


class _Details(grpc.ClientCallDetails):
    def __init__(self, base: grpc.ClientCallDetails,
                 metadata: tuple[tuple[str, str | bytes], ...]) -> None:
        self.method = base.method
        self.timeout = base.timeout
        self.metadata = metadata
        self.credentials = base.credentials
        self.wait_for_ready = base.wait_for_ready
        self.compression = base.compression


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds ``authorization: Bearer <token>`` to every call."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _with_token(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        return _Details(details, (*(details.metadata or ()), self._header))

    def intercept_unary_unary(self, continuation: Any, details: grpc.ClientCallDetails,
                              request: Any) -> Any:
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation: Any, details: grpc.ClientCallDetails,
                               request: Any) -> Any:
        return continuation(self._with_token(details), request)


def tls_failure(details: str) -> str | None:
    """What a failed TLS connection says is wrong (from a call's status details), or
    None when the failure was not the TLS hand-shake."""
    if "CERTIFICATE_VERIFY_FAILED" in details:
        why = details.rpartition("CERTIFICATE_VERIFY_FAILED:")[2].strip(" :")
        why = why.removesuffix(": OK").strip() or "not trusted"
        return (f"TLS: its certificate is not signed by a CA we trust (its tls_ca, else the "
                f"system's): {why}")
    if "Hostname Verification" in details:
        return "TLS: its certificate does not name the host we dialled (set tls_server_name?)"
    if "handshake failed" in details.lower():
        return "TLS: hand-shake failed: " + details.rpartition("last error:")[2].strip()[:150]
    return None


Channel = grpc.Channel
"""A channel to one bot (what the layers above hold without importing grpc)."""


async def wait_serving(channel: grpc.Channel, deadline: float, name: str,
                       exited: Callable[[], str | None] | None = None) -> None:
    """Poll the standard health service until it says SERVING, before ``deadline``.

    ``exited`` is given for a process the arena started: it says how that process ended
    ("exited with code 2"), or None while it runs, and the wait stops at
    once when it has ended. :class:`BotStartError` names the bot and the reason."""
    check = channel.unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
        response_deserializer=health_pb2.HealthCheckResponse.FromString)
    last = "no answer"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BotStartError(f"bot {name}: not serving after the start-up limit ({last})")
        ended = exited() if exited is not None else None
        if ended is not None:
            raise BotStartError(f"bot {name}: {ended}")
        try:
            reply = await unary_call(check, health_pb2.HealthCheckRequest(service=""),
                                     timeout=min(left, 1.0))
        except grpc.RpcError as e:
            tls = tls_failure(rpc_details(e)) if exited is None else None
            if tls is not None:  # a certificate does not fix itself: no use waiting
                raise BotStartError(f"bot {name}: {tls}") from None
            last = f"health check: {rpc_code(e)}"
        else:
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            last = f"health status {status}"
        await trio.sleep(0.02)
