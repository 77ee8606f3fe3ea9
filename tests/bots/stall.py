"""A test bot that cannot be stopped at once after its answers: just before answering it
starts a thread that maps ``--mib`` MiB (default 300) and has the kernel fill them in one
system call, then answers (the lowest legal action) while that thread is still in the
kernel. A task in a system call is frozen only when it leaves it: some 130 ms of CPU for
300 MiB here.

``--stall populate`` (the default): ``mmap(MAP_POPULATE)``, the kernel faults every page
in within the call; where that is refused (a seccomp filter may), the pages are touched
in the call and the stall is their ``munmap`` (some 25 ms of CPU in the kernel for 300
MiB). ``--stall munmap``: that one always. ``--stall none``: the same bot, answering at
once with no stall (the control). The memory is given back before the next stall: the
bot stays under its memory limit.

``--trace FILE``: one JSON line per call (see ``_common``), plus ``{"stall": how,
"errno": ...}`` for each stall begun.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
import time

import _common

from arena.sdk import Bot, View

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
PROT_READ_WRITE = 0x3
MAP_PRIVATE_ANONYMOUS = 0x22
MAP_POPULATE = 0x8000
MAP_FAILED = ctypes.c_void_p(-1).value


def _on_cpu_ns(tid: int) -> int:
    """The time thread ``tid`` of this process has run on a CPU, in ns (0 if unknown)."""
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _map(size: int, flags: int) -> int | None:
    address = _libc.mmap(None, size, PROT_READ_WRITE, flags, -1, 0)
    return None if address in (None, MAP_FAILED) else int(address)


def populate_allowed() -> bool:
    """Whether ``mmap(MAP_POPULATE)`` is allowed here (one page, tried)."""
    address = _map(4096, MAP_PRIVATE_ANONYMOUS | MAP_POPULATE)
    if address is None:
        return False
    _libc.munmap(address, 4096)
    return True


class Stall(Bot):
    name = "stall"

    def __init__(self, how: str, mib: int, trace: str | None) -> None:
        self.how = "munmap" if how == "populate" and not populate_allowed() else how
        self.size = mib << 20
        self.trace = trace
        self.busy = threading.Lock()
        self.tid = 0
        self.calling = threading.Event()
        """Set by the stall's thread just before its system call."""
        self.on_cpu_at_call = 0

    def _think(self, view: View) -> int:
        if self.how != "none" and self.busy.acquire(blocking=False):
            touched = None
            if self.how == "munmap":  # touched in the call: only the munmap is left
                touched = _map(self.size, MAP_PRIVATE_ANONYMOUS)
                if touched is not None:
                    ctypes.memset(touched, 1, self.size)
            self.calling.clear()
            threading.Thread(target=self._stall, args=(touched,), daemon=True).start()
            self._until_in_the_kernel()
        return min(view.legal)

    def _until_in_the_kernel(self) -> None:
        """Wait (2 s at most) until the stall's thread has run 3 ms since it was about to
        make its system call (its time on a CPU, ``/proc/self/task/TID/schedstat``): it is
        then well into the call (some 130 ms of CPU for 300 MiB populated, 25 for their
        ``munmap``), so that the answer always leaves it there. (``/proc/.../syscall``
        says ``running`` for a task that runs, in the kernel or not.)"""
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            if self.calling.is_set():
                ran = _on_cpu_ns(self.tid) - self.on_cpu_at_call
                if ran >= 3_000_000:
                    return
            time.sleep(0.0002)

    bid = play = choose_trump = _think

    def _stall(self, touched: int | None) -> None:
        self.tid = threading.get_native_id()
        try:
            self.on_cpu_at_call = _on_cpu_ns(self.tid)
            self.calling.set()
            if self.how == "populate":
                address = _map(self.size, MAP_PRIVATE_ANONYMOUS | MAP_POPULATE)
                errno = ctypes.get_errno() if address is None else 0
                if address is not None:
                    _libc.munmap(address, self.size)
            else:
                errno = 0 if touched is not None else ctypes.get_errno()
                if touched is not None:
                    _libc.munmap(touched, self.size)
            _common.trace(self.trace, stall=self.how, errno=errno)
        finally:
            self.busy.release()


if __name__ == "__main__":
    parser = _common.parser(__doc__ or "")
    parser.add_argument("--stall", choices=("populate", "munmap", "none"), default="populate")
    parser.add_argument("--mib", type=int, default=300)
    args, rest = parser.parse_known_args(sys.argv[1:])
    _common.serve(Stall(args.stall, args.mib, args.trace), args, rest)
