"""A test bot still thinking when it is asked to stop: its ``game_ended`` says
``thinking`` on standard error, then sleeps ``--think-s`` seconds (a long search, a
thread that holds on), and ``--hold`` starts a thread of its own that is not a daemon
and never ends."""

from __future__ import annotations

import sys
import threading
import time

import _common

from arena.sdk import Bot, GameResult, View


class Lingering(Bot):
    name = "lingering"

    def __init__(self, think_s: float) -> None:
        self.think_s = think_s

    def bid(self, view: View) -> int:
        return min(view.legal)

    play = choose_trump = bid  # type: ignore[assignment]

    def game_ended(self, result: GameResult) -> None:
        print("thinking", file=sys.stderr, flush=True)
        time.sleep(self.think_s)


if __name__ == "__main__":
    parser = _common.parser(__doc__ or "")
    parser.add_argument("--think-s", type=float, default=600.0)
    parser.add_argument("--hold", action="store_true")
    args, rest = parser.parse_known_args(sys.argv[1:])
    if args.hold:
        threading.Thread(target=threading.Event().wait, name="held", daemon=False).start()
    _common.serve(Lingering(args.think_s), args, rest)
