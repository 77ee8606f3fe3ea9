"""What a sandboxed bot sees of ``/proc`` (and ``/sys``): its own processes, and a short
list of files that runtimes read, none of which carries a counter of the machine.

The kernel keeps counters for the whole machine that every sandbox can read:
``/proc/vmstat`` (``unevictable_pgs_mlocked``: every page ever mlocked), ``/proc/stat``
(``processes``: every fork), ``/proc/meminfo``, ``/proc/loadavg``,
``/proc/sys/fs/file-nr`` and ``dentry-state``, and dozens more. A counter is exact, not
a timing: a bot that moves one during its turn (mlocks N pages, forks N times, opens N
files) talks to the bot that reads it in the next turn, at the same table or another,
whatever the freezer and the seccomp filter do. So the view is an allowlist.

bubblewrap mounts a fresh procfs in the sandbox's PID namespace (``--proc /proc``): its
numbered folders are the bot's own processes (and bubblewrap's init). Every other entry
at its top is then covered, read-only (:func:`view_options`), but for these:

================  ========================================================================
shown             why
================  ========================================================================
``self``,         the bot's own processes (``/proc/self/exe``, ``maps``, ``fd``,
``thread-self``   ``status``, ``cgroup``, ``mountinfo``: the runtimes read them)
``mounts``,       links into ``self/`` (its own mount and network namespaces)
``net``
``meminfo``       a fake (:func:`meminfo`): MemTotal, MemFree and MemAvailable are the
                  bot's memory limit, the rest 0. Node.js sizes its heap from MemTotal
                  (``os.totalmem()``), the JVM reads it, ``free`` shows it
``stat``          a fake (:func:`stat`): a ``cpuN`` line per online CPU, every counter 0,
                  the boot time. glibc counts CPUs there (``nproc``,
                  ``os.cpu_count()``) where ``/sys`` is absent; Node.js's
                  ``os.cpus()`` reads it
``cpuinfo``       a copy taken once per arena run (:func:`cpuinfo`): Node.js's
                  ``os.cpus()`` and the JVM read it; a copy has no live ``cpu MHz``
``sys``           a copy of a few settings (:data:`SYSCTLS`, read once): the listen
                  backlog (Go, Python, C++ gRPC), ``vm/overcommit_memory`` (Node.js),
                  ``kernel/cap_last_cap`` (libcap), limits the JVM reads. Not
                  ``fs/file-nr``, ``fs/dentry-state``, ``kernel/random/entropy_avail``
================  ========================================================================

Everything else is covered by an empty read-only file or folder: a folder by an empty
folder, a file by an empty file. The list of what to cover is the kernel's own listing
of a fresh procfs (:func:`kernel_entries`, once per arena run), so an entry that a newer
kernel adds is covered too: that is what makes it an allowlist. (procfs's own
``subset=pid`` option would hide the same entries without a mount each, but bubblewrap
0.8's ``--proc`` takes no option, and the PID namespace is bubblewrap's: a procfs that
the spawn chain mounts outside it would show another namespace's pids, not the bot's.
It would also leave no place for the fakes that Node.js and glibc read.)

``/sys`` is not in the view at all (bubblewrap mounts none and the view binds none):
runtimes fall back to the files above (glibc from ``/sys/devices/system/cpu/online`` to
``/proc/stat``; Node.js and the JVM find no cgroup files and size themselves from
``meminfo``).

What is not masked here: the files inside the bot's own ``/proc/PID`` folders, which a
mount cannot reach (a new process makes a new folder). Two of them show machine-wide
state: ``pagemap`` (the present bit of the bot's own mappings, a residency probe like
``mincore``: it reads nothing once nothing of the bot's outlives the reclaim, see
:meth:`arena.proc.cgroup.Cgroup.held_after_reclaim`) and ``net/sockstat`` (the memory of
all TCP sockets of the machine). See ``docs/isolation.md``.

``ARENA_NO_PROC_MASK`` turns the masking off (the full procfs, as before): for the
controls of the tests and the baseline of the benchmark.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat as st
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

from arena.model.errors import SandboxError
from arena.model.limits import Limits

OFF_ENV = "ARENA_NO_PROC_MASK"

SHOWN = ("self", "thread-self", "mounts", "net")
"""Entries of the kernel's procfs left as they are: the bot's own processes."""

FAKED = ("meminfo", "stat", "cpuinfo", "sys")
"""Entries covered by a file or folder of the arena's making (see the module)."""

SYSCTLS = ("fs/nr_open", "kernel/cap_last_cap", "kernel/ngroups_max", "kernel/osrelease",
           "kernel/ostype", "kernel/pid_max", "kernel/threads-max", "net/core/somaxconn",
           "vm/max_map_count", "vm/overcommit_memory")
