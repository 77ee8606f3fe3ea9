"""The seccomp filter of every sandboxed bot process, built with libseccomp (pyseccomp).

:func:`bpf` compiles the filter once (a few KiB of classic BPF); :func:`filter_fd`
writes it to a fresh memfd that bubblewrap reads with ``--seccomp FD`` (pass the fd to
the child, e.g. ``subprocess.Popen(..., pass_fds=[fd])``, and close it after the
spawn). bubblewrap loads it last, just before it execs the bot, in the sandbox's pid 1
too, with ``no_new_privs`` set: the bot and everything it starts run under it, and a
filter cannot be removed, only added to.

The filter is an allowlist, in the manner of Docker's default profile (moby's
``profiles/seccomp/default.json``): every system call not allowed fails with
``ENOSYS``, as if this kernel did not have it (the libc then falls back where it can:
``clone3`` to ``clone``, ``faccessat2`` to ``faccessat``). The calls below are denied
explicitly with ``EPERM`` (never killed: a bot gets an error it can report), because
each carries information between sandboxes or widens the kernel's surface:

===============================================  ============================================
denied (EPERM)                                   why
===============================================  ============================================
``flock``; ``fcntl`` F_GETLK, F_SETLK(W),        file locks on a shared read-only file
F_OFD_GETLK, F_OFD_SETLK(W), F_SETLEASE,         (``/etc/passwd``) are seen from every other
F_GETLEASE, F_NOTIFY                             sandbox: live collusion (issue 17); leases
                                                 and dnotify likewise
``mincore``, ``cachestat``                       page-cache residency: bits that outlive the
                                                 process (issue 17, the critical one)
``preadv2``/``pwritev2`` with ``RWF_NOWAIT``     residency again (EAGAIN when not cached);
                                                 the calls themselves stay allowed
``fadvise64``                                    ``POSIX_FADV_DONTNEED`` evicts pages the bot
                                                 was not charged for (clears others' bits)
``madvise`` MADV_COLD, MADV_PAGEOUT,             eviction by madvise; the other advice values
MADV_HWPOISON, MADV_SOFT_OFFLINE                 stay allowed
``madvise`` MADV_POPULATE_READ, _WRITE           they fill a range's page tables at once
                                                 from the kernel's side: with
                                                 ``/proc/PID/pagemap``, residency read and
                                                 set without touching a page
``mlock``, ``mlock2``, ``mlockall`` (and         a locked page outlives the reclaim after a
``RLIMIT_MEMLOCK`` 0 for ``MAP_LOCKED`` and      game (deal memory for a later process of
``SHM_LOCK``: :mod:`arena.proc.bwrap`)           the bot), and every lock moves the
                                                 machine's ``unevictable_pgs_mlocked``
``sysinfo``                                      counters of the whole machine (its
                                                 processes, free and shared memory, load);
                                                 glibc's ``sysconf(_SC_PHYS_PAGES)`` ignores
                                                 the error and returns what was on the
                                                 stack: a bot reads ``/proc/meminfo`` (its
                                                 limit, :mod:`arena.proc.procfs`) instead
``io_uring_*``; Linux AIO (``io_setup``,         io_uring: a large kernel surface, and its
``io_submit``, ...)                              reads take RWF_NOWAIT; an AIO ``iocb`` takes
                                                 ``aio_rw_flags = RWF_NOWAIT`` too
``ptrace``, ``process_vm_readv``/``writev``,     other processes' memory (the sandbox's pid 1
``process_madvise``, ``kcmp``, ``pidfd_getfd``   is bubblewrap, with the arena's arguments)
``keyctl``, ``add_key``, ``request_key``         kernel keyrings are not namespaced
``userfaultfd``                                  stalls the kernel at chosen points (races)
``perf_event_open``, ``bpf``                     kernel surface, and timing/cache side channels
``unshare``, ``setns``; ``clone`` with any       namespaces: a nested user namespace gives
CLONE_NEW* flag; ``clone3`` (ENOSYS: its flags   the bot capabilities over new namespaces (and
are in memory a filter cannot read, so the libc  their kernel surface); ``bwrap
falls back to ``clone``, as under Docker)        --disable-userns`` closes it a second way
``mount``, ``umount2``, ``pivot_root``,          the mount table
``chroot``, the new mount API (``fsopen``,
``fsmount``, ``move_mount``, ``open_tree``, ...)
``inotify_*``, ``fanotify_*``                    inotify on a shared read-only file reports
                                                 another sandbox's opens and reads: live
                                                 collusion, like locks
``name_to_handle_at``, ``open_by_handle_at``     file handles bypass the view's paths
``modify_ldt``; ``personality`` but for the      legacy x86 surface; only the personalities
values Docker allows                             Docker allows
privileged calls (``reboot``, ``kexec_*``,       they would fail without capabilities anyway;
modules, ``swapon``, ``acct``, ``syslog``,       denied before the kernel looks at them
``quotactl``, ``settimeofday``, NUMA policy,
``iopl``, ``ioperm``, ...)
``socket`` but for AF_UNIX, AF_INET, AF_INET6    the sandbox has no network; netlink is a
and AF_NETLINK/NETLINK_ROUTE (ENOSYS)            large surface (route only: ``getifaddrs``)
===============================================  ============================================

Where it differs from Docker's default profile:

* Docker *allows* ``flock``, every ``fcntl`` command, ``mincore``, ``cachestat``,
  ``mlock`` and kin (under the ``RLIMIT_MEMLOCK`` it inherits), ``sysinfo``,
  ``fadvise64``, ``preadv2``/``pwritev2`` with any flags, every ``madvise``, Linux AIO,
  ``inotify_*``, ``fanotify_mark``, ``name_to_handle_at``, ``modify_ldt`` and every
  socket family but AF_ALG and AF_VSOCK: a container is not expected to keep secrets
  from the next container, a bot is (the deal it played). Docker also allows
  ``ptrace``/``process_vm_*`` on kernels from 4.8 (its pid namespace holds only the
  container's own processes; ours holds bubblewrap with the arena's arguments).
* Docker's default action is ``EPERM``; ours is ``ENOSYS`` for what is merely not
  allowed (a system call newer than this list looks absent, so libc fallbacks work),
  and ``EPERM`` for what is refused on purpose (above).
* Docker's ``archMap`` admits the x86 (i386) and x32 ABIs on x86_64; this filter
  admits the native ABI only. A call through another ABI (``int 0x80``, an x32 number)
  matches no rule of the native ABI and ends the process (``SCMP_ACT_KILL_PROCESS``:
  a bot that is not a native binary fails loudly, with SIGSYS, at its first call).
* Argument checks compare the low 32 bits of arguments the kernel reads as ``int``
  (``fcntl``'s command, ``madvise``'s advice, ``socket``'s family), so setting the high
  bits of a register does not slip past a rule.

``RWF_NOWAIT`` is the only residency probe a filter can refuse without side effects on
ordinary reads; the timing of ordinary reads still tells a cached page from one read
from disk. That channel is closed by what the bot can see (no page it can reach may
change state because of it: see the isolation notes), not here.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterable
from functools import cache
from typing import Any

import pyseccomp as _seccomp  # type: ignore[import-untyped]

seccomp: Any = _seccomp

_LOW32 = 0xFFFFFFFF

ALLOWED: tuple[str, ...] = (
    # processes, threads, signals
    "arch_prctl", "brk", "capget", "capset", "execve", "execveat", "exit", "exit_group",
    "fork", "vfork", "futex", "futex_waitv", "futex_wait", "futex_wake", "futex_requeue",
    "get_robust_list", "set_robust_list", "set_tid_address", "gettid", "getpid", "getppid",
    "getpgid", "getpgrp", "getsid", "setsid", "setpgid", "wait4", "waitid", "kill", "tkill",
    "tgkill", "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo",
    "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo", "sigaltstack",
    "restart_syscall", "pause", "prctl", "prlimit64", "getrlimit", "setrlimit", "getrusage",
    "getpriority", "setpriority", "sched_getaffinity", "sched_setaffinity", "sched_yield",
    "sched_getparam", "sched_setparam", "sched_getscheduler", "sched_setscheduler",
    "sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval",
    "sched_getattr", "sched_setattr", "getcpu", "rseq", "membarrier", "pidfd_open",
    "pidfd_send_signal", "seccomp", "landlock_create_ruleset", "landlock_add_rule",
    "landlock_restrict_self", "uname", "times", "getrandom", "umask",
    "ioprio_get", "ioprio_set",
    # credentials (inside its user namespace, without capabilities)
    "getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid", "getresgid",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid",
    "setfsgid", "setgroups",
    # memory
    "mmap", "munmap", "mprotect", "mremap", "msync", "munlock", "munlockall", "memfd_create",
    "memfd_secret", "pkey_alloc", "pkey_free", "pkey_mprotect", "remap_file_pages",
    "map_shadow_stack", "mseal",
    # time
    "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time",
    "alarm", "getitimer", "setitimer", "timer_create", "timer_delete", "timer_gettime",
    "timer_settime", "timer_getoverrun", "timerfd_create", "timerfd_gettime",
    "timerfd_settime", "adjtimex", "clock_adjtime",
    # files
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "open",
    "openat", "openat2", "creat", "close", "close_range", "lseek", "dup", "dup2", "dup3",
    "pipe", "pipe2", "ioctl", "stat", "fstat", "lstat", "newfstatat", "statx", "statfs",
    "fstatfs", "access", "faccessat", "faccessat2", "getcwd", "chdir", "fchdir", "mkdir",
    "mkdirat", "rmdir", "rename", "renameat", "renameat2", "link", "linkat", "unlink",
    "unlinkat", "symlink", "symlinkat", "readlink", "readlinkat", "chmod", "fchmod",
    "fchmodat", "fchmodat2", "chown", "fchown", "fchownat", "lchown", "truncate",
    "ftruncate", "fallocate", "fsync", "fdatasync", "sync", "syncfs", "sync_file_range",
    "getdents", "getdents64", "utime", "utimes", "utimensat", "futimesat", "mknod",
    "mknodat", "sendfile", "splice", "tee", "vmsplice", "copy_file_range", "readahead",
    "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    # waiting for events
    "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait",
    "epoll_pwait2", "poll", "ppoll", "select", "pselect6", "eventfd", "eventfd2",
    "signalfd", "signalfd4",
    # sockets (socket itself: by family, below)
    "socketpair", "bind", "listen", "accept", "accept4", "connect", "getsockname",
    "getpeername", "getsockopt", "setsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg",
    "sendmmsg", "recvmmsg", "shutdown",
    # System V and POSIX IPC (its own IPC namespace)
    "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl",
    "shmget", "shmat", "shmdt", "shmctl", "mq_open", "mq_unlink", "mq_timedsend",
    "mq_timedreceive", "mq_notify", "mq_getsetattr",
)
"""Allowed whatever the arguments (Docker's list for x86_64, less what is denied here)."""

DENIED: dict[str, str] = {
    "flock": "file locks carry bits between sandboxes",
    "mlock": "a locked page outlives the reclaim, and moves a counter of the machine's",
    "mlock2": "locked pages", "mlockall": "locked pages",
    "sysinfo": "counters of the machine (processes, free and shared memory, load)",
    "mincore": "page-cache residency",
    "cachestat": "page-cache residency",
    "fadvise64": "POSIX_FADV_DONTNEED evicts pages of other processes",
    "io_uring_setup": "io_uring", "io_uring_enter": "io_uring",
    "io_uring_register": "io_uring",
    "io_setup": "Linux AIO (RWF_NOWAIT in an iocb)", "io_destroy": "Linux AIO",
    "io_submit": "Linux AIO", "io_cancel": "Linux AIO", "io_getevents": "Linux AIO",
    "io_pgetevents": "Linux AIO",
    "ptrace": "other processes' memory", "process_vm_readv": "other processes' memory",
    "process_vm_writev": "other processes' memory",
    "process_madvise": "another process's memory (and MADV_PAGEOUT)",
    "kcmp": "other processes' state", "pidfd_getfd": "other processes' files",
    "keyctl": "keyrings are not namespaced", "add_key": "keyrings",
    "request_key": "keyrings",
    "userfaultfd": "kernel race widening", "perf_event_open": "kernel surface, side channels",
    "bpf": "kernel surface",
    "unshare": "namespaces", "setns": "namespaces",
    "mount": "the mount table", "umount2": "the mount table", "pivot_root": "the mount table",
    "chroot": "the mount table", "move_mount": "the mount table",
    "open_tree": "the mount table", "fsopen": "the mount table",
    "fsconfig": "the mount table", "fsmount": "the mount table", "fspick": "the mount table",
    "mount_setattr": "the mount table",
    "inotify_init": "reports other sandboxes' reads of shared files",
    "inotify_init1": "reports other sandboxes' reads of shared files",
    "inotify_add_watch": "reports other sandboxes' reads of shared files",
    "inotify_rm_watch": "inotify", "fanotify_init": "fanotify", "fanotify_mark": "fanotify",
    "name_to_handle_at": "file handles", "open_by_handle_at": "file handles",
    "modify_ldt": "legacy x86 surface",
    "reboot": "privileged", "kexec_load": "privileged", "kexec_file_load": "privileged",
    "init_module": "privileged", "finit_module": "privileged",
    "delete_module": "privileged", "swapon": "privileged", "swapoff": "privileged",
    "acct": "privileged", "syslog": "privileged", "quotactl": "privileged",
    "quotactl_fd": "privileged", "lookup_dcookie": "privileged",
    "settimeofday": "privileged", "clock_settime": "privileged",
    "sethostname": "privileged", "setdomainname": "privileged", "vhangup": "privileged",
    "iopl": "privileged", "ioperm": "privileged", "uselib": "legacy", "ustat": "legacy",
    "sysfs": "legacy", "_sysctl": "legacy", "mbind": "NUMA policy",
    "set_mempolicy": "NUMA policy", "get_mempolicy": "NUMA policy",
    "set_mempolicy_home_node": "NUMA policy", "migrate_pages": "NUMA policy",
    "move_pages": "NUMA policy",
}
"""Refused with EPERM whatever the arguments, and why."""

# fcntl commands (include/uapi/asm-generic/fcntl.h, linux/fcntl.h)
F_GETLK, F_SETLK, F_SETLKW = 5, 6, 7
F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW = 36, 37, 38
F_SETLEASE, F_GETLEASE, F_NOTIFY = 1024, 1025, 1026
FCNTL_DENIED = (F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW,
                F_SETLEASE, F_GETLEASE, F_NOTIFY)
FCNTL_ALLOWED = (
    0,  # F_DUPFD
    1, 2, 3, 4,  # F_GETFD, F_SETFD, F_GETFL, F_SETFL
    8, 9, 10, 11,  # F_SETOWN, F_GETOWN, F_SETSIG, F_GETSIG
    15, 16, 17,  # F_SETOWN_EX, F_GETOWN_EX, F_GETOWNER_UIDS
    1027, 1028,  # F_DUPFD_QUERY, F_CREATED_QUERY
    1030, 1031, 1032,  # F_DUPFD_CLOEXEC, F_SETPIPE_SZ, F_GETPIPE_SZ
    1033, 1034,  # F_ADD_SEALS, F_GET_SEALS
    1035, 1036, 1037, 1038,  # F_GET_RW_HINT, F_SET_RW_HINT, F_GET/SET_FILE_RW_HINT
)
"""Other commands (unknown to this list) fail with ENOSYS."""

RWF_NOWAIT = 0x8
MADV_DENIED = (20, 21, 22, 23, 100, 101)
"""MADV_COLD, MADV_PAGEOUT, MADV_POPULATE_READ, MADV_POPULATE_WRITE, MADV_HWPOISON,
MADV_SOFT_OFFLINE."""
MADV_ALLOWED = (0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 24, 25,
                102, 103)
"""NORMAL, RANDOM, SEQUENTIAL, WILLNEED, DONTNEED, FREE, REMOVE, DONTFORK, DOFORK,
MERGEABLE, UNMERGEABLE, (NO)HUGEPAGE, DONTDUMP, DODUMP, WIPEONFORK, KEEPONFORK,
DONTNEED_LOCKED, COLLAPSE, GUARD_INSTALL/REMOVE."""

CLONE_NEW_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                   0x40000000)
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (Docker's mask
0x7E020000; CLONE_NEWTIME, 0x80, is part of clone()'s exit signal byte)."""

SOCKET_FAMILIES = (1, 2, 10)  # AF_UNIX, AF_INET, AF_INET6
AF_NETLINK, NETLINK_ROUTE = 16, 0

PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)
"""PER_LINUX, PER_LINUX32, UNAME26, UNAME26|PER_LINUX32, and the query (Docker's)."""


