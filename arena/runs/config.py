"""Tournament files (TOML): reading and checking them, with one-line errors.

Every mistake is reported as ``FILE: KEY: what is wrong; what is expected`` before any
game starts. The format is documented in ``docs/tournaments.md``. The reading and the
tables a league file shares are in :mod:`arena.runs.config_read`, the bots in
:mod:`arena.runs.config_bots`, the runtimes in
:mod:`arena.runs.config_runtimes`.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.model.errors import show
from arena.model.limits import Limits
from arena.proc.runtimes import Runtime, use_runtimes
from arena.proc.tasks import usable_cores
from arena.rules import GAMES, OptionError, option_specs
from arena.rules.options import resolve_options
from arena.runs.config_bots import BotEntry, _bots, folder_bots, parse_bots
from arena.runs.config_read import (
    ENGINES,
    ISOLATIONS,
    MAX_SEED,
    ConfigError,
    in_folder,
    key_int,
    key_seed,
    key_str,
    key_table,
    known_keys,
    parse_run_tables,
    read_toml,
)
from arena.runs.config_runtimes import check_bot_runtimes, parse_runtimes
from arena.runs.schedule import FORMATS, game_count

__all__ = ["ENGINES", "ISOLATIONS", "MAX_GAMES", "MAX_SEED", "MAX_TABLES_PER_BOT",
           "BotEntry", "ConfigError", "PoolSettings", "TournamentConfig",
           "check_bot_runtimes", "folder_bots", "load_config", "parse_bots", "parse_game",
           "parse_pool", "parse_runtimes", "read_toml"]

MAX_GAMES = 200_000
"""The most games one tournament may schedule (checked before the schedule is built)."""
MAX_TABLES_PER_BOT = 100_000
"""The most tables per bot of a balanced schedule (the games limit binds long before)."""


@dataclass(frozen=True, slots=True)
class PoolSettings:
    """A file's ``[pool]``: the processes each ``cmd:`` bot's pool starts ahead of its
    games and keeps between them (:class:`arena.play.pool.BotPool`). None: worked out
    from ``concurrency``."""

    spares: int | None = None
    """The most started ahead at once, per bot (default 1)."""
    max_idle: int | None = None
    """The most kept idle between games, per bot (default ``concurrency`` + 1)."""
    lookahead: int | None = None
    """How many of the queued games the pools prepare for (default ``concurrency``)."""
    idle_bytes: int | None = None
    """The memory all pools may keep in idle and spare processes together (not from the
    file: worked out from the machine at the start of a run,
    :func:`arena.play.bound.machine_bound`); None: no bound but the settings."""

    def resolved(self, concurrency: int) -> tuple[int, int, int]:
        """(spares, max_idle, lookahead) in force."""
        return (1 if self.spares is None else self.spares,
                concurrency + 1 if self.max_idle is None else self.max_idle,
                concurrency if self.lookahead is None else self.lookahead)


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    path: Path
    text: str
    name: str
    game: str
    seats: int
    options: dict[str, Any]
    """Every game option in force (``players`` = ``seats``)."""
    bots: tuple[BotEntry, ...]
    skipped: tuple[tuple[str, str], ...]
    """Bots left out on this machine: (name, reason)."""
    move_ms: int = 1000
    bank_ms: int = 0
    max_faults: int = 3
    startup_ms: int = 10000
    format: str = "round-robin"
    deals: int = 1
    candidates: tuple[str, ...] = ()
    tables_per_bot: int | None = None
    """The balanced format's tables per bot (None for the other formats)."""
    pool: PoolSettings = field(default_factory=lambda: PoolSettings())
    """How many processes a ``cmd:`` bot's pool starts ahead and keeps (``[pool]``)."""
    seed: int | None = None
    concurrency: int = field(default_factory=usable_cores)
    concurrency_given: bool = False
    """Whether the file set ``concurrency`` (else it is the usable cores)."""
    isolation: str = "deal"
    limits: Limits = field(default_factory=Limits)
    """The default limits per bot process (a bot's own ``limits`` override them)."""
    output: Path = field(default_factory=lambda: Path("out"))
    engine: str = "local"
    """What plays the games: ``local`` (this machine) or ``ray`` (a Ray cluster)."""
    address: str = ""
    """The Ray cluster's address ("" : RAY_ADDRESS, else a local Ray instance)."""
    retries: int = 3
    """How often a game lost to a cluster failure (not a bot's) is played again."""
    working_dir: Path | None = None
    """A folder Ray copies to every node (``runtime_env`` ``working_dir``); bot commands
    are then relative to it there. None: bot paths must exist on every node."""
    runtimes: tuple[Runtime, ...] = ()
    """The file's own runtimes (``[[runtimes]]``, :func:`parse_runtimes`), besides the
    built-in ones."""

    @property
    def folder(self) -> Path:
        """The tournament file's folder, absolute: the relative paths in the file (bot
        commands, ``read_only``, ``tls_ca``, ``output``) are taken from it, and ``cmd:``
        bots start in it."""
        return Path(os.path.abspath(self.path)).parent

    @property
    def digest(self) -> str:
        """SHA-256 of the file as run: a changed file is refused on resume."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def field_names(self) -> list[str]:
        return [b.name for b in self.bots]


_TOP = {"name", "game", "seats", "seed", "concurrency", "output", "options", "time",
        "schedule", "bots", "folders", "isolation", "limits", "cluster", "runtimes", "pool"}
_SCHEDULE = {"format", "deals", "candidates", "tables_per_bot"}


def parse_game(where: str, data: dict[str, Any]) -> tuple[str, str, int, dict[str, Any]]:
    """The ``name``, ``game``, ``seats`` and ``[options]`` of a tournament or league file,
    checked: (name, game, seats, the game's resolved options)."""
    name = key_str(where, "name", data.get("name"))
    game = key_str(where, "game", data.get("game"))
    if game not in GAMES:
        raise ConfigError(f"{where}: game: {show(game)} is not a game; expected one of "
                          f"{', '.join(GAMES)}")
    specs = option_specs(game)
    players = specs["players"]
    seats = key_int(where, "seats", data.get("seats", players.default), players.low,
                    players.high)
    raw_options = key_table(where, "options", data.get("options", {}))
    if "players" in raw_options:
        raise ConfigError(f"{where}: options.players: set the number of players with "
                          f"'seats' instead")
    for key, value in raw_options.items():
        try:
            resolve_options(game, specs, {key: value})
        except OptionError as e:
            raise ConfigError(f"{where}: options.{key}: {e}") from None
    options = resolve_options(game, specs, {**raw_options, "players": seats})
    return name, game, seats, options


def load_config(path: Path, output: Path | None = None) -> TournamentConfig:
    """Read and check a tournament file; raises :class:`ConfigError` (one line)."""
    where = str(path)
    text, data = read_toml(path)
    known_keys(where, "", data, _TOP)
    name, game, seats, options = parse_game(where, data)
    run = parse_run_tables(where, path, data)
    sched = key_table(where, "schedule", data.get("schedule", {}))
    known_keys(where, "schedule", sched, _SCHEDULE)
    fmt = key_str(where, "schedule.format", sched.get("format", "round-robin"))
    if fmt not in FORMATS:
        raise ConfigError(f"{where}: schedule.format: {show(fmt)}; expected one of "
                          f"{', '.join(FORMATS)}")
    folder = Path(os.path.abspath(path)).parent
    runtimes = parse_runtimes(where, data.get("runtimes"), folder, run.engine)
    raw_bots = data.get("bots", [])
    if not isinstance(raw_bots, list):
        raise ConfigError(f"{where}: bots: expected a list of [[bots]] tables, each with "
                          f"name and spec")
    from_folders, left_out = folder_bots(where, data.get("folders", []), folder)
    if not raw_bots and not from_folders and left_out:
        raise ConfigError(f"{where}: folders: no bot: every folder was left out; the first: "
                          f"{left_out[0][1]}")
    bots, skipped = _bots(where, raw_bots + from_folders, run.limits, folder)
    check_bot_runtimes(where, "bots", raw_bots + from_folders, bots, runtimes, folder)
    skipped = left_out + skipped
    names = [b.name for b in bots]
    if len(bots) < seats:
        note = f" ({len(skipped)} left out: {', '.join(n for n, _ in skipped)})" if skipped else ""
        raise ConfigError(f"{where}: bots: {len(bots)} bots for {seats} seats{note}; "
                          f"a table needs {seats} distinct bots")
    candidates_raw = sched.get("candidates", [])
    if not isinstance(candidates_raw, list) or not all(isinstance(c, str)
                                                        for c in candidates_raw):
        raise ConfigError(f"{where}: schedule.candidates: expected a list of bot names")
    if len(set(candidates_raw)) != len(candidates_raw):
        raise ConfigError(f"{where}: schedule.candidates: a bot is listed twice")
    for c in candidates_raw:
        if c not in names:
            raise ConfigError(f"{where}: schedule.candidates: {show(c)} is not a bot; "
                              f"expected one of {', '.join(names)}")
    if fmt == "gauntlet":
        if not candidates_raw:
            raise ConfigError(f"{where}: schedule.candidates: a gauntlet needs at least "
                              f"one candidate")
        if len(bots) - len(candidates_raw) < seats - 1:
            raise ConfigError(f"{where}: bots: a gauntlet needs at least {seats - 1} bots "
                              f"besides the candidates")
    elif candidates_raw:
        raise ConfigError(f"{where}: schedule.candidates: only a gauntlet has candidates")
    seed_raw = data.get("seed")
    seed = None if seed_raw is None else key_seed(where, seed_raw)
    deals = key_int(where, "schedule.deals", sched.get("deals", 1), 1, 10**6)
    tables_per_bot: int | None = None
    if fmt == "balanced":
        if "tables_per_bot" not in sched:
            raise ConfigError(f"{where}: schedule.tables_per_bot: missing; a balanced "
                              f"schedule needs the tables each bot plays, an integer "
                              f"1..{MAX_TABLES_PER_BOT}")
        tables_per_bot = key_int(where, "schedule.tables_per_bot", sched["tables_per_bot"],
                                 1, MAX_TABLES_PER_BOT)
    elif "tables_per_bot" in sched:
        raise ConfigError(f"{where}: schedule.tables_per_bot: only a balanced schedule has "
                          f"tables_per_bot")
    tables = game_count(fmt, len(bots), seats, 1, len(candidates_raw),
                        tables_per_bot=tables_per_bot) // seats
    if tables * deals * seats > MAX_GAMES:
        fewer = "deals, bots or tables_per_bot" if fmt == "balanced" else "deals or bots"
        raise ConfigError(f"{where}: schedule: {tables} tables × {deals} deals × {seats} "
                          f"rotations = {tables * deals * seats} games; a tournament may "
                          f"have at most {MAX_GAMES}: give fewer {fewer}")
    out_text = key_str(where, "output", data.get("output", f"out/{name}"))
    if "\0" in out_text and (output is None or "output" in data):
        raise ConfigError(f"{where}: output: {show(out_text)} holds a NUL character")
    out = output or in_folder(folder, out_text)
    config = TournamentConfig(
        path=path, text=text, name=name, game=game, seats=seats, options=options,
        bots=tuple(bots), skipped=tuple(skipped),
        format=fmt, deals=deals,
        candidates=tuple(candidates_raw), tables_per_bot=tables_per_bot, seed=seed,
        output=out, **run.as_fields(),
        runtimes=runtimes, pool=parse_pool(where, data.get("pool")))
    use_runtimes(runtimes)  # the bots of this file start in this process
    return config


def parse_pool(where: str, raw: Any) -> PoolSettings:
    """A file's ``[pool]`` table (:class:`PoolSettings`); :class:`ConfigError`."""
    table = key_table(where, "pool", raw if raw is not None else {})
    known_keys(where, "pool", table, {"spares", "max_idle", "lookahead"})
    return PoolSettings(
        *(None if key not in table else key_int(where, f"pool.{key}", table[key], low, 1000)
          for key, low in (("spares", 0), ("max_idle", 0), ("lookahead", 1))))