"""The settings under ``/proc/sys`` a bot sees, copied once per arena run: set by the
machine's administrator, not moved by anything a bot does."""

MEMINFO_KEYS = ("MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapCached",
                "Active", "Inactive", "Active(anon)", "Inactive(anon)", "Active(file)",
                "Inactive(file)", "Unevictable", "Mlocked", "SwapTotal", "SwapFree",
                "Dirty", "Writeback", "AnonPages", "Mapped", "Shmem", "KReclaimable",
                "Slab", "SReclaimable", "SUnreclaim", "KernelStack", "PageTables",
                "CommitLimit", "Committed_AS", "VmallocTotal", "VmallocUsed",
                "VmallocChunk", "HugePages_Total", "HugePages_Free", "Hugepagesize")
"""The keys of the fake ``meminfo``, in the kernel's order (what ``free`` and the
runtimes parse)."""

ROOT_FOLDER = "/run/trick-arena/proc"
"""Where the fakes are, where the arena is root (a bot's uid of its own must reach them);
elsewhere a folder of the arena user's in the temporary folder."""


def masking() -> bool:
    """Whether the view masks ``/proc`` (not with ``ARENA_NO_PROC_MASK``)."""
    return not os.environ.get(OFF_ENV)


def view_options(limits: Limits) -> list[str]:
    """bubblewrap's options that follow ``--proc /proc``: every entry of the kernel's
    listing that is neither a process of the bot's nor shown (:data:`SHOWN`) is covered
    read-only, by a fake (:data:`FAKED`) or by an empty file or folder. Empty with
    ``ARENA_NO_PROC_MASK``. :class:`SandboxError` when the fakes cannot be made."""
    if not masking():
        return []
    folder = fakes_folder()
    fakes = {"meminfo": meminfo(folder, limits.memory_mb), "stat": stat(folder),
             "cpuinfo": cpuinfo(folder), "sys": sysctls(folder)}
    out: list[str] = []
    for name, kind in sorted(kernel_entries().items()):
        if name.isdigit() or name in SHOWN or kind == "link":
            continue  # a link of the kernel's points into the bot's own self/
        source = fakes.get(name) or folder / ("empty.d" if kind == "dir" else "empty")
        out += ["--ro-bind", str(source), f"/proc/{name}"]
    return out


# -- the kernel's listing ----------------------------------------------------------------

_LIST = ("import json, os\n"
         "print(json.dumps({e.name: 'link' if e.is_symlink() else 'dir' if e.is_dir() "
         "else 'file' for e in os.scandir('/proc')}))\n")


@cache
def kernel_entries() -> dict[str, str]:
    """The top of a fresh procfs, as this kernel makes it: name -> ``dir``, ``file`` or
    ``link``. Listed once per arena run in a procfs that bubblewrap mounts (the
    arena's own ``/proc`` may be mounted with options that hide entries); the arena's own
    listing where that cannot run."""
    bwrap = shutil.which("bwrap")
    if bwrap is not None:
        try:
            done = subprocess.run(
                [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                 "--proc", "/proc", "--dev", "/dev", "--", sys.executable, "-I", "-S", "-c",
                 _LIST], capture_output=True, timeout=30, check=False)
            if done.returncode == 0:
                found = json.loads(done.stdout)
                if isinstance(found, dict) and "self" in found:
                    return {str(k): str(v) for k, v in found.items()}
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
    with os.scandir("/proc") as entries:
        return {e.name: "link" if e.is_symlink() else "dir" if e.is_dir() else "file"
                for e in entries}


# -- the fakes ------------------------------------------------------------------------


@cache
def fakes_folder() -> Path:
    """The folder of the fakes (made once per arena run, 0755, the arena user's; each
    file in it read-only and named by its content, so that arenas on one machine share
    it safely), with an empty file ``empty`` and an empty folder ``empty.d``.
    :class:`SandboxError` when it cannot be made, or is not the arena user's own."""
    if os.geteuid() == 0 and os.path.isdir("/run"):
        folder = Path(ROOT_FOLDER)
        folders = [folder.parent, folder]
    else:
        folder = Path(tempfile.gettempdir()) / f".trick-arena-proc-{os.geteuid()}"
        folders = [folder]
    try:
        for path in folders:
            _own_folder(path)
        if not (folder / "empty.d").is_dir():
            _publish_tree(folder, "empty.d", {})
        _publish(folder / "empty", b"")
    except OSError as e:
        raise SandboxError(f"cannot make the sandbox's /proc files in {folder}: {e}") from None
    return folder


