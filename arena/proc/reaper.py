"""Clean-up after an arena that died: a reaper process that ends what is left in the
arena's cgroups when it exits (kill -9 included), and the sweep of socket folders and
cgroups that dead arenas left behind. Both are started by the commands that run bots
(:func:`start_cleanup`), never as a side effect of starting one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile

from arena.proc.mechanism import Mechanism, limit_mechanism
from arena.proc.process import SHORT_ROOT
from arena.proc.sweep import sweep_stale_cgroups
from arena.proc.tasks import pid_alive

_reaper_pipe: int | None = None
"""The write end of the reaper's pipe, which this process alone holds until it exits (a
plain descriptor, closed by the exit itself: a file object would be collected at the
interpreter's end as an unclosed file)."""


def start_reaper(mechanism: Mechanism) -> None:
    """Once per arena process, where bots get cgroups: a small process of the arena's
    own that waits for the arena to end and then ends whatever is left in its cgroups.

    The chain of parent-death signals (``setpriv``, bubblewrap's ``--die-with-parent``)
    ends a killed arena's bots as a rule, but measured here it missed bots that were
    starting at idle priority when the arena was killed; the cgroups hold every process
    of every bot, whatever namespace it is in. The reaper learns of the arena's end
    when the pipe the arena alone holds closes (at any exit, kill -9 included), in its
    own session so the arena's group signals do not reach it."""
    global _reaper_pipe
    if _reaper_pipe is not None or not mechanism.cgroups:
        return
    read_end, write_end = os.pipe()  # not inherited by what this process starts (PEP 446)
    try:
        starter = subprocess.Popen(
            [sys.executable, "-c", "from arena.proc.reaper import _reap; _reap()",
             str(os.getpid()), mechanism.to_json()],
            stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    _reaper_pipe = write_end
    starter.wait(timeout=30)  # it forks the reaper proper and exits: not our child


def _reap() -> None:
    """The reaper's body (see :func:`start_reaper`): ``argv[1]`` is the arena's pid,
    ``argv[2]`` its mechanism (the arena's cgroup folders: the reaper's own would be
    others, and detecting them would make one of its own)."""
    if os.fork() > 0:
        os._exit(0)
    owner = int(sys.argv[1])
    mechanism = Mechanism.from_json(sys.argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the arena's to handle
    sys.stdin.buffer.read()  # until the arena has gone
    sweep_stale_cgroups(mechanism, owner)


def start_cleanup() -> None:
    """Before a command starts bots: sweep what dead arenas left (their cgroups and socket
    folders) and start this process's reaper. Called by the commands, outside the game
    loop (the sweep and the reaper's start block); the second call does nothing."""
    global _cleaned
    if _cleaned:
        return
    _cleaned = True
    mechanism = limit_mechanism()
    if mechanism.cgroups:
        sweep_stale_cgroups(mechanism)
        start_reaper(mechanism)
    sweep_stale_socket_dirs()


_cleaned = False
"""Whether :func:`start_cleanup` ran in this process (a reaper is one per process)."""


def sweep_stale_socket_dirs() -> None:
    """Remove the socket folders of arena processes that are gone (after a kill -9). A
    folder is ``arena-bot-PID-*``, in the temporary folder or (where that one's path is
    too long for a socket) in :data:`~arena.proc.process.SHORT_ROOT`; one whose PID lives
    is left. (A sandboxed bot's socket folder is a tmpfs in its sandbox: nothing here.)"""
    for root in dict.fromkeys((tempfile.gettempdir(), SHORT_ROOT)):
        _sweep_socket_dirs(root)


def _sweep_socket_dirs(root: str) -> None:
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) < 4 or parts[:2] != ["arena", "bot"] or not parts[2].isdigit():
            continue
        if pid_alive(int(parts[2])):
            continue  # its arena still runs
        folder = os.path.join(root, name)
        try:
            for entry in os.listdir(folder):
                os.unlink(os.path.join(folder, entry))
            os.rmdir(folder)
        except OSError:
            pass
