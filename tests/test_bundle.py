"""Bot bundles (arena/league/bundle.py, manifest.py) and authors (authors.py), on real
files: a folder packed by ``arena submit``'s code unpacks read-only under its SHA-256;
every kind of hostile archive is refused with one line before the caps are passed, and
leaves nothing in the store; the manifest's rules; tokens stored only as digests, the
authors' file 0600, the hourly limit. (Over real gRPC, the same archives are sent to a
running league in tests/test_league_service.py.)"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import stat
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.league.authors import (
    AuthorError,
    AuthorFile,
    add_author,
    authenticate,
    revoke,
    rotate_token,
    take_submission,
    token_digest,
)
from arena.league.bundle import (
    BundleError,
    Caps,
    pack,
    pack_to_temp,
    store_bundle,
    sweep_incoming,
    unpack,
)
from arena.league.manifest import ManifestError, parse_manifest, read_manifest
from arena.model.league_api import AuthorLimits

MANIFEST = b'name = "t"\nversion = "1"\nruntime = "python3"\ncommand = "python3 bot.py"\n'


def entry(tar: tarfile.TarFile, name: str, data: bytes = b"", *, kind: bytes = tarfile.REGTYPE,
          link: str = "", mode: int = 0o644, size: int | None = None) -> None:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = mode
    info.size = len(data) if size is None else size
    if kind == tarfile.REGTYPE:
        tar.addfile(info, io.BytesIO(data))
    else:
        info.size = 0
        tar.addfile(info)


def archive(*build: Callable[[tarfile.TarFile], None], level: int = 6) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        entry(tar, "bot.toml", MANIFEST)
        entry(tar, "bot.py", b"print('hi')\n")
        for step in build:
            step(tar)
    return gzip.compress(raw.getvalue(), compresslevel=level, mtime=0)


def zeros_entry(name: str, size: int) -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size = size
        tar.addfile(info, io.BytesIO(bytes(size)))
    return add


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def bomb(size: int) -> bytes:
    """A tar.gz whose one file is ``size`` zero bytes (about 1000:1)."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9) as gz, \
            tarfile.open(fileobj=gz, mode="w|") as tar:
        entry(tar, "bot.toml", MANIFEST)
        info = tarfile.TarInfo("zeros.bin")
        info.size = size
        tar.addfile(info, io.BufferedReader(_Zeros(size)))
    return out.getvalue()


