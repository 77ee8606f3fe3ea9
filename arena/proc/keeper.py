"""What the arena keeps for all the bots it runs, owned by one object whose life is a
run's (:class:`Keeper`): the v1 freezer's anchor, the uids it holds for bots, and the
warnings it gives once.

A command that runs bots opens one around its run (:func:`keeping`) and closes it at the
run's end: the anchor is thawed and removed then, not at the interpreter's exit, and a
second run in the same process (the tests; a command after another) starts with nothing
of the first. Code that starts a bot finds the open keeper with :func:`current`; outside
a command (a library user, a test that starts a process itself, a Ray worker's tasks) the
process's own keeper is opened on first use and closed at exit.

One thing stays the process's rather than a run's: the reaper (:mod:`arena.proc.reaper`).
It watches the process's own death (kill -9 included) and the cgroups it sweeps then are
named by the process's pid, so it starts once per process. The one log pump
(:mod:`arena.proc.logs`) has a life of its own: its thread ends when the last stream it
pumps does.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from arena.proc.mechanism import rmdir_quietly, write_quietly

ANCHOR_LABEL = "anchor"


class Keeper:
    """What the arena's bots share while one run runs them (see the module's text)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._anchor: Path | None = None
        self._owner = os.getpid()
        self.held_uids: set[int] = set()
        """The uids this run holds for bot processes (a lease skips them without a
        syscall; :func:`arena.proc.ids.lease`)."""
        self._said: set[str] = set()
        self.closed = False

    # -- the v1 freezer's anchor --------------------------------------------------------

    def hold_freezer_anchor(self, base: Path) -> Path | None:
        """Keep one empty cgroup of this arena frozen in the v1 freezer ``base`` for as
        long as this keeper is open (``arena-PID-anchor``; removed at :meth:`close`, or
        by the sweep after a kill), and return it (None where it cannot be made: stops
        then cost more, nothing else).

        Why: since Linux 6.1 the v1 freezer turns a kernel-wide switch (the static key
        ``freezer_active``) on when a cgroup starts freezing while no other is, and off
        when the last one thaws; each turn patches the kernel's code on every CPU. Where
        a bot is the only one stopped between its calls (one external bot against
        built-in ones, as ``arena check-bot`` and ``arena play`` against ``heuristic``),
        every stop and continue paid that: measured here 120 us for a stop and 103 us for
        a continue, against 38 and 23 us with the switch held on. (At a table of external
        bots the others are frozen while one is asked, which holds the switch on anyway:
        the referee benchmark's 4 bots showed no difference.) Held on, the kernel's
        freezing checks take their slow path, a test of two flags where a task would
        sleep or take a signal. The v2 freezer has no such switch."""
        with self._lock:
            if self._anchor is not None and self._owner == os.getpid():
                return self._anchor
            if self.closed or self._owner != os.getpid():
                return None  # a closed keeper, or a forked child's copy: none of its own
            folder = base / f"arena-{os.getpid()}-{ANCHOR_LABEL}"
            try:
                folder.mkdir(exist_ok=True)
                (folder / "freezer.state").write_text("FROZEN")
            except OSError:
                rmdir_quietly(folder)
                return None
            self._anchor = folder
            return folder

    # -- warnings given once --------------------------------------------------------------

    def first_time(self, what: str) -> bool:
        """Whether ``what`` (a warning's key) is asked about for the first time in this
        run: a warning that would say the same for every bot is given once."""
        with self._lock:
            if what in self._said:
                return False
            self._said.add(what)
            return True

    # -- the end ----------------------------------------------------------------------------

    def close(self) -> None:
        """The run's end: thaw and remove the anchor (safe twice; a forked child leaves
        its parent's alone). Leased uids are given back by their leases."""
        with self._lock:
            self.closed = True
            folder, self._anchor = self._anchor, None
        if folder is not None and self._owner == os.getpid():
            write_quietly(folder / "freezer.state", "THAWED")
            rmdir_quietly(folder)


_open: list[Keeper] = []
"""The keepers of the runs now running in this process, innermost last (a run's
:func:`keeping`)."""
_process: Keeper | None = None
"""The process's own keeper, for bots started outside any run (opened on first use)."""
_registry_lock = threading.Lock()


def current() -> Keeper:
    """The keeper of the run now running in this process, else the process's own."""
    global _process
    with _registry_lock:
        if _open and _open[-1]._owner == os.getpid():
            return _open[-1]
        if _process is None or _process._owner != os.getpid():
            _process = Keeper()
            atexit.register(_process.close)
        return _process


@contextmanager
def keeping() -> Iterator[Keeper]:
    """A keeper for one run: open while the block runs, closed at its end (an inner run
    in a run shares the outer one's)."""
    with _registry_lock:
        if _open and _open[-1]._owner == os.getpid():
            outer: Keeper | None = _open[-1]
        else:
            outer = None
            keeper = Keeper()
            _open.append(keeper)
    if outer is not None:
        yield outer
        return
    try:
        yield keeper
    finally:
        with _registry_lock:
            _open.remove(keeper)
        keeper.close()
