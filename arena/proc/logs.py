"""Bot log files: one new file per process in a folder of the arena's (never a file
written twice, never a planted symlink followed), and the one thread that copies every
process's stderr into its log up to a size cap (:class:`LogPump`)."""

from __future__ import annotations

import hashlib
import os
import re
import select
import threading
import time
from collections.abc import Callable
from pathlib import Path

import trio

from arena.files import open_new_file, safe_name

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

CHUNK = 65536
"""The most one stream is read at a time before the pump turns to the next ready one: a
chatty bot cannot starve the others' logs."""


class _Stream:
    """One process's stderr as the hub pumps it."""

    __slots__ = ("deadline", "done", "lock", "log", "name", "on_done", "read", "stop_asked",
                 "written")

    def __init__(self, read_fd: int, log_fd: int, name: str) -> None:
        self.read, self.log, self.name = read_fd, log_fd, name
        self.written = 0
        self.stop_asked = False
        self.deadline: float | None = None
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.on_done: list[Callable[[], None]] = []
        """Called (on the pump's thread) once the pump has let go (see
        :meth:`LogPump.finished`)."""


class _Hub:
    """The one thread that copies every bot process's stderr into its log: an ``epoll``
    set of the pipes' read ends (no limit on descriptor numbers, unlike ``select``, which
    refuses one above 1,023), and a wake-up pipe for new streams and stops. It ends by
    itself once it has no stream left; the next stream starts a new one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[int, _Stream] = {}
        self._added: list[_Stream] = []
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._epoll = select.epoll()
        self._epoll.register(self._wake_r, select.EPOLLIN)
        self.alive = True
        self.thread = threading.Thread(target=self._run, name="bot-logs", daemon=True)

    def add(self, stream: _Stream) -> bool:
        """Take ``stream`` (False: this hub is ending; use a new one)."""
        with self._lock:
            if not self.alive:
                return False
            self._added.append(stream)
        self.wake()
        return True

    def wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:  # full (it will wake anyway) or closed (it has ended)
            pass

    def _take_added(self) -> None:
        with self._lock:
            added, self._added = self._added, []
        for stream in added:
            self._streams[stream.read] = stream
            try:
                self._epoll.register(stream.read, select.EPOLLIN)
            except OSError:
                self._close(stream)

    def _run(self) -> None:
        try:
            while True:
                self._take_added()
                now = time.monotonic()
                for stream in list(self._streams.values()):
                    if stream.stop_asked and stream.deadline is None:
                        stream.deadline = now + STOP_DRAIN_S
                    if stream.deadline is not None and now >= stream.deadline:
                        self._close(stream)  # a writer outlives the process: let go
                with self._lock:
                    if not self._streams and not self._added:
                        self.alive = False  # no new stream can come to this hub now
                        return
                deadlines = [s.deadline for s in self._streams.values()
                             if s.deadline is not None]
                timeout = -1.0 if not deadlines else max(0.0, min(deadlines) - now)
                try:
                    events = self._epoll.poll(timeout)
                except InterruptedError:
                    continue
                for fd, _ in events:
                    if fd == self._wake_r:
                        try:
                            while os.read(self._wake_r, 4096):
                                pass
                        except OSError:
                            pass
                        continue
                    ready = self._streams.get(fd)
                    if ready is not None:
                        self._pump(ready)
        finally:
            for stream in list(self._streams.values()):
                self._close(stream)
            self._epoll.close()
            for fd in (self._wake_r, self._wake_w):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _pump(self, stream: _Stream) -> None:
        try:
            chunk = os.read(stream.read, CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk == b"":
            self._close(stream)  # every writer has gone
            return
        if stream.written < LOG_CAP_BYTES:
            room = LOG_CAP_BYTES - stream.written
            try:
                _write_all(stream.log, chunk[:room])
                stream.written += min(room, len(chunk))
                if stream.written >= LOG_CAP_BYTES:
                    _write_all(stream.log, b"\n[log cut off at the size limit]\n")
            except OSError:  # the log's disk is full: what follows is lost, not the pump
                stream.written = LOG_CAP_BYTES

    def _close(self, stream: _Stream) -> None:
        if self._streams.pop(stream.read, None) is not None:
            try:
                self._epoll.unregister(stream.read)
            except (OSError, ValueError):
                pass
        for fd in (stream.read, stream.log):
            try:
                os.close(fd)
            except OSError:
                pass
        with stream.lock:
            stream.done.set()
            callbacks, stream.on_done = stream.on_done, []
        for callback in callbacks:
            callback()


_hub_lock = threading.Lock()
_hub: _Hub | None = None


def _pump_stream(stream: _Stream) -> None:
    global _hub
    with _hub_lock:
        if _hub is None or not _hub.add(stream):
            _hub = _Hub()
            _hub.add(stream)
            _hub.thread.start()


class LogPump:
    """A process's stderr (the read end of a pipe, ``read_fd``) copied into the open log
    file ``log_fd``, up to :data:`LOG_CAP_BYTES`, by the one thread that pumps every bot's
    stderr (``epoll``: any number of bots, any descriptor number). It owns both
    descriptors: it lets go at end of file (every writer gone), or :data:`STOP_DRAIN_S`
    after :meth:`stop`, closing them itself. :meth:`stop` writes one byte and never
    waits, takes no lock the pump holds while it works and closes none of the pump's
    descriptors: a process killed mid-write, or a writer that outlives it, cannot hang
    the arena's stop."""

    def __init__(self, read_fd: int, log_fd: int, name: str) -> None:
        os.set_blocking(read_fd, False)
        self._stream = _Stream(read_fd, log_fd, name)
        _pump_stream(self._stream)

    def is_alive(self) -> bool:
        """Whether the pump still holds this process's stderr (its log may still grow)."""
        return not self._stream.done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the pump has let go of this stream (for a thread; not the loop)."""
        return self._stream.done.wait(timeout)

    async def finished(self) -> None:
        """Wait, in trio, until the pump has let go of this stream (everything the process
        wrote is in its log): an event the pump's thread sets through the loop's token,
        no thread waiting and no timer."""
        stream = self._stream
        if stream.done.is_set():
            return
        token = trio.lowlevel.current_trio_token()
        event = trio.Event()

        def wake() -> None:
            try:
                token.run_sync_soon(event.set)
            except trio.RunFinishedError:  # the run ended meanwhile: nobody waits
                pass

        with stream.lock:
            if stream.done.is_set():
                return
            stream.on_done.append(wake)
        try:
            await event.wait()
        finally:
            with stream.lock:
                if wake in stream.on_done:
                    stream.on_done.remove(wake)

    def stop(self) -> None:
        """Tell the pump the process has ended (once; returns at once)."""
        if self._stream.stop_asked:
            return
        self._stream.stop_asked = True
        hub = _hub
        if hub is not None:
            hub.wake()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


TAIL_LINES = 3
"""How many of a log's last lines a crash report quotes (when no line names the error)."""

