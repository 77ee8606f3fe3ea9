"""One writer per store: an OS lock on a file in the output folder, held for a whole run.

``arena tournament`` and ``arena match`` take :class:`RunLock` on ``DIR/tournament.lock``
before they touch the folder (before ``--fresh`` removes anything) and hold it until they
end; a second run on the same folder is refused at once, naming the holder's PID. The
lock is ``flock(2)``'s: the kernel drops it when the holder's last descriptor closes, so a
kill -9 frees it and no stale file can block a later run (the file stays; its content is
only the last holder's PID, for the message). Readers (``leaderboard``, ``export``,
``verify``, ``publish``) do not take it: SQLite's WAL lets them read while a run writes.

The file is never removed: a run that removed it while another process waited on it
would let a third take a lock on a new file, and two would hold "the" lock at once.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from arena.proc.tasks import pid_alive

LOCK_NAME = "tournament.lock"
"""The lock file of an output folder (left in place: ``--fresh`` keeps it)."""


class LockError(Exception):
    """The lock cannot be taken; the message is one line naming the folder."""


class Held(LockError):
    """Another process holds the lock (its PID, when it could be read)."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


class RunLock:
    """The run lock of an output folder, held until :meth:`release` (or ``with``)."""

    def __init__(self, folder: Path, fd: int, *, shared: bool = False) -> None:
        self.folder = folder
        self.path = folder / LOCK_NAME
        self.shared = shared
        self._fd: int | None = fd

    @classmethod
    def take(cls, folder: Path, what: str = "tournament") -> RunLock:
        """Take the exclusive lock of ``folder`` at once, or raise :class:`Held` ("another
        arena (PID 1234) is running this tournament"); :class:`LockError` when the lock
        file cannot be made (a read-only folder, say). ``what`` names the run."""
        path = folder / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as e:
            if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise LockError(f"{folder}: the output folder is read-only ({e.strerror}): "
                                f"a {what} cannot store its games there") from None
            raise LockError(f"{path}: cannot make the lock file: {e.strerror}") from None
        try:
            _lock_at_once(fd)
        except OSError as e:
            pid = _holder_pid(fd) if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise LockError(f"{path}: cannot lock: {e.strerror}") from None
            raise Held(f"{folder}: another arena ({_pid_text(pid)}) is running this {what}; "
                       f"wait for it to end, or stop it", pid) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the PID is only for another run's message
        return cls(folder, fd)

    @classmethod
    def share(cls, folder: Path) -> RunLock | None:
        """A shared hold on the lock, for a reader that must know no run writes while it
        reads (a read-only folder read without SQLite's shared memory); None when the
        folder has no lock file (no run of this arena has used it). Raises :class:`Held`
        while a run holds the lock."""
        path = folder / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise LockError(f"{path}: cannot open the lock file: {e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            pid = _holder_pid(fd)
            os.close(fd)
            raise Held(f"{folder}: another arena ({_pid_text(pid)}) is writing this store",
                       pid) from None
        return cls(folder, fd, shared=True)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.release()


def run_holds(folder: Path) -> bool:
    """Whether a run of this arena holds ``folder``'s lock now: a tournament, match or
    league writing its store on this machine (a copy of the folder, or one mounted from
    another machine, reads False whatever runs there). A reader's probe: a shared lock
    tried and dropped at once, which a run starting that moment waits out
    (:func:`_lock_at_once`)."""
    try:
        fd = os.open(folder / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False  # no run of this arena has used the folder (or it cannot be read)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        return e.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)  # (drops the shared lock, if it was taken)
    return False


PROBE_WAIT_S = 0.2
"""How long a run tries again for the lock before it is refused as held: a reader's
probe (:func:`run_holds`) holds a shared lock for some microseconds."""


def _lock_at_once(fd: int) -> None:
    """``flock(fd, LOCK_EX | LOCK_NB)``, tried again for up to :data:`PROBE_WAIT_S` while
    it would block; the last error raised."""
    deadline = time.monotonic() + PROBE_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or time.monotonic() > deadline:
                raise
        time.sleep(0.01)


def _holder_pid(fd: int) -> int | None:
    """The PID the holder wrote in the lock file, if it is a live process. The holder
    writes it just after taking the lock: read again for a moment while it is not there
    (or is a previous holder's, dead)."""
    deadline = time.monotonic() + 0.5
    while True:
        try:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        except OSError:
            return None
        pid = int(text) if text.isdigit() else None
        if pid is not None and pid_alive(pid):
            return pid
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def _pid_text(pid: int | None) -> str:
    return f"PID {pid}" if pid is not None else "PID unknown"
