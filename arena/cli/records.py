"""``arena verify`` (records, exports, stores: by the rules and the results chain) and
``arena export``."""

from __future__ import annotations

import argparse
import gzip
import sqlite3
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from arena.cli.common import UsageError, open_store
from arena.model.chain import CHAIN_KEY, ChainError, ChainWalk, Link, is_hex_digest
from arena.model.errors import one_line
from arena.model.record import (
    MAX_RECORD_BYTES,
    RecordError,
    parse_record,
    verify_record,
)


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    """The records in a file: one JSON document, or JSON lines; yields (where, record),
    or (where, RecordError) for input that is not a record (see :func:`parse_record`)."""
    try:
        with _open_records(path) as f:
            head = f.read(MAX_RECORD_BYTES + 1)
            if len(head) <= MAX_RECORD_BYTES:  # the whole file may be one record
                try:
                    whole = parse_record(head)
                except RecordError:
                    pass
                else:
                    yield str(path), whole
                    return
            f.seek(0)
            number = 0
            while line := f.readline(MAX_RECORD_BYTES + 1):
                number += 1
                if len(line) > MAX_RECORD_BYTES:
                    yield f"{path}:{number}", RecordError(
                        f"a line longer than {MAX_RECORD_BYTES} bytes")
                    return
                if not line.strip():
                    continue
                try:
                    yield f"{path}:{number}", parse_record(line)
                except RecordError as e:
                    yield f"{path}:{number}", e
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:  # starts as gzip, then is not
        yield str(path), RecordError(f"damaged gzip data: {e}")
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None


@contextmanager
def _open_records(path: Path) -> Iterator[IO[bytes]]:
    """The file's bytes, uncompressed as they are read when it is gzip data (the
    published site's ``data/games.jsonl.gz``, or any file starting with gzip's magic)."""
    with path.open("rb") as f:
        if f.read(2) != b"\x1f\x8b":
            f.seek(0)
            yield f
            return
        f.seek(0)
        with gzip.GzipFile(fileobj=f, mode="rb") as unpacked:
            yield unpacked  # type: ignore[misc]  # a GzipFile is a binary file


def cmd_verify(args: argparse.Namespace) -> int:
    head = args.head.lower() if args.head else None
    if head is not None and not is_hex_digest(head):
        raise UsageError(f"arena verify: --head {args.head!r} is not a SHA-256 hex digest")
    for path in args.files:
        code = _verify_folder(path, head) if path.is_dir() else _verify_file(path, head)
        if code != 0:
            return code
    return 0


def _verify_file(path: Path, head: str | None) -> int:
    """``arena verify FILE``: each record re-played and its link checked as it is read,
    one record held at a time; stops at the first that does not hold."""
    count = 0
    walk: ChainWalk | None = None  # once a record carries a link
    plain: Link | None = None  # the first record without one, while none had one
    try:
        for where, record in _records(path):
            try:
                if isinstance(record, RecordError):
                    raise record
                verify_record(record)
            except RecordError as e:
                print(one_line(f"{where}: {e}"), file=sys.stderr)
                return 1
            count += 1
            lk = _link(record, where[len(str(path)):])
            if walk is None and lk.hash is not None:
                walk = ChainWalk(None, head, find=lambda digest: _find_link(path, digest))
                if plain is not None:
                    walk.add(plain)  # the chain starts with a record that has no link
            if walk is not None:
                walk.add(lk)
            elif plain is None:
                plain = Link(lk.game_id, None, None, None, {}, lk.where)
        end = walk.end() if walk is not None else None
    except ChainError as e:
        print(f"{path}: {e}", file=sys.stderr)
        return 1
    ok = f"{path}: ok ({count} record{'s' if count != 1 else ''})"
    if end is not None:
        print(f"{ok}, chain head {end}")
    elif head is not None:
        print(f"{path}: head mismatch: the records carry no chain", file=sys.stderr)
        return 1
    else:
        print(f"{ok}, no chain")
    return 0


def _find_link(path: Path, digest: str) -> str | None:
    """The game of the first record in ``path`` whose link is ``digest`` (a second pass
    over the file, made only when a link does not follow the one before it)."""
    for where, record in _records(path):
        if isinstance(record, dict):
            lk = _link(record, where[len(str(path)):])
            if lk.hash == digest:
                return lk.game_id
    return None


def _link(record: Any, where: str) -> Link:
    """An exported record as a link of the chain (its ``chain`` key taken off)."""
    body = dict(record)
    link = body.pop(CHAIN_KEY, None)
    game_id = str(body.get("game_id", "?"))
    at = f" at line {where[1:]}" if where.startswith(":") else ""
    if not isinstance(link, dict):
        return Link(game_id, None, None, None, body, at)
    seq = link.get("seq")
    prev, digest = link.get("prev"), link.get("hash")
    return Link(game_id, seq if isinstance(seq, int) and not isinstance(seq, bool) else -1,
                prev if isinstance(prev, str) else "", digest if isinstance(digest, str)
                else "", body, at)


def _verify_folder(folder: Path, head: str | None) -> int:
    """``arena verify DIR``: the tournament store, read only. Exit 1 for a store that
    does not hold, 3 for one that could not be read (a full disk or temporary space, an
    I/O error): that says nothing about what it holds."""
    from arena.match.schedule import planned_games
    from arena.runs.audit import AuditError, damage_text, file_damage, verify_store
    from arena.runs.store import STORE_NAME, Store, StoreError, StoreIOError, store_error

    if not Store.exists(folder):
        raise UsageError(f"{folder}: no tournament here (no tournament.sqlite)")
    from arena.league.audit import check_seasons, league_planner

    notes: list[str] = []
    try:
        with Store.open_readonly(folder) as store, store.snapshot():
            problems = file_damage(store)  # the file first: every page, not only records'
            if problems:
                print(damage_text(store, problems), file=sys.stderr)
                return 1
            notes = check_seasons(store)
            count, end = verify_store(store, head, [planned_games, league_planner(store)])
    except StoreIOError as e:
        print(str(e), file=sys.stderr)
        return 3
    except StoreError as e:  # a store cut short or overwritten does not hold either
        print(str(e), file=sys.stderr)
        return 1
    except AuditError as e:
        print(f"{folder}: {e}", file=sys.stderr)
        return 1
    except sqlite3.DatabaseError as e:  # a query of the audit's own
        error = store_error(e, folder / STORE_NAME, "read")
        print(str(error), file=sys.stderr)
        return 3 if isinstance(error, StoreIOError) else 1
    except (ValueError, TypeError, KeyError) as e:
        print(f"{folder}: the store cannot be read: {type(e).__name__}: {e}"[:300],
              file=sys.stderr)
        return 1
    chain = f"chain head {end}" if end is not None else "no chain"
    print(f"{folder}: ok ({count} game{'s' if count != 1 else ''}), {chain}")
    for note in notes:
        print(f"{folder}: note: {note}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from arena.runs.export import export_records
    from arena.runs.store import StoreError

    out = args.out or args.folder / "games.jsonl"
    with open_store(args.folder) as store:
        try:
            count = export_records(store, out)
        except OSError as e:
            raise UsageError(f"cannot write {out}: {e.strerror}") from None
        except StoreError as e:  # the export is written whole or not at all
            raise UsageError(str(e)) from None
    print(f"{count} records written to {out}")
    return 0
