"""A hostile bot that reads the memory of the sandbox's pid 1 (bubblewrap, started with
the arena's arguments), by ``ptrace`` and by ``process_vm_readv``.

On its first decision: ``PTRACE_ATTACH`` to pid 1, wait for it to stop, read a word of
its memory (``PTRACE_PEEKDATA`` at the start of its first readable mapping), detach;
then ``process_vm_readv`` of the same bytes; then ``/proc/1/mem``.

``--control``: it attempts nothing.

Report: ``{"attack": "ptrace", "attached", "peeked", "vm_read", "mem_read", "pid1_is_self",
"errors"}``. A filter refuses ptrace and process_vm_readv, but not a read of
``/proc/1/mem`` (an open and a read, allowed to the same uid): only a sandbox whose pid 1
is the bot itself (``bwrap --as-pid-1``, ``pid1_is_self``) has nothing there to read
(not done: see docs/isolation.md).
"""

from __future__ import annotations

import ctypes
import os
import threading

import _hostile
import _kernel

from arena.sdk import View

PTRACE_PEEKDATA, PTRACE_ATTACH, PTRACE_DETACH = 2, 16, 17
libc = _kernel.libc
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def first_readable(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 1 and parts[1].startswith("r"):
                    return int(parts[0].split("-")[0], 16)
    except OSError:
        pass
    return 0x400000


def attack() -> dict[str, object]:
    errors: dict[str, str] = {}
    out: dict[str, object] = {"attached": False, "peeked": False, "vm_read": False,
                              "mem_read": False, "pid1_is_self": os.getpid() == 1}
    address = first_readable(1)
    ctypes.set_errno(0)
    if libc.ptrace(PTRACE_ATTACH, 1, None, None) == 0:
        out["attached"] = True
        try:
            os.waitpid(1, 0x40000000)  # __WALL
        except OSError as e:
            errors["waitpid"] = _kernel.errname(e.errno or 0)
        ctypes.set_errno(0)
        libc.ptrace(PTRACE_PEEKDATA, 1, ctypes.c_void_p(address), None)
        out["peeked"] = ctypes.get_errno() == 0
        if not out["peeked"]:
            errors["peek"] = _kernel.errname(ctypes.get_errno())
        libc.ptrace(PTRACE_DETACH, 1, None, None)
    else:
        errors["attach"] = _kernel.errname(ctypes.get_errno())
    buf = ctypes.create_string_buffer(8)
    local, remote = IoVec(ctypes.addressof(buf), 8), IoVec(address, 8)
    ctypes.set_errno(0)
    libc.process_vm_readv.restype = ctypes.c_ssize_t
    if libc.process_vm_readv(1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == 8:
        out["vm_read"] = True
    else:
        errors["process_vm_readv"] = _kernel.errname(ctypes.get_errno())
    try:
        with open("/proc/1/mem", "rb") as mem:
            mem.seek(address)
            out["mem_read"] = len(mem.read(8)) == 8
    except (OSError, ValueError, OverflowError) as e:
        errors["mem"] = _kernel.errname(getattr(e, "errno", 0) or 0)
    out["errors"] = errors
    return out


class Ptrace(_hostile.Legal):
    name = "hostile-ptrace"

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
                _hostile.report("ptrace", control=self.control, **found)

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
    _hostile.serve(Ptrace(args.control), rest)
