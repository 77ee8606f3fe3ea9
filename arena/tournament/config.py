"""Tournament files (TOML): reading and checking them, with one-line errors.

Every mistake is reported as ``FILE: KEY: what is wrong; what is expected`` before any
game starts. The format is documented in ``docs/tournaments.md``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.model.errors import nested_deeper_than, one_line, show
from arena.model.limits import LIMIT_KEYS, VIEWS, Confinement, Limits
from arena.model.names import NameError_, check_name
from arena.model.spec import BotSpec, BotSpecError, Remote, command_args
from arena.proc.cgroup import usable_cores
from arena.proc.gate import GateError, own_folders, program_path
from arena.proc.runtimes import (
    BUILTIN,
    Runtime,
    command_view,
    dpkg_available,
    installed_packages,
    use_runtimes,
)
from arena.rules import GAMES, OptionError, option_specs
from arena.rules.options import resolve_options
from arena.tournament.schedule import FORMATS, game_count


class ConfigError(ValueError):
    """A mistake in a tournament file; the message is one line naming the file and key."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


MAX_FILE_BYTES = 1 << 20
"""The largest tournament file read (1 MiB)."""
MAX_DEPTH = 16
"""The deepest nesting of tables and arrays in a tournament file."""
MAX_GAMES = 200_000
"""The most games one tournament may schedule (checked before the schedule is built)."""
MAX_TABLES_PER_BOT = 100_000
"""The most tables per bot of a balanced schedule (the games limit binds long before)."""
MAX_SEED = (1 << 256) - 1
_SEED_TEXT = re.compile(r"(?:[0-9]{1,78}|0x[0-9a-fA-F]{1,64})")


ISOLATIONS = ("deal", "game", "shared")
"""``deal`` (default): a bot process plays one game at a time and never two games with
the same deal; ``game``: a fresh process per game; ``shared``: one process per bot for
every game, several at once (trusted bots only)."""


