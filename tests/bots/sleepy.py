"""A test bot that thinks too long: sleeps ``--sleep-ms`` before every decision, then
answers the lowest legal action (``--from-call K``: only from its K-th decision on)."""

from __future__ import annotations

import sys
import time

import _common

from arena.sdk import Bot, View


class Sleepy(Bot):
    name = "sleepy"

    def __init__(self, sleep_ms: int, from_call: int) -> None:
        self.sleep_s = sleep_ms / 1000
        self.from_call = from_call
        self.calls = 0

    def _think(self, view: View) -> int:
        self.calls += 1
        if self.calls >= self.from_call:
            time.sleep(self.sleep_s)
        return min(view.legal)

    bid = play = choose_trump = _think


if __name__ == "__main__":
    parser = _common.parser(__doc__ or "")
    parser.add_argument("--sleep-ms", type=int, required=True)
    parser.add_argument("--from-call", type=int, default=1)
    args, rest = parser.parse_known_args(sys.argv[1:])
    _common.serve(Sleepy(args.sleep_ms, args.from_call), args, rest)
