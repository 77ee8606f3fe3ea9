"""A test bot that cannot play: ``--mode`` says how.

``version99`` answers Hello with protocol version 99; ``wizard-only`` plays only
Wizard; ``noname`` answers Hello without a name; ``unimplemented`` fails Hello with
UNIMPLEMENTED; ``slowhello`` takes a minute to answer Hello; ``exit`` exits with code 5
before serving; ``nosocket`` never listens.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import _common
import grpc

from arena.sdk import Bot, View
from arena.v1 import bot_pb2, game_pb2


class Lowest(Bot):
    name = "handshake"

    def bid(self, view: View) -> int:
        return min(view.legal)

    def play(self, view: View) -> int:
        return min(view.legal)


class WizardOnly(Lowest):
    games = ("wizard",)


def _hello(mode: str) -> Any:
    def hello(request: Any, context: Any) -> Any:
        if mode == "unimplemented":
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "no hand-shake here")
        if mode == "slowhello":
            time.sleep(60)
        return bot_pb2.HelloResponse(
            name="" if mode == "noname" else "handshake", version="1",
            protocol_version=99 if mode == "version99" else 1,
            games=[game_pb2.GAME_WIZARD, game_pb2.GAME_TRUMPS])
    return hello


if __name__ == "__main__":
    parser = _common.parser(__doc__ or "")
    parser.add_argument("--mode", required=True,
                        choices=["version99", "wizard-only", "noname", "unimplemented",
                                 "slowhello", "exit", "nosocket"])
    args, rest = parser.parse_known_args(sys.argv[1:])
    if args.mode == "exit":
        print("handshake: exiting before serving", file=sys.stderr)
        sys.exit(5)
    if args.mode == "nosocket":
        time.sleep(60)
        sys.exit(0)
    if args.mode == "wizard-only":
        _common.serve(WizardOnly(), args, rest)
    else:
        _common.serve(Lowest(), args, rest, hello=_hello(args.mode))
