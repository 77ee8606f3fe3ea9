"""The league: games each scheduler needs to rank a simulated field, and the live update.

``python -m benchmarks --only league`` (part of ``make bench``) simulates leagues with
known strengths (:mod:`arena.league.sim`; no game is played) and prints, for the
matchmaking, uniform random tables (fewest games first) and the balanced schedule, the
median games until Kendall's tau with the true order reaches 0.9, the games from which the
true top 3 is the ranking's top 3 in at least 95% (and 90%) of the runs, and each as a
ratio to random (random / scheduler: above 1 means fewer games than random).

The default run is short (50 and 200 bots, few runs, a few minutes on two busy
cores), at the ``model`` noise level, with the ratings comparing the seats of each game
(``games``, the published leaderboard's comparisons) and the bots that held the same
cards (``cards``), and the time of one scheduling decision;
``ARENA_BENCH_LEAGUE=full`` longer (20 runs at 50 bots, 10 at 200, longer horizons; about
half an hour). The tables of ``docs/league.md``, at every noise level, come from
``python -m benchmarks.league`` (below). Every run is seeded: the same
settings give the same figures.

Then the live ratings at 200 bots (and 2 house bots) after 100,000 games: the time of one
:meth:`arena.league.live.LiveRatings.record` with its update (the local step), of a full
Newton step (every ``refresh_every`` games), and the two together per game; medians. The
same for ``openskill``'s Plackett-Luce ``rate`` where that package is installed (it is not
a dependency: ``docs/league.md`` says why).

``python -m benchmarks.league`` runs the simulation alone, with its settings on the
command line (``--help``): the noise level (``--level wizard|model|trumps``, or
``--luck``/``--noise``), the sizes, the runs, the horizon, the matchmaking's options; and
the time of one scheduling decision. ``docs/league.md`` has the commands of its tables.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from arena.league import sim
from arena.league.live import LiveRatings
from arena.league.matchmaking import BotState, choose_tables
from arena.league.sim import ESTIMATORS, SCHEDULERS, YARDSTICKS, Model, Summary, summarise
from arena.stats.ratings import GameScores
from benchmarks import Settings

TITLE = ("league simulation: games to Kendall tau >= 0.9 and to a right top 3, matchmaking "
         "vs random vs balanced; one live rating update at 200 bots after 100,000 games")


@dataclass(frozen=True, slots=True)
class Size:
    bots: int
    runs: int
    max_games: int


SHORT = (Size(50, 6, 3000), Size(200, 3, 8000))
FULL = (Size(50, 20, 8000), Size(200, 10, 16000))
LEVELS: dict[str, tuple[float, float]] = {
    "wizard": (0.23, 0.74),
    "model": (1.5, 1.0),
    "trumps": (1.5, 1.7),
}
"""Noise levels (luck_sd, noise_sd), skills N(0, 1). ``trumps`` and ``wizard`` are
calibrated on real games (``docs/league.md``): ``trumps`` takes the gap between
``heuristic`` and ``random`` for one standard deviation of the field, and its luck and
play noise from the same 500 duplicate sets; ``wizard`` takes ``pimc``'s gap over
``heuristic`` (+265 Elo) for one standard deviation (``heuristic`` beats ``random`` in
every comparison there), with Wizard's measured ratio of luck to play noise. ``model``
is the simulation's default (``Model``)."""
LIVE_BOTS = 200
LIVE_GAMES = 100_000


def _ratio(random_games: float | None, games: float | None, horizon: int) -> str:
    """random / scheduler; a bound where random did not get there within the horizon."""
    if games is None or horizon <= 0:
        return "-"
    if random_games is None:
        return f"> {horizon / games:.2f}x"
    return f"{random_games / games:.2f}x"


def _show(value: float | None, horizon: int) -> str:
    return f"{value:.0f}" if value is not None else f"> {horizon}"


