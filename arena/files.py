"""Writing files safely: whole or not at all, names that are safe as file names, and
folders the arena made (marked), private, never through a planted symlink."""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(name: str) -> str:
    """A file name for ``name``: characters other than ``[A-Za-z0-9._-]`` become ``_``."""
    return _UNSAFE.sub("_", name) or "_"


@contextmanager
def atomic_writer(path: Path) -> Iterator[TextIO]:
    """A text file that replaces ``path`` only when the block ends without an error, so a
    reader never sees it half written (written beside it, then renamed; mode 0644)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            yield f
        os.chmod(tmp, 0o644)  # mkstemp makes the file private
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


MARKER = ".trick-arena"
"""The file that marks a folder the arena made (JSON: kind, arena version, created)."""


class FolderError(Exception):
    """A folder the arena may not write in, or cannot make (one line, naming it)."""


def read_marker(folder: Path) -> dict[str, object] | None:
    """The marker of ``folder`` (None when it has none or it is not one of ours)."""
    try:
        fd = os.open(folder / MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            data = json.loads(f.read(4096))
        except (ValueError, OSError):
            return None
    return data if isinstance(data, dict) and isinstance(data.get("kind"), str) else None


def write_marker(folder: Path, kind: str) -> None:
    """Mark ``folder`` as made by the arena, for ``kind`` ("tournament", "site")."""
    from arena import __version__

    with atomic_writer(folder / MARKER) as out:
        out.write(json.dumps({"kind": kind, "arena": __version__,
                              "created": datetime.now(UTC).isoformat(timespec="seconds")})
                  + "\n")


def claim_folder(folder: Path, kind: str, how: str,
                 earlier: Callable[[Path], bool] | None = None) -> None:
    """Make sure the arena may write in ``folder``, making it (mode 0700) when missing.

    A folder is the arena's when it holds the marker of ``kind``; an empty folder, or one
    ``earlier`` says is an earlier output of the arena (made before the marker), is
    marked. Any other folder is refused with :class:`FolderError`; ``how`` ends the
    message (what the user can do instead, e.g. "choose another --out").
    """
    try:
        folder.mkdir(mode=0o700, parents=True)
        write_marker(folder, kind)
        return
    except FileExistsError:
        pass
    except OSError as e:
        raise FolderError(f"{folder}: cannot make the folder: {e.strerror}") from None
    if not folder.is_dir():
        raise FolderError(f"{folder}: exists and is not a folder; {how}")
    marker = read_marker(folder)
    if marker is not None:
        if marker["kind"] != kind:
            raise FolderError(f"{folder}: is a trick-arena {marker['kind']} folder, not a "
                              f"{kind} folder; {how}")
        return
    try:
        empty = not any(folder.iterdir())
        if not (empty or (earlier is not None and earlier(folder))):
            raise FolderError(f"{folder}: exists, holds files and was not made by "
                              f"trick-arena (no {MARKER} file); {how}, or empty it")
        write_marker(folder, kind)
    except OSError as e:
        raise FolderError(f"{folder}: cannot use the folder: {e.strerror}") from None


def private_dir(folder: Path) -> Path:
    """Make sure ``folder`` is a folder of this user's that is not a symlink, making it
    (mode 0700) when missing; :class:`FolderError` otherwise. For bot logs, where another
    user could otherwise plant a file or a symlink."""
    try:
        folder.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    except OSError as e:
        raise FolderError(f"{folder}: cannot make the folder: {e.strerror}") from None
    try:
        st = os.lstat(folder)
    except OSError as e:
        raise FolderError(f"{folder}: {e.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise FolderError(f"{folder}: is a symlink; give the folder itself")
    if not stat.S_ISDIR(st.st_mode):
        raise FolderError(f"{folder}: exists and is not a folder")
    if st.st_uid != os.geteuid():
        raise FolderError(f"{folder}: belongs to another user (uid {st.st_uid}); "
                          "choose a folder of your own")
    return folder


def temp_dir(prefix: str) -> Path:
    """A new private folder (mode 0700) with an unpredictable name in the temporary folder."""
    try:
        return Path(tempfile.mkdtemp(prefix=prefix))
    except OSError as e:
        raise FolderError(f"{tempfile.gettempdir()}: cannot make a temporary folder: "
                          f"{e.strerror}") from None


def open_new_file(path: Path) -> int:
    """Create ``path`` for writing (mode 0600) and return its descriptor; never follows a
    symlink nor opens a file that is already there (:class:`OSError` then)."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                   0o600)
