"""A uid of its own for every sandboxed bot process: what the kernel then refuses it.

Inside its sandbox a bot runs as uid 65534. Outside, without this module, that uid is
the arena's own user (root, as a rule), so a bot owns every root-owned file it can see:
the kernel tells a file's owner which of its pages are cached (``mincore``,
``cachestat``), lets it take locks and evict pages, and plain permissions protect
nothing from it. With this module each sandboxed process runs, outside its sandbox, as a
uid and gid of its own, leased for its lifetime from a reserved range that no user of
the machine has (:data:`DEFAULT_RANGE`, checked against ``/etc/passwd``, ``/etc/group``
and the subordinate ranges in ``/etc/subuid`` and ``/etc/subgid``).

How it is done (:func:`wrapper`), by programs of util-linux, without a ``preexec_fn``:
bubblewrap runs unprivileged as the leased uid (``setpriv --reuid --regid
--clear-groups``) and maps 65534 inside to it. An unprivileged bubblewrap resolves every
bind source as that uid, and some sources lie under folders only root may enter (a
Python under ``/root/.pyenv``, a test's temporary folder): those are first bound, as
root, over empty places in :data:`STAGE_DIR`, in a mount namespace of the bot's own
(``unshare --mount --propagation private``), which dies with the bot. Nothing is mounted
on the host.

A lease is a lock (``flock``) on a file named by the uid in :data:`LOCK_DIRS`: two arenas
on one machine never share a uid, and a lease ends by itself when the arena does.

It needs real root (``CAP_SETUID`` over the whole range), which :func:`id_mechanism`
checks by running the chain once. Elsewhere (a normal user, or root of a user namespace
that maps only itself) every bot runs as the arena's user, as before, and the arena says
so at the start: the seccomp filter then still refuses the page-cache probes and locks,
but a bot's files are not protected from it by ownership.
"""

from __future__ import annotations

import fcntl
import grp
import os
import pwd
import shutil
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from arena.proc import keeper

DEFAULT_RANGE = (0x5A000000, 65536)
"""The first uid (and gid) of the reserved range, and how many there are: far above any
uid a distribution gives out, and outside the usual subordinate ranges (100000 + n ×
65536 for the first few thousand users). ``ARENA_BOT_IDS=FIRST:COUNT`` sets another."""

LOCK_DIRS = ("/run/trick-arena/ids", "/tmp/.trick-arena-ids")
"""Where the leases' lock files are (the first that can be made, mode 0700)."""

STAGE_DIR = "/tmp/.trick-arena-stage"
"""A folder of root's (mode 0755) of empty places, over which a bot's own mount namespace
binds the sources its uid could not reach (see :func:`stage_script`). On the host the
places stay empty."""

@dataclass(frozen=True, slots=True)
class IdMechanism:
    """Whether bot processes get uids of their own here, and if not, why not."""

    first: int
    count: int
    why_not: str = ""
    lock_dir: str = ""
    """Where the leases' lock files are (found once, when active)."""
    setpriv: str = ""
    unshare: str = ""

    @property
    def active(self) -> bool:
        return not self.why_not

    def describe(self) -> str:
        if self.active:
            return (f"bot processes: each runs as a uid and gid of its own outside its "
                    f"sandbox (leased from {self.first}-{self.first + self.count - 1})")
        return (f"bot processes: all run as the arena's own user outside their sandbox "
                f"({self.why_not}); the seccomp filter still refuses page-cache probes "
                f"and file locks, but a bot owns the files the arena's user owns")


@dataclass(slots=True)
class Lease:
    """One uid (= gid) held for one bot process; :meth:`release` once it has ended."""

    uid: int
    _fd: int | None
    _held: set[int]
    """The uids its run holds (:attr:`arena.proc.keeper.Keeper.held_uids`)."""

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            self._held.discard(self.uid)
            os.close(fd)  # the lock goes with it


def _range() -> tuple[int, int]:
    text = os.environ.get("ARENA_BOT_IDS", "")
    if not text:
        return DEFAULT_RANGE
    try:
        first, count = (int(part) for part in text.split(":"))
    except ValueError:
        raise ValueError(f"ARENA_BOT_IDS={text!r}: expected FIRST:COUNT, e.g. "
                         f"{DEFAULT_RANGE[0]}:{DEFAULT_RANGE[1]}") from None
    if first < 1000 or count < 1 or first + count > 0xFFFFFFFE:
        raise ValueError(f"ARENA_BOT_IDS={text!r}: the range must lie in 1000-4294967293")
    return first, count


