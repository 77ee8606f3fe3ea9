"""A hostile bot that tries, once, each system call the sandbox should refuse, and
reports what the kernel answered: "ok" where the call went through, else the errno's
name (EPERM from the seccomp filter; ENOSYS where a call is merely not allowed).

The calls (on ``/etc/passwd`` where a file is needed): ``flock``; ``fcntl`` with
F_OFD_SETLK; ``mincore``; ``cachestat``; ``preadv2`` with RWF_NOWAIT;
``posix_fadvise(DONTNEED)``; ``madvise(MADV_PAGEOUT)``; ``io_uring_setup``;
``io_setup``; ``keyctl``; ``add_key``; ``userfaultfd``; ``perf_event_open``; ``bpf``;
``inotify_init1``; ``unshare(CLONE_NEWNS)``; ``mount``; ``personality(ADDR_NO_RANDOMIZE)``;
``socket(AF_PACKET)``; ``clone3``. The system call numbers are x86_64's (elsewhere the
report says so and tries only the calls Python itself offers).

``--control``: it attempts nothing.

Report: ``{"attack": "surface", "results": {call: "ok" | errno name}, "arch"}``.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import platform
import struct
import threading

import _hostile
import _kernel

from arena.sdk import View

X86_64 = {"io_uring_setup": 425, "io_setup": 206, "keyctl": 250, "add_key": 248,
          "userfaultfd": 323, "perf_event_open": 298, "bpf": 321, "inotify_init1": 294,
          "unshare": 272, "mount": 165, "personality": 135, "socket": 41, "clone3": 435}


def attack() -> dict[str, object]:
    results: dict[str, str] = {}
    fd = os.open("/etc/passwd", os.O_RDONLY)

    def python(name: str, call: object) -> None:
        try:
            call()  # type: ignore[operator]
            results[name] = "ok"
        except OSError as e:
            results[name] = _kernel.errname(e.errno or 0)

    python("flock", lambda: fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB))
    python("fcntl_ofd_setlk", lambda: fcntl.fcntl(fd, getattr(fcntl, "F_OFD_SETLK", 37),
                                                  struct.pack("hh4xqqi4x", 0, 0, 7, 1, 0)))
    python("preadv2_nowait", lambda: os.preadv(fd, [bytearray(1)], 0, os.RWF_NOWAIT))
    python("fadvise_dontneed", lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED))
    libc = _kernel.libc
    addr = libc.mmap(None, 4096, 1, 2, fd, 0)
    vec = (ctypes.c_ubyte * 1)()
    ctypes.set_errno(0)
    results["mincore"] = ("ok" if libc.mincore(ctypes.c_void_p(addr), 4096, vec) == 0
                          else _kernel.errname(ctypes.get_errno()))
    ctypes.set_errno(0)
    results["madvise_pageout"] = ("ok" if libc.madvise(ctypes.c_void_p(addr), 4096, 21) == 0
                                  else _kernel.errname(ctypes.get_errno()))
    results["cachestat"] = _kernel.syscall(_kernel.SYS_CACHESTAT, fd,
                                           (ctypes.c_uint64 * 2)(0, 0),
                                           (ctypes.c_uint64 * 5)(), 0)[1] or "ok"
    arch = platform.machine()
    if arch == "x86_64":
        params = (ctypes.c_uint64 * 16)()
        calls: dict[str, tuple[int, ...]] = {
            "io_uring_setup": (4, ctypes.addressof(params)),
            "io_setup": (4, ctypes.addressof(params)),
            "keyctl": (0, -3, 0),
            "userfaultfd": (0,), "perf_event_open": (ctypes.addressof(params), 0, -1, -1, 0),
            "bpf": (0, ctypes.addressof(params), 64), "inotify_init1": (0,),
            "unshare": (0x20000,), "mount": (0, 0, 0, 0, 0),
            "personality": (0x0040000,), "socket": (17, 3, 0),
            "clone3": (0, 0)}
        for name, args in calls.items():
            result, err = _kernel.syscall(X86_64[name], *args)
            results[name] = err or "ok"
            if name in ("inotify_init1", "userfaultfd", "perf_event_open", "socket",
                        "io_uring_setup") and result >= 0:
                os.close(result)
        results["add_key"] = _kernel.syscall(X86_64["add_key"], 0, 0, 0, 0, -3)[1] or "ok"
    os.close(fd)
    return {"results": results, "arch": arch}


class Surface(_hostile.Legal):
    name = "hostile-surface"

    def __init__(self, control: bool) -> None:
        super().__init__()
        self.control = control
        self.done = False
        self.lock = threading.Lock()

    def _first(self) -> None:
        with self.lock:
            if not self.done:
                self.done = True
                found = {} if self.control else attack()
                _hostile.report("surface", control=self.control, **found)

    def bid(self, view: View) -> int:
        self._first()
        return super().bid(view)

    def play(self, view: View) -> int:
        self._first()
        return super().play(view)


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--control", action="store_true", help="attempt nothing")
    args, rest = _hostile.parse(p)
    _hostile.serve(Surface(args.control), rest)