def tree_bytes(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            p = Path(root) / name
            if not p.is_symlink():
                total += p.stat().st_size
    return total


HOSTILE: dict[str, tuple[Callable[[], bytes], str]] = {
    "absolute path": (lambda: archive(lambda t: entry(t, "/etc/evil", b"x")),
                      "an absolute path"),
    "dot-dot path": (lambda: archive(lambda t: entry(t, "a/../../evil", b"x")),
                     "a path with '..'"),
    "symlink to an absolute path": (
        lambda: archive(lambda t: entry(t, "etc", kind=tarfile.SYMTYPE, link="/etc")),
        "a link to an absolute path"),
    "symlink leaving by ..": (
        lambda: archive(lambda t: entry(t, "up", kind=tarfile.SYMTYPE, link="../../x")),
        "a link leaving the bundle"),
    "symlink leaving through another link": (
        lambda: archive(lambda t: entry(t, "here", kind=tarfile.SYMTYPE, link="."),
                        lambda t: entry(t, "out", kind=tarfile.SYMTYPE, link="here/..")),
        "a link leaving the bundle"),
    "a chain of links made before the links it goes through": (
        lambda: archive(lambda t: entry(t, "c", kind=tarfile.SYMTYPE, link="b/.."),
                        lambda t: entry(t, "b", kind=tarfile.SYMTYPE, link="x/.."),
                        lambda t: entry(t, "x", kind=tarfile.SYMTYPE, link=".")),
        "a link leaving the bundle"),
    "file written through a symlink": (
        lambda: archive(lambda t: entry(t, "d", kind=tarfile.SYMTYPE, link="sub"),
                        lambda t: entry(t, "d/passwd", b"x")),
        "lies below a symlink"),
    "hard link": (lambda: archive(lambda t: entry(t, "h", kind=tarfile.LNKTYPE,
                                                  link="/etc/passwd")), "a hard link"),
    "character device": (lambda: archive(lambda t: entry(t, "null", kind=tarfile.CHRTYPE)),
                         "a device file"),
    "block device": (lambda: archive(lambda t: entry(t, "sda", kind=tarfile.BLKTYPE)),
                     "a device file"),
    "fifo": (lambda: archive(lambda t: entry(t, "pipe", kind=tarfile.FIFOTYPE)), "a fifo"),
    "entry twice": (lambda: archive(lambda t: entry(t, "bot.py", b"again")), "appears twice"),
    "file below a file": (lambda: archive(lambda t: entry(t, "bot.py/x", b"x")),
                          "lies below a file"),
    "too many files": (lambda: archive(*(lambda t, i=i: entry(t, f"f{i}", b"")
                                         for i in range(60))), "more than 50 entries"),
    "unpacked over the cap": (lambda: archive(zeros_entry("big.bin", 3 << 20), level=1),
                              "unpacks to more than 2 MiB"),
    "compression bomb": (lambda: bomb(1_900_000), "compression ratio is over 100:1"),
    "not gzip": (lambda: b"PK\x03\x04 this is a zip", "not gzip-compressed"),
    "gzip but not tar": (lambda: gzip.compress(b"hello world" * 100), "not a valid tar"),
    "truncated": (lambda: archive(zeros_entry("data.bin", 200_000), level=0)[:150_000],
                  "not a valid gzip stream"),
    "manifest missing": (lambda: gzip.compress(_tar_without_manifest()), "bot.toml is missing"),
    "manifest not TOML": (lambda: _with_manifest(b"name = \n"), "not valid TOML"),
    "manifest without command": (lambda: _with_manifest(
        b'name = "t"\nversion = "1"\nruntime = "python3"\n'), "command is missing"),
    "manifest name with a control character": (lambda: _with_manifest(
        b'name = "evil\\u001b[31m"\nversion = "1"\nruntime = "python3"\n'
        b'command = "python3 bot.py"\n'), "control character"),
    "runtime not allowed": (lambda: _with_manifest(
        b'name = "t"\nversion = "1"\nruntime = "java"\ncommand = "java Bot"\n'),
        "runtime 'java' is not allowed"),
    "native program not executable": (lambda: _with_manifest(
        b'name = "t"\nversion = "1"\nruntime = "native"\ncommand = "./bot.py"\n'),
        "not executable"),
}


def _tar_without_manifest() -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        entry(tar, "bot.py", b"x")
    return raw.getvalue()


def _with_manifest(text: bytes) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        entry(tar, "bot.toml", text)
        entry(tar, "bot.py", b"x")
    return gzip.compress(raw.getvalue())


CAPS = Caps(max_bundle_bytes=4 << 20, max_unpacked_bytes=2 << 20, max_files=50)


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_bundle_is_refused_in_one_line_and_leaves_nothing(
        kind: str, tmp_path: Path) -> None:
    make, expected = HOSTILE[kind]
    data = make()
    bundle = tmp_path / "bundle.tar.gz"
    bundle.write_bytes(data)
    bots = tmp_path / "bots"
    bots.mkdir()
    sha = hashlib.sha256(data).hexdigest()
    with pytest.raises((BundleError, ManifestError)) as refused:
        store_bundle(bundle, bots, sha, CAPS)
    message = str(refused.value)
    assert expected in message and "\n" not in message, message
    assert sorted(p.name for p in bots.iterdir()) == [".incoming"]
    assert list((bots / ".incoming").iterdir()) == []
    assert not (tmp_path.parent / "evil").exists() and not Path("/etc/evil").exists()


def test_a_bomb_is_stopped_before_it_writes_past_the_cap(tmp_path: Path) -> None:
    """The bomb's file claims 64 MiB; the counting reader stops the decompression at the
    ratio, so the unpacked part never reaches the contents' cap."""
    data = bomb(64 << 20)
    assert len(data) < 200_000
    path = tmp_path / "b.tar.gz"
    path.write_bytes(data)
    dest = tmp_path / "dest"
    with pytest.raises(BundleError, match="ratio"):
        unpack(path, dest, Caps(max_unpacked_bytes=512 << 20))
    assert tree_bytes(dest) <= 100 * len(data) + (1 << 20)


def test_an_archive_over_the_size_cap_is_refused_before_unpacking(tmp_path: Path) -> None:
    path = tmp_path / "big.tar.gz"
    path.write_bytes(os.urandom(5 << 20))
    with pytest.raises(BundleError, match="over the limit of 4 MiB"):
        unpack(path, tmp_path / "dest", CAPS)
    assert not (tmp_path / "dest").exists()


def make_bot_folder(folder: Path) -> Path:
    (folder / "lib").mkdir(parents=True)
    (folder / "bot.toml").write_bytes(MANIFEST)
    (folder / "bot.py").write_text("print('bot')\n")
    (folder / "lib" / "helper.py").write_text("X = 1\n")
    run = folder / "run"
    run.write_text("#!/bin/sh\nexec python3 bot.py\n")
    run.chmod(0o755)
    (folder / "lib" / "link.py").symlink_to("helper.py")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"junk")
    return folder