@dataclass(frozen=True, slots=True)
class BotEntry:
    name: str
    spec: BotSpec
    requires: str | None = None
    """A program that must be on PATH for this bot to take part (else it is left out)."""
    confinement: Confinement = field(default_factory=Confinement)
    cwd: Path | None = None
    """The folder a ``cmd:`` bot's command runs in (absolute); None: the file's folder."""


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
    file: worked out from the machine at the start of a run, :func:`arena.play.pool.machine_bound`);
    None: no bound but the settings."""

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
ENGINES = ("local", "ray")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TIME = {"move_ms", "bank_ms", "max_faults", "startup_ms"}
_SCHEDULE = {"format", "deals", "candidates", "tables_per_bot"}
_BOT = {"name", "spec", "requires", "sandbox", "read_only", "view", "env", "limits", "tls_ca",
        "tls_server_name", "token", "token_env", "insecure", "cwd"}
_FOLDERS = {"path", "command", "prefix", "requires", "sandbox", "read_only", "view", "env",
            "limits"}
MANIFEST = "bot.toml"
"""A bot folder's manifest (a league bundle's): its ``command`` runs in its folder."""
_REMOTE_KEYS = ("tls_ca", "tls_server_name", "token", "token_env", "insecure")
_TOKEN = re.compile(r"[!-~]+")
"""A bearer token: printable ASCII without spaces (it travels as call metadata)."""
_LIMIT_MAX = {"memory_mb": 1 << 20, "processes": 1 << 16, "cpu_s": 10**7, "file_mb": 1 << 20,
              "open_files": 1 << 20, "stop_ms": 60_000}


def read_toml(path: Path, what: str = "tournament") -> tuple[str, dict[str, Any]]:
    """The text and the parsed tables of a TOML file of the arena (a tournament or a
    league file), checked for size, encoding, syntax and depth; :class:`ConfigError`."""
    where = str(path)
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"{where}: cannot read: {e.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"{where}: larger than {MAX_FILE_BYTES} bytes; a {what} file "
                          f"is a short TOML text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise ConfigError(f"{where}: not UTF-8 text: byte {e.start} (line {line}) is not "
                          f"valid UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{where}: not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{where}: not valid TOML: nested more than {MAX_DEPTH} "
                          f"levels deep") from None
    except ValueError as e:  # an integer longer than Python converts (4300 digits)
        raise ConfigError(f"{where}: not valid TOML: a number is too long ({e})") from None
    _depth(where, data)
    return text, data


def parse_game(where: str, data: dict[str, Any]) -> tuple[str, str, int, dict[str, Any]]:
    """The ``name``, ``game``, ``seats`` and ``[options]`` of a tournament or league file,
    checked: (name, game, seats, the game's resolved options)."""
    name = _str(where, "name", data.get("name"))
    game = _str(where, "game", data.get("game"))
    if game not in GAMES:
        raise ConfigError(f"{where}: game: {show(game)} is not a game; expected one of "
                          f"{', '.join(GAMES)}")
    specs = option_specs(game)
    players = specs["players"]
    seats = _int(where, "seats", data.get("seats", players.default), players.low, players.high)
    raw_options = _table(where, "options", data.get("options", {}))
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
    _known(where, "", data, _TOP)
    name, game, seats, options = parse_game(where, data)
    time_table = _table(where, "time", data.get("time", {}))
    _known(where, "time", time_table, _TIME)
    sched = _table(where, "schedule", data.get("schedule", {}))
    _known(where, "schedule", sched, _SCHEDULE)
    fmt = _str(where, "schedule.format", sched.get("format", "round-robin"))
    if fmt not in FORMATS:
        raise ConfigError(f"{where}: schedule.format: {show(fmt)}; expected one of "
                          f"{', '.join(FORMATS)}")
    limits = _limits(where, "limits", data.get("limits", {}), Limits())
    cluster = _table(where, "cluster", data.get("cluster", {}))
    _known(where, "cluster", cluster, {"engine", "address", "retries", "working_dir"})
    engine = _str(where, "cluster.engine", cluster.get("engine", "local"))
    if engine not in ENGINES:
        raise ConfigError(f"{where}: cluster.engine: {show(engine)}; expected one of "
                          f"{', '.join(ENGINES)}")
    address = cluster.get("address", "")
    working_dir = None
    if "working_dir" in cluster:
        working_dir = (path.parent / _str(where, "cluster.working_dir",
                                          cluster["working_dir"])).absolute()
        if not working_dir.is_dir():
            raise ConfigError(f"{where}: cluster.working_dir: {show(str(working_dir))} is "
                              f"not a folder")
    if not isinstance(address, str):
        raise ConfigError(f"{where}: cluster.address: expected a string, got {show(address)}")
    isolation = _str(where, "isolation", data.get("isolation", "deal"))
    if isolation not in ISOLATIONS:
        raise ConfigError(f"{where}: isolation: {show(isolation)}; expected one of "
                          f"{', '.join(ISOLATIONS)}")
    folder = Path(os.path.abspath(path)).parent
    runtimes = parse_runtimes(where, data.get("runtimes"), folder, engine)
    raw_bots = data.get("bots", [])
    if not isinstance(raw_bots, list):
        raise ConfigError(f"{where}: bots: expected a list of [[bots]] tables, each with "
                          f"name and spec")
    from_folders, left_out = folder_bots(where, data.get("folders", []), folder)
    if not raw_bots and not from_folders and left_out:
        raise ConfigError(f"{where}: folders: no bot: every folder was left out; the first: "
                          f"{left_out[0][1]}")
    bots, skipped = _bots(where, raw_bots + from_folders, limits, folder)
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
    seed = None if seed_raw is None else _seed(where, seed_raw)
    deals = _int(where, "schedule.deals", sched.get("deals", 1), 1, 10**6)
    tables_per_bot: int | None = None
    if fmt == "balanced":
        if "tables_per_bot" not in sched:
            raise ConfigError(f"{where}: schedule.tables_per_bot: missing; a balanced "
                              f"schedule needs the tables each bot plays, an integer "
                              f"1..{MAX_TABLES_PER_BOT}")
        tables_per_bot = _int(where, "schedule.tables_per_bot", sched["tables_per_bot"], 1,
                              MAX_TABLES_PER_BOT)
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
    out_text = _str(where, "output", data.get("output", f"out/{name}"))
    if "\0" in out_text and (output is None or "output" in data):
        raise ConfigError(f"{where}: output: {show(out_text)} holds a NUL character")
    out = output or _in(folder, out_text)
    config = TournamentConfig(
        path=path, text=text, name=name, game=game, seats=seats, options=options,
        bots=tuple(bots), skipped=tuple(skipped),
        move_ms=_int(where, "time.move_ms", time_table.get("move_ms", 1000), 1, 3_600_000),
        bank_ms=_int(where, "time.bank_ms", time_table.get("bank_ms", 0), 0, 86_400_000),
        max_faults=_int(where, "time.max_faults", time_table.get("max_faults", 3), 1, 10**6),
        startup_ms=_int(where, "time.startup_ms", time_table.get("startup_ms", 10000), 1,
                        600_000),
        format=fmt, deals=deals,
        candidates=tuple(candidates_raw), tables_per_bot=tables_per_bot, seed=seed,
        concurrency=_int(where, "concurrency", data.get("concurrency", usable_cores()), 1, 256),
        concurrency_given="concurrency" in data, isolation=isolation, limits=limits,
        output=out, engine=engine, address=address, working_dir=working_dir,
        retries=_int(where, "cluster.retries", cluster.get("retries", 3), 0, 100),
        runtimes=runtimes, pool=parse_pool(where, data.get("pool")))
    use_runtimes(runtimes)  # the bots of this file start in this process
    return config


# -- runtimes ---------------------------------------------------------------------------


_RUNTIME = {"name", "programs", "packages", "paths"}
_RUNTIME_NAME = re.compile(r"[a-z][a-z0-9._+-]{0,31}")
_PROGRAM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,63}")


