"""A hostile bot that burns CPU all the time: from start-up, ``--threads`` (default 2)
background threads spin for ever, between calls too, on work that releases the GIL
(SHA-256 of a 1 MiB buffer), so each can take a core of its own. It answers every call
at once (the lowest legal action).

Its victim is a bot that thinks in the same game (``thinker.py``): the spinner must not
slow it into timeouts.

Report: ``{"attack": "spin", "threads": N, "cpu_s": S}`` at start-up and at the end of
each game (``cpu_s``: the CPU time the process got so far).
"""

from __future__ import annotations

import hashlib
import threading
import time

import _hostile

from arena.sdk import GameResult, View


class Spinner(_hostile.Legal):
    name = "hostile-spinner"

    def __init__(self, threads: int) -> None:
        super().__init__()
        self.threads = threads

    def bid(self, view: View) -> int:
        return min(view.legal)

    def play(self, view: View) -> int:
        return min(view.legal)

    def choose_trump(self, view: View) -> int:
        return min(view.legal)

    def game_ended(self, result: GameResult) -> None:
        _hostile.report("spin", game=self.game_id, threads=self.threads,
                        cpu_s=round(time.process_time(), 2))


def spin() -> None:
    data = bytes(1 << 20)
    while True:
        hashlib.sha256(data).digest()


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--threads", type=int, default=2)
    args, rest = _hostile.parse(p)
    for i in range(args.threads):
        threading.Thread(target=spin, name=f"spin-{i}", daemon=True).start()
    _hostile.report("spin", threads=args.threads, cpu_s=0.0)
    _hostile.serve(Spinner(args.threads), rest)
