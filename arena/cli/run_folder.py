"""A run's output folder, taken the one way every run takes it (``arena tournament``,
``arena match``, ``arena league run`` and ``serve``): claimed (marked as the arena's, or
refused if it holds what the arena did not make), locked (one run at a time in a
folder), emptied of what the arena made there on ``--fresh``, and its store opened with
the lock held and checked (:func:`arena.runs.audit.open_for_run`)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from arena.files import MARKER, FolderError, claim_folder
from arena.report.text import FILES
from arena.runs.audit import open_for_run
from arena.runs.lock import LOCK_NAME, LockError, RunLock
from arena.runs.store import Store, StoreError


class RunFolderError(Exception):
    """The folder cannot be taken: one line naming it and why."""


_MADE = re.compile(r"(tournament\.sqlite(-wal|-shm)?|games\.jsonl"
                   r"|\.(leaderboard\.(md|csv|json)|games\.jsonl)\..+\.tmp)")
"""The files of an output folder the arena makes, besides the leaderboard's and logs."""


_LOG = re.compile(r"[A-Za-z0-9._-]+\.log")
"""A bot log's name (see :class:`arena.proc.logs.LogFolder`)."""


def open_run_store(folder: Path, kind: str, hint: str, *, fresh: bool, err: Console,
                   also_fresh: Sequence[Path] = ()) -> Store:
    """The store of a ``kind`` run (``"tournament"``, ``"match"``, ``"league"``) in
    ``folder``, opened with the folder's run lock held (the store releases it when it
    closes). ``hint`` ends the line of a folder that is not the arena's ("choose another
    --out"). On ``fresh``, what the arena made there goes first (and the folders
    ``also_fresh``), once the lock is held; what it did not make stays, named in a note
    on ``err``. Raises :class:`RunFolderError`."""
    try:
        claim_folder(folder, kind, hint, Store.is_store)
    except FolderError as e:
        raise RunFolderError(str(e)) from None
    try:  # before --fresh removes anything: one run at a time in a folder
        lock = RunLock.take(folder, kind)
    except LockError as e:
        raise RunFolderError(str(e)) from None
    if fresh:
        try:
            for extra in also_fresh:
                shutil.rmtree(extra, ignore_errors=True)
            left = remove_made_files(folder)
        except OSError as e:
            lock.release()
            raise RunFolderError(f"{folder}: --fresh cannot remove {e.filename}: "
                                 f"{e.strerror}") from None
        if left:
            names = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5
                                           else "")
            err.print(f"note: --fresh left {len(left)} file(s) the arena did not make in "
                      f"{folder}: {names}", soft_wrap=True, markup=False)
    try:
        return open_for_run(folder, lock)
    except StoreError as e:
        lock.release()
        raise RunFolderError(str(e)) from None


def remove_made_files(folder: Path) -> list[str]:
    """Remove what the arena made in ``folder`` (for ``--fresh``): the store, the
    leaderboard files, ``games.jsonl``, the bot logs (and ``logs`` once empty). Other
    files and symlinks are left; their names (relative to ``folder``), sorted."""
    left: list[str] = []
    for entry in sorted(folder.iterdir()):
        name = entry.name
        if entry.is_symlink():
            if name != MARKER:
                left.append(name)
        elif name == "logs" and entry.is_dir():
            for log in sorted(entry.iterdir()):
                if _LOG.fullmatch(log.name) and log.is_file() and not log.is_symlink():
                    log.unlink()
                else:
                    left.append(f"logs/{log.name}")
            if not any(entry.iterdir()):
                entry.rmdir()
        elif entry.is_file() and (name in FILES or _MADE.fullmatch(name)):
            entry.unlink()
        elif name not in (MARKER, LOCK_NAME):  # the lock stays: another run may wait on it
            left.append(name)
    return left