def test_a_packed_folder_unpacks_read_only_under_its_sha256(tmp_path: Path) -> None:
    folder = make_bot_folder(tmp_path / "src")
    archive_file, size = pack_to_temp(folder)
    with archive_file:
        data = archive_file.read()
    assert len(data) == size
    again = io.BytesIO()
    pack(folder, again)
    assert again.getvalue() == data  # the same folder makes the same bytes
    bundle = tmp_path / "b.tar.gz"
    bundle.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    bots = tmp_path / "bots"
    bots.mkdir()
    final, manifest = store_bundle(bundle, bots, sha, CAPS)
    assert final == bots / sha and manifest.name == "t" and manifest.spec == "cmd:python3 bot.py"
    assert (final / "lib" / "helper.py").read_text() == "X = 1\n"
    assert os.readlink(final / "lib" / "link.py") == "helper.py"
    assert not (final / "__pycache__").exists()
    modes = {p.relative_to(final).as_posix(): stat.S_IMODE(p.lstat().st_mode)
             for p in final.rglob("*") if not p.is_symlink()}
    assert modes == {"bot.toml": 0o444, "bot.py": 0o444, "run": 0o555, "lib": 0o555,
                     "lib/helper.py": 0o444}
    assert stat.S_IMODE(final.stat().st_mode) == 0o555
    assert all(p.stat().st_uid == os.getuid() for p in final.rglob("*"))
    # the same archive again reuses its folder; the store holds nothing else
    final2, _ = store_bundle(bundle, bots, sha, CAPS)
    assert final2 == final
    assert sorted(p.name for p in bots.iterdir()) == [".incoming", sha]
    assert list((bots / ".incoming").iterdir()) == []


def test_packing_refuses_what_the_league_would(tmp_path: Path) -> None:
    folder = make_bot_folder(tmp_path / "src")
    (folder / "out").symlink_to("/etc")
    with pytest.raises(BundleError, match="a link leaving the folder"):
        pack(folder, io.BytesIO())
    (folder / "out").unlink()
    os.mkfifo(folder / "pipe")
    with pytest.raises(BundleError, match="not a file, folder or link"):
        pack(folder, io.BytesIO())
    with pytest.raises(BundleError, match=r"no bot\.toml"):
        pack(tmp_path, io.BytesIO())


