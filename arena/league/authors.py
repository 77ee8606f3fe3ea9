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
mode 0600, replaced atomically and fsynced on every change, under a lock shared with every
other writer) and in memory: the file is read again only when it changed on disk. Every
change is one :meth:`AuthorStore.change` of one author: read, decided and written under the
lock, from what is on disk then, so that ``arena league author ...`` in another terminal
and the running league never undo each other's change (a submission counted, a token
rotated).
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
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


class AuthorExists(AuthorError):
    """``add`` of an author who is there already."""


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


Change = Callable[[Author | None], Author | None]
"""A change of one author: from what is stored (None: no such author) to what is to be
(None, or the same: nothing to write); it raises AuthorError to refuse."""


class AuthorStore(Protocol):
    """Where a league keeps its authors. Each method is durable when it returns."""

    def get(self, name: str) -> Author | None: ...

    def by_digest(self, digest: str) -> Author | None: ...

    def all(self) -> Sequence[Author]: ...

    def change(self, name: str, change: Change) -> Author | None:
        """Apply ``change`` to author ``name`` as stored now, with no other change in
        between, and store its result; that result."""
        ...


def authenticate(store: AuthorStore, token: str | None) -> Author | None:
    """The author whose token this is, or None (no token, an unknown or revoked one)."""
    if not token:
        return None
    author = store.by_digest(token_digest(token))
    if author is None or author.revoked or not matches(author, token):
        return None
    return author


def check_author_name(name: str, where: str = "author name") -> str:
    """``name`` if it is a valid author name (1..:data:`AUTHOR_MAX` printable
    characters); else AuthorError, one line naming ``where``."""
    try:
        return check_name(name, where, AUTHOR_MAX, what="an author name")
    except NameError_ as e:
        raise AuthorError(str(e)) from None


def add_author(store: AuthorStore, name: str, limits: AuthorLimits | None = None,
               now: float | None = None) -> str:
    """Add author ``name``; their token, to be shown once (it is not kept).
    :class:`AuthorExists` if there is one of that name."""
    name = check_author_name(name)
    token = new_token()
    fresh = Author(name, token_digest(token), limits or AuthorLimits(),
                   added=time.time() if now is None else now)

    def add(current: Author | None) -> Author:
        if current is not None:
            raise AuthorExists(f"author {name!r} exists already")
        return fresh

    store.change(name, add)
    return token


def rotate_token(store: AuthorStore, name: str) -> str:
    """A new token for ``name`` (the old one stops working); shown once."""
    token = new_token()
    store.change(name, lambda a: replace(_existing(a, name), token_sha256=token_digest(token),
                                         revoked=False))
    return token


def revoke(store: AuthorStore, name: str) -> None:
    """``name``'s token stops working (their bots stay in the league)."""
    store.change(name, lambda a: replace(_existing(a, name), revoked=True))


def set_limits(store: AuthorStore, name: str, limits: AuthorLimits) -> None:
    store.change(name, lambda a: replace(_existing(a, name), limits=limits))


def _existing(author: Author | None, name: str) -> Author:
    if author is None:
        raise AuthorError(f"no author {name!r}")
    return author


def recent(author: Author, now: float) -> tuple[float, ...]:
    """The author's submissions that started within the last hour."""
    return tuple(t for t in author.submissions if now - t < HOUR_S)


def take_submission(store: AuthorStore, name: str, now: float) -> Author:
    """Count a submission of ``name`` starting now, durably (it blocks on the write and
    its fsyncs: call it from a thread in trio); AuthorError when the hourly limit is
    reached (saying when the next is allowed). The limit is checked against the count as
    stored, under the store's lock: no crash or other writer lets an author past it."""
    def count(stored: Author | None) -> Author:
        author = _existing(stored, name)
        last_hour = recent(author, now)
        allowed = author.limits.submissions_per_hour
        if len(last_hour) >= allowed:
            wait = max(1, round((min(last_hour) + HOUR_S - now) / 60))
            raise AuthorError(f"the limit is {allowed} submissions per hour; the next is "
                              f"allowed in about {wait} min")
        return replace(author, submissions=(*last_hour, now))

    return _existing(store.change(name, count), name)


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
    check_author_name(author.name, f"{where}: author name")  # a hand edit is checked too
    if len(author.token_sha256) != 64:
        raise AuthorError(f"{where}: author {author.name!r} has no valid token digest")
    return author


