"""Bot bundles: a bot's folder as a gzip-compressed tar, packed by ``arena submit`` and
unpacked by the league, read-only, into its bot store under its SHA-256.

Unpacking trusts nothing in the archive. It refuses, with one line, and before writing more
than the caps allow:

- an archive over ``max_bundle_bytes`` (counted as it arrives, see
  :mod:`arena.league_service.service`), more than ``max_files`` entries, or more than
  ``max_unpacked_bytes`` of contents;
- a high compression ratio: more than :data:`MAX_RATIO` decompressed bytes per archive
  byte once past 1 MiB (a bomb is stopped while it is being decompressed, by counting);
- a name that is absolute, has a ``..`` part, a NUL, or that repeats an earlier entry;
- an entry below a symbolic link or below a file (the tar trick of writing through a
  link planted earlier);
- hard links, device files, fifos and any other special entry;
- a symbolic link whose target, resolved in the whole unpacked folder (every link of the
  archive in place, so that a chain of links is judged as the bot will meet it), leaves
  it, or a loop of links (links that stay inside, as in ``node_modules/.bin``, are kept;
  they are made after every file, so nothing is ever written through one).

Files are written with ``O_EXCL | O_NOFOLLOW`` into a fresh folder of the store's
``.incoming/``, fsynced, made read-only (files 0444, or 0555 when the archive gave them an
x bit; folders 0555; owner and times are the arena's, not the archive's), fsynced again
as folders, and only then renamed to ``bots/<sha256>/``: a folder under that name is
always complete. A crash leaves at most a folder in ``.incoming/``, which
:func:`sweep_incoming` removes when the league starts.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import posixpath
import secrets
import shutil
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from arena.league.manifest import DEFAULT_RUNTIMES, MANIFEST, Manifest, read_manifest
from arena.model.league_api import AuthorLimits
from arena.model.names import shown

MAX_RATIO = 100
"""The most decompressed bytes per archive byte (past :data:`RATIO_FLOOR`)."""
RATIO_FLOOR = 1 << 20
CHUNK = 64 << 10
INCOMING = ".incoming"
SKIPPED = frozenset({".git", "__pycache__", ".mypy_cache", ".pytest_cache"})
"""Folders ``arena submit`` leaves out of a bundle."""


class BundleError(ValueError):
    """A bundle refused; the message is one line for its author."""


_DEFAULTS = AuthorLimits()


@dataclass(frozen=True, slots=True)
class Caps:
    """How big a bundle may be."""

    max_bundle_bytes: int = _DEFAULTS.max_bundle_bytes
    max_unpacked_bytes: int = _DEFAULTS.max_unpacked_bytes
    max_files: int = _DEFAULTS.max_files
    max_ratio: int = MAX_RATIO

    @classmethod
    def of(cls, limits: AuthorLimits) -> Caps:
        return cls(limits.max_bundle_bytes, limits.max_unpacked_bytes, limits.max_files)


def mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


class _Counted(io.RawIOBase):
    """The decompressed stream, counted: BundleError once it passes the caps."""

    def __init__(self, inner: gzip.GzipFile, compressed: int, caps: Caps) -> None:
        self._inner = inner
        self._compressed = max(compressed, 1)
        self._caps = caps
        self.count = 0
        # the tar format's own overhead (headers, padding) on top of the contents' cap
        self._limit = caps.max_unpacked_bytes + 1024 * (caps.max_files + 20)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        try:
            data = self._inner.read(len(buffer))
        except (OSError, EOFError, zlib.error) as e:
            raise BundleError(f"the archive is not a valid gzip stream: {e}") from None
        self.count += len(data)
        if self.count > self._limit:
            raise BundleError(f"the archive unpacks to more than "
                              f"{mib(self._caps.max_unpacked_bytes)} (the limit)")
        if self.count > RATIO_FLOOR and self.count > self._caps.max_ratio * self._compressed:
            raise BundleError(f"the archive's compression ratio is over "
                              f"{self._caps.max_ratio}:1 (a bomb?); refused")
        buffer[:len(data)] = data
        return len(data)


def _clean_name(raw: str) -> str:
    """The member's path, normalised; BundleError for one that could leave the folder."""
    if "\0" in raw:
        raise BundleError(f"entry {shown(raw)}: a name with NUL")
    if raw.startswith("/"):
        raise BundleError(f"entry {shown(raw)}: an absolute path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BundleError(f"entry {shown(raw)}: a path with '..'")
    if any(len(p.encode()) > 255 for p in parts) or len(raw.encode()) > 4096:
        raise BundleError(f"entry {shown(raw)}: a name too long")
    return "/".join(parts)


def _kind(member: tarfile.TarInfo) -> str:
    if member.isreg():
        return "file"
    if member.isdir():
        return "dir"
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hard link"
    if member.ischr() or member.isblk():
        return "device file"
    if member.isfifo():
        return "fifo"
    return "special entry"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class Unpacked:
    files: int
    bytes: int


def unpack(archive: Path, dest: Path, caps: Caps) -> Unpacked:
    """Unpack ``archive`` into the new folder ``dest`` (which must not exist), checked as
    the module says; read-only and fsynced when it returns. On BundleError ``dest`` may
    hold a part: the caller removes it (:func:`remove_tree`)."""
    size = archive.stat().st_size
    if size > caps.max_bundle_bytes:
        raise BundleError(f"the archive is {mib(size)}, over the limit of "
                          f"{mib(caps.max_bundle_bytes)}")
    with open(archive, "rb") as raw:
        if raw.read(2) != b"\x1f\x8b":
            raise BundleError("the archive is not gzip-compressed (expected a .tar.gz)")
        raw.seek(0)
        gz = gzip.GzipFile(fileobj=raw, mode="rb")
        counted = _Counted(gz, size, caps)
        stream = io.BufferedReader(counted, CHUNK)
        os.mkdir(dest, 0o700)
        try:
            with tarfile.open(fileobj=stream, mode="r|") as tar:
                return _unpack_members(tar, dest, caps)
        except tarfile.TarError as e:
            raise BundleError(f"the archive is not a valid tar: {e}") from None


def _unpack_members(tar: tarfile.TarFile, dest: Path, caps: Caps) -> Unpacked:
    kinds: dict[str, str] = {"": "dir"}
    files: list[tuple[str, bool]] = []
    links: list[tuple[str, str]] = []
    total = 0
    count = 0
    for member in tar:
        count += 1
        if count > caps.max_files:
            raise BundleError(f"the archive has more than {caps.max_files} entries (the limit)")
        name = _clean_name(member.name)
        kind = _kind(member)
        if kind not in ("file", "dir", "symlink"):
            raise BundleError(f"entry {shown(member.name)}: a {kind}; a bundle holds only "
                              f"files, folders and links that stay inside it")
        if not name:
            if kind == "dir":
                continue
            raise BundleError(f"entry {shown(member.name)}: names the bundle's own folder")
        parent = posixpath.dirname(name)
        above = parent
        while above not in kinds:  # an entry may imply its folders
            above = posixpath.dirname(above)
        if kinds[above] != "dir":
            raise BundleError(f"entry {shown(member.name)}: lies below a "
                              f"{kinds[above]} of the archive")
        if name in kinds:
            if kind == "dir" and kinds[name] == "dir":
                continue
            raise BundleError(f"entry {shown(member.name)}: appears twice")
        _make_parents(dest, parent, kinds)
        kinds[name] = kind
        target = dest / name
        if kind == "dir":
            os.mkdir(target, 0o700)
        elif kind == "symlink":
            link = member.linkname
            if not link or "\0" in link or link.startswith("/"):
                raise BundleError(f"entry {shown(member.name)}: a link to an absolute path "
                                  f"({shown(link)})")
            lexical = posixpath.normpath(posixpath.join(parent, link))
            if lexical == ".." or lexical.startswith("../"):
                raise BundleError(f"entry {shown(member.name)}: a link leaving the bundle "
                                  f"(to {shown(link)})")
            links.append((name, link))
        else:
            total += member.size
            if total > caps.max_unpacked_bytes:
                raise BundleError(f"the archive unpacks to more than "
                                  f"{mib(caps.max_unpacked_bytes)} (the limit)")
            source = tar.extractfile(member)
            assert source is not None
            _write(target, source, member.size)
            files.append((name, bool(member.mode & 0o111)))
    for name, link in links:
        os.symlink(link, dest / name)
    root = Path(os.path.realpath(dest))
    for name, link in links:  # judged with every link of the archive in place
        _check_link(dest / name, name, link, root)
    for name, executable in files:
        os.chmod(dest / name, 0o555 if executable else 0o444)
    folders = sorted((n for n, k in kinds.items() if k == "dir"), key=lambda n: -n.count("/"))
    for name in folders:  # deepest first, the top last (renamed first, see store_bundle)
        folder = dest / name if name else dest
        _fsync_dir(folder)
        if name:
            os.chmod(folder, 0o555)
    return Unpacked(len(files), total)


def _check_link(path: Path, name: str, link: str, root: Path) -> None:
    """BundleError unless the link at ``path``, resolved in the whole unpacked tree (every
    link of the archive in place, as the bot will meet them), stays inside ``root``.
    Judged one by one as they were made, a chain such as ``c -> b/..``, ``b -> x/..``,
    ``x -> .`` (in that order) passes each check while the later links do not exist yet,
    and together leads out; judged here, it does not. A loop of links is refused too."""
    try:
        real = os.path.realpath(path, strict=True)
    except FileNotFoundError:  # a dangling link: resolved as far as it goes
        real = os.path.realpath(path)
    except OSError:
        raise BundleError(f"entry {shown(name)}: a loop of links (to {shown(link)})") from None
    if not Path(real).is_relative_to(root):
        raise BundleError(f"entry {shown(name)}: a link leaving the bundle "
                          f"(to {shown(link)})")


def _make_parents(dest: Path, parent: str, kinds: dict[str, str]) -> None:
    missing = []
    while parent not in kinds:
        missing.append(parent)
        parent = posixpath.dirname(parent)
    for name in reversed(missing):
        os.mkdir(dest / name, 0o700)
        kinds[name] = "dir"


def _write(path: Path, source: IO[bytes], size: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        left = size
        while left > 0:
            data = source.read(min(CHUNK, left))
            if not data:
                raise BundleError(f"entry {shown(path.name)}: the archive ends inside it")
            os.write(fd, data)
            left -= len(data)
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_tree(path: Path) -> None:
    """Remove a (possibly read-only) unpacked folder; nothing if it is not there."""
    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return
    for folder, dirs, _ in os.walk(path):
        for d in dirs:
            with contextlib.suppress(OSError):
                p = Path(folder) / d
                if not p.is_symlink():
                    os.chmod(p, 0o700)
    os.chmod(path, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def incoming(bots: Path) -> Path:
    """The store's folder of uploads and unpacks under way (private)."""
    folder = bots / INCOMING
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def sweep_incoming(bots: Path) -> list[str]:
    """Remove what a crash left in ``.incoming/`` (parts of uploads and unpacks): nothing
    there was acknowledged. Returns what was removed."""
    folder = bots / INCOMING
    if not folder.is_dir():
        return []
    removed = []
    for entry in sorted(folder.iterdir()):
        remove_tree(entry)
        removed.append(entry.name)
    return removed


def store_bundle(archive: Path, bots: Path, sha: str, caps: Caps,
                 runtimes: tuple[str, ...] = DEFAULT_RUNTIMES) -> tuple[Path, Manifest]:
    """Unpack ``archive`` (whose SHA-256 is ``sha``) and read its manifest, then move it
    to ``bots/<sha>/`` (durable when this returns). The same archive again finds its folder
    there and reuses it."""
    final = bots / sha
    work = incoming(bots) / f"{sha[:16]}-{secrets.token_hex(4)}"
    try:
        unpack(archive, work, caps)
        manifest = read_manifest(work, runtimes)
        if os.path.isdir(final):
            remove_tree(work)
        else:
            os.rename(work, final)
            os.chmod(final, 0o555)
            _fsync_dir(final)
            _fsync_dir(bots)
    except BaseException:
        remove_tree(work)
        raise
    return final, manifest


# -- packing (arena submit) -----------------------------------------------------------


def _entries(folder: Path) -> Iterator[Path]:
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
        here = Path(current)
        for name in sorted(dirs):
            if (here / name).is_symlink():
                yield here / name
        for name in sorted(files):
            yield here / name
        for name in dirs:
            if not (here / name).is_symlink():
                yield here / name


def pack(folder: Path, out: IO[bytes]) -> int:
    """Write ``folder`` as a bundle (tar.gz) to ``out``; the number of entries. Owners and
    times are left out (the same folder makes the same bytes); folders in :data:`SKIPPED`
    are left out; a special file, or a link leaving the folder, is a BundleError here
    already."""
    folder = folder.absolute()
    if not (folder / MANIFEST).is_file():
        raise BundleError(f"{folder}: no {MANIFEST} at the top of the folder (see docs/submit.md)")
    root = Path(os.path.realpath(folder))
    count = 0
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(_entries(folder)):
            rel = path.relative_to(folder).as_posix()
            st = path.lstat()
            info = tarfile.TarInfo(rel)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if stat.S_ISLNK(st.st_mode):
                if not Path(os.path.realpath(path)).is_relative_to(root):
                    raise BundleError(f"{rel}: a link leaving the folder")
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(path)
                info.mode = 0o777
                tar.addfile(info)
            elif stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                info.size = st.st_size
                info.mode = 0o755 if st.st_mode & 0o111 else 0o644
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                raise BundleError(f"{rel}: not a file, folder or link (a device or fifo?)")
            count += 1
    return count


def pack_to_temp(folder: Path) -> tuple[IO[bytes], int]:
    """The bundle of ``folder`` in a temporary file (rewound) and its size."""
    out = tempfile.TemporaryFile(prefix="arena-bundle-")  # noqa: SIM115 (returned open)
    try:
        pack(folder, out)
        size = out.tell()
        out.seek(0)
    except BaseException:
        out.close()
        raise
    return out, size
