"""Reading an arena TOML file (a tournament's or a league's) and checking its values,
with one-line errors naming the file and the key (:class:`ConfigError`); and the tables
both kinds of file share, ``[time]``, ``[limits]``, ``[cluster]``, ``isolation`` and
``concurrency`` (:func:`parse_run_tables`), parsed once here for both."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from arena.model.errors import nested_deeper_than, one_line, show
from arena.model.limits import LIMIT_KEYS, Limits
from arena.proc.tasks import usable_cores


class ConfigError(ValueError):
    """A mistake in a tournament file; the message is one line naming the file and key."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


MAX_FILE_BYTES = 1 << 20
"""The largest tournament file read (1 MiB)."""
MAX_DEPTH = 16
"""The deepest nesting of tables and arrays in a tournament file."""
MAX_SEED = (1 << 256) - 1
_SEED_TEXT = re.compile(r"(?:[0-9]{1,78}|0x[0-9a-fA-F]{1,64})")


ISOLATIONS = ("deal", "game", "shared")
"""``deal`` (default): a bot process plays one game at a time and never two games with
the same deal; ``game``: a fresh process per game; ``shared``: one process per bot for
every game, several at once (trusted bots only)."""
ENGINES = ("local", "ray")
TIME_KEYS = {"move_ms", "bank_ms", "max_faults", "startup_ms"}
_LIMIT_MAX = {"memory_mb": 1 << 20, "processes": 1 << 16, "cpu_s": 10**7, "file_mb": 1 << 20,
              "open_files": 1 << 20, "stop_ms": 60_000}


@dataclass(frozen=True, slots=True)
class RunTables:
    """What a tournament file and a league file say alike of how games are played: the
    time control (``[time]``), the limits per bot process (``[limits]``), the engine
    (``[cluster]``), the ``isolation`` and the ``concurrency``."""

    move_ms: int
    bank_ms: int
    max_faults: int
    startup_ms: int
    limits: Limits
    engine: str
    address: str
    working_dir: Path | None
    retries: int
    isolation: str
    concurrency: int = field(default_factory=usable_cores)
    concurrency_given: bool = False

    def as_fields(self) -> dict[str, Any]:
        """As keyword arguments of :class:`~arena.runs.config.TournamentConfig`."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def parse_run_tables(where: str, path: Path, data: dict[str, Any]) -> RunTables:
    """The ``[time]``, ``[limits]``, ``[cluster]``, ``isolation`` and ``concurrency`` of
    the file ``path`` (read as ``data``), checked; :class:`ConfigError`."""
    time_table = key_table(where, "time", data.get("time", {}))
    known_keys(where, "time", time_table, TIME_KEYS)
    limits = parse_limits(where, "limits", data.get("limits", {}), Limits())
    cluster = key_table(where, "cluster", data.get("cluster", {}))
    known_keys(where, "cluster", cluster, {"engine", "address", "retries", "working_dir"})
    engine = key_str(where, "cluster.engine", cluster.get("engine", "local"))
    if engine not in ENGINES:
        raise ConfigError(f"{where}: cluster.engine: {show(engine)}; expected one of "
                          f"{', '.join(ENGINES)}")
    address = cluster.get("address", "")
    if not isinstance(address, str):
        raise ConfigError(f"{where}: cluster.address: expected a string, got {show(address)}")
    working_dir = None
    if "working_dir" in cluster:
        working_dir = (path.parent / key_str(where, "cluster.working_dir",
                                             cluster["working_dir"])).absolute()
        if not working_dir.is_dir():
            raise ConfigError(f"{where}: cluster.working_dir: {show(str(working_dir))} is "
                              f"not a folder")
    isolation = key_str(where, "isolation", data.get("isolation", "deal"))
    if isolation not in ISOLATIONS:
        raise ConfigError(f"{where}: isolation: {show(isolation)}; expected one of "
                          f"{', '.join(ISOLATIONS)}")
    return RunTables(
        move_ms=key_int(where, "time.move_ms", time_table.get("move_ms", 1000), 1, 3_600_000),
        bank_ms=key_int(where, "time.bank_ms", time_table.get("bank_ms", 0), 0, 86_400_000),
        max_faults=key_int(where, "time.max_faults", time_table.get("max_faults", 3), 1,
                           10**6),
        startup_ms=key_int(where, "time.startup_ms", time_table.get("startup_ms", 10000), 1,
                           600_000),
        limits=limits, engine=engine, address=address, working_dir=working_dir,
        retries=key_int(where, "cluster.retries", cluster.get("retries", 3), 0, 100),
        isolation=isolation,
        concurrency=key_int(where, "concurrency", data.get("concurrency", usable_cores()), 1,
                            256),
        concurrency_given="concurrency" in data)


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


def parse_limits(where: str, key: str, raw: Any, base: Limits) -> Limits:
    table = key_table(where, key, raw)
    known_keys(where, key, table, set(LIMIT_KEYS))
    return base.merged({k: key_int(where, f"{key}.{k}", v, 0, _LIMIT_MAX[k])
                        for k, v in table.items()})


def in_folder(folder: Path, text: str) -> Path:
    """The path ``text`` of a tournament file: a relative one is taken from the file's
    ``folder`` (absolute, normalised, so a ``..`` also works inside the sandbox)."""
    return Path(os.path.normpath(folder / text))


def known_keys(where: str, table: str, data: dict[str, Any], allowed: set[str]) -> None:
    for key in data:
        if key not in allowed:
            place = f"[{table}]" if table else "the top level"
            raise ConfigError(f"{where}: {table + '.' if table else ''}"
                              f"{one_line(str(key), 40)}: unknown key in {place}; "
                              f"expected one of {', '.join(sorted(allowed))}")


def key_table(where: str, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {key}: expected a table ([{key}])")
    return value


def key_str(where: str, key: str, value: Any) -> str:
    if value is None:
        raise ConfigError(f"{where}: {key}: missing; expected a string")
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key}: expected a non-empty string, got {show(value)}")
    return value


def key_int(where: str, key: str, value: Any, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(f"{where}: {key}: expected an integer {low}..{high}, got "
                          f"{show(value)}")
    return value


def key_seed(where: str, value: Any) -> int:
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


def path_exists(path: Path) -> bool:
    """Whether ``path`` exists; False for a name no file can have (too long, NUL)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False
