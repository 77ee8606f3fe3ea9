"""The inbox: how ``arena league add``, ``update``, ``retire`` and ``close`` reach a run.

The store has one writer, the run that holds the output folder's lock, so a command that
changes the field while a run goes on never writes the store: it writes a request file
into ``OUT/inbox/`` atomically (a temporary file, fsync, rename, fsync of the folder) and
waits for the answer. The run reads the inbox every :data:`POLL_S` seconds, off its game
loop, applies each request in one store transaction that also records the request's id
(:func:`arena.league.store.apply_request`), then writes the answer
(``ID.answer.json``, atomically) and removes the request. A request applied before a
kill -9 is found in the store by its id and answered from there, never applied twice; a
request not yet applied stays in the inbox for the next run (or for the command itself,
which applies it when no run holds the lock any more).

The inbox is for commands from another terminal only: the league service of
``arena league serve`` runs in the run's own process and hands its requests to the run
through memory (:meth:`arena.league.runner.League.submit`), without a file.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path
from typing import Any

INBOX = "inbox"
POLL_S = 0.5
"""How often a run reads its inbox."""
MAX_REQUEST_BYTES = 1 << 20
_REQUEST = re.compile(r"[0-9a-f]{32}\.json")


def inbox_dir(out: Path) -> Path:
    return out / INBOX


def new_id() -> str:
    return secrets.token_hex(16)


def _write_atomic(path: Path, text: str) -> None:
    """``text`` into ``path``, whole or not at all, durably (the folder fsync'd too)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def post(out: Path, request: dict[str, Any]) -> Path:
    """Put ``request`` (with its ``id``) into the inbox of ``out``; the file's path."""
    folder = inbox_dir(out)
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"{request['id']}.json"
    _write_atomic(path, json.dumps(request, sort_keys=True))
    return path


def pending(out: Path) -> list[tuple[Path, dict[str, Any] | None]]:
    """The requests waiting in the inbox, oldest first: (path, request), the request None
    for a file that is not one (it is answered as refused and removed)."""
    folder = inbox_dir(out)
    try:
        entries = [e for e in os.scandir(folder) if _REQUEST.fullmatch(e.name)
                   and e.is_file(follow_symlinks=False)]
    except FileNotFoundError:
        return []
    entries.sort(key=lambda e: (e.stat(follow_symlinks=False).st_mtime_ns, e.name))
    out_list: list[tuple[Path, dict[str, Any] | None]] = []
    for e in entries:
        path = Path(e.path)
        try:
            with path.open("rb") as f:
                raw = f.read(MAX_REQUEST_BYTES + 1)
            data = json.loads(raw) if len(raw) <= MAX_REQUEST_BYTES else None
        except FileNotFoundError:
            continue  # answered meanwhile by the command itself
        except (OSError, ValueError, RecursionError):
            data = None
        if not isinstance(data, dict) or data.get("id") != path.stem:
            data = None
        out_list.append((path, data))
    return out_list


def answer(path: Path, text: str) -> None:
    """Write the answer to the request at ``path`` (``ID.answer.json``), then remove the
    request."""
    _write_atomic(path.with_name(f"{path.stem}.answer.json"), text)
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def answer_path(out: Path, request_id: str) -> Path:
    return inbox_dir(out) / f"{request_id}.answer.json"


def take_answer(out: Path, request_id: str) -> str | None:
    """The answer to ``request_id`` if it is there (the file removed once read)."""
    path = answer_path(out, request_id)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    path.unlink(missing_ok=True)
    return text


def withdraw(out: Path, request_id: str) -> bool:
    """Remove a request not yet taken by a run; whether it was still there."""
    try:
        (inbox_dir(out) / f"{request_id}.json").unlink()
    except FileNotFoundError:
        return False
    return True
