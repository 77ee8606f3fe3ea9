"""The sweep: what arenas that died (kill -9) left of their bots, ended and removed, on
every cgroup hierarchy in use (:func:`sweep_stale_cgroups`; the reaper runs it)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from arena.proc.mechanism import PREFIX, Mechanism, rmdir_quietly, write_quietly
from arena.proc.tasks import pid_alive, read_small, signal_quietly


def sweep_stale_cgroups(mechanism: Mechanism, owner: int | None = None) -> list[str]:
    """End the processes and remove the cgroups left by arena processes that died (kill
    -9), on every hierarchy in use: on v2 (and the v2 hierarchy beside v1) each dead
    arena's folder ``trick-arena-PID`` beside this arena's, with its bots' cgroups in it;
    on v1 the bots' cgroups ``arena-PID-*`` in the arena's own folders. With ``owner``:
    that arena's alone, dead or not (its reaper, at its end). The folders removed.

    A v2 cgroup's processes are killed through ``cgroup.kill`` (frozen ones too, and any
    forked meanwhile); a v1 one's are frozen, killed and thawed (a frozen process dies at
    the thaw)."""
    removed: list[str] = []
    unified = mechanism.unified
    if unified is not None:  # first: its kill ends every bot process, on v1 too
        for folder in _arena_folders(unified.parent, owner):
            for child in _subfolders(folder):
                _end_cgroup(child)
                removed.append(str(child))
            _remove_folder(folder)
            removed.append(str(folder))
    v1 = sorted(((c, b) for c, b in mechanism.base.items() if c not in ("", "unified")),
                key=lambda item: item[0] != "freezer")
    for _, base in v1:
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            parts = name.split("-")
            if len(parts) < 3 or parts[0] != "arena" or not parts[1].isdigit():
                continue
            arena_pid = int(parts[1])
            if arena_pid != owner if owner is not None else pid_alive(arena_pid):
                continue  # another arena's, or a live arena's
            # a bot its dead arena could not end (it was still starting): end it now
            _end_cgroup(base / name)
            removed.append(str(base / name))
    return removed


def _arena_folders(parent: Path, owner: int | None) -> list[Path]:
    """The ``trick-arena-PID`` folders in ``parent`` of ``owner``, or (None) of every
    arena that is gone."""
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    out = []
    for name in names:
        pid = name[len(PREFIX):]
        if not name.startswith(PREFIX) or not pid.isdigit():
            continue
        if int(pid) == owner if owner is not None else (
                int(pid) != os.getpid() and not pid_alive(int(pid))):
            out.append(parent / name)
    return out


def _subfolders(folder: Path) -> list[Path]:
    try:
        return [folder / e.name for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _end_cgroup(folder: Path) -> None:
    """Kill every process of the cgroup ``folder`` (v2: ``cgroup.kill``; v1: freeze, kill,
    thaw) and remove it, once its processes are reaped (up to half a second)."""
    kill = folder / "cgroup.kill"
    if kill.exists():
        write_quietly(kill, "1")
    else:
        freezer = next((folder / f for f in ("freezer.state", "cgroup.freeze")
                        if (folder / f).exists()), None)
        if freezer is not None:
            write_quietly(freezer, "1" if freezer.name == "cgroup.freeze" else "FROZEN")
        for pid in read_small(str(folder / "cgroup.procs")).split():
            signal_quietly(int(pid), signal.SIGKILL)
            signal_quietly(int(pid), signal.SIGCONT)
        if freezer is not None:
            write_quietly(freezer, "0" if freezer.name == "cgroup.freeze" else "THAWED")
    _remove_folder(folder)


def _remove_folder(folder: Path) -> None:
    for _ in range(100):
        rmdir_quietly(folder)
        if not folder.exists():
            return
        time.sleep(0.005)
