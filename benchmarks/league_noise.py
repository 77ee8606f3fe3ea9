"""The league simulation's noise, calibrated on real games: ``python -m benchmarks.league_noise``.

Plays a real tournament per game (Trumps and Wizard, 4 seats, default options): two
copies of ``random`` and two of ``heuristic`` at one table, every deal in all four
rotations (duplicate sets), ``--deals`` deals (default 500: 2,000 games, seconds), then
exports it and fits ``score = bot + luck(deal, seat) + noise`` to the final totals (the
simulation's model, :mod:`arena.league.sim`). Prints, in units of the score gap between
``heuristic`` and ``random``: the luck's and the play noise's standard deviations; and the
share of comparisons a ``heuristic`` wins against a ``random``, with the Bradley-Terry Elo
of the four. ``docs/league.md`` turns these into the simulation's noise levels.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

TOURNAMENT = """name = "noise-{game}"
game = "{game}"
seats = 4
seed = {seed}
concurrency = 1
output = "out"
[time]
move_ms = 200
[schedule]
format = "round-robin"
deals = {deals}
[[bots]]
name = "random"
spec = "random"
[[bots]]
name = "random-b"
spec = "random"
[[bots]]
name = "heuristic"
spec = "heuristic"
[[bots]]
name = "heuristic-b"
spec = "heuristic"
"""


def decompose(records: list[dict[str, object]]) -> dict[str, float]:
    """The fit of ``score = bot + cell(deal, seat) + e`` (alternating means, a balanced
    design) and the heuristic-vs-random comparisons."""
    rows = []
    bots: dict[str, int] = {}
    deals: dict[str, int] = {}
    wins: list[float] = []
    for r in records:
        seats = [str(b) for b in r["seats"]]  # type: ignore[attr-defined]
        totals = [float(t) for t in r["totals"]]  # type: ignore[attr-defined]
        deal = str(r["game_id"]).rsplit("-", 1)[0]  # t0-d7-r2: the deal t0-d7
        d = deals.setdefault(deal, len(deals))
        for s, (b, t) in enumerate(zip(seats, totals, strict=True)):
            rows.append((d * len(seats) + s, bots.setdefault(b, len(bots)), t))
        for b1, t1 in zip(seats, totals, strict=True):
            for b2, t2 in zip(seats, totals, strict=True):
                if b1.startswith("heuristic") and b2.startswith("random"):
                    wins.append(1.0 if t1 > t2 else 0.5 if t1 == t2 else 0.0)
    a = np.array(rows)
    cell, bot, y = a[:, 0].astype(int), a[:, 1].astype(int), a[:, 2]
    cells = int(cell.max()) + 1
    be = np.zeros(len(bots))
    ce = np.zeros(cells)
    for _ in range(100):
        ce = np.bincount(cell, y - be[bot], cells) / np.maximum(np.bincount(cell, None, cells), 1)
        be = np.bincount(bot, y - ce[cell]) / np.bincount(bot)
    res = y - be[bot] - ce[cell]
    noise = float(res @ res) / (len(y) - cells - len(bots) + 1)
    per_cell = len(y) / cells
    luck = max(float(ce.var()) - noise / per_cell, 0.0)
    strong = np.mean([be[i] for b, i in bots.items() if b.startswith("heuristic")])
    weak = np.mean([be[i] for b, i in bots.items() if b.startswith("random")])
    gap = float(strong - weak)
    return {"games": float(len(records)), "gap": gap, "luck_sd": float(np.sqrt(luck)) / gap,
            "noise_sd": float(np.sqrt(noise)) / gap, "heuristic_wins": float(np.mean(wins))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.league_noise")
    parser.add_argument("--deals", type=int, default=500)
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--games", nargs="+", default=["trumps", "wizard"])
    args = parser.parse_args(argv)
    for game in args.games:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "t.toml"
            path.write_text(TOURNAMENT.format(game=game, seed=args.seed, deals=args.deals))
            arena = [sys.executable, "-m", "arena"]
            subprocess.run([*arena, "tournament", str(path)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            subprocess.run([*arena, "export", str(Path(tmp) / "out")], check=True,
                           stdout=subprocess.DEVNULL)
            lines = (Path(tmp) / "out" / "games.jsonl").read_text().splitlines()
            records = [json.loads(line) for line in lines if line.strip()]
            board = json.loads((Path(tmp) / "out" / "leaderboard.json").read_text())
        f = decompose(records)
        elo = ", ".join(f"{b['name']} {b['elo']:.0f}" for b in board["bots"])
        print(f"{game}: {f['games']:.0f} games, seed {args.seed}; score gap heuristic - "
              f"random {f['gap']:.3f}; in units of that gap: luck sd {f['luck_sd']:.3f}, "
              f"play noise sd {f['noise_sd']:.3f}; a heuristic beats a random in "
              f"{100 * f['heuristic_wins']:.1f}% of comparisons; Elo: {elo}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
