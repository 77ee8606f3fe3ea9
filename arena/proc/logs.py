"""Bot log files: one new file per process in a folder of the arena's (never a file
written twice, never a planted symlink followed), and the thread that copies a
process's stderr into it up to a size cap."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
from pathlib import Path
from typing import cast

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


def drain_to_log(proc: subprocess.Popen[bytes], log_fd: int) -> None:
    """Copy the process's stderr to the open file ``log_fd`` (closed at the end) on a
    daemon thread, up to the cap."""
    import threading

    stream = cast(io.BufferedReader, proc.stderr)

    def pump() -> None:
        written = 0
        with open(log_fd, "ab", buffering=0) as log:
            while True:
                try:
                    chunk = stream.read1(65536)
                except (OSError, ValueError):
                    return
                if not chunk:
                    return
                if written < LOG_CAP_BYTES:
                    room = LOG_CAP_BYTES - written
                    log.write(chunk[:room])
                    written += min(room, len(chunk))
                    if written >= LOG_CAP_BYTES:
                        log.write(b"\n[log cut off at the size limit]\n")

    threading.Thread(target=pump, name=f"bot-log-{proc.pid}", daemon=True).start()


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