def _subordinate(path: str) -> list[tuple[int, int]]:
    """The ranges ``/etc/subuid`` or ``/etc/subgid`` gives out (``name:first:count``)."""
    ranges: list[tuple[int, int]] = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return ranges
    for line in lines:
        parts = line.strip().split(":")
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            ranges.append((int(parts[1]), int(parts[2])))
    return ranges


def _taken(first: int, count: int) -> str:
    """Why ``first..first+count`` is not free for bots ("" when it is)."""
    for name, ranges in (("/etc/subuid", _subordinate("/etc/subuid")),
                         ("/etc/subgid", _subordinate("/etc/subgid"))):
        for start, size in ranges:
            if start < first + count and first < start + size:
                return f"it overlaps a subordinate range of {name} ({start}:{size})"
    users = [u.pw_uid for u in pwd.getpwall() if first <= u.pw_uid < first + count]
    groups = [g.gr_gid for g in grp.getgrall() if first <= g.gr_gid < first + count]
    if users or groups:
        return f"uid/gid {(users or groups)[0]} of the range belongs to a user or group"
    return ""


def _lock_dir() -> str | None:
    for folder in LOCK_DIRS:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            st = os.lstat(folder)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
            os.chmod(folder, 0o700)
            return folder
    return None


MAX_STAGED = 16
"""The most sources one bot process may need staged (each has its place ready)."""


