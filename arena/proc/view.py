"""What a sandboxed bot sees of the machine's own files, and the page cache of it, read
in before the bot starts.

The page cache is shared by every process on the machine. A page that no one has read
reads from disk in a hundred microseconds or more, a cached one in about one: so a bot
that reads a page no one has read sets a bit that any other bot can read back by the
time a read takes, and two bots at one table (or at two tables in flight at once) could
pass their hands. The residency calls (``mincore``, ``cachestat``, ``RWF_NOWAIT``) are
refused by the seccomp filter and by the bot's own uid; timing cannot be refused. So in
the default view (``runtime``) every shared file a bot can see has been read into the
cache by the arena before the bot starts, and reading it sets nothing:

* the view is what the bot's runtime needs, not all of ``/usr`` and ``/opt`` (15 GB on a
  developer's machine): the base view (the programs and libraries: ``/usr/bin``,
  ``/usr/sbin``, ``/usr/local/bin``, the machine's library folder such as
  ``/usr/lib/x86_64-linux-gnu`` and those ``/etc/ld.so.conf`` names, the time zones and
  the C.UTF-8 locale), and the view of each runtime of the command or its ``#!`` chain
  (:mod:`arena.proc.runtimes`): Python (its standard library and the packages on its
  path, the arena's own SDK), Java (the JDK's folder and ``/usr/share/java``), Node.js
  (``/usr/share/nodejs``, the global ``node_modules``), Ruby and an organiser's runtimes
  (the files of their Debian packages, their paths); plus the bot's ``read_only``
  extras and its own folder;
* :func:`warm` reads every file of the shared part (not the bot's own folder, which no
  other bot sees) into the cache, once per arena process and again when it finds pages
  gone (:data:`REWARM_S`), up to :data:`WARM_CAP_BYTES`. The pages are charged to the
  arena's memory cgroup, so a bot cannot evict them: its own cgroup's reclaim reaches
  only pages it was charged for, and ``fadvise``/``madvise`` eviction is refused.

``view = "system"`` (a bot's key in the tournament file) shows all of ``/usr`` and
``/opt`` as before and reads nothing in: page-cache timing between bots is then open.
See ``docs/isolation.md`` ("The page cache")."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.model.limits import VIEWS
from arena.proc.runtimes import RuntimeView, command_view

__all__ = ["VIEWS", "RuntimeView", "Warmed", "runtime_view", "warm"]

SYSTEM_DIRS = ("/usr", "/opt")
"""The ``system`` view's folders."""

WARM_CAP_BYTES = 6 << 30
"""The most of one bot's view that :func:`warm` reads into the page cache (6 GiB): the
files past it are left out of the cache, and :attr:`Warmed.over_cap` names them."""

REWARM_S = 300.0
"""A folder warmed this long ago (by any arena process of the user on this machine, as
noted in ``~/.cache/trick-arena/``) is walked again, and a page the machine's own memory
pressure evicted since is read in again, at the next bot start that needs it."""


def runtime_view(program: Path) -> RuntimeView:
    """The ``runtime`` view's shared part for a command whose program is ``program``
    (absolute): the base folders, and the view of each runtime of its ``#!`` chain
    (:func:`arena.proc.runtimes.command_view`, which also names the runtimes and what no
    runtime covers)."""
    return command_view(program).view


# -- the page cache ---------------------------------------------------------------------


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "nr_cache", "nr_dirty", "nr_writeback", "nr_evicted", "nr_recently_evicted")]


_SYS_CACHESTAT = {"x86_64": 451, "aarch64": 451}.get(os.uname().machine)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _cached_pages(fd: int) -> int | None:
    """The pages of the open file ``fd`` in the page cache (``cachestat``, Linux 6.5), or
    None where the kernel cannot say."""
    if _SYS_CACHESTAT is None:
        return None
    span, stat = _Range(0, 0), _Stat()  # length 0: to the end of the file
    if _libc.syscall(_SYS_CACHESTAT, fd, ctypes.byref(span), ctypes.byref(stat), 0) != 0:
        return None
    return int(stat.nr_cache)


@dataclass
class Warmed:
    """What one :func:`warm` did."""

    files: int = 0
    bytes_seen: int = 0
    bytes_read: int = 0
    over_cap: list[Path] = field(default_factory=list)
    """Files left unread: the cap was reached."""
    seconds: float = 0.0


