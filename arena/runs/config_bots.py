"""The bots of an arena file: ``[[bots]]`` (and a league's ``[[house]]``) entries and
``[[folders]]`` of bot folders, checked into :class:`BotEntry` values: the spec, what the
bot needs on this machine, its confinement and, for a remote bot, its TLS and token."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.model.errors import one_line, show
from arena.model.limits import VIEWS, Confinement, Limits
from arena.model.names import NameError_, check_name
from arena.model.spec import BotSpec, BotSpecError, Remote, command_args
from arena.proc.gate import GateError, own_folders
from arena.runs.config_read import (
    ConfigError,
    in_folder,
    key_str,
    key_table,
    known_keys,
    parse_limits,
    path_exists,
)


@dataclass(frozen=True, slots=True)
class BotEntry:
    name: str
    spec: BotSpec
    requires: str | None = None
    """A program that must be on PATH for this bot to take part (else it is left out)."""
    confinement: Confinement = field(default_factory=Confinement)
    cwd: Path | None = None
    """The folder a ``cmd:`` bot's command runs in (absolute); None: the file's folder."""


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BOT = {"name", "spec", "requires", "sandbox", "read_only", "view", "env", "limits", "tls_ca",
        "tls_server_name", "token", "token_env", "insecure", "cwd"}
_FOLDERS = {"path", "command", "prefix", "requires", "sandbox", "read_only", "view", "env",
            "limits"}
MANIFEST = "bot.toml"
"""A bot folder's manifest (a league bundle's): its ``command`` runs in its folder."""
_REMOTE_KEYS = ("tls_ca", "tls_server_name", "token", "token_env", "insecure")
_TOKEN = re.compile(r"[!-~]+")
"""A bearer token: printable ASCII without spaces (it travels as call metadata)."""


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
        path = in_folder(folder, text)
        if not path_exists(path):
            raise ConfigError(f"{where}: {key}.read_only: {show(text)} does not exist "
                              f"(relative paths are taken from the file's folder)")
        paths.append(path)
    view = entry.get("view", "runtime")
    if view not in VIEWS:
        raise ConfigError(f"{where}: {key}.view: expected one of {', '.join(VIEWS)}, got "
                          f"{one_line(repr(view), 40)}")
    env = key_table(where, f"{key}.env", entry.get("env", {}))
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name) or not isinstance(value, str) or "\0" in value:
            raise ConfigError(f"{where}: {key}.env.{one_line(name, 40)}: expected "
                              f"NAME = \"string\" with NAME of letters, digits and _")
        if name.startswith("ARENA_"):
            raise ConfigError(f"{where}: {key}.env.{name}: ARENA_ variables are the "
                              f"arena's own")
    return Confinement(sandbox=sandbox,
                       limits=parse_limits(where, f"{key}.limits", entry.get("limits", {}), limits),
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
        known_keys(where, key, entry, set(allowed))
        name = key_str(where, f"{key}.name", entry.get("name"))
        try:
            check_name(name, f"{key}.name")
        except NameError_ as e:
            raise ConfigError(f"{where}: {e}") from None
        if name in seen:
            raise ConfigError(f"{where}: {key}.name: {show(name)} is used twice; bot names "
                              f"must be unique")
        seen.add(name)
        spec_text = key_str(where, f"{key}.spec", entry.get("spec"))
        if "\0" in spec_text:
            raise ConfigError(f"{where}: {key}.spec: holds a NUL character")
        try:
            spec = BotSpec.parse(spec_text)
        except BotSpecError as e:
            raise ConfigError(f"{where}: {key}.spec: {e}") from None
        requires = entry.get("requires")
        if requires is not None:
            requires = key_str(where, f"{key}.requires", requires)
            if "\0" in requires or shutil.which(requires) is None:
                skipped.append((name, f"{requires} is not installed"))
                continue
        cwd = None
        if "cwd" in entry:
            cwd = in_folder(folder, key_str(where, f"{key}.cwd", entry["cwd"]))
            if not cwd.is_dir():
                raise ConfigError(f"{where}: {key}.cwd: {show(str(cwd))} is not a folder "
                                  f"(relative paths are taken from the file's folder)")
            if spec.kind != "cmd":
                raise ConfigError(f"{where}: {key}.cwd: only for a cmd: bot, not {spec}")
        runs_in = cwd or folder
        if spec.kind == "cmd":
            program = command_args(spec.value)[0]
            if not (path_exists(in_folder(runs_in, program)) if os.sep in program
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
            spec = BotSpec("unix", str(in_folder(folder, spec.value)))
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
        known_keys(where, key, table, _FOLDERS)
        under = in_folder(folder, key_str(where, f"{key}.path", table.get("path")))
        if not under.is_dir():
            raise ConfigError(f"{where}: {key}.path: {show(str(under))} is not a folder "
                              f"(relative paths are taken from the file's folder)")
        pattern = table.get("command")
        if pattern is not None:
            pattern = key_str(where, f"{key}.command", pattern)
        prefix = key_str(where, f"{key}.prefix", table.get("prefix", "")) if "prefix" in table \
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
        text = key_str(where, f"{key}.tls_ca", entry["tls_ca"])
        try:
            ca = in_folder(folder, text).read_bytes()
        except OSError as e:
            raise ConfigError(f"{where}: {key}.tls_ca: cannot read {text!r}: "
                              f"{e.strerror}") from None
        if b"-----BEGIN CERTIFICATE-----" not in ca:
            raise ConfigError(f"{where}: {key}.tls_ca: {text!r} holds no PEM certificate")
    server_name = ""
    if "tls_server_name" in entry:
        server_name = key_str(where, f"{key}.tls_server_name", entry["tls_server_name"])
    if "token" in entry and "token_env" in entry:
        raise ConfigError(f"{where}: {key}.token_env: give token or token_env, not both")
    token = ""
    if "token" in entry:
        token = key_str(where, f"{key}.token", entry["token"])
        what = f"{key}.token"
    elif "token_env" in entry:
        variable = key_str(where, f"{key}.token_env", entry["token_env"])
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
