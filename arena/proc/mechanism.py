"""How limits, the stop between calls and CPU accounting are done on this machine:
cgroup v2 (with the controllers delegated), cgroup v1 (with, on request, the v2 hierarchy
beside it), or rlimits only (:func:`limit_mechanism`, once per process), and where this
arena makes its cgroups."""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from arena.model.limits import Limits

CGROUP_ROOT = Path("/sys/fs/cgroup")


_V1_CONTROLLERS = ("memory", "pids", "cpuacct")


PREFIX = "trick-arena-"
"""A v2 folder of one arena's cgroups is ``trick-arena-PID`` (the arena's pid): the sweep
finds a dead arena's by it."""

UNIFIED_MOUNT = CGROUP_ROOT / "unified"
"""Where a machine with cgroup v1 mounts the v2 hierarchy beside it ("hybrid", as systemd
does on many of them): the stop, the kill, the CPU time and the sweep can be done there
(``ARENA_CGROUP=unified``) while the limits stay on v1."""


@dataclass(frozen=True, slots=True)
class Mechanism:
    """How limits, stopping bots between calls and CPU accounting work on this machine."""

    kind: str
    """``cgroup2``, ``cgroup1`` or ``rlimit``."""
    base: dict[str, Path]
    """controller (or ``""`` for v2, ``unified`` for the v2 hierarchy beside v1) -> the
    folder the arena creates its cgroups in."""
    note: str = ""

    @property
    def cgroups(self) -> bool:
        return self.kind != "rlimit"

    @property
    def unified(self) -> Path | None:
        """The v2 folder of this arena's cgroups, where the stop (``cgroup.freeze``), the
        kill (``cgroup.kill``), the CPU time (``cpu.stat``) and the sweep are done: on
        cgroup v2 the base; on cgroup v1 with the v2 hierarchy beside it, in use
        (``ARENA_CGROUP=unified``), a folder of that; None on plain v1."""
        return self.base.get("") or self.base.get("unified")

    def describe(self, limits: Limits) -> str:
        if self.kind == "cgroup2":
            how = ("cgroup v2 (memory, pids, CPU time, the stop, the kill) and rlimits "
                   "(CPU, file size, open files)")
        elif self.kind == "cgroup1" and "unified" in self.base:
            how = (f"cgroup v1 (memory, pids) and rlimits (CPU, file size, open files); the "
                   f"stop between calls, the kill, the CPU time and the clean-up after a "
                   f"crash on the cgroup v2 hierarchy beside it ({self.base['unified'].parent})")
        elif self.kind == "cgroup1":
            how = (f"cgroup v1 (memory, pids, cpuacct"
                   f"{', freezer' if 'freezer' in self.base else ''}) and rlimits (CPU, "
                   f"file size, open files)")
        else:
            how = ("rlimits only (data size, processes, CPU, file size, open files); bots are "
                   "not stopped between calls, their CPU time is not measured, and a killed "
                   "arena's bots are ended by the parent-death signals alone"
                   + (f": {self.note}" if self.note else ""))
        return (f"limits per bot process: {limits.describe()}; enforced by {how}"
                + (f" ({self.note})" if self.note and self.kind != "rlimit" else ""))

    def to_json(self) -> str:
        """The mechanism as the reaper is told it (it must not detect its own: that
        would make a folder of its own, and look there)."""
        return json.dumps({"kind": self.kind, "note": self.note,
                           "base": {k: str(v) for k, v in self.base.items()}})

    @classmethod
    def from_json(cls, text: str) -> Mechanism:
        data = json.loads(text)
        return cls(str(data["kind"]), {str(k): Path(v) for k, v in data["base"].items()},
                   str(data.get("note", "")))


def own_cgroup_path(controller: str) -> str | None:
    """This process's cgroup path for ``controller`` (``""``: the v2 unified path)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if controller == "" and parts[0] == "0" and parts[1] == "":
            return parts[2]
        if controller and controller in parts[1].split(","):
            return parts[2]
    return None


def _writable_dir(path: Path) -> bool:
    """Whether a child cgroup can be made in ``path`` (tried for real, then removed)."""
    probe = path / f"arena-probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        probe.rmdir()
    except OSError:
        pass
    return True


def _v2_base(mount: Path, own_path: str) -> Path | None:
    """This arena's folder (``trick-arena-PID``) in the v2 hierarchy at ``mount``, below
    this process's own cgroup there, made; None where it cannot be."""
    own = mount / own_path.lstrip("/")
    base = own / f"{PREFIX}{os.getpid()}"
    try:
        base.mkdir(exist_ok=True)
    except OSError:
        return None
    return base