def _known(name: str) -> bool:
    """Whether this libseccomp knows the system call on the native architecture (a call
    it does not know is left to the default action: ENOSYS)."""
    return int(seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)) >= 0


def _low32(index: int, value: int) -> Any:
    """Argument ``index`` equals ``value`` in its low 32 bits (the kernel reads an int)."""
    return seccomp.Arg(index, seccomp.MASKED_EQ, _LOW32, value)


def _rules(flt: Any, action: int, name: str, conditions: Iterable[Any]) -> None:
    for condition in conditions:
        flt.add_rule(action, name, condition)


def build() -> Any:
    """The filter (a ``pyseccomp.SyscallFilter``), not loaded."""
    eperm = seccomp.ERRNO(errno.EPERM)
    flt = seccomp.SyscallFilter(seccomp.ERRNO(errno.ENOSYS))
    flt.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    try:  # a binary tree of the system call numbers instead of a linear list
        flt.set_attr(seccomp.Attr.CTL_OPTIMIZE, 2)
    except OSError:
        pass
    for name in ALLOWED:
        if _known(name):
            flt.add_rule(seccomp.ALLOW, name)
    for name in DENIED:
        if _known(name):
            flt.add_rule(eperm, name)
    # file locks, leases and dnotify refused; the other fcntl commands allowed
    _rules(flt, seccomp.ALLOW, "fcntl", (_low32(1, c) for c in FCNTL_ALLOWED))
    _rules(flt, eperm, "fcntl", (_low32(1, c) for c in FCNTL_DENIED))
    # reads and writes that fail rather than wait for the disk: residency probes
    for name in ("preadv2", "pwritev2"):
        flt.add_rule(seccomp.ALLOW, name, seccomp.Arg(5, seccomp.MASKED_EQ, RWF_NOWAIT, 0))
        flt.add_rule(eperm, name, seccomp.Arg(5, seccomp.MASKED_EQ, RWF_NOWAIT, RWF_NOWAIT))
    _rules(flt, seccomp.ALLOW, "madvise", (_low32(2, a) for a in MADV_ALLOWED))
    _rules(flt, eperm, "madvise", (_low32(2, a) for a in MADV_DENIED))
    # threads and processes, not namespaces
    mask = sum(CLONE_NEW_FLAGS)
    flt.add_rule(seccomp.ALLOW, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, mask, 0))
    for bit in CLONE_NEW_FLAGS:
        flt.add_rule(eperm, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, bit, bit))
    # clone3 is in neither list: its flags are in memory, out of a filter's reach, so it
    # gets the default ENOSYS and the libc falls back to clone (as under Docker)
    _rules(flt, seccomp.ALLOW, "socket", (_low32(0, f) for f in SOCKET_FAMILIES))
    flt.add_rule(seccomp.ALLOW, "socket", _low32(0, AF_NETLINK), _low32(2, NETLINK_ROUTE))
    _rules(flt, seccomp.ALLOW, "personality", (_low32(0, p) for p in PERSONALITIES))
    return flt


