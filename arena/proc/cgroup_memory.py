"""The memory side of a bot's cgroup, and its limits' events: the reclaim between games
(what its processes brought into the kernel's caches), what a process still holds after
it (deal memory: then it must not play again), what an idle process holds (the pools'
memory bound counts it), and which limit a bot ran into. :class:`~arena.proc.cgroup.Cgroup`
has these by inheritance; its folders and the mechanism are its own."""

from __future__ import annotations

import os
from pathlib import Path

from arena.model.limits import Limits
from arena.proc.mechanism import Mechanism
from arena.proc.tasks import has_swap, read_small


class CgroupMemory:
    """What :class:`~arena.proc.cgroup.Cgroup` knows of a bot's memory and limit hits."""

    mechanism: Mechanism
    limits: Limits
    dirs: dict[str, Path]

    def pids(self) -> list[int]:
        """The bot's processes (:meth:`arena.proc.cgroup.Cgroup.pids`)."""
        raise NotImplementedError

    @property
    def v2(self) -> bool:
        return self.mechanism.kind == "cgroup2"

    def _dir(self, controller: str) -> Path:
        return self.dirs["" if self.v2 else controller]

    def reclaim(self) -> None:
        """Drop the page cache and the directory entries charged to the bot's cgroup (what
        its processes brought in: the pages and lookups a later process could time, the
        deal's memory of issue 17): v1 ``memory.force_empty``, v2 ``memory.reclaim``.
        Called while the bot is stopped, after each game, and at its end before the
        cgroup goes (a removed v1 cgroup hands its pages to its parent). Without swap,
        its own memory stays; with swap this could swap it out, so then it is done only
        once its processes have ended. Blocking (some ms): call it off the trio thread.
        ``ARENA_NO_RECLAIM`` turns it off (for the controls of the tests)."""
        if os.environ.get("ARENA_NO_RECLAIM"):
            return
        if self.pids() and has_swap():
            return
        try:
            if self.v2:
                folder = self.dirs[""]
                current = int(read_small(str(folder / "memory.current")) or 0)
                if current:
                    (folder / "memory.reclaim").write_text(str(current))
            elif "memory" in self.dirs:
                (self.dirs["memory"] / "memory.force_empty").write_text("0")
        except (OSError, ValueError):  # EAGAIN: not all of it could go (its own memory)
            pass

    def limit_hit(self) -> str | None:
        """Which limit the bot ran into, as a fault detail, or None."""
        limits = self.limits
        if limits.memory_mb and self._oom_kills() > 0:
            return f"memory limit {limits.memory_mb} MiB reached"
        if limits.processes and self._pids_max_hits() > 0:
            return f"process limit {limits.processes} reached (processes and threads)"
        return None

    def oom_killed(self) -> bool:
        """Whether the kernel killed one of the bot's processes at its memory limit."""
        return bool(self.limits.memory_mb) and self._oom_kills() > 0

    def _oom_kills(self) -> int:
        try:
            if self.v2:
                return event_count((self.dirs[""] / "memory.events").read_text(), "oom_kill")
            return event_count((self.dirs["memory"] / "memory.oom_control").read_text(), "oom_kill")
        except (OSError, ValueError):
            return 0

    def _pids_max_hits(self) -> int:
        try:
            return event_count((self._dir("pids") / "pids.events").read_text(), "max")
        except (OSError, ValueError):
            return 0

    def memory_bytes(self) -> int | None:
        """The memory charged to the bot's processes now (v2 ``memory.current``, v1
        ``memory.usage_in_bytes``), or None where no memory cgroup counts it. Read while
        the bot is stopped, after the reclaim, it is what an idle process keeps: its own
        pages and its /tmp, no page cache. Blocking: call it off the trio thread."""
        folder = self.dirs.get("" if self.v2 else "memory")
        if folder is None:
            return None
        try:
            return int(read_small(str(folder / ("memory.current" if self.v2
                                                else "memory.usage_in_bytes"))) or 0)
        except (OSError, ValueError):
            return None

    def held_after_reclaim(self) -> str | None:
        """What the bot's processes still hold after :meth:`reclaim`, when they hold
        what the reclaim should have dropped (one line), else None: locked pages
        (``unevictable``), and page cache of files (``cache`` or ``file``, less
        ``shmem``: its /tmp stays, it is its own memory). Such pages are deal memory:
        a later process of the bot can read which of them are cached (page-cache timing,
        ``/proc/PID/pagemap`` after a fault), so the process holding them is ended
        rather than kept for another game. An honest bot holds none after the reclaim
        (measured: 0 KiB of both for the Python and Node.js samples, in both views);
        a page cannot stay unless something keeps it: a lock, a pipe holding it
        (``vmsplice``), a mapping the reclaim could not take. Where the reclaim did not
        run (``ARENA_NO_RECLAIM``, or swap with live processes) only locked pages count.
        ``ARENA_NO_HELD_CHECK`` turns the check off (for the controls of the tests)."""
        if os.environ.get("ARENA_NO_HELD_CHECK"):
            return None
        folder = self.dirs.get("" if self.v2 else "memory")
        if folder is None:
            return None
        counts: dict[str, int] = {}
        for line in read_small(str(folder / "memory.stat")).splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                counts[key] = int(value)
        locked = counts.get("unevictable", 0)
        reclaimed = not os.environ.get("ARENA_NO_RECLAIM") and not (self.pids() and has_swap())
        cached = max(0, counts.get("file" if self.v2 else "cache", 0) - counts.get("shmem", 0))
        if not reclaimed:
            cached = 0
        if not locked and not cached:
            return None
        mapped = counts.get("file_mapped" if self.v2 else "mapped_file", 0)
        return (f"{(locked + cached) >> 10} KiB held after the reclaim after its game "
                f"(locked {locked >> 10} KiB, page cache {cached >> 10} KiB, mapped "
                f"{mapped >> 10} KiB)")


def event_count(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0