def parse_runtimes(where: str, raw: Any, folder: Path, engine: str = "local"
                   ) -> tuple[Runtime, ...]:
    """A file's ``[[runtimes]]``: each a ``name``, the ``programs`` it covers (default:
    the name), and what it shows: Debian ``packages`` (installed here) and/or ``paths``
    (relative ones from the file's folder); :class:`ConfigError` (one line naming the
    key) for a name or program the arena's built-in runtimes or another entry have."""
    if raw is None or raw == []:
        return ()
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        raise ConfigError(f"{where}: runtimes: expected a list of [[runtimes]] tables, each "
                          f"with name and packages or paths")
    if engine != "local":
        raise ConfigError(f"{where}: runtimes: a Ray cluster's workers do not know the "
                          f"file's runtimes yet; play it on this machine (cluster.engine = "
                          f"\"local\")")
    out: list[Runtime] = []
    claimed = {p: r.name for r in BUILTIN.values() for p in r.programs}
    for i, entry in enumerate(raw):
        key = f"runtimes[{i}]"
        _known(where, key, entry, _RUNTIME)
        name = _str(where, f"{key}.name", entry.get("name"))
        if not _RUNTIME_NAME.fullmatch(name):
            raise ConfigError(f"{where}: {key}.name: {show(name)}; a runtime's name is 1-32 "
                              f"lower-case letters, digits and . _ + -, starting with a "
                              f"letter")
        if name in BUILTIN:
            raise ConfigError(f"{where}: {key}.name: {name} is a built-in runtime "
                              f"({', '.join(BUILTIN)}); choose another name")
        if any(r.name == name for r in out):
            raise ConfigError(f"{where}: {key}.name: runtime {name} is defined twice")
        programs = _words(where, f"{key}.programs", entry.get("programs", [name]),
                          _PROGRAM_NAME, "program names (perl, lua5.4), not paths")
        if not programs:
            raise ConfigError(f"{where}: {key}.programs: expected at least one program")
        for program in programs:
            owner = claimed.get(program) or next(
                (r.name for r in (*BUILTIN.values(), *out) if r.covers(program)), None)
            if owner is not None:
                raise ConfigError(f"{where}: {key}.programs: {program} is covered by "
                                  f"runtime {owner} already")
            claimed[program] = name
        packages = _words(where, f"{key}.packages", entry.get("packages", []),
                          re.compile(r"[a-z0-9][a-z0-9.+-]{0,99}"), "Debian package names")
        if packages:
            if not dpkg_available():
                raise ConfigError(f"{where}: {key}.packages: this machine has no dpkg "
                                  f"(Debian's package manager); give the runtime's paths")
            missing = [p for p in packages if p not in installed_packages(packages)]
            if missing:
                raise ConfigError(f"{where}: {key}.packages: {missing[0]} is not installed "
                                  f"here (apt-get install {' '.join(missing)})")
        texts = _words(where, f"{key}.paths", entry.get("paths", []), None, "paths")
        paths: list[Path] = []
        for text in texts:
            if "\0" in text:
                raise ConfigError(f"{where}: {key}.paths: {show(text)} holds a NUL character")
            path = _in(folder, text)
            if not _exists(path):
                raise ConfigError(f"{where}: {key}.paths: {show(text)} does not exist "
                                  f"(relative paths are taken from the file's folder)")
            paths.append(path)
        if not packages and not paths:
            raise ConfigError(f"{where}: {key}: give packages or paths: what runtime {name} "
                              f"shows in the sandbox")
        out.append(Runtime(name, tuple(programs), tuple(packages), tuple(paths),
                           origin=where))
    return tuple(out)