def _stage_dir() -> str | None:
    """:data:`STAGE_DIR`, made if missing: root's own real folder, 0755, holding the empty
    places of the staged sources (folders ``d0``... and files ``f0``..., all root's);
    None if it is not that (it is in /tmp: someone else's is not ours to mount over)."""
    try:
        os.mkdir(STAGE_DIR, 0o755)
    except FileExistsError:
        pass
    except OSError:
        return None
    if not _root_owned(STAGE_DIR, stat.S_ISDIR):
        return None
    os.chmod(STAGE_DIR, 0o755)
    for i in range(MAX_STAGED):
        folder, file = f"{STAGE_DIR}/d{i}", f"{STAGE_DIR}/f{i}"
        try:
            os.mkdir(folder, 0o755)
        except FileExistsError:
            pass
        try:
            os.close(os.open(file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            pass
        if not (_root_owned(folder, stat.S_ISDIR) and _root_owned(file, stat.S_ISREG)):
            return None
    return STAGE_DIR


def _root_owned(path: str, kind: Callable[[int], bool]) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return kind(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o022


def _programs() -> dict[str, str] | None:
    found = {name: shutil.which(name) for name in ("setpriv", "unshare", "mount", "bwrap")}
    if any(path is None for path in found.values()):
        return None
    return {name: path for name, path in found.items() if path is not None}


@cache
def id_mechanism() -> IdMechanism:
    """Whether every sandboxed bot process can run as a uid of its own here: needs root
    and util-linux's ``setpriv``, ``unshare`` and ``mount``; tried once for real (a
    bubblewrap run as a uid of the range, from a mount namespace of its own).
    ``ARENA_NO_BOT_IDS`` turns it off (the tests' controls)."""
    try:
        first, count = _range()
    except ValueError as e:
        return IdMechanism(0, 0, str(e))
    if os.environ.get("ARENA_NO_BOT_IDS"):
        return IdMechanism(first, count, "ARENA_NO_BOT_IDS is set")
    if os.geteuid() != 0:
        return IdMechanism(first, count, "the arena is not root, and subordinate ids "
                                         "(newuidmap) are not supported")
    taken = _taken(first, count)
    if taken:
        return IdMechanism(first, count, f"the reserved range {first}:{count} is not free: "
                                         f"{taken}; set ARENA_BOT_IDS=FIRST:COUNT")
    programs = _programs()
    if programs is None:
        return IdMechanism(first, count, "util-linux's setpriv, unshare or mount is missing")
    lock_dir = _lock_dir()
    if lock_dir is None:
        return IdMechanism(first, count, f"none of {', '.join(LOCK_DIRS)} can be made")
    if _stage_dir() is None:
        return IdMechanism(first, count, f"{STAGE_DIR} is not a folder of root's own")
    probe = [programs["unshare"], "--mount", "--propagation", "private", "--",
             programs["setpriv"], "--reuid", str(first), "--regid", str(first),
             "--clear-groups", "--", programs["bwrap"], "--unshare-user", "--unshare-all",
             "--disable-userns", "--ro-bind", "/", "/", "--uid", "65534", "--gid", "65534",
             "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return IdMechanism(first, count, f"a bubblewrap run as uid {first} failed: {e}")
    if done.returncode != 0:
        why = " ".join(done.stderr.decode(errors="replace").split())[:160]
        return IdMechanism(first, count, f"a bubblewrap run as uid {first} failed here "
                                         f"({why or f'exit {done.returncode}'}); root of a "
                                         f"user namespace cannot take other uids")
    return IdMechanism(first, count, lock_dir=lock_dir, setpriv=programs["setpriv"],
                       unshare=programs["unshare"])


def lease() -> Lease | None:
    """A free uid of the range for one bot process (None where :func:`id_mechanism` is
    not active); :class:`OSError` when every uid of the range is held."""
    mechanism = id_mechanism()
    if not mechanism.active:
        return None
    held = keeper.current().held_uids
    for uid in range(mechanism.first, mechanism.first + mechanism.count):
        if uid in held:
            continue
        fd = os.open(os.path.join(mechanism.lock_dir, str(uid)),
                     os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)  # another arena's
            continue
        held.add(uid)
        return Lease(uid, fd, held)
    raise OSError(f"all {mechanism.count} uids of the bots' range are in use")


def reachable(path: Path) -> bool:
    """Whether a uid that is no user's can resolve ``path`` (as bubblewrap does with a
    bind source): every folder on the way searchable by others (``o+x``), and ``path``
    itself readable (and, if a folder, searchable) by others."""
    try:
        real = Path(os.path.realpath(path))
        st = os.stat(real)
    except OSError:
        return True  # bubblewrap will say what is wrong
    if not _readable(st):
        return False
    for parent in real.parents:
        try:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def _readable(st: os.stat_result) -> bool:
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(st.st_mode) else 0)
    return st.st_mode & need == need


COPY_CAP_BYTES = 64 << 20
"""The most a bot's own folder may hold when it must be copied (see :func:`staging`)."""

COPY_CAP_FILES = 5000


@dataclass(frozen=True, slots=True)
class Staged:
    """A bind source that the bot's uid cannot read where it is: bound into the stage
    (``copy`` False: only its parents are closed to others), or copied there, made
    readable (``copy`` True: a bot's own folder with files only their owner may read)."""

    path: Path
    copy: bool
    left_out: tuple[str, ...] = ()
    """What a copy leaves out: hidden folders inside it, relative to ``path``."""


def staging(path: Path, own: bool, hidden: tuple[Path, ...] = (),
            copy: bool = True) -> Staged | None:
    """How the bot's uid gets to see ``path``: None (directly: all of it readable by
    others), or a :class:`Staged`. ``own``: the bot's own folder as the gate found it
    (:mod:`arena.proc.gate`), whose files are checked one by one, and which is copied
    (at most :data:`COPY_CAP_BYTES` and :data:`COPY_CAP_FILES`, without the ``hidden``
    folders inside it, which the copy leaves out) where any of them is closed to others;
    ValueError (one line) when it is too big to copy, or when ``copy`` is False (a bot
    confined to its folder, a league's bundle: its folder is readable by everyone when
    unpacked, so files closed to others in it are not the bot's to read)."""
    if own and not _own_readable(path):
        if not copy:
            raise ValueError(f"{path} has files other users cannot read: a bot confined to "
                             f"its folder is never shown them")
        left_out = tuple(str(h.relative_to(path)) for h in hidden
                         if h.is_relative_to(path) and h != path)
        size, files = _folder_size(path, {path / name for name in left_out})
        if size > COPY_CAP_BYTES or files > COPY_CAP_FILES:
            raise ValueError(
                f"{path} has files other users cannot read, and is too big to copy for the "
                f"bot's own uid ({size >> 20} MiB, {files} files; at most "
                f"{COPY_CAP_BYTES >> 20} MiB and {COPY_CAP_FILES} files): make it readable "
                f"(chmod -R o+rX {path})")
        return Staged(path, True, left_out)
    if reachable(path):
        return None
    return Staged(path, False)


def all_readable(path: Path) -> bool:
    """Whether every file and folder under ``path`` is readable by other users (walked
    once per state of the folder, see :func:`staging`)."""
    return _own_readable(path)


def _own_readable(path: Path) -> bool:
    """:func:`_all_readable`, walked once per folder and state of it (its own change
    and status times): a bot's folder is walked at its first start, not at every start
    (a Node.js bot's folder has some 1,500 entries: about 7 ms on the arena's thread).
    A mode changed deep inside it during a run is seen by the next run."""
    try:
        st = os.stat(path)
    except OSError:
        return True
    return _walked(path, st.st_mtime_ns, st.st_ctime_ns)


@lru_cache(maxsize=256)
def _walked(path: Path, mtime_ns: int, ctime_ns: int) -> bool:
    return _all_readable(path)


def _all_readable(path: Path) -> bool:
    """Whether every file and folder under ``path`` is readable by others (a folder
    that holds more than :data:`COPY_CAP_FILES` entries counts as readable: it is bound,
    and what its owner closed stays closed)."""
    try:
        if not _readable(os.stat(path)):
            return False
    except OSError:
        return True
    seen = 0
    for root, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            seen += 1
            if seen > COPY_CAP_FILES:
                return True
            try:
                st = os.stat(os.path.join(root, name))
            except OSError:
                continue
            if not _readable(st):
                return False
    return True


def _folder_size(path: Path, skip: set[Path]) -> tuple[int, int]:
    size = files = 0
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if Path(root, d) not in skip]
        for name in names:
            files += 1
            try:
                size += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
            if files > COPY_CAP_FILES:
                return size, files
    return size, files


def wrapper(lease: Lease, staged: list[Staged], mounts: bool = False
            ) -> tuple[list[str], list[str]]:
    """The two pieces of the spawn chain for a leased process (see the module): what
    comes before the shell that joins the cgroups (a mount namespace of the bot's own,
    only where something is staged or ``mounts``: images of its view are mounted,
    :mod:`arena.proc.images`), and the uid change that follows it (with ``--pdeathsig``
    again: a uid change clears the parent-death signal)."""
    mechanism = id_mechanism()  # active: it gave the lease
    before = [mechanism.unshare, "--mount", "--propagation", "private", "--"] \
        if staged or mounts else []
    switch = [mechanism.setpriv, "--reuid", str(lease.uid), "--regid", str(lease.uid),
              "--clear-groups", "--pdeathsig", "KILL", "--"]
    return before, switch


def staged_path(index: int, source: Staged) -> str:
    """Where the ``index``-th staged source is seen by the bot's bubblewrap."""
    if source.copy:
        return f"{STAGE_DIR}/d{index}/copy"
    return f"{STAGE_DIR}/{'d' if source.path.is_dir() else 'f'}{index}"


def stage_script(staged: list[Staged]) -> str:
    """The shell lines (for the cgroup-joining shell, run as root in the bot's own mount
    namespace, after it joined the cgroups: a copy is charged to the bot) that bind each
    staged source over its place in :data:`STAGE_DIR`, or copy it into a tmpfs there:
    one ``mount`` for a bind."""
    lines = []
    for index, source in enumerate(staged):
        quoted = "'" + str(source.path).replace("'", "'\\''") + "'"
        place = staged_path(index, source)
        if source.copy:
            size = COPY_CAP_BYTES + (COPY_CAP_FILES << 12)
            # a hidden folder's contents stay out; the folder itself is kept (empty)
            # for the sandbox's cover of it
            skip = "".join(" --exclude='./" + name.replace("'", "'\\''") + "/*'"
                           for name in source.left_out)
            lines.append(f"mount -t tmpfs -o mode=0755,size={size} arena-copy "
                         f"{STAGE_DIR}/d{index} && mkdir {place} && "
                         f"tar -C {quoted}{skip} -cf - . | tar -C {place} -xf - "
                         f"--no-same-owner && chmod -R a+rX,a-w {place} || exit 125")
        else:
            lines.append(f"mount --bind -o ro {quoted} {place} || exit 125")
    return "".join(f"{line}; " for line in lines)


def processes_of(uid: int) -> list[int]:
    """The live (not zombie) pids running as ``uid`` (to tell whether a lease can end
    without a cgroup)."""
    pids: list[int] = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid != uid:
                    continue
                with open(f"/proc/{entry}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                pids.append(int(entry))
    return pids
