"""The seccomp filter of arena/proc/seccomp.py under a real ``bwrap --seccomp FD``.

A small C program (compiled here, in a temporary folder) tries one system call per
argument and prints what the kernel answered: every call the filter refuses must get
EPERM (ENOSYS for ``clone3``, so that the libc falls back to ``clone``), a call through
another ABI (i386 ``int 0x80``, x32) must end the process with SIGSYS, and ordinary work
must go on: threads, fork, mmap, unix and inet sockets, a Python interpreter with numpy,
and the sample bots (Python SDK, Node.js grpc-js, C++) serving gRPC on a unix socket.
The controls run the same probes in the same sandbox without the filter: today's sandbox
lets every one of the refused calls through (a test that can fail).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from compiled_samples import built_cpp
from conftest import REPO, health_check

from arena.proc import seccomp

BWRAP = shutil.which("bwrap")
CC = shutil.which("cc") or shutil.which("gcc")

pytestmark = [
    pytest.mark.skipif(BWRAP is None, reason="bubblewrap (bwrap) is not installed"),
    pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64",
                       reason="the probes use x86_64 system call numbers"),
]

PROBE_C = r"""/* probe NAME...: try one system call per NAME, print "NAME ok" or "NAME ERRNAME". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef F_OFD_GETLK
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#define MADV_PAGEOUT 21
#endif
#ifndef RWF_NOWAIT
#define RWF_NOWAIT 8
#endif

static const char *ename(int e) {
    switch (e) {
    case EPERM: return "EPERM"; case ENOSYS: return "ENOSYS"; case EACCES: return "EACCES";
    case EINVAL: return "EINVAL"; case EAGAIN: return "EAGAIN"; case EFAULT: return "EFAULT";
    case ENOENT: return "ENOENT"; case ESRCH: return "ESRCH"; case EBADF: return "EBADF";
    case ENOSPC: return "ENOSPC"; case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT"; case ENOTDIR: return "ENOTDIR";
    case EROFS: return "EROFS"; case EOPNOTSUPP: return "EOPNOTSUPP"; case EBUSY: return "EBUSY";
    default: { static char b[16]; snprintf(b, sizeof b, "E%d", e); return b; }
    }
}

static void *nothing(void *p) { return p; }

static long run(const char *n, int fd, void *map) {
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 7, .l_len = 1};
    char buf[64];
    struct iovec iov = {buf, 1};
    if (!strcmp(n, "flock")) return flock(fd, LOCK_SH);
    if (!strcmp(n, "fcntl_getfl")) return fcntl(fd, F_GETFL) < 0 ? -1 : 0;
    if (!strcmp(n, "fcntl_dupfd_cloexec")) return fcntl(fd, F_DUPFD_CLOEXEC, 10) < 0 ? -1 : 0;
    if (!strcmp(n, "fcntl_setlk")) return fcntl(fd, F_SETLK, &fl);
    if (!strcmp(n, "fcntl_getlk")) { fl.l_type = F_WRLCK; return fcntl(fd, F_GETLK, &fl); }
    if (!strcmp(n, "fcntl_ofd_setlk")) return fcntl(fd, F_OFD_SETLK, &fl);
    if (!strcmp(n, "fcntl_ofd_getlk")) { fl.l_type = F_WRLCK; return fcntl(fd, F_OFD_GETLK, &fl); }
    if (!strcmp(n, "fcntl_setlk_highbits"))  /* the kernel reads cmd as an unsigned int */
        return syscall(SYS_fcntl, fd, (1UL << 32) | F_SETLK, &fl);
    if (!strcmp(n, "fcntl_setlease")) return fcntl(fd, F_SETLEASE, F_RDLCK);
    if (!strcmp(n, "fcntl_notify")) return fcntl(open("/", O_RDONLY), F_NOTIFY, DN_ACCESS);
    if (!strcmp(n, "mincore")) { unsigned char v[1]; return mincore(map, 4096, v); }
    if (!strcmp(n, "cachestat")) {
        uint64_t range[2] = {0, 0}, cs[5];
        return syscall(451, fd, range, cs, 0);
    }
    if (!strcmp(n, "preadv2_nowait")) return preadv2(fd, &iov, 1, 0, RWF_NOWAIT) < 0 ? -1 : 0;
    if (!strcmp(n, "preadv2_plain")) return preadv2(fd, &iov, 1, 0, 0) < 0 ? -1 : 0;
    if (!strcmp(n, "fadvise_dontneed")) {
        int r = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        if (r) { errno = r; return -1; } return 0;
    }
    if (!strcmp(n, "madv_pageout")) return madvise(map, 4096, MADV_PAGEOUT);
    if (!strcmp(n, "madv_cold")) return madvise(map, 4096, MADV_COLD);
    if (!strcmp(n, "madv_dontneed")) return madvise(map, 4096, MADV_DONTNEED);
    if (!strcmp(n, "madv_populate_read")) return madvise(map, 4096, 22);
    if (!strcmp(n, "madv_populate_write")) {
        void *p = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? -1 : madvise(p, 4096, 23);
    }
    if (!strcmp(n, "mlock")) { long r = mlock(map, 4096); if (!r) munlock(map, 4096); return r; }
    if (!strcmp(n, "mlock2")) {
        long r = syscall(SYS_mlock2, map, 4096, 0);
        if (!r) munlock(map, 4096);
        return r;
    }
    if (!strcmp(n, "mlockall")) { long r = mlockall(MCL_FUTURE); if (!r) munlockall(); return r; }
    if (!strcmp(n, "sysinfo")) { struct sysinfo si; return sysinfo(&si); }
    if (!strcmp(n, "madv_pageout_highbits"))
        return syscall(SYS_madvise, map, 4096, (1UL << 32) | MADV_PAGEOUT);
    if (!strcmp(n, "io_uring_setup")) { char p[120] = {0}; return syscall(425, 4, p); }
    if (!strcmp(n, "io_setup")) { unsigned long ctx = 0; return syscall(SYS_io_setup, 4, &ctx); }
    if (!strcmp(n, "ptrace_attach_1")) {  /* attach to the sandbox's pid 1, read a word, let go */
        if (ptrace(PTRACE_ATTACH, 1, 0, 0) < 0) return -1;
        waitpid(1, 0, __WALL);
        ptrace(PTRACE_DETACH, 1, 0, SIGCONT);
        return 0;
    }
    if (!strcmp(n, "ptrace_traceme")) return ptrace(PTRACE_TRACEME, 0, 0, 0);
    if (!strcmp(n, "process_vm_readv")) {
        struct iovec remote = {(void *)0x400000, 1};
        return process_vm_readv(1, &iov, 1, &remote, 1, 0) < 0 ? -1 : 0;
    }
    if (!strcmp(n, "keyctl")) return syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3, 0);
    if (!strcmp(n, "add_key")) return syscall(SYS_add_key, "user", "x", "y", 1, -3);
    if (!strcmp(n, "request_key")) return syscall(SYS_request_key, "user", "x", 0, 0);
    if (!strcmp(n, "userfaultfd")) return syscall(SYS_userfaultfd, 0);
    if (!strcmp(n, "perf_event_open")) {
        char a[128] = {0};
        return syscall(SYS_perf_event_open, a, 0, -1, -1, 0);
    }
    if (!strcmp(n, "bpf")) { char a[128] = {0}; return syscall(SYS_bpf, 0, a, sizeof a); }
    if (!strcmp(n, "unshare_user")) return unshare(CLONE_NEWUSER);
    if (!strcmp(n, "unshare_ns")) return unshare(CLONE_NEWNS);
    if (!strcmp(n, "setns")) return setns(open("/proc/self/ns/uts", O_RDONLY), 0);
    if (!strcmp(n, "clone_newuser") || !strcmp(n, "clone_newns") || !strcmp(n, "clone_plain")) {
        unsigned long f = SIGCHLD;
        if (!strcmp(n, "clone_newuser")) f |= CLONE_NEWUSER;
        if (!strcmp(n, "clone_newns")) f |= CLONE_NEWNS;
        long pid = syscall(SYS_clone, f, 0, 0, 0, 0);
        if (pid == 0) _exit(0);
        if (pid > 0) waitpid(pid, 0, 0);
        return pid < 0 ? -1 : 0;
    }
    if (!strcmp(n, "clone3")) {
        struct clone_args a = {.exit_signal = SIGCHLD};
        long pid = syscall(435, &a, sizeof a);
        if (pid == 0) _exit(0);
        if (pid > 0) waitpid(pid, 0, 0);
        return pid < 0 ? -1 : 0;
    }
    if (!strcmp(n, "fork")) {
        pid_t p = fork();
        if (p == 0) _exit(0);
        if (p > 0) waitpid(p, 0, 0);
        return p < 0 ? -1 : 0;
    }
    if (!strcmp(n, "thread")) {
        pthread_t t; int r = pthread_create(&t, 0, nothing, 0);
        if (r) { errno = r; return -1; } return pthread_join(t, 0);
    }
    if (!strcmp(n, "mmap_anon")) {
        void *p = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return -1;
        memset(p, 1, 1 << 20);
        return munmap(p, 1 << 20);
    }
    if (!strcmp(n, "mount")) return syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, 0);
    if (!strcmp(n, "umount2")) return syscall(SYS_umount2, "/tmp", 0);
    if (!strcmp(n, "pivot_root")) return syscall(SYS_pivot_root, "/tmp", "/tmp");
    if (!strcmp(n, "fsopen")) return syscall(430, "tmpfs", 0);
    if (!strcmp(n, "open_tree")) return syscall(428, AT_FDCWD, "/tmp", 1 /* OPEN_TREE_CLONE */);
    if (!strcmp(n, "chroot")) return chroot("/tmp");
    if (!strcmp(n, "inotify_init1")) return syscall(SYS_inotify_init1, 0);
    if (!strcmp(n, "fanotify_init")) return syscall(SYS_fanotify_init, 0, 0);
    if (!strcmp(n, "name_to_handle_at")) {
        char h[200] = {0};
        int m;
        *(unsigned *)h = 128;
        return syscall(SYS_name_to_handle_at, AT_FDCWD, "/", h, &m, 0);
    }
    if (!strcmp(n, "modify_ldt")) { char b[16]; return syscall(SYS_modify_ldt, 0, b, sizeof b); }
    if (!strcmp(n, "socket_unix")) return socket(AF_UNIX, SOCK_STREAM, 0) < 0 ? -1 : 0;
    if (!strcmp(n, "socket_inet6")) return socket(AF_INET6, SOCK_STREAM, 0) < 0 ? -1 : 0;
    if (!strcmp(n, "socket_netlink_route")) return socket(AF_NETLINK, SOCK_RAW, 0) < 0 ? -1 : 0;
    if (!strcmp(n, "socket_netlink_netfilter"))
        return socket(AF_NETLINK, SOCK_RAW, 12 /* NETLINK_NETFILTER */) < 0 ? -1 : 0;
    if (!strcmp(n, "socket_packet")) return socket(AF_PACKET, SOCK_RAW, 0) < 0 ? -1 : 0;
    if (!strcmp(n, "socket_alg")) return socket(38 /* AF_ALG */, SOCK_SEQPACKET, 0) < 0 ? -1 : 0;
    if (!strcmp(n, "socket_vsock")) return socket(40 /* AF_VSOCK */, SOCK_STREAM, 0) < 0 ? -1 : 0;
    if (!strcmp(n, "personality_query")) return personality(0xffffffff) < 0 ? -1 : 0;
    if (!strcmp(n, "personality_norandom")) return personality(ADDR_NO_RANDOMIZE) < 0 ? -1 : 0;
    if (!strcmp(n, "x32_getpid")) return syscall(0x40000000 | SYS_getpid);
    if (!strcmp(n, "i386_getpid")) {  /* the 32-bit ABI through int 0x80: getpid is 20 */
        long r;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
        if (r < 0 && r > -4096) { errno = -r; return -1; }
        return 0;
    }
    fprintf(stderr, "unknown probe %s\n", n);
    exit(2);
}

