"""A cache of directory entries of its own for every sandboxed bot process: each shared
folder of its view mounted from a read-only file-system image (EROFS) in the bot's own
mount namespace.

Why: the kernel caches the entries of every folder it looks into, the names that do not
exist among them ("negative" entries). A lookup of a name already looked up is faster
(about 2 against 5 us here), and bind mounts share their file system's cache, so two
bots that see one folder of the host (``/usr/bin``, in every view) could pass bits
through it: the sender looks up names that spell its message, the receiver times them.
No permission or system call filter can refuse a lookup. A file system of its own per
bot can: an image mounted in a bot's mount namespace is a superblock of its own (its own
device number), with a cache of entries, and of pages, that no other bot reaches.

How (root only, with the uids of :mod:`arena.proc.ids`):

* :func:`image_for` makes one image per shared folder of the runtime view
  (``mkfs.erofs`` of Debian's ``erofs-utils``, uncompressed, owners root, times kept),
  kept in :data:`IMAGE_DIR` and made again when the folder changes (a signature of every
  entry's name, type, size, time and inode, walked at most once per :data:`REWALK_S` in a
  process). A folder left out of the view inside it (the standard library's tests) is in
  the image as an empty folder.
* The spawn chain's root shell, in the bot's own mount namespace, mounts each image on
  its place in :data:`arena.proc.ids.STAGE_DIR` (one ``mount`` system call each, from
  ``perl``, which Debian always has: util-linux's ``mount`` would put an image on a loop
  device, and share one device, and so one cache, between every mount of it), and
  bubblewrap binds the folders from there. The mounts die with the bot's namespace:
  nothing is mounted on the host.
* The images themselves are read into the page cache like the view
  (:mod:`arena.proc.view`): a bot's own mount reads its pages from the image's, so an
  image page no one had read would be a bit again.

Where it cannot be had (not root, no ``erofs-utils`` or ``perl``, a kernel that cannot
mount an image from a file), the view's folders are bound from the host as before and
the arena says so at the start; ``ARENA_NO_VIEW_IMAGES`` turns it off. See
``docs/isolation.md`` ("The cache of directory entries")."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from arena.proc import ids

IMAGE_DIR = "/var/cache/trick-arena/views"
"""Where the images are kept (root's, mode 0700; ``ARENA_VIEW_IMAGE_DIR`` sets another):
one per shared folder, the newest only."""

REWALK_S = 300.0
"""A folder whose image this process checked this long ago is walked again at the next
bot start that needs it (a change made since is then seen)."""

MAX_IMAGES = 32
"""The most images one bot process mounts (each has its place ready); further folders
are bound from the host."""

KEEP_UNUSED_S = 86400.0
"""An image no bot process started with for this long (its modification time, touched at
each use) is removed when the next image is made: a bot's folder that is gone (a test's
temporary folder, a retired entry's) leaves no image behind for long."""

CACHE_MB = 8192
"""The most disk the images may take in all, in MiB (``ARENA_VIEW_IMAGE_CACHE_MB`` sets
another, beside ``ARENA_VIEW_IMAGE_DIR``): when an image made takes them past it, the
images unused the longest go first (never one in use: used by this process within
:data:`REWALK_S`, or touched by any within :data:`IN_USE_S`; a run's working set is not
thrown out and made again)."""

IMAGE_UUID = "5f6c0b1e-7a2d-5c8e-9b41-3d2a7e6f0c19"
"""The file-system UUID of every image (see :func:`_build`)."""

IN_USE_S = 2 * REWALK_S
"""An image touched this recently is in use by some arena (each touches the images it
starts bots with at least every :data:`REWALK_S`): the cap never removes it, so that two
arenas on one machine do not throw out each other's working sets."""

CONTENT = "content"
"""The folder of the store that holds each image's bytes once, named by their SHA-256:
the image of a folder is a hard link to its content, so two folders with the same
content (a virtual environment copied, a bot's folder in two checkouts) take the disk
once."""

BUILD_TIMEOUT_S = 600.0

_SYS_MOUNT = {"x86_64": 165, "aarch64": 40, "riscv64": 40, "loongarch64": 40,
              "ppc64le": 21, "s390x": 21}
"""The number of the ``mount`` system call by machine (none of them change)."""

PERL_MOUNT = ('my $n = shift; while (@ARGV) { my ($s, $d, $t) = (shift, shift, "erofs"); '
              'syscall($n, $s, $d, $t, 7, 0) == 0 or die "arena: cannot mount $s on $d: '
              '$!\\n" }')
"""``perl -e`` code that mounts each image (read-only, nosuid, nodev) on its place:
arguments ``SYSCALL IMAGE PLACE [IMAGE PLACE...]``. No single quote: it is quoted for
the shell."""


@dataclass(frozen=True, slots=True)
class ImageMechanism:
    """Whether the view's folders are mounted from images here, and if not, why not."""

    why_not: str = ""
    perl: str = ""
    mkfs: str = ""
    syscall: int = 0

    @property
    def active(self) -> bool:
        return not self.why_not

    def describe(self) -> str:
        if self.active:
            return ("bot views: each bot process mounts the folders of its view "
                    "from images of its own, so no bot shares a cache of directory entries "
                    "with another")
        return (f"bot views: the shared folders are bound from the host ({self.why_not}); "
                f"two bots at one table could pass bits by timing lookups of names in "
                f"them (see docs/isolation.md)")


def image_dir() -> str:
    return os.environ.get("ARENA_VIEW_IMAGE_DIR") or IMAGE_DIR


def place(index: int) -> str:
    """Where the ``index``-th image of a bot process is mounted (an empty folder of
    root's on the host)."""
    return f"{ids.STAGE_DIR}/v{index}"


def _places() -> bool:
    """The empty places in :data:`arena.proc.ids.STAGE_DIR`, made if missing."""
    for i in range(MAX_IMAGES):
        folder = place(i)
        try:
            os.mkdir(folder, 0o755)
        except FileExistsError:
            pass
        except OSError:
            return False
        try:
            st = os.lstat(folder)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
            return False
    return True


def _store() -> str | None:
    folder = image_dir()
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return None
    return folder


@cache
def image_mechanism() -> ImageMechanism:
    """Whether each bot process can mount its view's shared folders from images: needs
    the uids of its own (:func:`arena.proc.ids.id_mechanism`: root), ``mkfs.erofs``,
    ``perl`` and a kernel that mounts an EROFS image from a file (Linux 6.12); tried once
    for real."""
    if os.environ.get("ARENA_NO_VIEW_IMAGES"):
        return ImageMechanism("ARENA_NO_VIEW_IMAGES is set")
    if not ids.id_mechanism().active:
        return ImageMechanism("needs bot processes with uids of their own: "
                              + ids.id_mechanism().why_not)
    syscall = _SYS_MOUNT.get(os.uname().machine)
    if syscall is None:
        return ImageMechanism(f"not known on this machine ({os.uname().machine})")
    mkfs, perl = shutil.which("mkfs.erofs"), shutil.which("perl")
    if mkfs is None:
        return ImageMechanism("mkfs.erofs is missing: apt-get install erofs-utils")
    if perl is None:
        return ImageMechanism("perl is missing")
    store = _store()
    if store is None:
        return ImageMechanism(f"{image_dir()} is not a folder of the arena's own (0700)")
    if not _places():
        return ImageMechanism(f"{ids.STAGE_DIR} has no places for the images")
    mechanism = ImageMechanism(perl=perl, mkfs=mkfs, syscall=syscall)
    with tempfile.TemporaryDirectory(prefix="arena-probe-", dir=store) as temporary:
        source = Path(temporary) / "source"
        source.mkdir(mode=0o755)
        (source / "probe").write_text("ok\n")
        image = Path(temporary) / "probe.erofs"
        try:
            _build(mechanism, source, [], image)
            check = run_mounted(mechanism, [image], f"test -f {place(0)}/probe")
        except (OSError, subprocess.SubprocessError) as e:
            return ImageMechanism(f"an image could not be made or mounted: {e}")
    if check.returncode != 0:
        why = " ".join(check.stderr.split())[:160]
        return ImageMechanism(f"an image could not be mounted from a file here "
                              f"({why or f'exit {check.returncode}'})")
    return mechanism


def mount_script(mechanism: ImageMechanism, images: Sequence[Path]) -> str:
    """The shell line (for the root shell of the spawn chain, in the bot's own mount
    namespace) that mounts ``images`` on their places; "" for none."""
    if not images:
        return ""
    pairs = " ".join(f"{shlex.quote(str(image))} {place(i)}" for i, image in enumerate(images))
    return (f"{shlex.quote(mechanism.perl)} -e '{PERL_MOUNT}' {mechanism.syscall} {pairs} "
            f"|| exit 125; ")


def run_mounted(mechanism: ImageMechanism, images: Sequence[Path], command: str,
                timeout_s: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run the shell ``command`` as root in a mount namespace of its own with ``images``
    mounted on their places, as a bot's spawn chain does (the probe, and the tests)."""
    return subprocess.run(
        [ids.id_mechanism().unshare, "--mount", "--propagation", "private", "--",
         "/bin/sh", "-c", f"{mount_script(mechanism, images)}{command}"],
        capture_output=True, text=True, timeout=timeout_s, check=False)


def _regex(text: str) -> str:
    """``text`` as a literal in a POSIX regular expression."""
    return "".join("\\" + c if c in ".^$*+?()[]{}|\\" else c for c in text)


def _build(mechanism: ImageMechanism, root: Path, exclude: Sequence[Path],
           image: Path) -> None:
    """``mkfs.erofs`` of ``root`` into ``image``: uncompressed, every file root's, the
    times kept (Python checks its cached byte code by them), no extended attributes;
    the contents of each ``exclude`` (inside ``root``) left out, the folder kept empty."""
    args = [mechanism.mkfs, "--quiet", "--all-root", "-x-1", "--preserve-mtime",
            f"-U{IMAGE_UUID}"]
    for path in exclude:
        args.append(f"--exclude-regex=^{_regex(str(path.relative_to(root)))}/.")
    # a fixed UUID: the same folder contents make the same bytes but for the build time
    # (see _content_digest), which the store keeps once (CONTENT); each mount is still a
    # file system of its own
    done = subprocess.run([*args, str(image), str(root)], capture_output=True,
                          timeout=BUILD_TIMEOUT_S, check=False)
    if done.returncode != 0:
        why = " ".join(done.stderr.decode(errors="replace").split())[:200]
        raise OSError(f"mkfs.erofs of {root} failed: {why or f'exit {done.returncode}'}")


def _cache_mb() -> int:
    """``ARENA_VIEW_IMAGE_CACHE_MB``, else :data:`CACHE_MB` (a bad value: the default)."""
    text = os.environ.get("ARENA_VIEW_IMAGE_CACHE_MB", "").strip()
    try:
        return max(0, int(text)) if text else CACHE_MB
    except ValueError:
        return CACHE_MB


@dataclass(frozen=True, slots=True)
class Pruned:
    """What :func:`_prune` removed: images, and the bytes of disk that gave back."""

    images: int = 0
    bytes: int = 0


def _remove(store: Path, image: Path) -> int:
    """Remove one folder's image, its lock once it has no image, and its content once no
    image links to it; the bytes of disk given back."""
    freed = 0
    try:
        st = image.stat()
        image.unlink()
    except OSError:
        return 0
    prefix = image.name.split("-", 1)[0]
    if not any(store.glob(f"{prefix}-*.erofs")):
        (store / f".{prefix}.lock").unlink(missing_ok=True)
    if st.st_nlink <= 1:
        return st.st_blocks * 512  # an image of its own (from before contents were shared)
    for content in (store / CONTENT).glob("*.erofs"):
        try:
            cst = content.stat()
        except OSError:
            continue
        if cst.st_ino == st.st_ino and cst.st_dev == st.st_dev and cst.st_nlink <= 1:
            content.unlink(missing_ok=True)
            freed = cst.st_blocks * 512
    return freed


def _disk(store: Path) -> int:
    """The disk the store's images take: each content once (hard links counted once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for path in (*store.glob("*.erofs"), *(store / CONTENT).glob("*.erofs")):
        try:
            st = path.stat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
    return total


def _prune(store: Path, keep: Path) -> Pruned:
    """Remove the images (and their locks, and their contents once unlinked) no bot
    process used for :data:`KEEP_UNUSED_S`; then, while the images take more than the
    cap (:data:`CACHE_MB`), the ones unused the longest, never ``keep`` nor one this
    process used within :data:`REWALK_S`. What it removed."""
    now = time.time()
    recent = {image for at, image in _checked.values() if time.monotonic() - at < REWALK_S}
    removed = freed = 0
    ages: list[tuple[float, Path]] = []
    for image in store.glob("*.erofs"):
        try:
            used = image.stat().st_mtime
        except OSError:
            continue
        if image == keep:
            continue
        if now - used > KEEP_UNUSED_S:
            freed += _remove(store, image)
            removed += 1
        elif image not in recent and now - used > IN_USE_S:
            ages.append((used, image))
    cap = _cache_mb() << 20
    if ages and _disk(store) > cap:
        for _, image in sorted(ages):  # the oldest use first
            freed += _remove(store, image)
            removed += 1
            if _disk(store) <= cap:
                break
    for orphan in (store / CONTENT).glob("*.erofs"):  # a content no image links to
        try:
            st = orphan.stat()
        except OSError:
            continue
        if st.st_nlink <= 1 and now - st.st_mtime > BUILD_TIMEOUT_S:
            orphan.unlink(missing_ok=True)
            freed += st.st_blocks * 512
    return Pruned(removed, freed)


SUPERBLOCK = 1024
"""Where an EROFS image's superblock starts."""

_BUILD_STAMP = ((SUPERBLOCK + 4, SUPERBLOCK + 8), (SUPERBLOCK + 24, SUPERBLOCK + 36))
"""The superblock's fields that differ between two images of the same contents: its
checksum (offset 4) and its build time (offsets 24-35: seconds and nanoseconds). The
files' own times are kept exactly (``--preserve-mtime``); a build time cannot be fixed
without fixing them too (``-T``, ``SOURCE_DATE_EPOCH``)."""


def _content_digest(path: Path) -> str:
    """The SHA-256 of an image's bytes, its build stamp left out (:data:`_BUILD_STAMP`):
    equal for two images of the same contents."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        head = bytearray(f.read(1 << 20))
        for start, end in _BUILD_STAMP:
            head[start:end] = bytes(end - start)
        digest.update(head)
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:40]


def _share(store: Path, partial: Path, image: Path) -> bool:
    """Give ``image`` the bytes of ``partial`` (made, synced, 0600) through the store's
    contents: a hard link to the content of the same bytes if one is there (``partial``
    then goes), else ``partial`` becomes that content. Whether it was shared."""
    contents = store / CONTENT
    contents.mkdir(mode=0o700, exist_ok=True)
    content = contents / f"{_content_digest(partial)}.erofs"
    shared = True
    try:
        os.link(partial, content)
        shared = False
    except FileExistsError:
        pass
    try:
        os.link(content, image)
    except FileExistsError:
        pass
    partial.unlink(missing_ok=True)
    return shared


def _sync(path: Path) -> None:
    """Write ``path`` to disk before it takes its name: a machine that stops just after
    leaves no image under a signature it does not hold."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _walk(root: Path, exclude: Sequence[Path] = ()) -> tuple[str, int]:
    """A digest of every entry under ``root`` (not inside ``exclude``): its path, type and
    mode, size, modification time, inode and, for a symbolic link, its target; and the
    bytes an image of the folder would hold, the apparent sizes of its files (a sparse
    file's holes count, since an image writes them out)."""
    skip = {str(p) for p in exclude}
    total = 0
    digest = hashlib.sha256(str(root).encode())
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            digest.update(f"{entry.path}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0"
                          f"{st.st_ino}\0".encode(errors="surrogateescape"))
            if stat.S_ISLNK(st.st_mode):
                try:
                    digest.update(os.readlink(entry.path).encode(errors="surrogateescape"))
                except OSError:
                    pass
            elif stat.S_ISDIR(st.st_mode) and entry.path not in skip:
                stack.append(entry.path)
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
    return digest.hexdigest()[:32], total


_lock = threading.Lock()
_checked: dict[tuple[Path, tuple[Path, ...]], tuple[float, Path]] = {}
"""The image found for each folder (and what it leaves out), and when."""
_failed: set[Path] = set()
_said_too_big: set[Path] = set()
_announced: list[Path] = []
"""The first machine folder this process made an image of (said once)."""

SAY_BUILD_S = 2.0
"""An image that took this long to make is said, with its size and time: on a fresh
machine the first bot's start waits for some 2 GB of them (tens of seconds)."""

OWN_MAX_MB = 1024
"""The most a bot's own folder (or extra) may hold to be imaged, in MiB of its files'
apparent sizes (``ARENA_VIEW_IMAGE_MAX_MB`` sets another): an image writes every byte
out, a sparse file's holes too, so a bot that ships a 100 GiB sparse file would
otherwise cost 100 GiB of disk and minutes before it starts. A folder above it is bound
from the host, and the arena says so."""

STORE_RESERVE_MB = 1024
"""The free space an image must leave on the store's file system (the tournament's
store and logs may be on it too)."""


def _mb_setting() -> int:
    """``ARENA_VIEW_IMAGE_MAX_MB``, else :data:`OWN_MAX_MB` (a value that is not a whole
    number of MiB is said, once, and the default used)."""
    text = os.environ.get("ARENA_VIEW_IMAGE_MAX_MB", "").strip()
    if not text:
        return OWN_MAX_MB
    try:
        return max(0, int(text))
    except ValueError:
        if text not in _said_bad_cap:
            _said_bad_cap.add(text)
            print(f"arena: warning: ARENA_VIEW_IMAGE_MAX_MB={text!r} is not a whole number "
                  f"of MiB; {OWN_MAX_MB} is used", file=sys.stderr, flush=True)
        return OWN_MAX_MB


_said_bad_cap: set[str] = set()


def _free_bytes(store: Path) -> int:
    return shutil.disk_usage(store).free


def _too_big(size: int, fresh: bool, store: Path) -> str | None:
    """Why an image of ``size`` bytes of files (a bot's own folder if ``fresh``) is not
    made, or None."""
    mib = size / (1 << 20)
    cap = _mb_setting()
    if fresh and size > cap << 20:
        return (f"its files take {mib:,.0f} MiB, above the {cap:,} MiB an image of a bot's "
                f"folder may hold (ARENA_VIEW_IMAGE_MAX_MB)")
    try:
        free = _free_bytes(store)
    except OSError:
        return None
    if free - size < STORE_RESERVE_MB << 20:
        return (f"{store} has {free / (1 << 20):,.0f} MiB free, too little for an image of "
                f"{mib:,.0f} MiB and the {STORE_RESERVE_MB:,} MiB kept free")
    return None


def image_for(root: Path, exclude: Sequence[Path] = (), fresh: bool = False) -> Path | None:
    """The image of the folder ``root`` (the contents of ``exclude`` left out), made
    first if there is none of it as it is now; None where images are not in force or
    the folder cannot be imaged (it is then bound from the host; the first failure is
    said once). ``fresh``: walked at every call (a bot's own folder, which its author
    may change at any time), not once per :data:`REWALK_S`. Blocks, for seconds when it
    makes one: call it off the game loop."""
    mechanism = image_mechanism()
    if not mechanism.active or root in _failed:
        return None
    inside = tuple(sorted(p for p in exclude if p.is_relative_to(root) and p != root))
    key = (root, inside)
    with _lock:
        seen = _checked.get(key)
        if seen is not None and not fresh and time.monotonic() - seen[0] < REWALK_S and \
                seen[1].exists():
            return seen[1]
        store = _store()
        if store is None:
            return None
        prefix = hashlib.sha256(str(root).encode()).hexdigest()[:16]
        digest, size = _walk(root, inside)
        image = Path(store) / f"{prefix}-{digest}.erofs"
        if not image.exists():
            why = _too_big(size, fresh, Path(store))
            if why is not None:
                if root not in _said_too_big:
                    _said_too_big.add(root)
                    print(f"arena: warning: {root} is bound from the host into bots' views, "
                          f"not from an image of its own: {why}", file=sys.stderr, flush=True)
                return None
        try:
            with open(Path(store) / f".{prefix}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # another arena may be making it
                if not image.exists():
                    if not fresh and not _announced:
                        _announced.append(root)
                        print("bot views: making the images of the view's folders (once on "
                              "this machine, and again for a folder that changes; the "
                              "first time some seconds a folder)", file=sys.stderr,
                              flush=True)
                    partial = image.with_name(f".{image.name}.{os.getpid()}")
                    began = time.monotonic()
                    try:
                        _build(mechanism, root, inside, partial)
                        _sync(partial)
                        os.chmod(partial, 0o600)
                        shared = _share(Path(store), partial, image)
                    finally:
                        partial.unlink(missing_ok=True)
                    took = time.monotonic() - began
                    if took >= SAY_BUILD_S or shared:
                        print(f"bot views: made the image of {root} "
                              f"({image.stat().st_size / 1e6:,.0f} MB in {took:.1f} s"
                              + (", the same content as another folder's: stored once"
                                 if shared else "") + ")", file=sys.stderr, flush=True)
                    for old in Path(store).glob(f"{prefix}-*.erofs"):
                        if old != image:
                            _remove(Path(store), old)  # a mounted one lives on until unmounted
                    pruned = _prune(Path(store), image)
                    if pruned.images:
                        print(f"bot views: removed {pruned.images} image(s) unused the "
                              f"longest ({pruned.bytes / 1e6:,.0f} MB): the images are kept "
                              f"within {_cache_mb():,} MiB (ARENA_VIEW_IMAGE_CACHE_MB) and "
                              f"a day unused", file=sys.stderr, flush=True)
                else:
                    os.utime(image)  # used: see KEEP_UNUSED_S
        except (OSError, subprocess.SubprocessError) as e:
            _failed.add(root)
            print(f"arena: warning: {root} is bound from the host into bots' views, not "
                  f"from an image of its own: {e}", file=sys.stderr, flush=True)
            return None
        _checked[key] = (time.monotonic(), image)
        return image