def _words(where: str, key: str, value: Any, pattern: re.Pattern[str] | None,
           what: str) -> list[str]:
    if not isinstance(value, list) or not all(
            isinstance(v, str) and v and (pattern is None or pattern.fullmatch(v))
            for v in value):
        raise ConfigError(f"{where}: {key}: expected a list of {what}, got {show(value)}")
    return list(dict.fromkeys(value))


def check_bot_runtimes(where: str, table: str, raw: Any, bots: list[BotEntry],
                       runtimes: tuple[Runtime, ...], folder: Path) -> None:
    """Each sandboxed ``cmd:`` bot with the ``runtime`` view: its interpreter must be in a
    runtime, the built-in ones or the file's (:class:`ConfigError` naming the bot and
    the fix, as the spawn would, :func:`arena.proc.runtimes.command_view`)."""
    index = {e.get("name"): i for i, e in enumerate(raw)
             if isinstance(e, dict)} if isinstance(raw, list) else {}
    every = (*BUILTIN.values(), *runtimes)
    for bot in bots:
        conf = bot.confinement
        if bot.spec.kind != "cmd" or not conf.sandbox or conf.view != "runtime":
            continue
        program = program_path(command_args(bot.spec.value)[0], bot.cwd or folder)
        if program is None:
            continue
        problem = command_view(program, every).refusal(conf.read_only)
        if problem is not None:
            raise ConfigError(f"{where}: {table}[{index.get(bot.name, 0)}].spec: bot "
                              f"{one_line(bot.name, 40)}: {problem}")


def parse_pool(where: str, raw: Any) -> PoolSettings:
    """A file's ``[pool]`` table (:class:`PoolSettings`); :class:`ConfigError`."""
    table = _table(where, "pool", raw if raw is not None else {})
    _known(where, "pool", table, {"spares", "max_idle", "lookahead"})
    return PoolSettings(
        *(None if key not in table else _int(where, f"pool.{key}", table[key], low, 1000)
          for key, low in (("spares", 0), ("max_idle", 0), ("lookahead", 1))))


def _limits(where: str, key: str, raw: Any, base: Limits) -> Limits:
    table = _table(where, key, raw)
    _known(where, key, table, set(LIMIT_KEYS))
    return base.merged({k: _int(where, f"{key}.{k}", v, 0, _LIMIT_MAX[k])
                        for k, v in table.items()})


def _in(folder: Path, text: str) -> Path:
    """The path ``text`` of a tournament file: a relative one is taken from the file's
    ``folder`` (absolute, normalised, so a ``..`` also works inside the sandbox)."""
    return Path(os.path.normpath(folder / text))


