"""Opening a store's file: whether it is there to open (:func:`check_file`), and the
read-only connection (:func:`connect_readonly`), which in a read-only folder reads the
file as immutable while sharing the run lock, so that no run writes meanwhile."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from arena.runs.lock import LockError, RunLock
from arena.runs.store_errors import StoreError, StoreIOError, store_error


def check_file(path: Path) -> bool:
    """Whether ``path`` is there to open; :class:`StoreError` for what is no store (a
    folder, an empty file: never taken for a new store)."""
    try:
        if not path.exists():
            return False
        if not path.is_file():
            raise StoreError(f"{path}: not a trick-arena store (not a file)")
        if path.stat().st_size == 0:
            raise StoreError(f"{path}: not a trick-arena store (an empty file); move it "
                             f"away, or run the tournament again with --fresh")
    except OSError as e:
        raise StoreIOError(f"{path}: cannot open: {e.strerror or e}") from None
    return True



def connect_readonly(path: Path, timeout: float = 30,
                      ) -> tuple[sqlite3.Connection, RunLock | None]:
    """A read-only connection to the store at ``path``, and the shared hold on the run
    lock that keeps a run from writing while it reads (None when not needed).

    ``mode=ro`` needs the WAL's shared-memory file (``-shm``), which SQLite cannot make in
    a read-only folder. There the file is opened ``immutable`` instead, which is exact
    only if there is no write-ahead log to replay (a store closed cleanly has none) and no
    run writes meanwhile (the shared hold); otherwise :class:`StoreIOError`."""
    uri = path.absolute().as_uri()
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=timeout)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return db, None
    except UnicodeDecodeError as e:  # a damaged schema text
        db.close()
        raise store_error(e, path, "read") from None
    except sqlite3.DatabaseError as e:
        db.close()
        if getattr(e, "sqlite_errorcode", 0) & 0xFF not in (8, 14):  # READONLY, CANTOPEN
            raise store_error(e, path, "read") from None
        cause = e
    wal = path.with_name(path.name + "-wal")
    try:
        replay = wal.exists() and wal.stat().st_size > 0
    except OSError as e:
        raise StoreIOError(f"{wal}: cannot read: {e.strerror or e}") from None
    if replay:
        raise StoreIOError(f"{path}: cannot read: SQLite cannot make {path.name}-shm here "
                           f"({cause}), which reading the changes in {wal.name} needs (a "
                           f"read-only folder?); read a copy of the folder")
    try:
        shared = RunLock.share(path.parent)
    except LockError as e:
        raise StoreIOError(f"{path}: cannot read: {e}") from None
    try:
        db = sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        db.close()
        if shared is not None:
            shared.release()
        raise store_error(e, path, "read") from None
    return db, shared


def is_store_file(path: Path) -> bool:
    """Whether ``path`` is a store of ours (a SQLite file with a schema version), looked
    at read-only."""
    if not path.is_file() or path.is_symlink():
        return False
    try:
        db, shared = connect_readonly(path, timeout=5)
    except StoreError:
        return False
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.Error:
        return False
    finally:
        db.close()
        if shared is not None:
            shared.release()
    return row is not None
