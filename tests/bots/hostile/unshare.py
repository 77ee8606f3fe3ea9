"""A hostile bot that makes a user namespace of its own inside the sandbox (``unshare -U
-r``): root there, with every capability over the new namespaces it then makes, and the
kernel code they reach (nested namespaces are a common step in kernel exploits).

On its first decision, in a new process (the bot itself stays as it is):
``unshare(CLONE_NEWUSER)``, then the uid map ``0 <its uid> 1``; and the ``unshare -U -r
true`` command where it exists.

``--control``: it attempts nothing.

Report: ``{"attack": "unshare", "unshare_user", "root_inside", "unshare_command", ...}``
(``unshare_user``: "ok" or the errno's name).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading

import _hostile

from arena.sdk import View

CHILD = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
uid = os.getuid()
if libc.unshare(0x10000000) != 0:
    print(errno.errorcode.get(ctypes.get_errno(), "?"), 0)
else:
    try:
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"0 {uid} 1\n")
        print("ok", int(os.getuid() == 0))
    except OSError as e:
        print("ok,uid_map:" + errno.errorcode.get(e.errno or 0, "?"), 0)
"""


def in_child() -> tuple[str, bool]:
    """(unshare's result, whether the child became uid 0), from a new interpreter (a
    process forked from one serving gRPC gets EINVAL from unshare(CLONE_NEWUSER))."""
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=20, check=False)
    result, _, root = done.stdout.strip().partition(" ")
    return result or f"failed: {done.stderr.strip()[-200:]}", root == "1"


def attack() -> dict[str, object]:
    result, root = in_child()
    command = shutil.which("unshare")
    ran = ""
    if command:
        done = subprocess.run([command, "-U", "-r", "true"], capture_output=True, text=True,
                              timeout=10, check=False)
        ran = "ok" if done.returncode == 0 else done.stderr.strip()[:200]
    return {"unshare_user": result, "root_inside": root, "unshare_command": ran}


class Unshare(_hostile.Legal):
    name = "hostile-unshare"

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
                _hostile.report("unshare", control=self.control, **found)

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
    _hostile.serve(Unshare(args.control), rest)
