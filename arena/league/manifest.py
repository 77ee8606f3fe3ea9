"""A bot bundle's manifest, ``bot.toml``: its name, version, runtime and command.

::

    name = "cautious"
    version = "1.2.0"
    runtime = "python3"          # one of the runtimes the league allows
    command = "python3 bot.py"   # run in the bundle's folder, in the sandbox

The runtime says what the command's program is, and what of the machine the sandbox
shows for it (:mod:`arena.proc.runtimes`): ``python3`` (the arena's own Python, with
grpcio, protobuf and the SDK), ``node`` (the system's Node.js), ``java``, ``ruby``
(Debian's Ruby with its gRPC and protobuf gems), a runtime the league file adds
(``[[runtimes]]``), or ``native`` (a program of the bundle: the first word is a path
inside it, e.g. ``./bot`` or ``bin/run``). The command's first word must be one of the
runtime's programs. Errors are :class:`ManifestError`, one line naming the key.
``docs/submit.md`` is the authors' page.
"""

from __future__ import annotations

import os
import posixpath
import shlex
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.model.names import HELLO_MAX, NameError_, check_name, shown
from arena.proc.runtimes import known_runtimes, runtime_named

MANIFEST = "bot.toml"
MANIFEST_MAX_BYTES = 16 << 10
KEYS = ("name", "version", "runtime", "command")
NAME_MAX = 40
"""The longest bot name (a tournament file's limit)."""

DEFAULT_RUNTIMES = ("python3", "node", "ruby", "native")
"""The built-in runtimes a league allows unless told otherwise (``arena league serve
--runtime``); ``java`` only when named. ``serve`` adds the league file's own
(:func:`default_runtimes`)."""


class ManifestError(ValueError):
    """A manifest that is missing or bad; one line for the author."""


@dataclass(frozen=True, slots=True)
class Manifest:
    name: str
    version: str
    runtime: str
    command: str

    @property
    def spec(self) -> str:
        """The bot spec the league runs, in the bundle's folder."""
        return f"cmd:{self.command}"


def check_runtimes(runtimes: Sequence[str]) -> tuple[str, ...]:
    """The league's allowed runtimes, checked: :class:`ManifestError` naming one that is
    neither built in nor the league file's."""
    known = known_runtimes()
    for runtime in runtimes:
        if runtime not in known:
            raise ManifestError(f"unknown runtime {shown(runtime)}; known: "
                                f"{', '.join(known)} (a league file adds more: "
                                f"[[runtimes]])")
    return tuple(runtimes)


def default_runtimes() -> tuple[str, ...]:
    """What ``arena league serve`` allows by default: :data:`DEFAULT_RUNTIMES`, then the
    league file's own runtimes (an organiser who adds one means it to be used)."""
    return tuple(dict.fromkeys((*DEFAULT_RUNTIMES, *(name for name, r in
                                                     known_runtimes().items()
                                                     if r.origin != "built in"))))


def programs_of(runtime: str) -> tuple[str, ...]:
    """The first words a command of ``runtime`` may start with."""
    found = runtime_named(runtime)
    return () if found is None else found.programs


def parse_manifest(text: str, runtimes: Sequence[str] = DEFAULT_RUNTIMES) -> Manifest:
    """The manifest in ``text`` (TOML), checked against the allowed ``runtimes``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{MANIFEST}: not valid TOML: {e}") from None
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ManifestError(f"{MANIFEST}: unknown key {unknown[0]!r}; the keys are "
                            f"{', '.join(KEYS)}")
    values: dict[str, str] = {}
    for key in KEYS:
        value = data.get(key)
        if value is None:
            raise ManifestError(f"{MANIFEST}: {key} is missing")
        if not isinstance(value, str):
            raise ManifestError(f"{MANIFEST}: {key} must be a string, not "
                                f"{type(value).__name__}")
        values[key] = value
    try:
        name = check_name(values["name"], f"{MANIFEST}: name", NAME_MAX)
        version = check_name(values["version"], f"{MANIFEST}: version", HELLO_MAX["version"],
                             what="a version")
    except NameError_ as e:
        raise ManifestError(str(e)) from None
    runtime = values["runtime"]
    if runtime not in runtimes:
        raise ManifestError(f"{MANIFEST}: runtime {shown(runtime)} is not allowed in this "
                            f"league; allowed: {', '.join(runtimes)}")
    command = values["command"]
    if len(command) > 1000 or "\0" in command or "\n" in command:
        raise ManifestError(f"{MANIFEST}: command must be one line of at most 1000 characters")
    try:
        words = shlex.split(command)
    except ValueError as e:
        raise ManifestError(f"{MANIFEST}: command {shown(command)}: {e}") from None
    if not words:
        raise ManifestError(f"{MANIFEST}: command is empty")
    first = words[0]
    if runtime == "native":
        if (first.startswith("/") or "/" not in first
                or ".." in posixpath.normpath(first).split("/")):
            raise ManifestError(f"{MANIFEST}: a native command starts with a program of the "
                                f"bundle, as a relative path (./bot, bin/run), not "
                                f"{shown(first)}")
    elif not programs_of(runtime):
        raise ManifestError(f"{MANIFEST}: runtime {runtime} is not known to this arena")
    elif first not in programs_of(runtime):
        raise ManifestError(f"{MANIFEST}: the command of runtime {runtime} starts with "
                            f"{' or '.join(programs_of(runtime))}, not {shown(first)}")
    for word in words[1:]:
        if word.startswith("/") or ".." in posixpath.normpath(word).split("/"):
            raise ManifestError(f"{MANIFEST}: command argument {shown(word)} leaves the "
                                f"bundle; use paths relative to its folder")
    return Manifest(name, version, runtime, command)


def read_manifest(folder: Path, runtimes: Sequence[str] = DEFAULT_RUNTIMES) -> Manifest:
    """The manifest of an unpacked bundle; for ``native``, its program must be an
    executable file of the bundle."""
    path = folder / MANIFEST
    try:
        if path.is_symlink() or not path.is_file():
            raise ManifestError(f"{MANIFEST} is missing at the top of the bundle")
        if path.stat().st_size > MANIFEST_MAX_BYTES:
            raise ManifestError(f"{MANIFEST} is over {MANIFEST_MAX_BYTES >> 10} KiB")
        raw = path.read_bytes()
    except OSError as e:
        raise ManifestError(f"{MANIFEST}: cannot read it: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ManifestError(f"{MANIFEST} is not UTF-8") from None
    manifest = parse_manifest(text, runtimes)
    program = shlex.split(manifest.command)[0]
    if manifest.runtime == "native":
        target = folder / program
        real = Path(os.path.realpath(target))
        if not real.is_relative_to(Path(os.path.realpath(folder))) or not real.is_file():
            raise ManifestError(f"{MANIFEST}: the program {shown(program)} is not a file of "
                                f"the bundle")
        if not os.access(real, os.X_OK):
            raise ManifestError(f"{MANIFEST}: the program {shown(program)} is not executable "
                                f"(set its x bit before packing)")
    return manifest
