"""How a bot's processes are confined, as configuration values: :class:`Limits` (memory,
processes, CPU time, file size, open files, the time to stop after a call) and
:class:`Confinement` (sandboxed or not, the limits, extra read-only paths and
environment). :mod:`arena.proc` enforces them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits for one bot process (and everything it starts). 0 means no limit."""

    memory_mb: int = 1024
    processes: int = 128
    """Processes and threads together (a thread is a task to the kernel)."""
    cpu_s: int = 3600
    """CPU seconds over the process's life: a backstop; the clock limits each decision."""
    file_mb: int = 64
    """The largest file it may write (in its private /tmp)."""
    open_files: int = 256
    stop_ms: int = 5
    """How much CPU time (ms) the bot may still use after a call before it is stopped
    (frozen), counted from when the arena finds it not yet stopped: as a rule a bot stops
    in microseconds; one whose task stays in the kernel (a huge ``mmap`` populated, a
    huge ``munmap``, reclaim at its memory limit) is killed at this bound, with a fault.
    Also killed: a bot not stopped :data:`STOP_WALL_S` after the stop was asked, CPU or
    not. 0: no bound (its game waits for the stop, the arena's other games never do)."""

    def merged(self, overrides: dict[str, int]) -> Limits:
        return replace(self, **overrides)

    def describe(self) -> str:
        def one(value: int, unit: str) -> str:
            return "none" if value == 0 else f"{value}{unit}"
        return (f"memory {one(self.memory_mb, ' MiB')}, processes {one(self.processes, '')}, "
                f"CPU {one(self.cpu_s, ' s')}, file size {one(self.file_mb, ' MiB')}, "
                f"open files {one(self.open_files, '')}, "
                f"stop within {one(self.stop_ms, ' ms')}")


LIMIT_KEYS = ("memory_mb", "processes", "cpu_s", "file_mb", "open_files", "stop_ms")

STOP_WALL_S = 1.0
"""The wall time after which a bot not yet stopped is killed whatever CPU it used (a task
asleep in the kernel, out of the freezer's reach), where :attr:`Limits.stop_ms` is set."""


VIEWS = ("runtime", "system")
"""A sandboxed bot's ``view`` of the machine's files: what its runtime needs, read into
the page cache before it starts (the default); or all of /usr and /opt (open to
page-cache timing between bots). See :mod:`arena.proc.view`."""


@dataclass(frozen=True, slots=True)
class Confinement:
    """How one bot's processes are confined."""

    sandbox: bool = True
    """Run under bubblewrap; False only for bots the tournament file trusts explicitly."""
    limits: Limits = field(default_factory=Limits)
    read_only: tuple[Path, ...] = ()
    """Extra paths the bot may read (a model file, a data folder)."""
    env: tuple[tuple[str, str], ...] = ()
    """Extra environment variables granted to the bot."""
    view: str = "runtime"
    """What the sandbox shows of the machine's files: ``runtime`` (what the bot's runtime
    needs, read into the page cache before it starts) or ``system`` (all of /usr and
    /opt; page-cache timing between bots is then open). See :mod:`arena.proc.view`."""
    within: Path | None = None
    """The folder nothing of the bot may leave (a league's bundle): its own folders, its
    program and extra paths must lie inside it, and it is never copied for the bot. None
    for an organiser's bot, whose command is taken as given. See :mod:`arena.proc.gate`."""
