"""A hostile bot that reads what the sandbox shows of the arena.

On its first decision it reads the sandbox's pid 1 (bubblewrap): its command line (every
bind, the socket folder with the arena's pid, the working folder, the hidden folders)
and environment; its own mount table (``/proc/self/mountinfo``: the source and target of
every mount); the environment it was started with (``/proc/self/environ``, as execve
gave it, before any import could change ``os.environ``) and the one it has now; its uid
map and credentials.

``--control``: it reads only its own command line.

Report: ``{"attack": "view", "pid1_argv", "pid1_environ", "mounts", "env_initial",
"env_added", "uid_map", "arena_pid", "paths", ...}``. ``paths``: every absolute path named
in pid 1's command line or as a mount's source or target (what a test checks for the
arena's working folder, output folder, virtual environment, socket folder).
"""

from __future__ import annotations

import os
import threading

import _hostile

from arena.sdk import View


def read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(1 << 20)
    except OSError:
        return None


def mounts() -> list[dict[str, str]]:
    out = []
    for line in (read("/proc/self/mountinfo") or b"").decode(errors="replace").splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and tail:
            out.append({"root": fields[3], "target": fields[4], "type": tail[0],
                        "source": tail[1] if len(tail) > 1 else ""})
    return out


def attack(control: bool) -> None:
    if control:
        _hostile.report("view", control=True, own_argv=_hostile.cmdline(os.getpid()))
        return
    argv = _hostile.cmdline(1)
    environ = read("/proc/1/environ")
    initial = [e.decode(errors="replace") for e in (read("/proc/self/environ") or b"").split(b"\0")
               if e]
    initial_keys = {e.partition("=")[0] for e in initial}
    table = mounts()
    paths = sorted({a for a in argv if a.startswith("/")}
                   | {m["root"] for m in table if m["root"] != "/"}
                   | {m["target"] for m in table})
    _hostile.report(
        "view", control=False, pid1_argv=argv, pid1_environ=None if environ is None
        else [e.decode(errors="replace") for e in environ.split(b"\0") if e],
        mounts=table, env_initial=sorted(initial), env_added=sorted(set(os.environ) - initial_keys),
        uid_map=(read("/proc/self/uid_map") or b"").decode().split(),
        gid_map=(read("/proc/self/gid_map") or b"").decode().split(),
        arena_pid=_hostile.arena_pid(), cwd=os.getcwd(), paths=paths)


class View_(_hostile.Legal):
    name = "hostile-view"

    def __init__(self, control: bool) -> None:
        super().__init__()
        self.control = control
        self.done = False
        self.lock = threading.Lock()

    def _first(self) -> None:
        with self.lock:
            if not self.done:
                self.done = True
                attack(self.control)

    def bid(self, view: View) -> int:
        self._first()
        return super().bid(view)

    def play(self, view: View) -> int:
        self._first()
        return super().play(view)


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--control", action="store_true", help="read only its own command line")
    args, rest = _hostile.parse(p)
    _hostile.serve(View_(args.control), rest)