def simulate(out: TextIO, sizes: tuple[Size, ...], luck: float = 1.5, noise: float = 1.0,
             options: dict[str, float] | None = None,
             schedulers: tuple[str, ...] = SCHEDULERS, estimator: str = "games",
             window: int = sim.ORACLE_WINDOW, first_seed: int = 0) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for size in sizes:
        model = Model(bots=size.bots, luck_sd=luck, noise_sd=noise, estimator=estimator)
        summaries: dict[str, Summary] = {}
        seconds: dict[str, float] = {}
        trajectories: dict[str, list[sim.Trajectory]] = {}
        for scheduler in schedulers:
            start = time.perf_counter()
            runs = [sim.run(model, scheduler, seed, size.max_games, options, window)
                    for seed in range(first_seed, first_seed + size.runs)]
            seconds[scheduler] = time.perf_counter() - start
            summaries[scheduler] = summarise(scheduler, runs)
            trajectories[scheduler] = runs
        base = summaries.get("random", Summary("random", 0, None, None, None, 0))
        print(f"{size.bots} bots + {model.house} house, {model.seats} seats, luck {luck}, "
              f"noise {noise}, ratings compare {estimator}, {size.runs} runs "
              f"(seeds {first_seed}-{first_seed + size.runs - 1}) of "
              f"{size.max_games} games, matchmaking options {options or {}}:", file=out)
        print("| scheduler | games to tau >= 0.9 (median) | vs random | games to top 3 "
              "(95% of runs) | vs random | (90% of runs) | vs random | s |", file=out)
        print("|---|---:|---:|---:|---:|---:|---:|---:|", file=out)
        horizon = size.max_games if base.runs else 0  # no random runs: no ratio
        for scheduler, s in summaries.items():
            print(f"| {scheduler} | {_show(s.games_to_tau, size.max_games)} | "
                  f"{_ratio(base.games_to_tau, s.games_to_tau, horizon)} | "
                  f"{_show(s.games_to_top3, size.max_games)} | "
                  f"{_ratio(base.games_to_top3, s.games_to_top3, horizon)} | "
                  f"{_show(s.games_to_top3_90, size.max_games)} | "
                  f"{_ratio(base.games_to_top3_90, s.games_to_top3_90, horizon)} | "
                  f"{seconds[scheduler]:.0f} |", file=out, flush=True)
        for scheduler in summaries:
            print(f"{scheduler}: games to tau >= 0.9 by seed: "
                  f"{[r.games_to_tau(0.9) for r in trajectories[scheduler]]}", file=out)
        figures[str(size.bots)] = {
            scheduler: {"games_to_tau": s.games_to_tau, "games_to_top3": s.games_to_top3,
                        "games_to_top3_90": s.games_to_top3_90, "unfinished": s.unfinished,
                        "runs": s.runs, "max_games": size.max_games}
            for scheduler, s in summaries.items()}
    return figures


def decision_ms(bots: int, repeat: int = 15) -> float:
    """The median time of one scheduling decision (one table, as the league asks) for a
    field of ``bots`` rated bots and 2 house bots, ratings and standard errors as in a
    league under way."""
    rng = random.Random(bots)
    active = [BotState(f"b{i:03d}", rng.gauss(1500.0, 120.0), rng.uniform(20.0, 60.0), 40)
              for i in range(bots)]
    house = [BotState("h0", 1450.0, 0.0, 100), BotState("h1", 1550.0, 0.0, 100)]
    met = {(a.name, b.name): rng.randrange(3) for a in active[:60] for b in active[:60]
           if a.name < b.name}
    times = []
    for k in range(repeat):
        t0 = time.perf_counter()
        choose_tables(active, house, met, 4, 1, seed=k)
        times.append(time.perf_counter() - t0)
    return _median_ms(times)


