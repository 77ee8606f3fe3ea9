"""Bot authors: who may submit to a league, their tokens and their limits.

The organiser adds an author (``arena league author add NAME``: :func:`add_author`), which
makes a token and shows it once. A token is 32 random bytes (256 bits, from
:mod:`secrets`) written as ``arena_`` and 43 URL-safe base64 characters. The store keeps
only its SHA-256: a token is as strong as a random 256-bit key, so a slow password hash
(scrypt, argon2) would add nothing against guessing it, while a plain digest lets the
league find the author of a call in one look-up; someone who reads the store learns no
token. Tokens are compared with :func:`hmac.compare_digest` (constant time), after the
look-up by digest, so the time of a refusal says nothing about how close a guess was.

Each author has limits (:class:`~arena.model.league_api.AuthorLimits`): submissions per
hour (a sliding hour, every attempt counts, refused or not, since each costs the league
an unpack and a check) and the size of a bundle (packed, unpacked, entries). The defaults
are the league's; the organiser may set them per author.

Storage is behind :class:`AuthorStore` so that the league's own store can hold authors;
:class:`AuthorFile` keeps them in a JSON file (``authors.json`` in the league's folder,
mode 0600, replaced atomically and fsynced on every change).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from arena.model.league_api import AuthorLimits
from arena.model.names import NameError_, check_name

TOKEN_PREFIX = "arena_"
TOKEN_BYTES = 32
AUTHORS_FILE = "authors.json"
FORMAT = "trick-arena.authors/1"
AUTHOR_MAX = 64
HOUR_S = 3600.0


class AuthorError(ValueError):
    """An author command or store that cannot be carried out; one line."""


@dataclass(frozen=True, slots=True)
class Author:
    name: str
    token_sha256: str = field(repr=False)
    limits: AuthorLimits = field(default_factory=AuthorLimits)
    submissions: tuple[float, ...] = ()
    """When their submissions of the last hour started (Unix seconds)."""
    added: float = 0.0
    revoked: bool = False


def new_token() -> str:
    """A fresh token: ``arena_`` and 256 random bits, URL-safe base64."""
    raw = base64.urlsafe_b64encode(secrets.token_bytes(TOKEN_BYTES)).decode().rstrip("=")
    return TOKEN_PREFIX + raw


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def matches(author: Author, token: str) -> bool:
    """Whether ``token`` is ``author``'s, in constant time."""
    return hmac.compare_digest(author.token_sha256, token_digest(token))


class AuthorStore(Protocol):
    """Where a league keeps its authors. Each method is durable when it returns."""

    def get(self, name: str) -> Author | None: ...

    def by_digest(self, digest: str) -> Author | None: ...

    def all(self) -> Sequence[Author]: ...

    def put(self, author: Author) -> None: ...


def authenticate(store: AuthorStore, token: str | None) -> Author | None:
    """The author whose token this is, or None (no token, an unknown or revoked one)."""
    if not token:
        return None
    author = store.by_digest(token_digest(token))
    if author is None or author.revoked or not matches(author, token):
        return None
    return author


def check_author_name(name: str) -> str:
    try:
        return check_name(name, "author name", AUTHOR_MAX)
    except NameError_ as e:
        raise AuthorError(str(e)) from None


def add_author(store: AuthorStore, name: str, limits: AuthorLimits | None = None,
               now: float | None = None) -> str:
    """Add author ``name``; their token, to be shown once (it is not kept)."""
    name = check_author_name(name)
    if store.get(name) is not None:
        raise AuthorError(f"author {name!r} exists already (a new token: rotate_token)")
    token = new_token()
    store.put(Author(name, token_digest(token), limits or AuthorLimits(),
                     added=time.time() if now is None else now))
    return token


def rotate_token(store: AuthorStore, name: str) -> str:
    """A new token for ``name`` (the old one stops working); shown once."""
    author = _existing(store, name)
    token = new_token()
    store.put(replace(author, token_sha256=token_digest(token), revoked=False))
    return token


