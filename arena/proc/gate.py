"""The gate of a bot's files: which folders are a bot's own, and what of the machine its
sandbox may show, worked out in one place for every path that starts a bot (a
tournament, a league and its checks, ``arena match``, ``arena play``, check-bot, a Ray
worker: each reaches the sandbox through :func:`arena.proc.bwrap.view_paths`, which asks
here).

A bot's **own folders** are the folders of the files its command names (``python3
bot.py`` -> the folder of ``bot.py``). Each is worked out without letting a link carry
it anywhere the command did not name (:func:`own_folders`):

- the folder is the real path of the folder the argument names *as written* (its ``..``
  parts taken as written, not through a link);
- the file must really lie in that folder: an argument that is a link out of its folder
  (``bot.py -> /etc/shadow``), or whose ``..`` passes through a link to somewhere else,
  is refused in one line, never resolved into a folder to show.

A bot **confined to a folder** (``Confinement.within``: a league's bundle, as the league
runs it and checks it) may show nothing outside that folder but the machine's shared
runtime: its own folders, its program and each interpreter of its ``#!`` chain, and its
extra read-only paths must lie inside the folder, or be part of the system
(:data:`SYSTEM`), the arena's own Python or the paths the organiser gave the runtimes
of its command (:func:`shared_roots`). Anything else is refused (:func:`check_view`).
Such a bot's folder is never copied for it (:func:`arena.proc.ids.staging`): a bundle
is readable by every user when it is unpacked, so a copy could only mean a folder that
is not the bundle.

The league's output folder, its store, its authors' file and its TLS key lie outside
every bundle (``bots/<sha256>/`` holds only what the archive held, and its links were
checked with the whole tree in place, :mod:`arena.league.bundle`), so by these rules
none of them can become a bot's folder.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from arena.model.errors import SandboxError

SYSTEM_DIRS = (Path("/usr"), Path("/opt"))
"""The machine's installed software (all of it in the ``system`` view)."""

SYSTEM = (*SYSTEM_DIRS, Path("/etc"), Path("/lib"), Path("/lib64"), Path("/bin"),
          Path("/sbin"))
"""The machine's own files, which any sandbox may show (read-only): never a bot's."""

ARENA_SOURCE = Path(__file__).resolve().parents[1]
"""The ``arena`` package's own folder (the SDK of a Python bot, in an editable install)."""


class GateError(SandboxError):
    """A bot's command or view reaches beyond what it may show; one line naming the
    argument or path."""


def shared_roots(runtime: Sequence[Path] = ()) -> tuple[Path, ...]:
    """What any bot's view may show besides its own folder: the system, the arena's own
    Python (its prefixes: grpcio, protobuf) and the SDK's source; and ``runtime``, the
    paths an organiser gave the runtimes of the bot's command (the league file's
    ``[[runtimes]]``, :mod:`arena.proc.runtimes`: never a path of the bundle's
    choosing)."""
    return (*SYSTEM, Path(os.path.realpath(sys.prefix)),
            Path(os.path.realpath(sys.base_prefix)), ARENA_SOURCE,
            *(Path(os.path.realpath(p)) for p in runtime))


def program_path(argv0: str, cwd: Path) -> Path | None:
    """The program a command runs (absolute, symbolic links kept), None if not found."""
    found = shutil.which(argv0) if os.sep not in argv0 else str(cwd / argv0)
    return None if found is None else Path(found).absolute()


def own_folder(arg: str, cwd: Path, within: Path | None = None) -> Path | None:
    """The own folder that the command argument ``arg`` names: None when it names no
    existing file (an option, a number, a word); :class:`GateError` when the file is
    reached through a link out of the folder the argument names, or (``within`` given)
    that folder is not inside ``within``."""
    if arg.startswith("-") or "\0" in arg or not arg:
        return None
    path = Path(arg) if os.path.isabs(arg) else cwd / arg
    try:
        if not path.is_file():
            return None
    except OSError:
        return None
    written = Path(os.path.normpath(path))
    folder = Path(os.path.realpath(written.parent))
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(folder):
        raise GateError(f"command argument {arg!r} leads out of its folder through a link "
                        f"(to {real}); name the file itself")
    if within is not None and not folder.is_relative_to(_real(within)):
        raise GateError(f"command argument {arg!r} leads out of the bot's folder "
                        f"(to {folder})")
    return folder


def own_folders(args: Sequence[str], cwd: Path, within: Path | None = None) -> list[Path]:
    """The bot's own folders: the folder of each argument that names an existing file
    (the script, the binary), read-only in its sandbox. :class:`GateError` (one line,
    naming the argument) for one that leads elsewhere (see :func:`own_folder`)."""
    folders: list[Path] = []
    for arg in args:
        folder = own_folder(arg, cwd, within)
        if folder is not None and folder not in folders:
            folders.append(folder)
    return folders


def program_roots(argv0: str, cwd: Path) -> list[Path]:
    """What a command's program needs to run: its folder, or its interpreter's prefix."""
    roots: list[Path] = []
    program = program_path(argv0, cwd)
    if program is None:
        return roots
    resolved = program.resolve()
    if resolved == Path(sys.executable).resolve() or program == Path(sys.executable):
        roots += [Path(sys.prefix), Path(sys.base_prefix)]
        # an editable install of this package: the SDK is the arena's own source folder
        roots.append(ARENA_SOURCE)
    for path in (program, resolved):
        if not any(path.is_relative_to(d) for d in SYSTEM_DIRS):
            roots.append(path.parent)
    return roots


def check_view(paths: Iterable[Path], within: Path | None,
               runtime: Sequence[Path] = ()) -> None:
    """For a bot confined to ``within``: :class:`GateError` naming the first of ``paths``
    (what its view would show) that lies neither inside ``within`` nor in
    :func:`shared_roots` (with ``runtime``). Nothing for a bot that is not confined."""
    if within is None:
        return
    allowed = (_real(within), *shared_roots(runtime))
    for path in paths:
        if not os.path.lexists(path):
            continue
        real = Path(os.path.realpath(path))
        if not any(real.is_relative_to(a) for a in allowed):
            raise GateError(f"the bot's view would show {path}"
                            f"{'' if real == Path(path) else f' ({real})'}, outside its "
                            f"folder {within}")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))