def _confinement(where: str, key: str, entry: dict[str, Any], limits: Limits,
                 folder: Path) -> Confinement:
    sandbox = entry.get("sandbox", True)
    if not isinstance(sandbox, bool):
        raise ConfigError(f"{where}: {key}.sandbox: expected true or false, got {sandbox!r}")
    read_only = entry.get("read_only", [])
    if not isinstance(read_only, list) or not all(isinstance(p, str) and p
                                                  for p in read_only):
        raise ConfigError(f"{where}: {key}.read_only: expected a list of paths")
    paths: list[Path] = []
    for text in read_only:
        path = _in(folder, text)
        if not _exists(path):
            raise ConfigError(f"{where}: {key}.read_only: {show(text)} does not exist "
                              f"(relative paths are taken from the file's folder)")
        paths.append(path)
    view = entry.get("view", "runtime")
    if view not in VIEWS:
        raise ConfigError(f"{where}: {key}.view: expected one of {', '.join(VIEWS)}, got "
                          f"{one_line(repr(view), 40)}")
    env = _table(where, f"{key}.env", entry.get("env", {}))
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name) or not isinstance(value, str) or "\0" in value:
            raise ConfigError(f"{where}: {key}.env.{one_line(name, 40)}: expected "
                              f"NAME = \"string\" with NAME of letters, digits and _")
        if name.startswith("ARENA_"):
            raise ConfigError(f"{where}: {key}.env.{name}: ARENA_ variables are the "
                              f"arena's own")
    return Confinement(sandbox=sandbox,
                       limits=_limits(where, f"{key}.limits", entry.get("limits", {}), limits),
                       read_only=tuple(paths), env=tuple(sorted(env.items())), view=view)


def parse_bots(where: str, raw: Any, limits: Limits, folder: Path, *, table: str = "bots",
               extra: frozenset[str] = frozenset(), seen: set[str] | None = None,
               empty: bool = False) -> tuple[list[BotEntry], list[tuple[str, str]]]:
    """The ``[[table]]`` entries of a file as bots, checked as a tournament's ``[[bots]]``
    (``extra``: keys of the caller's own, checked by it; ``seen``: names already taken,
    updated; ``empty``: no entry is no error). The bots and those left out (name,
    reason)."""
    if empty and (raw is None or raw == []):
        return [], []
    if not isinstance(raw, list) or (not raw and not empty):
        raise ConfigError(f"{where}: {table}: expected a list of [[{table}]] tables, each "
                          f"with name and spec")
    return _bots(where, raw, limits, folder, table, _BOT | extra,
                 set() if seen is None else seen)


def _bots(where: str, raw: Any, limits: Limits, folder: Path, table: str = "bots",
          allowed: set[str] | frozenset[str] = frozenset(_BOT),
          seen: set[str] | None = None,
          ) -> tuple[list[BotEntry], list[tuple[str, str]]]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{where}: bots: expected a list of [[bots]] tables, each with "
                          f"name and spec")
    bots: list[BotEntry] = []
    skipped: list[tuple[str, str]] = []
    seen = set() if seen is None else seen
    for i, entry in enumerate(raw):
        key = f"{table}[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: {key}: expected a table with name and spec")
        _known(where, key, entry, set(allowed))
        name = _str(where, f"{key}.name", entry.get("name"))
        try:
            check_name(name, f"{key}.name")
        except NameError_ as e:
            raise ConfigError(f"{where}: {e}") from None
        if name in seen:
            raise ConfigError(f"{where}: {key}.name: {show(name)} is used twice; bot names "
                              f"must be unique")
        seen.add(name)
        spec_text = _str(where, f"{key}.spec", entry.get("spec"))
        if "\0" in spec_text:
            raise ConfigError(f"{where}: {key}.spec: holds a NUL character")
        try:
            spec = BotSpec.parse(spec_text)
        except BotSpecError as e:
            raise ConfigError(f"{where}: {key}.spec: {e}") from None
        requires = entry.get("requires")
        if requires is not None:
            requires = _str(where, f"{key}.requires", requires)
            if "\0" in requires or shutil.which(requires) is None:
                skipped.append((name, f"{requires} is not installed"))
                continue
        cwd = None
        if "cwd" in entry:
            cwd = _in(folder, _str(where, f"{key}.cwd", entry["cwd"]))
            if not cwd.is_dir():
                raise ConfigError(f"{where}: {key}.cwd: {show(str(cwd))} is not a folder "
                                  f"(relative paths are taken from the file's folder)")
            if spec.kind != "cmd":
                raise ConfigError(f"{where}: {key}.cwd: only for a cmd: bot, not {spec}")
        runs_in = cwd or folder
        if spec.kind == "cmd":
            program = command_args(spec.value)[0]
            if not (_exists(_in(runs_in, program)) if os.sep in program
                    else shutil.which(program) is not None):
                raise ConfigError(f"{where}: {key}.spec: bot {one_line(name, 40)}: cannot start: "
                                  f"{show(program)} not found"
                                  + (f" in {runs_in}" if os.sep in program
                                     and not os.path.isabs(program) else ""))
            try:  # the gate of its files: an argument never leads out through a link
                own_folders(command_args(spec.value)[1:], runs_in)
            except GateError as e:
                raise ConfigError(f"{where}: {key}.spec: bot {one_line(name, 40)}: "
                                  f"{e}") from None
        if spec.kind == "unix":
            spec = BotSpec("unix", str(_in(folder, spec.value)))
        if spec.kind in ("grpc", "grpcs"):
            spec = BotSpec(spec.kind, spec.value,
                           _remote(where, key, name, entry, spec, folder))
        else:
            for k in _REMOTE_KEYS:
                if k in entry:
                    raise ConfigError(f"{where}: {key}.{k}: only for a grpc:// or grpcs:// "
                                      f"bot, not {spec}")
        bots.append(BotEntry(name, spec, requires,
                             _confinement(where, key, entry, limits, folder), cwd))
    return bots, skipped