def test_what_a_crash_leaves_in_incoming_is_swept(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    (bots / ".incoming" / "half" / "sub").mkdir(parents=True)
    (bots / ".incoming" / "half" / "sub" / "f").write_text("x")
    (bots / ".incoming" / "half" / "sub").chmod(0o555)
    (bots / ".incoming" / "upload-1.part").write_bytes(b"x")
    assert sweep_incoming(bots) == ["half", "upload-1.part"]
    assert list((bots / ".incoming").iterdir()) == []


@pytest.mark.parametrize(("text", "expected"), [
    ('name = "a"\nversion = "1"\nruntime = "node"\ncommand = "python3 bot.py"\n',
     "the command of runtime node starts with node or nodejs"),
    ('name = "a"\nversion = "1"\nruntime = "native"\ncommand = "bot"\n',
     "a native command starts with a program of the bundle"),
    ('name = "a"\nversion = "1"\nruntime = "native"\ncommand = "/bin/sh x"\n',
     "a native command starts with a program of the bundle"),
    ('name = "a"\nversion = "1"\nruntime = "python3"\ncommand = "python3 ../x.py"\n',
     "leaves the bundle"),
    ('name = "a"\nversion = "1"\nruntime = "python3"\ncommand = "python3 bot.py"\nx = 1\n',
     "unknown key 'x'"),
    ('name = ""\nversion = "1"\nruntime = "python3"\ncommand = "python3 bot.py"\n',
     "is empty"),
    ('name = "a"\nversion = 1\nruntime = "python3"\ncommand = "python3 bot.py"\n',
     "version must be a string"),
])
def test_manifest_errors_are_one_line(text: str, expected: str) -> None:
    with pytest.raises(ManifestError) as refused:
        parse_manifest(text)
    assert expected in str(refused.value) and "\n" not in str(refused.value)


def test_a_runtime_the_league_does_not_allow_is_refused() -> None:
    text = 'name = "a"\nversion = "1"\nruntime = "node"\ncommand = "node bot.js"\n'
    assert parse_manifest(text).runtime == "node"
    with pytest.raises(ManifestError, match="allowed: python3, native"):
        parse_manifest(text, ("python3", "native"))


def test_a_native_program_must_be_an_executable_file_of_the_bundle(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(
        'name = "a"\nversion = "1"\nruntime = "native"\ncommand = "./run --fast"\n')
    with pytest.raises(ManifestError, match="not a file of the bundle"):
        read_manifest(tmp_path)
    (tmp_path / "run").write_text("#!/bin/sh\n")
    with pytest.raises(ManifestError, match="not executable"):
        read_manifest(tmp_path)
    (tmp_path / "run").chmod(0o755)
    assert read_manifest(tmp_path).command == "./run --fast"


# -- authors -------------------------------------------------------------------------


def test_a_token_is_shown_once_and_stored_only_as_its_digest(tmp_path: Path) -> None:
    store = AuthorFile.in_folder(tmp_path)
    token = add_author(store, "alice")
    assert token.startswith("arena_") and len(token) == 6 + 43
    text = store.path.read_text()
    assert token not in text and token[6:] not in text
    assert token_digest(token) in text
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert json.loads(text)["format"] == "trick-arena.authors/1"
    author = authenticate(store, token)
    assert author is not None and author.name == "alice"
    assert authenticate(store, token + "x") is None
    assert authenticate(store, None) is None and authenticate(store, "") is None
    with pytest.raises(AuthorError, match="exists already"):
        add_author(store, "alice")
    with pytest.raises(AuthorError, match="control character"):
        add_author(store, "bad\x1bname")


def test_rotating_and_revoking_a_token(tmp_path: Path) -> None:
    store = AuthorFile.in_folder(tmp_path)
    old = add_author(store, "bob")
    new = rotate_token(store, "bob")
    assert authenticate(store, old) is None
    assert authenticate(store, new) is not None
    revoke(store, "bob")
    assert authenticate(store, new) is None


def test_the_hourly_limit_counts_every_attempt_durably(tmp_path: Path) -> None:
    store = AuthorFile.in_folder(tmp_path)
    add_author(store, "carol", AuthorLimits(submissions_per_hour=2))
    now = time.time()
    take_submission(store, "carol", now)
    take_submission(AuthorFile.in_folder(tmp_path), "carol", now + 1)  # read back from disk
    with pytest.raises(AuthorError, match="limit is 2 submissions per hour; the next is "
                                          "allowed in about 60 min"):
        take_submission(store, "carol", now + 2)
    take_submission(store, "carol", now + 3601)  # the first has left the sliding hour
