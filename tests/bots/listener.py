"""A test bot that learns from RoundEnded: it overrides round_ended (so the SDK asks the
referee for the notifications) and otherwise plays the lowest legal action; with
``--plain`` it does not override it (so it asks for none)."""

from __future__ import annotations

import sys

import _common

from arena.sdk import Bot, RoundResult, View


class Plain(Bot):
    name = "plain"

    def _lowest(self, view: View) -> int:
        return min(view.legal)

    bid = play = choose_trump = _lowest


class Listener(Plain):
    name = "listener"

    def round_ended(self, result: RoundResult) -> None:
        self.last_round = result.round


if __name__ == "__main__":
    parser = _common.parser(__doc__ or "")
    parser.add_argument("--plain", action="store_true")
    args, rest = parser.parse_known_args(sys.argv[1:])
    _common.serve(Plain() if args.plain else Listener(), args, rest)