TAIL_CHARS = 120
"""The longest quote of a log's last lines in a crash report (its end is kept)."""

CAUSE_CHARS = 160
"""The longest quote of the line that names the error (its start is kept)."""

_ESCAPE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-_])")
"""A terminal escape sequence (CSI, OSC or a two-character one), removed whole."""

_ERROR = re.compile(r"\w*(?:Error|Exception)\b|\bpanic:|\bfatal(?: error)?:|\berror:|"
                    r"\bERROR\b|\bFATAL\b|what\(\):|Segmentation fault|Abort(?:ed|ing)\b")
"""A line that names an error: an exception's class (Python, Ruby, Java, Node.js), a Go
panic, a C++ ``what():``, a runtime's ``error:`` or ``fatal:``."""

_FRAME = re.compile(r"(?:at |from |File \"|\.\.\. \d+ more|#\d+ )|"
                    r"\S+:\d+(?::\d+)?(?: \+0x[0-9a-f]+)?$")
"""A line of a stack trace, stripped: a frame (Node.js and Java ``at``, Ruby ``from``,
Python ``File "..."``, or a bare location such as Go's ``/src/main.go:12 +0x1d``), not
the error's own line (Ruby's starts with its location too, then says what)."""


def _clean_lines(text: str) -> list[str]:
    kept = []
    for line in _ESCAPE.sub("", text).splitlines():
        line = "".join(c for c in line.replace("\t", " ") if c.isprintable()).strip()
        if line:
            kept.append(line)
    return kept


def _is_error(line: str) -> bool:
    return bool(_ERROR.search(line)) and not _FRAME.match(line)


def cause_line(lines: list[str]) -> str | None:
    """The line of a log that names why the process died, or None: Python's exception
    line (the last named one after its last ``Traceback``, which it prints last); for a
    trace printed message first (Ruby, Node.js, Java, Go), the error line just above the
    last run of frames (Java's last ``Caused by:``, the root cause); else the last line
    that names an error (a C++ ``what():``, a runtime's ``error:``)."""
    start = max((i for i, line in enumerate(lines) if line.startswith("Traceback (")),
                default=None)
    if start is not None:
        for line in reversed(lines[start + 1:]):
            if _is_error(line):
                return line
    frames = [i for i, line in enumerate(lines) if _FRAME.match(line)]
    if frames:
        above = frames[-1]
        while above >= 0 and _FRAME.match(lines[above]):
            above -= 1
        for line in reversed(lines[max(0, above - 5):above + 1]):
            if _is_error(line):
                return line
    for line in reversed(lines):
        if _is_error(line):
            return line
    return None


def log_tail(path: Path, lines: int = TAIL_LINES, limit: int = TAIL_CHARS) -> str | None:
    """What a crash report quotes of the log at ``path``, on one line, with escape
    sequences and every other control character removed: the last non-blank ``lines``
    joined by `` | `` where they hold the line that names the error
    (:func:`cause_line`) within ``limit`` characters, or hold none; else that line first
    and the last line after it (``CAUSE … LAST``); a tail without an error line is cut at
    the front to ``limit`` characters (``…`` first): the end of a log is where a crash
    says why.
    ``""`` for an empty log, None for one that cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 8192))
            data = f.read()
    except OSError:
        return None
    kept = _clean_lines(data.decode("utf-8", "replace"))
    tail = " | ".join(kept[-lines:])
    cause = cause_line(kept)
    if cause is not None and (cause not in kept[-lines:] or len(tail) > limit):
        last = kept[-1]
        if len(cause) > CAUSE_CHARS:
            cause = cause[:CAUSE_CHARS - 1] + "…"
        if last == cause or cause.startswith(last):
            return cause
        if len(last) > limit // 2:
            last = "…" + last[-(limit // 2 - 1):]
        return f"{cause} … {last}"
    return tail if len(tail) <= limit else "…" + tail[-(limit - 1):]


def log_text(path: Path) -> str:
    """A log named for a crash report: ``log PATH: "the error's line … its last line"``
    (see :func:`log_tail`), ``log PATH (empty)``, or ``log PATH`` when it cannot be read."""
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
