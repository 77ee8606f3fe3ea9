"""Bot log files: one new file per process in a folder of the arena's (never a file
written twice, never a planted symlink followed), and the thread that copies a
process's stderr into it up to a size cap (:class:`LogPump`)."""

from __future__ import annotations

import hashlib
import os
import re
import select
import threading
import time
from pathlib import Path

from arena.model.files import open_new_file, safe_name

LOG_CAP_BYTES = 1024 * 1024
"""A bot's stderr log is cut off at this size."""


def open_new_log(path: Path) -> tuple[int, Path]:
    """Create a bot's log at ``path``, or at the next free number (``NAME.N.log``) when
    another process took that name meanwhile: the processes of several Ray workers write
    to one log folder. :class:`OSError` for anything else."""
    for _ in range(1000):
        try:
            return open_new_file(path), path
        except FileExistsError:
            if not path.name.endswith(".log"):
                raise
            stem, _, number = path.name[:-len(".log")].rpartition(".")
            if not stem or not number.isdigit():
                stem, number = path.name[:-len(".log")], "1"
            path = path.with_name(f"{stem}.{int(number) + 1}.log")
    return open_new_file(path), path


STOP_DRAIN_S = 0.2
"""After the process has ended, how long the log pump still copies what its stderr holds
before it lets go (a process the arena could not end may still hold the pipe)."""


class LogPump:
    """The thread that copies a process's stderr (the read end of a pipe, ``read_fd``)
    into the open log file ``log_fd``, up to :data:`LOG_CAP_BYTES`. It owns both, and a
    wake-up pipe: it ends at end of file (every writer gone), or :data:`STOP_DRAIN_S`
    after :meth:`stop`, closing all its descriptors itself. :meth:`stop` writes one byte
    and never waits, takes no lock and closes none of the pump's descriptors: a process
    killed mid-write, or a writer that outlives it, cannot hang the arena's stop."""

    def __init__(self, read_fd: int, log_fd: int, name: str) -> None:
        os.set_blocking(read_fd, False)
        self._read, self._log = read_fd, log_fd
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._stopped = False
        self.thread = threading.Thread(target=self._pump, name=f"bot-log-{name}", daemon=True)
        self.thread.start()

    def is_alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> None:
        """Tell the pump the process has ended (once; returns at once)."""
        if self._stopped:
            return
        self._stopped = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:  # the pump has already ended
            pass
        os.close(self._wake_w)

    def _pump(self) -> None:
        written = 0
        deadline: float | None = None  # set by stop(): let go then
        try:
            while True:
                watched = [self._read] if deadline is not None else [self._read, self._wake_r]
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                ready, _, _ = select.select(watched, [], [], timeout)
                if self._wake_r in ready:
                    deadline = time.monotonic() + STOP_DRAIN_S
                if self._read in ready:
                    try:
                        chunk = os.read(self._read, 65536)
                    except BlockingIOError:
                        chunk = None
                    if chunk == b"":
                        return  # every writer has gone
                    if chunk and written < LOG_CAP_BYTES:
                        room = LOG_CAP_BYTES - written
                        _write_all(self._log, chunk[:room])
                        written += min(room, len(chunk))
                        if written >= LOG_CAP_BYTES:
                            _write_all(self._log, b"\n[log cut off at the size limit]\n")
                if deadline is not None and time.monotonic() >= deadline:
                    return  # a writer outlives the process: what it writes now is lost
        except OSError:
            return
        finally:
            for fd in (self._read, self._wake_r, self._log):
                try:
                    os.close(fd)
                except OSError:
                    pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


TAIL_LINES = 3
"""How many of a log's last lines a crash report quotes."""

TAIL_CHARS = 120
"""The longest quote of a log's last lines in a crash report (its end is kept)."""

_ESCAPE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-_])")
"""A terminal escape sequence (CSI, OSC or a two-character one), removed whole."""


def log_tail(path: Path, lines: int = TAIL_LINES, limit: int = TAIL_CHARS) -> str | None:
    """The last non-blank ``lines`` of the log at ``path`` on one line, joined by `` | ``,
    with escape sequences and every other control character removed, and cut at the
    front to ``limit`` characters (``…`` first): the end of a log is where a crash says
    why. ``""`` for an empty log, None for one that cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 8192))
            data = f.read()
    except OSError:
        return None
    text = _ESCAPE.sub("", data.decode("utf-8", "replace"))
    kept = []
    for line in text.splitlines():
        line = "".join(c for c in line.replace("\t", " ") if c.isprintable()).strip()
        if line:
            kept.append(line)
    tail = " | ".join(kept[-lines:])
    return tail if len(tail) <= limit else "…" + tail[-(limit - 1):]


def log_text(path: Path) -> str:
    """A log named for a crash report: ``log PATH: "its last lines"`` (see
    :func:`log_tail`), ``log PATH (empty)``, or ``log PATH`` when it cannot be read."""
    tail = log_tail(path)
    if tail is None:
        return f"log {path}"
    if not tail:
        return f"log {path} (empty)"
    return f'log {path}: "{tail}"'


def log_stem(name: str) -> str:
    """The stem of a bot's log files: its name, or, when that is not a safe file name, the
    safe name with a short digest, so two bots never share one."""
    stem = safe_name(name)
    if stem != name:
        stem += "-" + hashlib.sha256(name.encode()).hexdigest()[:6]
    return stem


class LogFolder:
    """A folder of bot logs and the numbering of the files in it: ``NAME.log``, then
    ``NAME.2.log``, ``NAME.3.log``, ... per process (see :func:`log_stem`).

    The next number is past the last file of that name in the folder (found by a galloping
    search, so its cost does not grow with the logs, also for a folder that another
    process or an earlier run wrote in), and the file is then created exclusively
    (:func:`open_new_log`): no file is ever written twice. Share one object between the
    connections that log into one folder, so that it remembers where it was."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._numbers: dict[str, int] = {}

    def _file(self, stem: str, number: int) -> Path:
        return self.path / (f"{stem}.log" if number == 1 else f"{stem}.{number}.log")

    def next_path(self, name: str) -> Path:
        """Where the next process of the bot ``name`` logs."""
        stem = log_stem(name)
        low = self._numbers.get(stem, 0)  # taken (0: none known)
        step = 1
        while os.path.lexists(self._file(stem, low + step)):
            low += step
            step *= 2
        high = low + step  # free
        while high - low > 1:
            middle = (low + high) // 2
            if os.path.lexists(self._file(stem, middle)):
                low = middle
            else:
                high = middle
        self._numbers[stem] = high
        return self._file(stem, high)
