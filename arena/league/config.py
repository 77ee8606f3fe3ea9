"""League files (TOML): read and checked with one-line errors, as tournament files are.

A league file has a tournament file's keys for the game, the seats, the options, the
time control, the limits, the isolation, the concurrency, the cluster and the output
(:mod:`arena.runs.config`), and instead of a schedule:

- ``[matchmaking]``: the parameters of :func:`arena.league.matchmaking.choose_tables`;
- ``[[house]]``: the house bots (a bot's keys, and an optional fixed ``rating``);
- ``[[bots]]``: the field the league starts with (optional: ``arena league add`` adds
  bots while it runs);
- ``seed``: the first season's master seed, for tests (drawn at random when absent);
- ``[[runtimes]]``: runtimes of the organiser's, as in a tournament file
  (:func:`arena.runs.config.parse_runtimes`), which a bundle's ``bot.toml`` may
  name (``arena league serve --runtime``).

The format is documented in ``docs/league.md``. The league plays through the tournament
machinery, so the file is also turned into a :class:`TournamentConfig` whose bots are
the house bots and the starting field (:attr:`LeagueConfig.base`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.model.errors import show
from arena.proc.runtimes import use_runtimes
from arena.runs.config import (
    BotEntry,
    TournamentConfig,
    check_bot_runtimes,
    folder_bots,
    parse_bots,
    parse_game,
    parse_pool,
    parse_runtimes,
    read_toml,
)
from arena.runs.config_read import (
    ConfigError,
    in_folder,
    key_int,
    key_seed,
    key_str,
    key_table,
    known_keys,
    parse_run_tables,
)

FORMAT = "league"
"""The store's ``format`` of a league (a tournament's is its schedule's)."""

_TOP = {"name", "game", "seats", "seed", "concurrency", "output", "options", "time",
        "bots", "folders", "house", "isolation", "limits", "cluster", "matchmaking", "pool",
        "runtimes"}
_MATCHMAKING = {"top_weight", "new_games", "candidates", "met_weight", "top"}
MAX_RATING = 10_000.0
"""House ratings are Elo values within ±this."""


@dataclass(frozen=True, slots=True)
class Matchmaking:
    """The parameters of :func:`arena.league.matchmaking.choose_tables` (its defaults)."""

    top_weight: float = 0.5
    new_games: int = 8
    candidates: int = 24
    met_weight: float = 1.0
    top: int = 3


@dataclass(frozen=True, slots=True)
class LeagueConfig:
    """A league file, checked."""

    base: TournamentConfig
    """The file as a tournament's configuration: game, seats, options, time, limits,
    isolation, concurrency, cluster, output; its bots are the house bots, then the
    starting field."""
    house: dict[str, float | None]
    """Each house bot's fixed Elo (None: rated like any bot, but not ranked)."""
    matchmaking: Matchmaking = field(default_factory=Matchmaking)
    seed: int | None = None
    """The first season's master seed (None: drawn at random when the season starts)."""

    @property
    def path(self) -> Path:
        return self.base.path

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def output(self) -> Path:
        return self.base.output

    @property
    def digest(self) -> str:
        return self.base.digest

    @property
    def starting(self) -> list[BotEntry]:
        """The field the file starts the league with (house bots left out)."""
        return [b for b in self.base.bots if b.name not in self.house]

    @property
    def house_bots(self) -> list[BotEntry]:
        return [b for b in self.base.bots if b.name in self.house]


def load_league(path: Path, output: Path | None = None) -> LeagueConfig:
    """Read and check a league file; raises :class:`ConfigError` (one line naming the file
    and the key)."""
    where = str(path)
    text, data = read_toml(path, "league")
    if "schedule" in data:
        raise ConfigError(f"{where}: schedule: a league has no schedule: its tables are "
                          f"chosen as it runs ([matchmaking])")
    known_keys(where, "", data, _TOP)
    name, game, seats, options = parse_game(where, data)
    run = parse_run_tables(where, path, data)
    folder = path.absolute().parent
    runtimes = parse_runtimes(where, data.get("runtimes"), folder)
    seen: set[str] = set()
    house_raw = data.get("house")
    house_bots, skipped = parse_bots(where, house_raw, run.limits, folder, table="house",
                                     extra=frozenset({"rating"}), seen=seen, empty=True)
    check_bot_runtimes(where, "house", house_raw, house_bots, runtimes, folder)
    house: dict[str, float | None] = {}
    by_name = {str(e.get("name")): (i, e) for i, e in enumerate(house_raw or [])
               if isinstance(e, dict)}
    for bot in house_bots:
        i, entry = by_name[bot.name]
        rating = entry.get("rating")
        if rating is not None and (isinstance(rating, bool)
                                   or not isinstance(rating, int | float)
                                   or not math.isfinite(rating)
                                   or abs(rating) > MAX_RATING):
            raise ConfigError(f"{where}: house[{i}].rating: expected an Elo number "
                              f"-{MAX_RATING:.0f}..{MAX_RATING:.0f}, got {show(rating)}")
        house[bot.name] = None if rating is None else float(rating)
    raw_bots = data.get("bots", [])
    if not isinstance(raw_bots, list):
        raise ConfigError(f"{where}: bots: expected a list of [[bots]] tables, each with "
                          f"name and spec")
    from_folders, left_out = folder_bots(where, data.get("folders", []), folder)
    field_bots, left = parse_bots(where, raw_bots + from_folders, run.limits, folder, seen=seen,
                                  empty=True)
    check_bot_runtimes(where, "bots", raw_bots + from_folders, field_bots, runtimes, folder)
    skipped += left_out + left
    mm = key_table(where, "matchmaking", data.get("matchmaking", {}))
    known_keys(where, "matchmaking", mm, _MATCHMAKING)
    matchmaking = Matchmaking(
        top_weight=_number(where, "matchmaking.top_weight", mm.get("top_weight", 0.5), 0, 100),
        new_games=key_int(where, "matchmaking.new_games", mm.get("new_games", 8), 0, 10**6),
        candidates=key_int(where, "matchmaking.candidates", mm.get("candidates", 24), 1, 10**4),
        met_weight=_number(where, "matchmaking.met_weight", mm.get("met_weight", 1.0), 0, 100),
        top=key_int(where, "matchmaking.top", mm.get("top", 3), 1, 1000))
    seed_raw = data.get("seed")
    seed = None if seed_raw is None else key_seed(where, seed_raw)
    out_text = key_str(where, "output", data.get("output", f"out/{name}"))
    if "\0" in out_text and (output is None or "output" in data):
        raise ConfigError(f"{where}: output: {show(out_text)} holds a NUL character")
    base = TournamentConfig(
        path=path, text=text, name=name, game=game, seats=seats, options=options,
        bots=(*house_bots, *field_bots), skipped=tuple(skipped),
        format=FORMAT, deals=1, seed=seed,
        output=output or in_folder(folder, out_text), **run.as_fields(),
        runtimes=runtimes, pool=parse_pool(where, data.get("pool")))
    use_runtimes(runtimes)  # its games and its submissions' checks run in this process
    return LeagueConfig(base, house, matchmaking, seed)


def _number(where: str, key: str, value: Any, low: float, high: float) -> float:
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or not low <= value <= high):
        raise ConfigError(f"{where}: {key}: expected a number {low:g}..{high:g}, got "
                          f"{show(value)}")
    return float(value)
