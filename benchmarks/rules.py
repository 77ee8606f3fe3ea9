"""The rules engine against OpenSpiel: uniformly random games, decisions per second.

Workloads, each playing whole games in-process with a seeded ``random.Random``:

- ``wizard``: Wizard, 4 players, all 15 rounds;
- ``trumps``: Trumps, 4 players, default options (13 tricks, no announcements);
- ``openspiel``: OpenSpiel's ``oh_hell`` (4 players, 12 tricks) through ``pyspiel``.

A decision is a player action: a bid, a trump choice or a card play. OpenSpiel deals by
chance actions; they are sampled from ``chance_outcomes()`` and played, but not counted.
The bar: Wizard must reach half OpenSpiel's rate (ratio >= 0.5); the goal is 1.0.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import random
from time import perf_counter
from typing import Any, TextIO

from arena.rules import new_game
from benchmarks import Settings
from benchmarks.timing import Sample, Series, Workload, interleave, paired_ratios

TITLE = "rules engine vs OpenSpiel oh_hell: uniformly random games, decisions per second"

BAR = 0.5
"""Wizard's rate must be at least this fraction of OpenSpiel's."""
GOAL = 1.0

OURS: dict[str, tuple[str, dict[str, Any]]] = {
    "wizard": ("wizard, 4 players, 15 rounds", {"players": 4}),
    "trumps": ("trumps, 4 players, defaults", {"players": 4}),
}
"""Our workloads: key -> (label, options); the key is also the game's name."""

OPENSPIEL_GAME = "oh_hell"
OPENSPIEL_PARAMS = {"players": 4, "num_tricks_fixed": 12}
OPENSPIEL_LABEL = "openspiel oh_hell, 4 players, 12 tricks"


def ours(name: str, options: dict[str, Any], seed: int = 1) -> Workload:
    """Random games of our ``name``: ``while g.to_move is not None: g.apply(choice)``."""
    rng = random.Random(seed)
    next_seed = seed

    def work(seconds: float) -> Sample:
        nonlocal next_seed
        decisions = games = 0
        start = perf_counter()
        end = start + seconds
        while True:
            g = new_game(name, options, next_seed)
            next_seed += 1
            while g.to_move is not None:
                g.apply(rng.choice(g.legal_actions()))
                decisions += 1
            games += 1
            now = perf_counter()
            if now >= end:
                return Sample(decisions, games, now - start)

    return work


def openspiel(pyspiel: Any, seed: int = 1) -> Workload:
    """Random games of OpenSpiel's oh_hell, counting player decisions only."""
    game = pyspiel.load_game(OPENSPIEL_GAME, OPENSPIEL_PARAMS)
    chance = int(pyspiel.PlayerId.CHANCE)
    terminal = int(pyspiel.PlayerId.TERMINAL)
    rng = random.Random(seed)

    def work(seconds: float) -> Sample:
        decisions = games = 0
        start = perf_counter()
        end = start + seconds
        while True:
            state = game.new_initial_state()
            while True:
                player = state.current_player()
                if player == chance:
                    outcomes = state.chance_outcomes()
                    chosen = outcomes[-1][0]
                    r = rng.random()
                    for action, p in outcomes:
                        r -= p
                        if r < 0:
                            chosen = action
                            break
                    state.apply_action(chosen)
                elif player == terminal:
                    break
                else:
                    state.apply_action(rng.choice(state.legal_actions()))
                    decisions += 1
            games += 1
            now = perf_counter()
            if now >= end:
                return Sample(decisions, games, now - start)

    return work


def load_pyspiel() -> tuple[Any, str | None]:
    """The ``pyspiel`` module and the open-spiel version, or (None, the import error)."""
    try:
        module = importlib.import_module("pyspiel")
    except ImportError as e:
        return None, str(e)
    try:
        version = importlib.metadata.version("open_spiel")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return module, version


def verdict(ratio: float) -> str:
    if ratio >= GOAL:
        return f"meets the bar (>= {BAR}) and the goal (>= {GOAL})"
    if ratio >= BAR:
        return f"meets the bar (>= {BAR}); goal {GOAL} not reached"
    return f"BELOW THE BAR (>= {BAR})"


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    """Measure, print the table and ratios to ``out``, return the figures."""
    pyspiel, version = load_pyspiel()
    workloads: list[tuple[str, str, Workload]] = [
        (key, label, ours(key, options)) for key, (label, options) in OURS.items()]
    if pyspiel is not None:
        workloads.append(("openspiel", OPENSPIEL_LABEL, openspiel(pyspiel)))
    else:
        print(f"note: pyspiel is not importable ({version}); measuring ours only "
              "(make bench installs open-spiel in .venv-bench)", file=out)
    series = interleave(workloads, settings.repeat, settings.seconds)
    print(f"repetitions: {settings.repeat}, interleaved, ~{settings.seconds:g} s per workload "
          "each; decisions/s: median, min, max", file=out)
    print("decisions = player actions (bids, trump choices, card plays); "
          "OpenSpiel's chance actions (the deal) are played but not counted", file=out)
    _table(series, out)
    result: dict[str, Any] = {
        "unit": "decisions/s",
        "decisions": "player actions (bids, trump choices, card plays); "
                     "chance actions not counted",
        "workloads": {s.key: s.as_dict() for s in series},
        "openspiel": {"available": pyspiel is not None,
                      "version": version if pyspiel is not None else None,
                      "error": None if pyspiel is not None else version,
                      "game": OPENSPIEL_GAME, "params": OPENSPIEL_PARAMS},
        "bar": {"wizard_ratio_min": BAR, "goal": GOAL},
        "ratios": None,
    }
    if pyspiel is None:
        return result
    theirs = series[-1]
    ratios: dict[str, Any] = {}
    print(f"ratio ours/OpenSpiel (of medians; per-repetition range in brackets), "
          f"bar >= {BAR} for Wizard, goal {GOAL}:", file=out)
    for s in series[:-1]:
        ratio = s.median / theirs.median
        pairs = paired_ratios(s, theirs)
        line = f"  {s.key:<8} {ratio:5.2f}  [{min(pairs):.2f}..{max(pairs):.2f}]"
        if s.key == "wizard":
            line += "  " + verdict(ratio)
            result["bar"]["met"] = ratio >= BAR
            result["bar"]["goal_met"] = ratio >= GOAL
        print(line, file=out)
        ratios[s.key] = {"of_medians": round(ratio, 3),
                         "per_repetition": [round(p, 3) for p in pairs]}
    result["ratios"] = ratios
    return result


def _table(series: list[Series], out: TextIO) -> None:
    width = max(len(s.label) for s in series)
    print(f"  {'workload':<{width}}  {'dec/game':>8}  {'games':>6}  "
          f"{'median/s':>9}  {'min/s':>9}  {'max/s':>9}", file=out)
    for s in series:
        rates = s.rates
        print(f"  {s.label:<{width}}  {s.units / s.games:8.1f}  {s.games:6d}  "
              f"{s.median:9,.0f}  {min(rates):9,.0f}  {max(rates):9,.0f}", file=out)
