"""Processes and their threads as the kernel shows them in ``/proc``: whether a pid is
alive, what each thread is doing (stopped, running, asleep), the scheduling priority of
every thread of a bot and of its autogroups, and the cores this arena may use."""

from __future__ import annotations

import os
from collections.abc import Sequence


def read_small(path: str) -> str:
    """A small kernel file's text ("" when it cannot be read): os-level, as it is read
    several times per decision."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return ""
    try:
        return os.read(fd, 65536).decode()
    except OSError:
        return ""
    finally:
        os.close(fd)


def sandbox_pid(pid: int) -> int:
    """The process's pid inside its sandbox's PID namespace: 1 for bubblewrap's first
    process there, 2 or more for what it starts; 0 for a process in the arena's own
    namespace (the outer bubblewrap), or one that is gone. (The bot is not pid 1,
    ``bwrap --as-pid-1``: see docs/isolation.md.)"""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    ids = line.split()[1:]
                    return int(ids[-1]) if len(ids) > 1 else 0
    except (OSError, ValueError):
        pass
    return 0


def thread_states(pid: int) -> list[str]:
    """The state letter of each thread of the process (``S``, ``R``, ``D``, ``T``...; [] when
    it is gone)."""
    states = []
    for tid in tids(pid):
        state = read_small(f"/proc/{pid}/task/{tid}/stat").rpartition(")")[2].split()[:1]
        states += state
    return states


def threads_stopped(pid: int) -> bool:
    """Whether every thread of the process is stopped (``T``/``t``), or gone."""
    return all(state in ("T", "t", "Z", "X") for state in thread_states(pid))


def on_the_way(pids: list[int]) -> bool:
    """Whether some thread of the processes ``pids`` is runnable or in the kernel (``R``
    or ``D``): a process that is not (every thread asleep, stopped or gone) is making no
    progress of its own."""
    return any(state in ("R", "D") for pid in pids for state in thread_states(pid))


def describe_processes(pids: list[int]) -> str:
    """What the processes ``pids`` are doing, their threads' states counted (``S``
    sleeping, ``R`` running, ``D`` in the kernel, ``T`` stopped...), e.g. ``3 processes,
    threads S x9 R x1``."""
    counts: dict[str, int] = {}
    for pid in pids:
        for state in thread_states(pid):
            counts[state] = counts.get(state, 0) + 1
    return (f"{len(pids)} process{'es' if len(pids) != 1 else ''}, threads "
            + (" ".join(f"{s} x{n}" for s, n in sorted(counts.items())) or "none"))


def tids(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def set_autogroup(pid: int, nice: int) -> None:
    try:
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:  # no autogroups here, or the process is gone
        pass


def set_priority(pids: Sequence[int], policy: int, group_nice: int,
                 pids_done: dict[int, int] | None = None,
                 tids_done: set[int] | None = None, only_inner: bool = False) -> None:
    """Set every thread of the processes ``pids`` to the scheduling ``policy`` and their
    autogroups to ``group_nice``; with ``pids_done`` and ``tids_done``, only the
    processes and threads not seen yet (and they are added). ``only_inner``: only the
    processes inside a sandbox's PID namespace but its first (see :func:`sandbox_pid`)."""
    for pid in pids:
        if only_inner and sandbox_pid(pid) < 2:
            continue
        if pids_done is None:
            set_autogroup(pid, group_nice)
        else:
            try:
                session = os.getsid(pid)
            except OSError:  # gone
                continue
            if pids_done.get(pid) != session:
                set_autogroup(pid, group_nice)
                pids_done[pid] = session
        for tid in tids(pid):
            if tids_done is not None and tid in tids_done:
                continue
            try:
                os.sched_setscheduler(tid, policy, os.sched_param(0))
            except OSError:  # the thread ended meanwhile
                continue
            if tids_done is not None:
                tids_done.add(tid)


def signal_quietly(pid: int, signo: int) -> None:
    try:
        os.kill(pid, signo)
    except (ProcessLookupError, PermissionError):
        pass


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def has_swap() -> bool:
    """Whether this machine has swap in use (``/proc/swaps`` lists an area)."""
    return len(read_small("/proc/swaps").strip().splitlines()) > 1