int main(int argc, char **argv) {
    const char *file = getenv("PROBE_FILE") ? getenv("PROBE_FILE") : "/etc/passwd";
    int fd = open(file, O_RDONLY);
    if (fd < 0) { perror(file); return 2; }
    void *map = mmap(0, 4096, PROT_READ, MAP_SHARED, fd, 0);
    for (int i = 1; i < argc; i++) {
        errno = 0;
        long r = run(argv[i], fd, map);
        printf("%s %s\n", argv[i], r < 0 ? ename(errno) : "ok");
        fflush(stdout);
    }
    return 0;
}
"""

DENIED = {
    "flock": "EPERM", "fcntl_setlk": "EPERM", "fcntl_getlk": "EPERM",
    "fcntl_ofd_setlk": "EPERM", "fcntl_ofd_getlk": "EPERM", "fcntl_setlk_highbits": "EPERM",
    "fcntl_setlease": "EPERM", "fcntl_notify": "EPERM",
    "mincore": "EPERM", "cachestat": "EPERM", "preadv2_nowait": "EPERM",
    "fadvise_dontneed": "EPERM", "madv_pageout": "EPERM", "madv_cold": "EPERM",
    "madv_pageout_highbits": "EPERM", "io_uring_setup": "EPERM", "io_setup": "EPERM",
    "process_vm_readv": "EPERM", "keyctl": "EPERM", "add_key": "EPERM",
    "request_key": "EPERM", "userfaultfd": "EPERM", "perf_event_open": "EPERM",
    "bpf": "EPERM", "unshare_user": "EPERM", "unshare_ns": "EPERM", "setns": "EPERM",
    "clone_newuser": "EPERM", "clone_newns": "EPERM", "clone3": "ENOSYS",
    "mount": "EPERM", "umount2": "EPERM", "pivot_root": "EPERM", "fsopen": "EPERM",
    "open_tree": "EPERM", "chroot": "EPERM", "inotify_init1": "EPERM",
    "fanotify_init": "EPERM", "name_to_handle_at": "EPERM", "modify_ldt": "EPERM",
    "socket_netlink_netfilter": "ENOSYS", "socket_packet": "ENOSYS",
    "socket_alg": "ENOSYS", "socket_vsock": "ENOSYS", "personality_norandom": "ENOSYS",
    "madv_populate_read": "EPERM", "madv_populate_write": "EPERM", "mlock": "EPERM",
    "mlock2": "EPERM", "mlockall": "EPERM", "sysinfo": "EPERM",
    "ptrace_attach_1": "EPERM", "ptrace_traceme": "EPERM",
}
"""What the filter answers (the ptrace probes last: without the filter they would trace)."""

ALLOWED = ("fcntl_getfl", "fcntl_dupfd_cloexec", "preadv2_plain", "madv_dontneed",
           "clone_plain", "fork", "thread", "mmap_anon", "socket_unix", "socket_inet6",
           "socket_netlink_route", "personality_query")

OPEN_TODAY = ("flock", "fcntl_setlk", "fcntl_getlk", "fcntl_ofd_setlk", "fcntl_ofd_getlk",
              "fcntl_setlease", "fcntl_notify", "mincore", "cachestat", "fadvise_dontneed",
              "madv_pageout", "madv_cold", "io_uring_setup", "io_setup", "keyctl", "add_key",
              "request_key", "inotify_init1", "madv_populate_read", "madv_populate_write",
              "mlock", "mlock2", "mlockall", "sysinfo")
"""Refused by the filter, and "ok" in the same sandbox without it (where the kernel's own
settings, e.g. perf_event_paranoid, do not refuse them anyway)."""


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if CC is None:
        pytest.skip("no C compiler (cc) to build the probe")
    folder = tmp_path_factory.mktemp("probe")
    (folder / "probe.c").write_text(PROBE_C)
    subprocess.run([CC, "-O1", "-o", str(folder / "probe"), str(folder / "probe.c"),
                    "-lpthread"], check=True, capture_output=True)
    (folder / "data").write_bytes(os.urandom(1 << 16))
    return folder / "probe"


def _view(extra: list[Path]) -> list[str]:
    out = ["--ro-bind", "/usr", "/usr"]
    for link, target in (("/lib", "usr/lib"), ("/lib64", "usr/lib64"), ("/bin", "usr/bin"),
                         ("/sbin", "usr/sbin")):
        if os.path.islink(link):
            out += ["--symlink", target, link]
        elif os.path.isdir(link):
            out += ["--ro-bind", link, link]
    for name in ("passwd", "group", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl",
                 "ca-certificates", "alternatives", "nsswitch.conf", "localtime"):
        if os.path.lexists(f"/etc/{name}"):
            out += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    done: list[Path] = []
    for path in sorted({p.resolve() for p in extra}, key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(d) for d in done) and not path.is_relative_to("/usr"):
            done.append(path)
            out += ["--ro-bind", str(path), str(path)]
    return out


def sandboxed(argv: list[str], *, filtered: bool = True, visible: tuple[Path, ...] = (),
              socket_dir: Path | None = None, env: dict[str, str] | None = None,
              ) -> list[str]:
    """The bwrap command line: today's namespaces and a small read-only view, plus (with
    ``filtered``) the filter and no nested user namespaces."""
    assert BWRAP is not None
    out = [BWRAP, "--unshare-all", "--die-with-parent", "--new-session", "--uid", "65534",
           "--gid", "65534", "--tmpfs", "/tmp",
           *_view([*visible, Path(sys.prefix), Path(sys.base_prefix)]),
           "--proc", "/proc", "--dev", "/dev"]
    if socket_dir is not None:
        out += ["--bind", str(socket_dir), str(socket_dir)]
    out += ["--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
            "--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8"]
    for key, value in (env or {}).items():
        out += ["--setenv", key, value]
    if filtered:
        out += seccomp.bwrap_options(FILTER)  # type: ignore[arg-type]
    return [*out, "--", *argv]


FILTER = "{filter fd}"
"""Where the filter's descriptor number goes in a command line (each run gets a fresh
memfd, passed with its own number)."""


def spawn(command: list[str], **kw: Any) -> subprocess.Popen[str]:
    """Start ``command`` with a fresh filter memfd in place of :data:`FILTER`."""
    fd = seccomp.filter_fd()
    try:
        command = [str(fd) if a == FILTER else a for a in command]
        return subprocess.Popen(command, pass_fds=[fd], text=True, **kw)
    finally:
        os.close(fd)


def run(command: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    proc = spawn(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def answers(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)


def probe_run(probe: Path, names: list[str] | tuple[str, ...], filtered: bool = True,
              ) -> subprocess.CompletedProcess[str]:
    return run(sandboxed([str(probe), *names], filtered=filtered, visible=(probe.parent,),
                         env={"PROBE_FILE": str(probe.parent / "data")}))


# -- the filter itself ------------------------------------------------------------------


def test_the_filter_is_classic_bpf_in_a_sealed_memfd() -> None:
    data = seccomp.bpf()
    assert data and len(data) % 8 == 0 and len(data) // 8 < 4096  # BPF_MAXINSNS
    fd = seccomp.filter_fd()
    try:
        assert os.pread(fd, len(data) + 1, 0) == data
        with pytest.raises(PermissionError):
            os.write(fd, b"x")  # sealed
    finally:
        os.close(fd)
    text = seccomp.pfc()
    assert "action ERRNO(38);" in text.split("# default action")[1].splitlines()[1]
    assert "invalid architecture action\naction KILL_PROCESS;" in text


# -- what it refuses --------------------------------------------------------------------


def test_every_refused_call_gets_eperm_and_clone3_enosys(probe: Path) -> None:
    done = probe_run(probe, list(DENIED))
    assert done.returncode == 0, done.stderr
    assert answers(done) == DENIED


def test_control_without_the_filter_the_same_calls_go_through(probe: Path) -> None:
    names = list(OPEN_TODAY)
    done = probe_run(probe, names, filtered=False)
    assert done.returncode == 0, done.stderr
    got = answers(done)
    assert got == dict.fromkeys(names, "ok"), got
    # RWF_NOWAIT: EAGAIN on a page that is not cached, i.e. a residency probe that works
    assert answers(probe_run(probe, ["preadv2_nowait"], filtered=False))["preadv2_nowait"] \
        in ("ok", "EAGAIN")
    # pid 1 is bubblewrap: traced (then let go) without the filter
    assert answers(probe_run(probe, ["ptrace_attach_1"], filtered=False)) == {
        "ptrace_attach_1": "ok"}


@pytest.mark.parametrize("abi", ["i386_getpid", "x32_getpid"])
def test_a_call_through_another_abi_ends_the_process(probe: Path, abi: str) -> None:
    done = probe_run(probe, [abi])
    assert answers(done) == {}, done.stdout
    # bubblewrap's pid 1 exits with 128 + the signal that ended the bot
    assert done.returncode == 128 + signal.SIGSYS, (done.returncode, done.stderr)


# -- what it allows ---------------------------------------------------------------------


def test_ordinary_calls_work(probe: Path) -> None:
    done = probe_run(probe, list(ALLOWED))
    assert done.returncode == 0, done.stderr
    assert answers(done) == dict.fromkeys(ALLOWED, "ok")


WORK = r"""
import mmap, os, subprocess, sys, threading, numpy
threads = [threading.Thread(target=lambda: sum(range(10000))) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
m = mmap.mmap(-1, 1 << 22); m[0] = 1
pid = os.fork()
if pid == 0: os._exit(7)
assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7
out = subprocess.run(["sh", "-c", "echo child"], capture_output=True, text=True).stdout
print("ok", numpy.linalg.inv(numpy.eye(4) * 2).trace(), out.strip())
"""


def test_python_with_threads_fork_subprocess_and_numpy() -> None:
    done = run(sandboxed([sys.executable, "-c", WORK], visible=(REPO,)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "2.0", "child"]


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    folder = Path(tempfile_dir())
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def tempfile_dir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="seccomp-", dir="/tmp")


def serves(command: list[str], socket_dir: Path, visible: tuple[Path, ...]) -> None:
    """Start a bot under the filter and check that it answers gRPC health checks."""
    socket = socket_dir / "bot.sock"
    log = socket_dir / "bot.log"
    with open(log, "w") as stderr:
        proc = spawn(sandboxed(command, visible=visible, socket_dir=socket_dir,
                               env={"ARENA_BOT_LISTEN": f"unix:{socket}",
                                    "PYTHONUNBUFFERED": "1"}),
                     stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not socket.exists():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "no socket"
            time.sleep(0.02)
        with grpc.insecure_channel(f"unix:{socket}") as channel:
            while True:
                try:
                    assert health_check(channel) == 1  # SERVING
                    break
                except grpc.RpcError:
                    assert time.monotonic() < deadline, "not serving"
                    time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def test_the_python_sdk_bot_serves_grpc_under_the_filter(socket_dir: Path) -> None:
    bot = REPO / "sample_bots/python/heuristic_bot.py"
    serves([sys.executable, str(bot)], socket_dir, visible=(REPO,))


def test_the_node_bot_serves_grpc_under_the_filter(socket_dir: Path) -> None:
    node = shutil.which("node")
    folder = REPO / "sample_bots/node"
    if node is None or not (folder / "node_modules").is_dir():
        pytest.skip("node, or sample_bots/node/node_modules, is missing")
    serves([node, str(folder / "bot.js")], socket_dir, visible=(REPO, Path(node).resolve().parent))


def test_the_cpp_bot_serves_grpc_under_the_filter(socket_dir: Path) -> None:
    """Built here when no other test has built it yet (it used to be skipped then, so
    whether it ran depended on the order the workers took the files in); skipped, or
    failed with ARENA_REQUIRE_CPP, where the toolchain is missing."""
    given = os.environ.get("ARENA_CPP_BOT")
    binary = Path(given) if given else built_cpp()
    if not binary.is_file():
        pytest.fail(f"no C++ sample bot at {binary}", pytrace=False)
    serves([str(binary)], socket_dir, visible=(binary.parent,))