RACY_S = 2.0
"""A file read within this long of its last change is read again at the next look: a
change in the same tick of the file system's clock, of the same size, could otherwise go
unseen (the "racy clean" case of git's index)."""


def _signature(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True, slots=True)
class _Copy:
    """What the file held when it was read, and its signature then."""

    signature: tuple[int, ...]
    authors: Mapping[str, Author]
    settled: bool
    """Read more than :data:`RACY_S` after its last change: its signature will show the
    next one."""


class AuthorFile:
    """Authors in a JSON file (0600), kept in memory: a look (:meth:`get`,
    :meth:`by_digest`, :meth:`all`) costs a ``stat`` of the file, and reads and parses it
    only when its signature (device, inode, size, modification and change times) differs
    from the copy's, or the copy was read within :data:`RACY_S` of a change. A change
    (:meth:`change`) takes the lock (``flock`` of ``.authors.json.lock`` beside it, which
    every writer takes, ``arena league author ...`` in another process included), reads
    the file afresh, and replaces it atomically (a temporary file, fsynced, renamed, the
    folder fsynced) only when the author changed. The blocking calls are for a thread,
    never trio's."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(f".{path.name}.lock")
        self._copy: _Copy | None = None
        self._mutex = threading.Lock()
        self.reads = 0
        """How many times the file was read and parsed."""
        self.writes = 0
        """How many times it was written."""

    @classmethod
    def in_folder(cls, folder: Path) -> AuthorFile:
        return cls(folder / AUTHORS_FILE)

    def _load(self) -> Mapping[str, Author]:
        """The authors, from memory when the file has not changed."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise AuthorError(f"{self.path}: cannot read: {e.strerror}") from None
        copy = self._copy
        if copy is not None and copy.settled and copy.signature == _signature(st):
            return copy.authors
        return self._read()

    def _read(self) -> Mapping[str, Author]:
        """The authors as the file holds them now (read and parsed)."""
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                raw = f.read()
        except FileNotFoundError:
            self._copy = None
            return {}
        except OSError as e:
            raise AuthorError(f"{self.path}: cannot read: {e.strerror}") from None
        try:
            data = json.loads(raw)
        except ValueError as e:
            raise AuthorError(f"{self.path}: not JSON ({e})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise AuthorError(f"{self.path}: not an authors file ({FORMAT})")
        entries = [_from_json(a, str(self.path)) for a in data.get("authors", [])]
        authors = {a.name: a for a in entries}
        with self._mutex:
            self.reads += 1
            self._copy = _Copy(_signature(st), authors, time.time() - st.st_mtime > RACY_S)
        return authors

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                     0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor drops the lock

    def _save(self, authors: Mapping[str, Author]) -> None:
        text = json.dumps({"format": FORMAT,
                           "authors": [_to_json(a) for a in authors.values()]}, indent=1)
        folder = self.path.parent
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
        with self._mutex:
            self.writes += 1
            self._copy = None  # read back at the next look (once the change has settled)

    def get(self, name: str) -> Author | None:
        return self._load().get(name)

    def by_digest(self, digest: str) -> Author | None:
        for author in self._load().values():
            if hmac.compare_digest(author.token_sha256, digest):
                return author
        return None

    def all(self) -> list[Author]:
        return list(self._load().values())

    def change(self, name: str, change: Change) -> Author | None:
        with self._locked():
            authors = dict(self._read())
            before = authors.get(name)
            after = change(before)
            if after is None or after == before:
                return after
            if after.name != name:
                raise AuthorError(f"a change of author {name!r} cannot rename them")
            authors[name] = after
            self._save(authors)
            return after

    def put(self, author: Author) -> None:
        """Store ``author`` as given (a new one, or in place of the one of that name)."""
        self.change(author.name, lambda _: author)