def revoke(store: AuthorStore, name: str) -> None:
    """``name``'s token stops working (their bots stay in the league)."""
    store.put(replace(_existing(store, name), revoked=True))


def set_limits(store: AuthorStore, name: str, limits: AuthorLimits) -> None:
    store.put(replace(_existing(store, name), limits=limits))


def _existing(store: AuthorStore, name: str) -> Author:
    author = store.get(name)
    if author is None:
        raise AuthorError(f"no author {name!r}")
    return author


def recent(author: Author, now: float) -> tuple[float, ...]:
    """The author's submissions that started within the last hour."""
    return tuple(t for t in author.submissions if now - t < HOUR_S)


def take_submission(store: AuthorStore, name: str, now: float) -> Author:
    """Count a submission of ``name`` starting now, durably; AuthorError when the hourly
    limit is reached (saying when the next is allowed)."""
    author = _existing(store, name)
    last_hour = recent(author, now)
    allowed = author.limits.submissions_per_hour
    if len(last_hour) >= allowed:
        wait = max(1, round((min(last_hour) + HOUR_S - now) / 60))
        raise AuthorError(f"the limit is {allowed} submissions per hour; the next is allowed "
                          f"in about {wait} min")
    updated = replace(author, submissions=(*last_hour, now))
    store.put(updated)
    return updated


def _to_json(author: Author) -> dict[str, Any]:
    limits = author.limits
    return {"name": author.name, "token_sha256": author.token_sha256,
            "limits": {"submissions_per_hour": limits.submissions_per_hour,
                       "max_bundle_bytes": limits.max_bundle_bytes,
                       "max_unpacked_bytes": limits.max_unpacked_bytes,
                       "max_files": limits.max_files},
            "submissions": list(author.submissions), "added": author.added,
            "revoked": author.revoked}


def _from_json(data: Any, where: str) -> Author:
    try:
        limits = data["limits"]
        author = Author(
            str(data["name"]), str(data["token_sha256"]),
            AuthorLimits(int(limits["submissions_per_hour"]), int(limits["max_bundle_bytes"]),
                         int(limits["max_unpacked_bytes"]), int(limits["max_files"])),
            tuple(float(t) for t in data["submissions"]), float(data["added"]),
            bool(data["revoked"]))
    except (KeyError, TypeError, ValueError) as e:
        raise AuthorError(f"{where}: a damaged author entry ({type(e).__name__}: {e})") from None
    if len(author.token_sha256) != 64:
        raise AuthorError(f"{where}: author {author.name!r} has no valid token digest")
    return author


class AuthorFile:
    """Authors in a JSON file (0600), read at every call and replaced atomically on every
    change: small (one entry per author), and always what is on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def in_folder(cls, folder: Path) -> AuthorFile:
        return cls(folder / AUTHORS_FILE)

    def _load(self) -> dict[str, Author]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise AuthorError(f"{self.path}: cannot read: {e.strerror}") from None
        try:
            data = json.loads(text)
        except ValueError as e:
            raise AuthorError(f"{self.path}: not JSON ({e})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise AuthorError(f"{self.path}: not an authors file ({FORMAT})")
        entries = [_from_json(a, str(self.path)) for a in data.get("authors", [])]
        return {a.name: a for a in entries}

    def _save(self, authors: dict[str, Author]) -> None:
        text = json.dumps({"format": FORMAT,
                           "authors": [_to_json(a) for a in authors.values()]}, indent=1)
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True)
        temp = folder / f".{self.path.name}.{secrets.token_hex(4)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, self.path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def get(self, name: str) -> Author | None:
        return self._load().get(name)

    def by_digest(self, digest: str) -> Author | None:
        for author in self._load().values():
            if hmac.compare_digest(author.token_sha256, digest):
                return author
        return None

    def all(self) -> list[Author]:
        return list(self._load().values())

    def put(self, author: Author) -> None:
        authors = self._load()
        authors[author.name] = author
        self._save(authors)
