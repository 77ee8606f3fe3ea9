"""A hostile bot that grabs memory (or processes) on its first decision, then plays legally.

Memory (default): on its ``--at-call``-th decision it allocates 64 MiB blocks, touching
every page, until it is killed or holds ``--max-mb`` (default 4096, and never more than
half the memory the machine has available, so that it cannot hurt a machine without
limits; in the sandbox, 64 MiB past the limit its /proc/meminfo states), reporting every
``--report-mb``; then it keeps the memory and answers.
Report: ``{"attack": "hog", "allocated_mb": N, "cap_mb": C, "done": bool}``.

``--fork-bomb``: instead, on that decision, it forks children (each sleeps 30 s, then
exits) up to ``--max-forks`` (at most 2000) or until a fork fails, then answers.
The children die with it: they are in its process group, each asks the kernel
for SIGKILL when the forking thread ends, and the bot kills them when it stops.
Report: ``{"attack": "forkbomb", "forks": N, "errors": E, "error": "...", "done": bool}``.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import sys
import threading
import time

import _hostile

from arena.sdk import View

BLOCK = 64 << 20
PAGE = 4096
MAX_FORKS = 2000
PR_SET_PDEATHSIG = 1


def _meminfo_mb() -> dict[str, int]:
    found: dict[str, int] = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("MemTotal", "MemFree", "MemAvailable"):
                    found[key] = int(rest.split()[0]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return found


def cap_mb(max_mb: int) -> int:
    """``max_mb``, but never more than half the memory the machine has available; in the
    sandbox /proc/meminfo states the bot's memory limit instead, all of it free
    (arena/proc/procfs.py): then 64 MiB past that limit, which it must not reach."""
    info = _meminfo_mb()
    available = info.get("MemAvailable", 2048)
    if info and info.get("MemTotal") == info.get("MemFree") == available:
        return max(64, min(max_mb, available + 64))
    return max(64, min(max_mb, available // 2))


class Hog(_hostile.Legal):
    name = "hostile-hog"

    def __init__(self, max_mb: int, report_mb: int, at_call: int, fork_bomb: bool,
                 max_forks: int) -> None:
        super().__init__()
        self.cap_mb = cap_mb(max_mb)
        self.report_mb = report_mb
        self.at_call = at_call
        self.fork_bomb = fork_bomb
        self.max_forks = min(max_forks, MAX_FORKS)
        self.calls = 0
        self.lock = threading.Lock()
        self.held: list[bytearray] = []
        self.children: list[int] = []
        self.stop_forking = threading.Event()
        self.forks_done = threading.Event()

    def _decision(self) -> None:
        with self.lock:
            self.calls += 1
            if self.calls != self.at_call:
                return
            if self.fork_bomb:
                # fork on a thread of its own (the children's PDEATHSIG is tied to the
                # thread that forked them), and answer when it is done
                threading.Thread(target=self._forks, name="forks", daemon=True).start()
                self.forks_done.wait()
            else:
                self._grab()

    def bid(self, view: View) -> int:
        self._decision()
        return super().bid(view)

    def play(self, view: View) -> int:
        self._decision()
        return super().play(view)

    # -- memory ---------------------------------------------------------------------------

    def _grab(self) -> None:
        _hostile.report("hog", allocated_mb=0, cap_mb=self.cap_mb, done=False)
        allocated = 0
        next_report = self.report_mb
        while allocated + (BLOCK >> 20) <= self.cap_mb:
            block = bytearray(BLOCK)
            block[::PAGE] = b"\x01" * (BLOCK // PAGE)  # touch every page
            self.held.append(block)
            allocated += BLOCK >> 20
            if allocated >= next_report:
                _hostile.report("hog", allocated_mb=allocated, cap_mb=self.cap_mb, done=False)
                next_report += self.report_mb
        _hostile.report("hog", allocated_mb=allocated, cap_mb=self.cap_mb, done=True)

    # -- processes ------------------------------------------------------------------------

    def _forks(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        forks = errors = 0
        error = ""
        started = time.monotonic()
        while forks < self.max_forks and not self.stop_forking.is_set():
            try:
                pid = os.fork()
            except OSError as e:
                errors += 1
                error = f"{type(e).__name__}: {e}"
                break
            if pid == 0:
                try:
                    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                    time.sleep(30)
                finally:
                    os._exit(0)
            self.children.append(pid)
            forks += 1
            if forks % 100 == 0:
                _hostile.report("forkbomb", forks=forks, errors=errors, done=False)
        _hostile.report("forkbomb", forks=forks, errors=errors, error=error, done=True,
                        seconds=round(time.monotonic() - started, 2))
        self.forks_done.set()
        # the children's PDEATHSIG fires when this thread ends: keep it until the bot stops
        self.stop_forking.wait()

    def end_children(self) -> None:
        self.stop_forking.set()
        for pid in self.children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--max-mb", type=int, default=4096)
    p.add_argument("--report-mb", type=int, default=256)
    p.add_argument("--at-call", type=int, default=1)
    p.add_argument("--fork-bomb", action="store_true")
    p.add_argument("--max-forks", type=int, default=MAX_FORKS)
    args, rest = _hostile.parse(p)
    if args.fork_bomb and os.environ.get("GRPC_ENABLE_FORK_SUPPORT") != "0":
        # grpcio's fork handlers retry for ever when the process limit is reached (the
        # fork never returns): without them a failed fork is an OSError, as it should be
        os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "0"
        os.execv(sys.executable, [sys.executable, *sys.argv])
    # children are reaped by the kernel: no zombies pile up
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    hog = Hog(args.max_mb, args.report_mb, args.at_call, args.fork_bomb, args.max_forks)
    atexit.register(hog.end_children)
    try:
        _hostile.serve(hog, rest)
    finally:
        hog.end_children()