@cache
def bpf() -> bytes:
    """The filter as classic BPF (``struct sock_filter`` array), as ``--seccomp`` reads it."""
    flt = build()
    fd = os.memfd_create("arena-seccomp-build", os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(fd), "wb", closefd=True) as out:
            flt.export_bpf(out)
        size = os.lseek(fd, 0, os.SEEK_END)
        return os.pread(fd, size, 0)
    finally:
        os.close(fd)


def pfc() -> str:
    """The filter in libseccomp's readable pseudo-code (for review and debugging)."""
    fd = os.memfd_create("arena-seccomp-pfc", os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(fd), "w", closefd=True) as out:
            build().export_pfc(out)
        size = os.lseek(fd, 0, os.SEEK_END)
        return os.pread(fd, size, 0).decode()
    finally:
        os.close(fd)


def sealed_memfd(name: str, data: bytes) -> int:
    """A new memfd holding ``data``, read from its start and sealed (it cannot be changed
    behind its reader's back), inheritable only where passed (``pass_fds``). The caller
    closes its own copy after the spawn."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
                    | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL)
    except BaseException:
        os.close(fd)
        raise
    return fd


def filter_fd() -> int:
    """A sealed memfd holding :func:`bpf`, for ``bwrap --seccomp FD``, which reads and
    closes it."""
    return sealed_memfd("arena-seccomp", bpf())


def bwrap_options(fd: int) -> list[str]:
    """bubblewrap's options for the filter in ``fd`` (and no nested user namespaces)."""
    return ["--unshare-user", "--disable-userns", "--seccomp", str(fd)]
