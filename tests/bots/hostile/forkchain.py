"""A hostile bot that works while it is stopped, through a chain of short-lived processes.

Between its calls the arena stops every process of a bot. Today that is a sweep: SIGSTOP
to each process listed in its cgroup, again until no new one appears. A chain in which
each link forks its successor and exits at once always has a process that was not in the
last listing: it outruns the sweep. The cgroup freezer (v1 ``freezer.state``, v2
``cgroup.freeze``) stops the whole cgroup at once, new processes included.

From start-up (before gRPC starts: a process serving gRPC must not fork) a chain runs for
the process's whole life. Each link looks at the bot's main process: when that is stopped
(state ``T`` in ``/proc/PID/stat``) the link counts itself as work done while stopped;
then it forks the next link and exits. ``--chain sh`` (the default): the links are
``/bin/sh`` subshells, a fork of a small process every few tens of microseconds, which
outruns the sweep; they count in two files of the private /tmp (one byte per link).
``--chain python``: the links are forks of the Python interpreter (about a millisecond
each: the sweep catches them), counting in a shared page, with their CPU time.

``--control``: the same counting by a thread of the main process instead of the chain:
a thread is stopped with its process, so it must count nothing while stopped.

Report: ``{"attack": "forkchain", "links", "stopped_links", "stopped_cpu_ms",
"calls", ...}``, cumulative for the process (``links``: all links or thread turns;
``stopped_links``: those that ran while the main process was stopped).
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
import threading
import time

SLOTS = "QQQ"  # links, stopped links, CPU ns of stopped links
shared = mmap.mmap(-1, 4096, flags=mmap.MAP_SHARED)
MAIN = os.getpid()


def _bump(stopped: bool, cpu_ns: int) -> None:
    links, stopped_links, stopped_cpu = struct.unpack_from(SLOTS, shared)
    struct.pack_into(SLOTS, shared, 0, links + 1, stopped_links + (1 if stopped else 0),
                     stopped_cpu + (cpu_ns if stopped else 0))


def _main_stopped() -> bool:
    try:
        with open(f"/proc/{MAIN}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] == b"T"
    except (OSError, IndexError):
        return False


def _gone() -> bool:
    try:
        os.kill(MAIN, 0)
    except ProcessLookupError:
        return True
    except OSError:
        pass
    return False


def chain() -> None:
    """The body of every link: look, count, fork the next link, exit."""
    while True:
        start = time.thread_time_ns()
        if _gone():
            os._exit(0)
        stopped = _main_stopped()
        time.sleep(0.00003)
        _bump(stopped, time.thread_time_ns() - start)
        if os.fork() > 0:
            os._exit(0)


def thread_counter() -> None:
    while True:
        start = time.thread_time_ns()
        stopped = _main_stopped()  # never true: this thread stops with its process
        time.sleep(0.00003)
        _bump(stopped, time.thread_time_ns() - start)


SH_CHAIN = r"""
main=$1; links=$2; stopped=$3
link() {
    kill -0 "$main" 2>/dev/null || exit 0
    read -r stat < /proc/"$main"/stat
    set -- $stat
    printf x >> "$links"
    [ "$3" = T ] && printf x >> "$stopped"
    (link) &
    exit 0
}
link
"""
SH_FILES = ("/tmp/hostile-chain-links", "/tmp/hostile-chain-stopped")
CONTROL = "--control" in sys.argv
"""Read before the parser runs: the chain starts before gRPC is imported."""
SHELL = not CONTROL and "--chain=python" not in sys.argv and not any(
    a == "--chain" and b == "python" for a, b in zip(sys.argv, sys.argv[1:], strict=False))
if CONTROL:
    threading.Thread(target=thread_counter, name="counter", daemon=True).start()
elif SHELL:
    for name in SH_FILES:
        open(name, "wb").close()
    os.posix_spawn("/bin/sh", ["sh", "-c", SH_CHAIN, "chain", str(MAIN), *SH_FILES],
                   dict(os.environ))
elif os.fork() == 0:
    try:
        chain()
    finally:
        os._exit(0)

import _hostile  # noqa: E402  (after the fork: gRPC is imported here)

from arena.sdk import GameResult, View  # noqa: E402


class ForkChain(_hostile.Legal):
    name = "hostile-forkchain"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.lock = threading.Lock()

    def _report(self, **fields: object) -> None:
        links, stopped, cpu = struct.unpack_from(SLOTS, shared)
        if SHELL:
            sizes = []
            for name in SH_FILES:
                try:
                    sizes.append(os.stat(name).st_size)
                except OSError:
                    sizes.append(-1)
            links, stopped = sizes
        kind = "thread" if CONTROL else "sh" if SHELL else "python"
        _hostile.report("forkchain", control=CONTROL, chain=kind, links=links,
                        stopped_links=stopped, stopped_cpu_ms=round(cpu / 1e6, 2),
                        calls=self.calls, **fields)

    def _call(self) -> None:
        with self.lock:
            self.calls += 1

    def bid(self, view: View) -> int:
        self._call()
        return super().bid(view)

    def play(self, view: View) -> int:
        self._call()
        return super().play(view)

    def choose_trump(self, view: View) -> int:
        self._call()
        return super().choose_trump(view)

    def game_ended(self, result: GameResult) -> None:
        self._call()
        self._report(phase="game-ended", game=self.game_id)


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--control", action="store_true",
                   help="count with a thread of the main process, not a fork chain")
    p.add_argument("--chain", choices=("sh", "python"), default="sh")
    args, rest = _hostile.parse(p)
    bot = ForkChain()
    bot._report(phase="start")
    _hostile.serve(bot, rest)
