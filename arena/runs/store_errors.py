"""The store's errors: what is wrong with a store, and what is wrong with the machine
around it (:class:`StoreIOError`, told apart by SQLite's result code)."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

from arena.model.errors import one_line


class StoreError(RuntimeError):
    """The store cannot be used (not a tournament store, another version, damaged, or a
    stored value that is not what the arena wrote); the message is one line naming the
    file (and the game or key at fault)."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class StoreIOError(StoreError):
    """The store could not be read or written for a reason outside it: the disk (or the
    temporary space) is full, an I/O error, a read-only folder, no permission, a busy
    file. It says nothing about what the store holds (``arena verify`` exits 3, not 1)."""


class StoreLocked(StoreIOError):
    """Another process holds the output folder's run lock (it names its PID)."""


_SQLITE_CAUSES = {
    # SQLite's primary result codes that are about the machine, not the file's content
    3: "no permission",      # SQLITE_PERM
    5: "busy: another process holds it",  # SQLITE_BUSY
    6: "busy: another process holds it",  # SQLITE_LOCKED
    7: "out of memory",      # SQLITE_NOMEM
    8: "read-only",          # SQLITE_READONLY
    10: "I/O error",         # SQLITE_IOERR
    13: "disk full",         # SQLITE_FULL (the store's disk, or the temporary space)
    14: "cannot open the file",  # SQLITE_CANTOPEN
}


def store_error(error: BaseException, path: Path, verb: str) -> StoreError:
    """The one-line error for an error of SQLite on the store at ``path`` while it was
    being ``verb`` ("read", "write", ...): :class:`StoreIOError` for a full disk, an I/O
    error and the like (by SQLite's result code, never by its text), else "damaged or
    not a trick-arena store"."""
    code = getattr(error, "sqlite_errorcode", None)
    cause = _SQLITE_CAUSES.get(code & 0xFF) if isinstance(code, int) else None
    if cause is not None:
        return StoreIOError(f"{path}: cannot {verb}: {cause} ({error})")
    return StoreError(f"{path}: damaged or not a trick-arena store ({error})")



OPEN_WAIT_S = 30.0
"""How long :meth:`Store.open` tries again while another process holds the store."""


class Busy(Exception):
    """SQLite answered "locked" or "busy" while a store was being opened."""


def is_busy(error: Exception) -> bool:
    return isinstance(error, sqlite3.OperationalError) and (
        "locked" in str(error) or "busy" in str(error))


_P = ParamSpec("_P")
_R = TypeVar("_R")


def guarded(verb: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Turn SQLite's errors into :class:`StoreError` (see :func:`store_error`)."""
    def decorate(method: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(method)
        def wrapped(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return method(*args, **kwargs)
            except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
                path = getattr(args[0], "path", None)  # a method's self: the store
                assert isinstance(path, Path)
                raise store_error(e, path, verb) from None
        return wrapped
    return decorate
