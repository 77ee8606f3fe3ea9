"""A bot that thinks hard: on every decision it burns ``--cpu-ms`` of CPU time (a busy
loop measured with ``time.process_time``), then answers legally. ``--per-game N``: only
on its first N decisions of each game (0: every decision).

Not an attack: the victim in a test of fair CPU. With ``move_ms`` well above
``--cpu-ms`` it must never time out, however many games run at once and whatever the
other bots do.

Report, at the end of each game: ``{"attack": "think", "game": id, "thinks": N,
"max_wall_ms": W, "mean_wall_ms": M, "cpu_ms": C, "cpus": [...]}`` (wall time of its
thinking, which grows when it does not get a core to itself; the cores it may run on
while it thinks).
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict

import _hostile

from arena.sdk import GameResult, View


class Thinker(_hostile.Legal):
    name = "hostile-thinker"

    def __init__(self, cpu_ms: int, per_game: int) -> None:
        super().__init__()
        self.cpu_s = cpu_ms / 1000
        self.cpu_ms = cpu_ms
        self.per_game = per_game
        self.lock = threading.Lock()
        self.walls: defaultdict[str, list[float]] = defaultdict(list)
        self.cpus: dict[str, list[int]] = {}

    def _think(self) -> None:
        game = self.game_id
        with self.lock:
            if self.per_game and len(self.walls[game]) >= self.per_game:
                return
        wall = time.monotonic()
        start = time.process_time()
        x = 0
        while time.process_time() - start < self.cpu_s:
            for i in range(2000):
                x ^= i * i
        with self.lock:
            self.walls[game].append(time.monotonic() - wall)
            self.cpus[game] = sorted(os.sched_getaffinity(0))

    def bid(self, view: View) -> int:
        self._think()
        return super().bid(view)

    def play(self, view: View) -> int:
        self._think()
        return super().play(view)

    def choose_trump(self, view: View) -> int:
        self._think()
        return super().choose_trump(view)

    def game_ended(self, result: GameResult) -> None:
        with self.lock:
            walls = self.walls.pop(self.game_id, [])
            cpus = self.cpus.pop(self.game_id, [])
        _hostile.report("think", game=self.game_id, thinks=len(walls), cpu_ms=self.cpu_ms,
                        cpus=cpus,
                        max_wall_ms=round(max(walls, default=0) * 1000),
                        mean_wall_ms=round(sum(walls) / max(1, len(walls)) * 1000))


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--cpu-ms", type=int, default=600)
    p.add_argument("--per-game", type=int, default=0)
    args, rest = _hostile.parse(p)
    _hostile.serve(Thinker(args.cpu_ms, args.per_game), rest)