def _own_folder(path: Path) -> None:
    """``path`` made if missing; it must be a real folder of this user's, is made 0755
    (no one else may write it: a planted fake would be shown to every bot; others may
    enter it: a bot's uid resolves the fakes' paths)."""
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not st.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise OSError(f"{path} is not a folder of this user's")
    if st.S_IMODE(info.st_mode) != 0o755:
        os.chmod(path, 0o755)


def _name(kind: str, data: bytes) -> str:
    return f"{kind}-{hashlib.sha256(data).hexdigest()[:16]}"


def _publish(path: Path, data: bytes) -> Path:
    """``path`` holding ``data``, read-only for all, written whole (a fresh name, then
    renamed over): a reader never sees half of it."""
    try:
        if path.read_bytes() == data and st.S_IMODE(os.stat(path).st_mode) == 0o444:
            return path
    except OSError:
        pass
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".new-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(temp, 0o444)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def _publish_tree(folder: Path, name: str, files: dict[str, bytes]) -> Path:
    """A folder ``name`` of read-only ``files`` (relative paths), made whole elsewhere
    and renamed into place; left as it is when it exists (its name says its content)."""
    target = folder / name
    if target.is_dir():
        return target
    temp = Path(tempfile.mkdtemp(dir=folder, prefix=".new-"))
    try:
        for relative, data in files.items():
            path = temp / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            os.chmod(path, 0o444)
        for root, dirs, _ in os.walk(temp, topdown=False):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o555)
        os.chmod(temp, 0o555)
        try:
            os.rename(temp, target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        if temp.exists():
            for root, dirs, _ in os.walk(temp):
                for d in dirs:
                    os.chmod(os.path.join(root, d), 0o755)
            os.chmod(temp, 0o755)
            shutil.rmtree(temp, ignore_errors=True)
    return target


def _host_memory_kib() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def meminfo_text(memory_mb: int) -> str:
    """A ``/proc/meminfo`` that says the bot has ``memory_mb`` MiB (the machine's total
    where there is no limit), all of it free, and nothing else."""
    total = memory_mb << 10 if memory_mb else _host_memory_kib()
    full = {"MemTotal", "MemFree", "MemAvailable", "CommitLimit"}
    lines = []
    for key in MEMINFO_KEYS:
        if key.startswith("HugePages_"):
            lines.append(f"{key + ':':<16}{0:>8}")
        else:
            value = 2048 if key == "Hugepagesize" else total if key in full else 0
            lines.append(f"{key + ':':<16}{value:>8} kB")
    return "\n".join(lines) + "\n"


def meminfo(folder: Path, memory_mb: int) -> Path:
    data = meminfo_text(memory_mb).encode()
    return _publish(folder / _name("meminfo", data), data)


@cache
def _host_stat() -> tuple[list[str], int]:
    """The online CPUs (``cpuN`` names) and the boot time, from the arena's /proc/stat."""
    cpus: list[str] = []
    btime = 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                word = line.split(maxsplit=1)[0] if line.strip() else ""
                if word.startswith("cpu") and word[3:].isdigit():
                    cpus.append(word)
                elif word == "btime":
                    btime = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return cpus or [f"cpu{i}" for i in range(os.cpu_count() or 1)], btime


def stat_text() -> str:
    """A ``/proc/stat`` with a line per online CPU and every counter 0."""
    cpus, btime = _host_stat()
    zeros = " ".join(["0"] * 10)
    lines = [f"cpu  {zeros}", *(f"{cpu} {zeros}" for cpu in cpus), "intr 0", "ctxt 0",
             f"btime {btime}", "processes 0", "procs_running 1", "procs_blocked 0",
             "softirq " + " ".join(["0"] * 11)]
    return "\n".join(lines) + "\n"


def stat(folder: Path) -> Path:
    data = stat_text().encode()
    return _publish(folder / _name("stat", data), data)


@cache
def _cpuinfo_copy() -> bytes:
    try:
        with open("/proc/cpuinfo", "rb") as f:
            return f.read(1 << 20)
    except OSError:
        return b""


def cpuinfo(folder: Path) -> Path:
    data = _cpuinfo_copy()
    return _publish(folder / _name("cpuinfo", data), data)


@cache
def _sysctl_copies() -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for name in SYSCTLS:
        try:
            with open(f"/proc/sys/{name}", "rb") as f:
                found[name] = f.read(4096)
        except OSError:
            continue
    return found


def sysctls(folder: Path) -> Path:
    """A folder of copies of :data:`SYSCTLS` (those this kernel has), for ``/proc/sys``."""
    files = _sysctl_copies()
    digest = hashlib.sha256(json.dumps({k: v.hex() for k, v in sorted(files.items())})
                            .encode()).hexdigest()[:16]
    return _publish_tree(folder, f"sys-{digest}", files)
