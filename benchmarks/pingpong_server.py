"""The raw side of the referee benchmark: a gRPC server that answers every call at once.

It serves ``/arena.v1.BotService/Play`` as a generic bytes-in, bytes-out unary handler
(no parsing, no serializing): every request, whatever its bytes, gets the bytes of a
fixed ``PlayResponse``. The transport is the sample bots' (a grpcio server with the SDK's
message limits and thread pool, listening on ``$ARENA_BOT_LISTEN``), and it marks itself
SERVING in the standard health service, so :class:`arena.proc.process.BotProcess` starts it
like a bot. Run it as ``python -m benchmarks.pingpong_server [--workers N]`` from the
repository root (as a module: run as a script, this directory would shadow ``grpc``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from concurrent import futures
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from arena.rules import Decision
from arena.rules.cards import make_card
from arena.sdk import MAX_MESSAGE_BYTES
from arena.wire.serde import action_to_response

SERVICE = "arena.v1.BotService"
METHOD = "Play"
REPLY: bytes = action_to_response(Decision.PLAY, make_card(2, 7)).SerializeToString()
"""The answer to every call: a serialized ``PlayResponse`` (the seven of hearts)."""


def _play(request: bytes, context: Any) -> bytes:
    return REPLY


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pingpong_server")
    parser.add_argument("--listen", default=os.environ.get("ARENA_BOT_LISTEN"))
    parser.add_argument("--workers", type=int, default=1,
                        help="server threads, as serve(workers=...) (default %(default)s)")
    args = parser.parse_args(argv)
    if not args.listen:
        print("pingpong_server: no listen address: set ARENA_BOT_LISTEN or pass --listen",
              file=sys.stderr)
        return 2
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=args.workers),
        options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                 ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        SERVICE, {METHOD: grpc.unary_unary_rpc_method_handler(_play)}),))
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    server.add_insecure_port(args.listen)
    server.start()
    health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    parent = os.getppid()
    while not stop.wait(0.5):  # also stop when the benchmark that started us is gone
        if os.getppid() != parent:
            break
    server.stop(grace=0.2).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
