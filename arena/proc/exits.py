"""A child process's exit, awaited as an event (:class:`ExitWatch`): a pidfd
(``pidfd_open(2)``, Linux 5.3 and later) becomes readable when the process ends, and the
trio loop waits for that as for any descriptor (``trio.lowlevel.wait_readable``), as
trio's own ``Process.wait`` does. No timer wakes the loop while the process runs.

Where ``pidfd_open`` fails (an older kernel, a seccomp filter that refuses it) the watch
falls back to asking the kernel every :data:`POLL_S`: the one place a process's exit is
polled, and :attr:`ExitWatch.evented` says which way a watch works."""

from __future__ import annotations

import os
import subprocess

import trio

POLL_S = 0.005
"""How often a watch without a pidfd asks whether the process has ended."""


class ExitWatch:
    """The exit of the child process ``proc``, which :meth:`wait` awaits and reaps.

    Any number of tasks may wait at once (each in turn holds the pidfd: trio lets one task
    at a time wait for a descriptor); a wait cancelled by its deadline hands the pidfd to
    the next. :meth:`close` lets the pidfd go (after the process was reaped, or at the
    arena's end); a wait after that falls back to polling. Create it right after the
    process starts, before anything could reap it."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc
        self._fd: int | None
        try:
            self._fd = os.pidfd_open(proc.pid)
        except (OSError, AttributeError):  # no pidfds here (or gone already): polling
            self._fd = None
        self._lock = trio.Lock()
        self.wakeups = 0
        """How many times a wait woke up to look at the process (one per exit with a
        pidfd; one per :data:`POLL_S` while it runs without one)."""

    @property
    def evented(self) -> bool:
        """Whether the exit is awaited on a pidfd (else polled; see the module)."""
        return self._fd is not None

    @property
    def fd(self) -> int | None:
        """The pidfd while the watch holds one."""
        return self._fd

    async def wait(self) -> int:
        """Wait until the process has ended, reap it, and return its exit code
        (``-N`` for signal N, as :class:`subprocess.Popen` says it). Cancellable: put
        it under ``trio.move_on_after`` for a deadline."""
        async with self._lock:
            while True:
                code = self._proc.poll()
                if code is not None:
                    return code
                fd = self._fd
                if fd is None:
                    await trio.sleep(POLL_S)
                else:
                    try:
                        await trio.lowlevel.wait_readable(fd)
                    except trio.ClosedResourceError:  # closed under us: poll from now
                        pass
                    else:
                        if self._proc.poll() is None:
                            # readable, yet not reaped: another thread is in the
                            # Popen's waitpid this moment (stop_now); look again soon
                            await trio.sleep(POLL_S)
                self.wakeups += 1

    def close(self) -> None:
        """Let the pidfd go (a task waiting on it then polls); safe to call twice."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            trio.lowlevel.notify_closing(fd)
        except RuntimeError:  # outside trio (the last clean-up): nobody waits on it
            pass
        os.close(fd)