_lock = threading.Lock()
_known: set[str] = set()
"""Every root this process warmed or found noted as warm."""
_here: dict[str, float] = {}
"""The ``always`` roots this process walked, and when (time.time()): a bot's own folder
is walked once per run (and again after :data:`REWARM_S`), not at every start."""


def _state_path() -> Path:
    """Where the arena notes when it warmed each folder: shared by the arena's processes
    on the machine, so that every command started does not walk the view again."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trick-arena" / f"warmed-{os.getuid()}.json"


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _load_state() -> dict[str, float]:
    try:
        with open(_state_path()) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("boot") != _boot_id():
        return {}
    roots = data.get("roots")
    if not isinstance(roots, dict):
        return {}
    return {str(k): float(v) for k, v in roots.items() if isinstance(v, (int, float))}


def _save_state(state: dict[str, float]) -> None:
    path = _state_path()
    now = time.time()
    fresh = {k: v for k, v in state.items() if now - v < REWARM_S}
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        with open(temporary, "w") as f:
            json.dump({"boot": _boot_id(), "roots": fresh}, f)
        os.replace(temporary, path)
    except OSError:
        pass  # only a cost: the next process walks the view again


def _files(root: Path, exclude: Sequence[Path]) -> Iterable[tuple[str, os.stat_result]]:
    """Every regular file under ``root`` (``root`` itself if it is one), symbolic links not
    followed, ``exclude`` left out."""
    skip = {str(p) for p in exclude}
    try:
        top = os.stat(root)
    except OSError:
        return
    if not os.path.isdir(root):
        if os.path.isfile(root):
            yield str(root.resolve()), top
        return
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.path in skip:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    yield entry.path, entry.stat(follow_symlinks=False)
            except OSError:
                continue


def _read_in(path: str, st: os.stat_result, buf: bytearray) -> int:
    """Read ``path`` into the page cache unless it is all there; the bytes read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        pages = (st.st_size + _PAGE - 1) // _PAGE
        cached = _cached_pages(fd)
        if cached is not None and cached >= pages:
            return 0
        done = 0
        view = memoryview(buf)
        while True:
            try:
                n = os.readv(fd, [view])
            except OSError as e:
                if e.errno == errno.EINTR:
                    continue
                break
            if n <= 0:
                break
            done += n
        return done
    finally:
        os.close(fd)


def warm(roots: Sequence[Path], exclude: Sequence[Path] = (),
         cap: int = WARM_CAP_BYTES, always: Sequence[Path] = (), again: bool = False
         ) -> Warmed:
    """Read every file under ``roots`` (but ``exclude``) into the page cache, where it is
    not all there already, up to ``cap`` bytes of files. A root warmed less than
    :data:`REWARM_S` ago is skipped: by any arena process of the user, as noted in the
    state file; for the roots in ``always`` (a bot's own folder and extras, which change
    from one run to the next), by this process. ``again``: a restart within a call, on
    the bot's clock, walks only roots this process never found warm. Blocks (call it off
    the game loop); one call at a time in a process."""
    out = Warmed()
    start = time.monotonic()
    buf = bytearray(1 << 20)
    kept: list[Path] = []
    for root in sorted(dict.fromkeys(roots), key=lambda p: len(p.parts)):
        if root in always or not any(
                root.is_relative_to(k) and not any(root.is_relative_to(e) for e in exclude)
                for k in kept):
            kept.append(root)  # (not one inside another, walked already)
    with _lock:
        state = _load_state()
        changed = False
        for root in kept:
            key = str(root)
            noted = _here if root in always else state
            if time.time() - noted.get(key, -REWARM_S) < REWARM_S:
                _known.add(key)
                continue
            if again and key in _known:
                continue  # a restart, on the bot's clock: warmed for its first start
            complete = True
            for path, st in _files(root, exclude):
                out.files += 1
                out.bytes_seen += st.st_size
                if out.bytes_seen > cap:
                    out.over_cap.append(Path(path))
                    complete = False
                    continue
                out.bytes_read += _read_in(path, st, buf)
            if complete:
                noted[key] = time.time()
                _known.add(key)
                changed = changed or noted is state
        if changed:
            _save_state(state)
    out.seconds = time.monotonic() - start
    return out