def _games(count: int, bots: int, seed: int) -> list[GameScores]:
    """``count`` games of 4 seats among ``bots`` bots with skills, as duplicate sets."""
    rng = np.random.default_rng(seed)
    skills = rng.normal(0.0, 1.0, bots)
    games = []
    for k in range(count // 4):
        table = rng.choice(bots, 4, replace=False)
        luck = rng.normal(0.0, 1.5, 4)
        for r in range(4):
            seated = [int(table[(s + r) % 4]) for s in range(4)]
            scores = tuple(float(skills[b] + luck[s] + rng.normal()) for s, b in
                           enumerate(seated))
            games.append(GameScores(f"u{k}", tuple(f"bot{b}" for b in seated), scores))
    return games


def _median_ms(times: list[float]) -> float:
    return round(1000.0 * statistics.median(times), 3)


def live_update(out: TextIO, repeat: int) -> dict[str, Any]:
    history = _games(LIVE_GAMES, LIVE_BOTS, 1)
    fresh = _games(400, LIVE_BOTS, 2)
    live = LiveRatings((f"bot{b}" for b in range(LIVE_BOTS)),
                       {"house0": 1450.0, "house1": 1550.0})
    start = time.perf_counter()
    for game in history:
        live.record(game, update=False)
    live.settle()
    load = time.perf_counter() - start
    refresh, live.refresh_every = live.refresh_every, 10**9  # the local updates alone
    local: list[float] = []
    for game in fresh[: 50 * repeat]:
        t0 = time.perf_counter()
        live.record(game)
        local.append(time.perf_counter() - t0)
    live.refresh_every = refresh
    full: list[float] = []
    for _ in range(2 * repeat):
        t0 = time.perf_counter()
        live.step()
        full.append(time.perf_counter() - t0)
    per_game = statistics.median(local) + statistics.median(full) / live.refresh_every
    cards = LiveRatings((f"bot{b}" for b in range(LIVE_BOTS)),
                        {"house0": 1450.0, "house1": 1550.0}, compare="cards")
    for game in history:
        cards.record(game, update=False)
    cards.settle()
    cards.refresh_every = 10**9
    by_cards: list[float] = []
    for game in fresh[: 50 * repeat]:
        t0 = time.perf_counter()
        cards.record(game)
        by_cards.append(time.perf_counter() - t0)
    # the league's own path: a whole set (one table in every rotation) recorded with its
    # full Newton step, once its last rotation is stored (arena.league.sets.WholeSets)
    by_set: list[float] = []
    for k, game in enumerate(fresh[: 2 * repeat]):
        seats = len(game.bots)
        rotations = [GameScores(f"set{k}", tuple(game.bots[(s + r) % seats]
                                                 for s in range(seats)), game.scores)
                     for r in range(seats)]
        t0 = time.perf_counter()
        cards.record_set(rotations)
        by_set.append(time.perf_counter() - t0)
    figures: dict[str, Any] = {
        "bots": LIVE_BOTS, "games": LIVE_GAMES, "load_and_settle_s": round(load, 1),
        "record_ms": _median_ms(local), "full_step_ms": _median_ms(full),
        "refresh_every": live.refresh_every, "per_game_ms": round(1000 * per_game, 3),
        "record_cards_ms": _median_ms(by_cards), "set_cards_ms": _median_ms(by_set)}
    print(f"live ratings, {LIVE_BOTS} bots after {LIVE_GAMES:,} games (medians): one game "
          f"recorded and its local update {figures['record_ms']} ms; a full Newton step "
          f"{figures['full_step_ms']} ms (every {live.refresh_every} games); "
          f"{figures['per_game_ms']} ms a game in all; comparing the same cards, one game "
          f"and its local update {figures['record_cards_ms']} ms; the league's update, a "
          f"whole set with a full step, {figures['set_cards_ms']} ms", file=out)
    if importlib.util.find_spec("openskill") is not None:
        models = importlib.import_module("openskill.models")
        model = models.PlackettLuce()
        ratings = {f"bot{b}": model.rating(name=f"bot{b}") for b in range(LIVE_BOTS)}
        for game in history:
            teams = model.rate([[ratings[b]] for b in game.bots], scores=list(game.scores))
            for b, team in zip(game.bots, teams, strict=True):
                ratings[b] = team[0]
        times: list[float] = []
        for game in fresh:
            t0 = time.perf_counter()
            teams = model.rate([[ratings[b]] for b in game.bots], scores=list(game.scores))
            for b, team in zip(game.bots, teams, strict=True):
                ratings[b] = team[0]
            times.append(time.perf_counter() - t0)
        figures["openskill_ms"] = _median_ms(times)
        print(f"openskill PlackettLuce.rate, the same: {figures['openskill_ms']} ms a game",
              file=out)
    return figures


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    full = os.environ.get("ARENA_BENCH_LEAGUE", "") == "full"
    figures = {estimator: simulate(out, FULL if full else SHORT, estimator=estimator)
               for estimator in ("games", "cards")}
    decisions = {str(bots): decision_ms(bots) for bots in (50, 200)}
    print(f"one scheduling decision (median): {decisions['50']} ms at 50 bots, "
          f"{decisions['200']} ms at 200", file=out)
    return {"simulation": figures, "full": full, "decision_ms": decisions,
            "live": live_update(out, max(1, settings.repeat))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.league",
        description="the league simulation: games to tau >= 0.9 and to a right top 3, "
                    "matchmaking vs random vs balanced, at a chosen noise level")
    parser.add_argument("--level", choices=sorted(LEVELS), default="model",
                        help="a noise level (default model): " + ", ".join(
                            f"{k} = luck {v[0]}, noise {v[1]}" for k, v in LEVELS.items()))
    parser.add_argument("--luck", type=float, help="the luck's sd (over --level)")
    parser.add_argument("--noise", type=float, help="the play noise's sd (over --level)")
    parser.add_argument("--bots", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--runs", type=int, nargs="+", default=[20, 10],
                        help="runs per size (seeds 0..runs-1), one number or one per size")
    parser.add_argument("--games-per-bot", type=int, default=80,
                        help="the horizon: games a run plays, per ranked bot (default 80)")
    parser.add_argument("--schedulers", nargs="+", choices=SCHEDULERS + YARDSTICKS,
                        default=list(SCHEDULERS),
                        help="default: the three a league could use; 'oracle' reads the "
                             "true skills (a yardstick, docs/league.md)")
    parser.add_argument("--top-weight", type=float, help="the matchmaking's top_weight")
    parser.add_argument("--new-games", type=int, help="the matchmaking's new_games")
    parser.add_argument("--candidates", type=int, help="the matchmaking's candidates")
    parser.add_argument("--met-weight", type=float, help="the matchmaking's met_weight")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="the runs' seeds start here (default 0): fresh seeds check a "
                             "figure found on others")
    parser.add_argument("--window", type=int, default=sim.ORACLE_WINDOW,
                        help="the oracle's reach in the true order (default "
                             f"{sim.ORACLE_WINDOW})")
    parser.add_argument("--estimator", choices=ESTIMATORS, default="games",
                        help="what the live ratings compare, for every scheduler (default "
                             "games: two seats of a game; cards: the bots that held the "
                             "same cards in a set; sets: totals over a set)")
    parser.add_argument("--timing", action="store_true",
                        help="only the time of one scheduling decision at 50, 200, 500 bots")
    args = parser.parse_args(argv)
    if args.timing:
        for bots in (50, 200, 500):
            print(f"one scheduling decision, {bots} bots + 2 house: {decision_ms(bots)} ms "
                  "(median of 15)", flush=True)
        return 0
    luck, noise = LEVELS[args.level]
    luck = args.luck if args.luck is not None else luck
    noise = args.noise if args.noise is not None else noise
    runs = args.runs if len(args.runs) == len(args.bots) else [args.runs[0]] * len(args.bots)
    sizes = tuple(Size(b, r, b * args.games_per_bot) for b, r in zip(args.bots, runs,
                                                                       strict=True))
    options = {name: value for name, value in (
        ("top_weight", args.top_weight), ("new_games", args.new_games),
        ("candidates", args.candidates), ("met_weight", args.met_weight))
        if value is not None} or None
    simulate(sys.stdout, sizes, luck, noise, options, tuple(args.schedulers), args.estimator,
             args.window, args.first_seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