def folder_bots(where: str, raw: Any, folder: Path
                ) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The ``[[folders]]`` tables of a file as ``[[bots]]`` entries: every folder under
    ``path`` (hidden ones aside) is a bot named after it (``prefix`` first), whose
    ``command`` (``{folder}`` and ``{name}`` replaced), else its ``bot.toml``'s, runs in
    that folder; the other keys are a ``[[bots]]`` entry's. The entries, and the folders
    left out (name, reason): one with no ``bot.toml`` where a command is needed."""
    if raw == []:
        return [], []
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise ConfigError(f"{where}: folders: expected a list of [[folders]] tables, each "
                          f"with path")
    entries: list[dict[str, Any]] = []
    left: list[tuple[str, str]] = []
    for i, table in enumerate(raw):
        key = f"folders[{i}]"
        _known(where, key, table, _FOLDERS)
        under = _in(folder, _str(where, f"{key}.path", table.get("path")))
        if not under.is_dir():
            raise ConfigError(f"{where}: {key}.path: {show(str(under))} is not a folder "
                              f"(relative paths are taken from the file's folder)")
        pattern = table.get("command")
        if pattern is not None:
            pattern = _str(where, f"{key}.command", pattern)
        prefix = _str(where, f"{key}.prefix", table.get("prefix", "")) if "prefix" in table \
            else ""
        rest = {k: v for k, v in table.items() if k not in ("path", "command", "prefix")}
        found = sorted(p for p in under.iterdir() if p.is_dir() and not p.name.startswith("."))
        if not found:
            raise ConfigError(f"{where}: {key}.path: {show(str(under))} holds no folder")
        for bot_folder in found:
            name = prefix + bot_folder.name
            if pattern is not None:
                command = pattern.replace("{folder}", shlex.quote(str(bot_folder))) \
                    .replace("{name}", shlex.quote(bot_folder.name))
            else:
                command = _manifest_command(where, key, bot_folder)
                if command is None:
                    left.append((name, f"{bot_folder} has no {MANIFEST} and {key} gives no "
                                       f"command"))
                    continue
            entries.append({**rest, "name": name, "spec": f"cmd:{command}",
                            "cwd": str(bot_folder)})
    return entries, left


def _manifest_command(where: str, key: str, bot_folder: Path) -> str | None:
    """The ``command`` of a bot folder's ``bot.toml`` (None where it has none)."""
    path = bot_folder / MANIFEST
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{where}: {key}: {path}: not a readable TOML file: "
                          f"{one_line(str(e), 80)}") from None
    command = data.get("command")
    if not isinstance(command, str) or not command.strip() or "\n" in command:
        raise ConfigError(f"{where}: {key}: {path}: command must be one line of text")
    return command


