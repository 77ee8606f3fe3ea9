"""A file's own runtimes (``[[runtimes]]``, :func:`parse_runtimes`) and the check that
each sandboxed ``cmd:`` bot's interpreter is in one (:func:`check_bot_runtimes`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from arena.model.errors import one_line, show
from arena.model.spec import command_args
from arena.proc.gate import program_path
from arena.proc.runtimes import (
    BUILTIN,
    Runtime,
    command_view,
    dpkg_available,
    installed_packages,
)
from arena.runs.config_bots import BotEntry
from arena.runs.config_read import (
    ConfigError,
    in_folder,
    key_str,
    known_keys,
    path_exists,
)

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
        known_keys(where, key, entry, _RUNTIME)
        name = key_str(where, f"{key}.name", entry.get("name"))
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
            path = in_folder(folder, text)
            if not path_exists(path):
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
