"""A test bot that answers nonsense: its bids are fine, but each Play gets the next
malformed answer from ``--kinds`` (in turn, starting over at the end)."""

from __future__ import annotations

import sys
from typing import Any

import _common
import grpc

from arena.rules import Decision
from arena.sdk import Bot, View
from arena.v1 import bot_pb2, game_pb2

OVERSIZE = 300 * 1024
"""Bytes of padding in an oversized answer: above the referee's 256 KiB limit."""


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if not value:
            return bytes(out + bytes([low]))
        out.append(low | 0x80)


def _oversized() -> bot_pb2.PlayResponse:
    """A valid answer carrying an unknown field (number 15) of OVERSIZE bytes."""
    valid = bot_pb2.PlayResponse(card=game_pb2.Card(kind=game_pb2.CARD_KIND_SUITED,
                                                    suit=game_pb2.SUIT_CLUBS, rank=2))
    padding = bytes([15 << 3 | 2]) + _varint(OVERSIZE) + b"x" * OVERSIZE
    return bot_pb2.PlayResponse.FromString(valid.SerializeToString() + padding)


def _card(**fields: int) -> bot_pb2.PlayResponse:
    return bot_pb2.PlayResponse(card=game_pb2.Card(**fields))


ANSWERS: dict[str, Any] = {
    "nocard": lambda ctx: bot_pb2.PlayResponse(),
    "nokind": lambda ctx: _card(suit=game_pb2.SUIT_HEARTS, rank=5),
    "badkind": lambda ctx: _card(kind=7),
    "wizard": lambda ctx: _card(kind=game_pb2.CARD_KIND_WIZARD),
    "badsuit": lambda ctx: _card(kind=game_pb2.CARD_KIND_SUITED, suit=9, rank=5),
    "nosuit": lambda ctx: _card(kind=game_pb2.CARD_KIND_SUITED, rank=5),
    "badrank": lambda ctx: _card(kind=game_pb2.CARD_KIND_SUITED, suit=game_pb2.SUIT_HEARTS,
                                 rank=1),
    "internal": lambda ctx: ctx.abort(grpc.StatusCode.INTERNAL, "garbage bot: boom"),
    "oversized": lambda ctx: _oversized(),
}


class Garbage(Bot):
    name = "garbage"

    def bid(self, view: View) -> int:
        return min(view.legal)

    def play(self, view: View) -> int:
        return min(view.legal)


if __name__ == "__main__":
    parser = _common.parser(__doc__ or "")
    parser.add_argument("--kinds", required=True, help=",".join(ANSWERS))
    args, rest = parser.parse_known_args(sys.argv[1:])
    kinds = args.kinds.split(",")
    plays = 0

    def answer(decision: Decision, request: Any, context: Any) -> Any:
        global plays
        if decision is not Decision.PLAY:
            return None
        kind = kinds[plays % len(kinds)]
        plays += 1
        return ANSWERS[kind](context)

    _common.serve(Garbage(), args, rest, answer=answer, workers=1)