def _remote(where: str, key: str, name: str, entry: dict[str, Any], spec: BotSpec,
            folder: Path) -> Remote:
    """The TLS, token and ``insecure`` keys of a remote bot, checked."""
    tls = spec.kind == "grpcs"
    for k in ("tls_ca", "tls_server_name"):
        if k in entry and not tls:
            raise ConfigError(f"{where}: {key}.{k}: only for a grpcs:// bot (TLS), not {spec}")
    ca = None
    if "tls_ca" in entry:
        text = _str(where, f"{key}.tls_ca", entry["tls_ca"])
        try:
            ca = _in(folder, text).read_bytes()
        except OSError as e:
            raise ConfigError(f"{where}: {key}.tls_ca: cannot read {text!r}: "
                              f"{e.strerror}") from None
        if b"-----BEGIN CERTIFICATE-----" not in ca:
            raise ConfigError(f"{where}: {key}.tls_ca: {text!r} holds no PEM certificate")
    server_name = ""
    if "tls_server_name" in entry:
        server_name = _str(where, f"{key}.tls_server_name", entry["tls_server_name"])
    if "token" in entry and "token_env" in entry:
        raise ConfigError(f"{where}: {key}.token_env: give token or token_env, not both")
    token = ""
    if "token" in entry:
        token = _str(where, f"{key}.token", entry["token"])
        what = f"{key}.token"
    elif "token_env" in entry:
        variable = _str(where, f"{key}.token_env", entry["token_env"])
        what = f"{key}.token_env"
        token = os.environ.get(variable, "")
        if not token:
            raise ConfigError(f"{where}: {what}: the environment variable {variable} is "
                              f"not set")
    if token and not _TOKEN.fullmatch(token):
        raise ConfigError(f"{where}: {what}: a token is printable ASCII without spaces")
    insecure = entry.get("insecure", False)
    if not isinstance(insecure, bool):
        raise ConfigError(f"{where}: {key}.insecure: expected true or false, got {insecure!r}")
    if insecure and spec.kind != "grpc":
        raise ConfigError(f"{where}: {key}.insecure: only for a grpc:// bot, not {spec}")
    remote = Remote(tls_ca=ca, server_name=server_name, token=token, insecure=insecure)
    problem = BotSpec(spec.kind, spec.value, remote).transport_problem()
    if problem is not None:
        raise ConfigError(f"{where}: {key}.spec: bot {name}: {problem}")
    return remote


def _known(where: str, table: str, data: dict[str, Any], allowed: set[str]) -> None:
    for key in data:
        if key not in allowed:
            place = f"[{table}]" if table else "the top level"
            raise ConfigError(f"{where}: {table + '.' if table else ''}"
                              f"{one_line(str(key), 40)}: unknown key in {place}; "
                              f"expected one of {', '.join(sorted(allowed))}")


def _table(where: str, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {key}: expected a table ([{key}])")
    return value


def _str(where: str, key: str, value: Any) -> str:
    if value is None:
        raise ConfigError(f"{where}: {key}: missing; expected a string")
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key}: expected a non-empty string, got {show(value)}")
    return value


def _int(where: str, key: str, value: Any, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(f"{where}: {key}: expected an integer {low}..{high}, got "
                          f"{show(value)}")
    return value


def _seed(where: str, value: Any) -> int:
    """The seed: an integer 0..2^256-1, or a string of one in decimal or ``0x`` hex (TOML
    integers stop at 2^63-1)."""
    if isinstance(value, str) and _SEED_TEXT.fullmatch(value):
        value = int(value, 0) if value.startswith("0x") else int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_SEED:
        raise ConfigError(f"{where}: seed: expected an integer 0..2^256-1, or a string of "
                          f"one in decimal or 0x hex, got {show(value)}")
    return value


def _depth(where: str, data: dict[str, Any]) -> None:
    """Refuse tables and arrays nested more than :data:`MAX_DEPTH` levels deep."""
    if nested_deeper_than(data, MAX_DEPTH):
        raise ConfigError(f"{where}: nested more than {MAX_DEPTH} levels deep")


def _exists(path: Path) -> bool:
    """Whether ``path`` exists; False for a name no file can have (too long, NUL)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False