@cache
def limit_mechanism() -> Mechanism:
    """Detect cgroup v2 (with the controllers delegated), cgroup v1 (with, where
    ``ARENA_CGROUP=unified`` asks for it, the v2 hierarchy beside it for the stop, the
    kill, the CPU time and the sweep), or rlimits only."""
    if os.environ.get("ARENA_NO_CGROUPS"):
        return Mechanism("rlimit", {}, "ARENA_NO_CGROUPS is set")
    unified = own_cgroup_path("")
    v2_root = CGROUP_ROOT if (CGROUP_ROOT / "cgroup.controllers").exists() else None
    if v2_root is not None and unified is not None:
        own = v2_root / unified.lstrip("/")
        try:
            available = set((own / "cgroup.controllers").read_text().split())
        except OSError:
            available = set()
        # a v2 cgroup with processes in it cannot have children with controllers: use a
        # sibling-free child of our own cgroup only where the controllers can be enabled
        if {"memory", "pids"} <= available and _writable_dir(own):
            base = own / f"{PREFIX}{os.getpid()}"
            try:
                base.mkdir(exist_ok=True)
                (base / "cgroup.subtree_control").write_text("+memory +pids +cpu +cpuset")
            except OSError:
                try:
                    (base / "cgroup.subtree_control").write_text("+memory +pids +cpu")
                except OSError:
                    pass
                try:
                    (base / "cgroup.subtree_control").write_text("+memory +pids")
                except OSError:
                    rmdir_quietly(base)
                    return Mechanism("rlimit", {}, "cgroup v2 controllers not delegated")
            return Mechanism("cgroup2", {"": base})
        return Mechanism("rlimit", {}, (
            "cgroup v2 without the memory and pids controllers delegated to this user: run "
            "the arena as root, or in a delegated scope, e.g. systemd-run --user --scope -p "
            "Delegate=yes arena ...") if os.geteuid() != 0 else (
            "cgroup v2 without the memory and pids controllers in this cgroup"))
    base_v1: dict[str, Path] = {}
    for controller in _V1_CONTROLLERS:
        own_path = own_cgroup_path(controller)
        folder = CGROUP_ROOT / controller
        if own_path is None or not folder.is_dir():
            break
        here = folder / own_path.lstrip("/")
        if not _writable_dir(here):
            break
        base_v1[controller] = here
    if len(base_v1) == len(_V1_CONTROLLERS):
        own_cpuset = own_cgroup_path("cpuset")
        cpuset = CGROUP_ROOT / "cpuset" / (own_cpuset or "").lstrip("/")
        if own_cpuset is not None and (cpuset / "cpuset.cpus").exists() \
                and _writable_dir(cpuset):
            base_v1["cpuset"] = cpuset
        own_freezer = own_cgroup_path("freezer")
        freezer = CGROUP_ROOT / "freezer" / (own_freezer or "").lstrip("/")
        if own_freezer is not None and (freezer / "cgroup.procs").exists() \
                and _writable_dir(freezer):
            base_v1["freezer"] = freezer
        wanted = os.environ.get("ARENA_CGROUP", "")
        if wanted == "unified":
            beside = unified_beside()
            if isinstance(beside, Path):
                base_v1.pop("freezer", None)  # the v2 hierarchy stops the bots instead
                return Mechanism("cgroup1", {**base_v1, "unified": beside})
            return Mechanism("cgroup1", base_v1, f"ARENA_CGROUP=unified, but {beside}: "
                                                 f"cgroup v1 does it all")
        return Mechanism("cgroup1", base_v1)
    return Mechanism("rlimit", {}, "no writable cgroup hierarchy (run as root, or with a "
                                   "delegated cgroup v2)")


def unified_beside() -> Path | str:
    """This arena's folder in the v2 hierarchy beside v1 (:data:`UNIFIED_MOUNT`), checked
    to have what is done there (``cgroup.freeze``, ``cgroup.kill``, ``cgroup.events`` and
    ``cpu.stat`` in a cgroup made in it); else why not (a few words)."""
    own_path = own_cgroup_path("")
    if own_path is None or not (UNIFIED_MOUNT / "cgroup.procs").exists():
        return f"no cgroup v2 hierarchy is mounted at {UNIFIED_MOUNT}"
    base = _v2_base(UNIFIED_MOUNT, own_path)
    if base is None:
        return f"no cgroup can be made in {UNIFIED_MOUNT}"
    probe = base / f"probe-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
        missing = [f for f in ("cgroup.freeze", "cgroup.kill", "cgroup.events", "cpu.stat")
                   if not (probe / f).exists()]
    except OSError as e:
        return f"no cgroup can be made in {base} ({e.strerror})"
    finally:
        rmdir_quietly(probe)
    if missing:
        return f"its cgroups have no {missing[0]} (Linux 5.14 or newer has it)"
    return base


def rmdir_quietly(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def write_quietly(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError:
        pass
