"""Bot processes' cgroups: limits, CPU accounting, the stop between calls, and how all
that is done on this machine.

* :func:`limit_mechanism` says how limits are enforced here: cgroup v2 (with the
  controllers delegated), cgroup v1, or rlimits only.
* :class:`Cgroup` is one bot process's cgroup (one per controller on v1): limits, the
  list of its processes (stopped between its calls), its CPU time, its priority while it
  starts, and why it was killed.
* :func:`sweep_stale_cgroups` ends and removes what an arena that died left.
* :func:`hold_freezer_anchor` keeps the v1 freezer's switch on for the arena's life, so
  that a stop or a continue costs microseconds rather than a tenth of a millisecond.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from arena.model.errors import SandboxError
from arena.model.limits import Limits

CGROUP_ROOT = Path("/sys/fs/cgroup")


_V1_CONTROLLERS = ("memory", "pids", "cpuacct")

STOPPED_SLACK_NS = 1_000_000
"""CPU time a stopped bot may seem to gain between a stop and the next continue without
a fault: the kernel may account a task's last slice a moment after it stopped (seen
here: some microseconds). A process escaping the stop gains far more (a fork chain
outrunning a SIGSTOP sweep: tens of ms); under the freezer none can escape at all."""

QUICK_READS = 4
"""How many times :meth:`Cgroup.begin_stop` reads whether the bot is frozen before it
returns (a few microseconds each): as a rule the bot's tasks are frozen by the third;
one that is not is waited for off the referee's time (:meth:`BotProcess.stopped`)."""


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


def _own_cgroup_path(controller: str) -> str | None:
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
    unified = _own_cgroup_path("")
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
                    _rmdir_quietly(base)
                    return Mechanism("rlimit", {}, "cgroup v2 controllers not delegated")
            return Mechanism("cgroup2", {"": base})
        return Mechanism("rlimit", {}, (
            "cgroup v2 without the memory and pids controllers delegated to this user: run "
            "the arena as root, or in a delegated scope, e.g. systemd-run --user --scope -p "
            "Delegate=yes arena ...") if os.geteuid() != 0 else (
            "cgroup v2 without the memory and pids controllers in this cgroup"))
    base_v1: dict[str, Path] = {}
    for controller in _V1_CONTROLLERS:
        own_path = _own_cgroup_path(controller)
        folder = CGROUP_ROOT / controller
        if own_path is None or not folder.is_dir():
            break
        here = folder / own_path.lstrip("/")
        if not _writable_dir(here):
            break
        base_v1[controller] = here
    if len(base_v1) == len(_V1_CONTROLLERS):
        own_cpuset = _own_cgroup_path("cpuset")
        cpuset = CGROUP_ROOT / "cpuset" / (own_cpuset or "").lstrip("/")
        if own_cpuset is not None and (cpuset / "cpuset.cpus").exists() \
                and _writable_dir(cpuset):
            base_v1["cpuset"] = cpuset
        own_freezer = _own_cgroup_path("freezer")
        freezer = CGROUP_ROOT / "freezer" / (own_freezer or "").lstrip("/")
        if own_freezer is not None and (freezer / "cgroup.procs").exists() \
                and _writable_dir(freezer):
            base_v1["freezer"] = freezer
        wanted = os.environ.get("ARENA_CGROUP", "")
        if wanted == "unified":
            beside = _unified_beside()
            if isinstance(beside, Path):
                base_v1.pop("freezer", None)  # the v2 hierarchy stops the bots instead
                return Mechanism("cgroup1", {**base_v1, "unified": beside})
            return Mechanism("cgroup1", base_v1, f"ARENA_CGROUP=unified, but {beside}: "
                                                 f"cgroup v1 does it all")
        return Mechanism("cgroup1", base_v1)
    return Mechanism("rlimit", {}, "no writable cgroup hierarchy (run as root, or with a "
                                   "delegated cgroup v2)")


def _unified_beside() -> Path | str:
    """This arena's folder in the v2 hierarchy beside v1 (:data:`UNIFIED_MOUNT`), checked
    to have what is done there (``cgroup.freeze``, ``cgroup.kill``, ``cgroup.events`` and
    ``cpu.stat`` in a cgroup made in it); else why not (a few words)."""
    own_path = _own_cgroup_path("")
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
        _rmdir_quietly(probe)
    if missing:
        return f"its cgroups have no {missing[0]} (Linux 5.14 or newer has it)"
    return base


def _rmdir_quietly(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


class Cgroup:
    """One bot process's cgroup(s): created before the spawn, removed after its end.

    The spawn wrapper writes its own pid into :meth:`procs_files` and then execs the
    bot, so every process the bot starts is inside from the first instruction.
    """

    def __init__(self, mechanism: Mechanism, limits: Limits, label: str) -> None:
        self.mechanism = mechanism
        self.limits = limits
        name = f"arena-{os.getpid()}-{label}-{secrets.token_hex(4)}"
        self.dirs: dict[str, Path] = {c: base / name for c, base in mechanism.base.items()}
        self._frozen = False
        """A stop was asked (:meth:`begin_stop`), and no continue since."""
        self._pending = False
        """The stop asked has not taken hold yet: some task of the bot is not stopped."""
        self._sweeping = False
        """The stop is a SIGSTOP sweep (no freezer here, or its write failed)."""
        self._stopped: list[int] = []
        self._idle_tids: set[int] = set()
        """Threads already set to idle priority while the bot starts (a thread made later
        inherits it from the thread that made it)."""
        self._idle_pids: dict[int, int] = {}
        """Processes whose autogroup is at the idle weight, with their session then (a
        new session makes a new autogroup, at normal weight)."""
        self.cpu_at_rest: int | None = None
        """The CPU time at the last stop: where the next call's CPU time starts."""
        self.cpu_while_stopped = 0
        """CPU time (ns) the bot's processes got while stopped, found at the thaws since
        :meth:`take_cpu_while_stopped` (0 for a bot that was stopped whole)."""
        self._procs = str(self._dir("pids") / "cgroup.procs")
        self.unified: Path | None = self.dirs.get("") or self.dirs.get("unified")
        """Its v2 cgroup, where it is stopped, killed and its CPU time read (see
        :attr:`Mechanism.unified`); None on plain v1."""
        self._usage = str(self.unified / "cpu.stat" if self.unified is not None
                          else self.dirs["cpuacct"] / "cpuacct.usage")
        self._freezer: Path | None = None
        self._fds: dict[tuple[str, int], int] = {}
        """Open descriptors of the files read or written at every decision (the freezer's
        state, the CPU time): no open and close on the decision path."""
        made: list[Path] = []
        try:
            for folder in self.dirs.values():
                folder.mkdir()
                made.append(folder)
            self._apply_limits()
            self._freezer = self._freezer_file()
        except OSError as e:
            for folder in made:
                _rmdir_quietly(folder)
            raise SandboxError(f"cannot create the bot's cgroup: {e}") from None
        if self._freezer is not None and self._freezer.name == "freezer.state":
            hold_freezer_anchor(mechanism.base["freezer"])

    @property
    def v2(self) -> bool:
        return self.mechanism.kind == "cgroup2"

    def _dir(self, controller: str) -> Path:
        return self.dirs["" if self.v2 else controller]

    @property
    def can_pin(self) -> bool:
        """Whether the bot can be held to one core (a cpuset controller is here)."""
        if self.v2:
            return (self.dirs[""] / "cpuset.cpus").exists()
        return "cpuset" in self.dirs

    def pin(self, core: int | None) -> None:
        """Hold every process of the bot to ``core`` (None: every core the arena may
        use). The bot cannot undo it: its cgroup is out of its sight."""
        if not self.can_pin:
            return
        folder = self._dir("cpuset")
        cpus = str(core) if core is not None else _cpu_list(sorted(os.sched_getaffinity(0)))
        try:
            (folder / "cpuset.cpus").write_text(cpus)
        except OSError:
            pass

    def _apply_limits(self) -> None:
        limits = self.limits
        if "cpuset" in self.dirs:  # a v1 cpuset accepts no task before it has cpus and mems
            parent = self.dirs["cpuset"].parent
            for name in ("cpuset.mems", "cpuset.cpus"):
                (self.dirs["cpuset"] / name).write_text((parent / name).read_text().strip())
        if self.v2:
            folder = self.dirs[""]
            if limits.memory_mb:
                (folder / "memory.max").write_text(str(limits.memory_mb << 20))
                try:
                    (folder / "memory.swap.max").write_text("0")
                except OSError:
                    pass
            if limits.processes:
                (folder / "pids.max").write_text(str(limits.processes))
            return
        if limits.memory_mb:
            memory = self.dirs["memory"]
            (memory / "memory.limit_in_bytes").write_text(str(limits.memory_mb << 20))
            try:  # no swap beyond the limit, where the kernel accounts swap
                (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_mb << 20))
            except OSError:
                pass
        if limits.processes:
            (self.dirs["pids"] / "pids.max").write_text(str(limits.processes))

    def procs_files(self) -> list[str]:
        return [str(folder / "cgroup.procs") for folder in self.dirs.values()]

    def pids(self) -> list[int]:
        """The processes in the cgroup (seen from the arena's PID namespace)."""
        text = _read(self._procs)
        return [int(p) for p in text.split()] if text else []

    def describe(self) -> str:
        """What the bot's processes are doing, for a report of one that did not end
        (:func:`describe_processes`), and the freezer's state where there is one, e.g.
        ``3 processes, threads S x9 R x1; freezer THAWED``."""
        text = describe_processes(self.pids())
        if self._freezer is None:
            return text
        if self._v2_freezer:
            state = "FROZEN" if self._is_frozen() else "THAWED"
        else:  # v1's own word, FREEZING included
            state = _read(str(self._freezer)).strip() or "unreadable"
        return f"{text}; freezer {state}"

    # -- stopping the bot between its calls --------------------------------------------

    def _freezer_file(self) -> Path | None:
        """The freezer's control file: v1 ``freezer.state``, v2 ``cgroup.freeze``; None
        where there is no freezer, or ``ARENA_NO_FREEZER`` is set (the stop is then a
        SIGSTOP sweep)."""
        if os.environ.get("ARENA_NO_FREEZER"):
            return None
        if self.unified is not None:
            path = self.unified / "cgroup.freeze"
            return path if path.exists() else None
        if "freezer" in self.dirs:
            return self.dirs["freezer"] / "freezer.state"
        return None

    @property
    def _v2_freezer(self) -> bool:
        """The stop is v2's ``cgroup.freeze`` (else v1's ``freezer.state``, or none)."""
        return self._freezer is not None and self._freezer.name == "cgroup.freeze"

    def release_wrappers(self, pids: Sequence[int | None]) -> None:
        """Take bubblewrap's monitor (its first process, in the arena's PID namespace,
        named in ``pids``) out of the bot's v1 freezer cgroup, into the arena's, once the
        bot runs; every other controller keeps it (limits, CPU time, the kill of the
        cgroup). Never a process the bot can reach: the sandbox's pid 1 (bubblewrap's
        init, which runs as the bot's uid and whose ``/proc/1/mem`` the bot can write)
        stays in the freezer with the bot.

        Why: a v1 freeze stops a task asleep in a futex on the spot, but wakes one asleep
        in ``poll``, ``epoll_wait`` or ``wait`` to stop it, and the thaw wakes it again:
        each costs a wake-up on the bot's core, 5-10 us on this virtual machine. The
        monitor sleeps so (in ``poll``), runs none of the bot's code, and is out of the
        bot's sight and reach (outside its PID namespace: no ``/proc`` entry, no signal,
        no ``/proc/PID/mem``). The sandbox's init is another matter: a bot that wrote a
        loop into its code ran it through every other bot's turn while it was out of
        the freezer (tests/test_stop.py), so it is frozen with the bot (a wake-up more).

        A pid that is not a ``bwrap`` process (or no longer one), or one inside a PID
        namespace of its own, is left where it is; ``ARENA_RELEASE_SANDBOX_INIT`` set
        releases the sandbox's init too, as the arena once did (for the tests' controls
        only). v2 has a single hierarchy (and wakes every task to freeze it): nothing is
        done there."""
        if self._v2_freezer or self._freezer is None:
            return
        target = self.mechanism.base.get("freezer")
        if target is None:
            return
        init_too = bool(os.environ.get("ARENA_RELEASE_SANDBOX_INIT"))
        for pid in pids:
            if pid is None or _read(f"/proc/{pid}/comm").strip() != "bwrap":
                continue
            if _sandbox_pid(pid) != 0 and not init_too:
                continue  # inside the sandbox's PID namespace: within the bot's reach
            _write_quietly(target / "cgroup.procs", str(pid))

    def _write_freezer(self, frozen: bool) -> bool:
        if self._freezer is None:
            return False
        value = (("1" if frozen else "0") if self._v2_freezer
                 else ("FROZEN" if frozen else "THAWED"))
        try:
            os.pwrite(self._fd(str(self._freezer), os.O_WRONLY), value.encode(), 0)
        except OSError:
            return False
        return True

    def _fd(self, path: str, flags: int) -> int:
        """A kept descriptor of ``path`` (opened once); OSError if it cannot be opened."""
        fd = self._fds.get((path, flags))
        if fd is None:
            fd = self._fds[(path, flags)] = os.open(path, flags | os.O_CLOEXEC)
        return fd

    def _read_kept(self, path: str) -> str:
        """As :func:`_read`, through a kept descriptor (read again from the start)."""
        try:
            return os.pread(self._fd(path, os.O_RDONLY), 65536, 0).decode()
        except OSError:
            return ""

    def _close_files(self) -> None:
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            try:
                os.close(fd)
            except OSError:
                pass

    def _is_frozen(self) -> bool:
        if self._freezer is None:
            return False
        if self._v2_freezer and self.unified is not None:
            return _event(self._read_kept(str(self.unified / "cgroup.events")),
                          "frozen") == 1
        return self._read_kept(str(self._freezer)).strip() == "FROZEN"

    def begin_stop(self) -> bool:
        """The fair clock's stop after a call, as the referee makes it: ask the freezer to
        stop every process of the bot at once (new ones included), read whether the
        kernel says the whole cgroup is frozen a few times (:data:`QUICK_READS`, no yield,
        no sleep), and return: True when it is (its CPU time is then noted, in one
        reading: a slice the kernel accounts late is microseconds, inside
        :data:`STOPPED_SLACK_NS`), False while a task of the bot has not stopped yet (one
        in the kernel stops when it leaves it). :meth:`stop_done` then tells when it has,
        read again off the referee's time; nothing here waits for a bot. Without a
        freezer: one pass of the SIGSTOP sweep (:meth:`_sweep_step`), the rest likewise."""
        if self._frozen:
            return not self._pending
        self._frozen = True
        self._pending = True
        self.cpu_at_rest = None
        self._sweeping = not self._write_freezer(True)
        return any(self.stop_done() for _ in range(1 if self._sweeping else QUICK_READS))

    def stop_done(self) -> bool:
        """Whether the stop begun by :meth:`begin_stop` holds now (the kernel says the
        cgroup is frozen; or, swept, every thread of the bot has stopped), one look, never
        a wait; once it does, the CPU time at rest is noted. False when the bot is not
        being stopped."""
        if not self._frozen:
            return False
        if not self._pending:
            return True
        if not (self._sweep_step() if self._sweeping else self._is_frozen()):
            return False
        self._pending = False
        self.cpu_at_rest = self.cpu_ns()
        return True

    @property
    def stop_pending(self) -> bool:
        """A stop was asked and the bot has not stopped whole yet."""
        return self._frozen and self._pending

    def freeze(self, settle: bool = True, wait_s: float = 1.0) -> bool:
        """Stop every process of the bot and wait, up to ``wait_s``, until the whole bot
        has stopped (:meth:`begin_stop`, then :meth:`stop_done` until it holds), for a
        stop made outside a game (the tests', the benchmarks'); whether it has. Its CPU
        time is then noted (it cannot change while the bot is stopped; :meth:`thaw`
        checks): with ``settle``, once two readings agree (exact). Blocking: the
        referee's stop is :meth:`begin_stop`, awaited off its time."""
        if self._frozen and not self._pending:
            return True  # stopped already: its CPU time at rest stays as noted
        deadline = time.monotonic() + wait_s
        tries = 0
        if not self.begin_stop():
            while not self.stop_done():
                if time.monotonic() > deadline:
                    return False  # a task stuck in the kernel: not stopped, unchecked
                tries += 1
                if tries < 20:
                    os.sched_yield()  # as a rule frozen within a few yields
                else:
                    time.sleep(0.0001)
        if settle:
            self.cpu_at_rest = self._settled_cpu_ns()
        return True

    def _settled_cpu_ns(self) -> int | None:
        """The CPU time once two readings in a row agree: a task that has just stopped
        may have its last slice accounted a moment later."""
        last = self.cpu_ns()
        for _ in range(50):
            os.sched_yield()
            now = self.cpu_ns()
            if now == last:
                break
            last = now
        return last

    def _sweep_step(self) -> bool:
        """One pass of the stop without a freezer: SIGSTOP to every process of the cgroup
        not sent one yet; whether the list was stable and every thread in it has stopped
        (a runnable thread at idle priority on a busy machine may take a while to act on
        the signal; a stopped process cannot fork). Every process signalled is continued
        by :meth:`thaw`."""
        listed = self.pids()
        fresh = [pid for pid in listed if pid not in self._stopped]
        for pid in fresh:
            _signal(pid, signal.SIGSTOP)
        self._stopped += fresh
        return not fresh and all(threads_stopped(pid) for pid in listed)

    @property
    def stopped(self) -> bool:
        """A stop was asked (whether or not the bot has stopped whole yet)."""
        return self._frozen

    def cpu_while_stopped_now(self) -> int:
        """CPU time (ns) the bot has got since it stopped whole, when over
        :data:`STOPPED_SLACK_NS` (a process of the bot ran while it was stopped), else 0;
        a look that changes nothing (:meth:`thaw` counts it again), but for noting the
        CPU time at rest of a stop that has just taken hold (:meth:`stop_done`)."""
        if not self.stop_done() or self.cpu_at_rest is None:
            return 0
        now = self.cpu_ns()
        if now is None or now <= self.cpu_at_rest + STOPPED_SLACK_NS:
            return 0
        return now - self.cpu_at_rest

    def thaw(self) -> None:
        """Continue every process stopped by :meth:`freeze`, after checking that the
        bot's CPU time did not grow while it was stopped (else :attr:`cpu_while_stopped`
        grows: a process escaped the stop). A bot that had not stopped whole yet is
        continued unchecked."""
        if not self._frozen:
            return
        self._frozen = False
        self._pending = False
        if self.cpu_at_rest is not None:
            now = self.cpu_ns()
            if now is not None and now > self.cpu_at_rest + STOPPED_SLACK_NS:
                self.cpu_while_stopped += now - self.cpu_at_rest
        self._write_freezer(False)
        for pid in self._stopped:
            _signal(pid, signal.SIGCONT)
        self._stopped = []

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
        if self.pids() and _has_swap():
            return
        try:
            if self.v2:
                folder = self.dirs[""]
                current = int(_read(str(folder / "memory.current")) or 0)
                if current:
                    (folder / "memory.reclaim").write_text(str(current))
            elif "memory" in self.dirs:
                (self.dirs["memory"] / "memory.force_empty").write_text("0")
        except (OSError, ValueError):  # EAGAIN: not all of it could go (its own memory)
            pass

    def take_cpu_while_stopped(self) -> int:
        """The CPU time (ns) the bot got while stopped since the last call, then 0."""
        taken, self.cpu_while_stopped = self.cpu_while_stopped, 0
        return taken

    # -- accounting -----------------------------------------------------------------

    def cpu_ns(self) -> int | None:
        """CPU time used by every process of the bot so far, in nanoseconds."""
        try:
            if self.unified is not None:
                for line in self._read_kept(self._usage).splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) * 1000
                return None
            return int(self._read_kept(self._usage))
        except ValueError:
            return None

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
                return _event((self.dirs[""] / "memory.events").read_text(), "oom_kill")
            return _event((self.dirs["memory"] / "memory.oom_control").read_text(), "oom_kill")
        except (OSError, ValueError):
            return 0

    def _pids_max_hits(self) -> int:
        try:
            return _event((self._dir("pids") / "pids.events").read_text(), "max")
        except (OSError, ValueError):
            return 0

    def idle_priority(self, sandboxed: bool) -> None:
        """Run the bot at idle priority while it starts: every thread ``SCHED_IDLE``,
        and its scheduling autogroups (a new session makes one) at the lowest weight,
        since SCHED_IDLE alone does not hold back a task whose autogroup competes with a
        thinking bot's as an equal.

        Only the bot's own processes: for a ``sandboxed`` bot, those inside its PID
        namespace but bubblewrap's first (pid 2 and up there), never bubblewrap's two.
        Put at idle priority, those outlived a killed arena (their parent-death signal
        chain did not act: measured, with every kill -9 of an arena while a spare
        started). For the same reason this is set while the bot starts, not in its
        spawn chain.

        Called again and again while the bot starts, it touches only the processes and
        threads it has not seen yet (the bot's start-up must not cost the arena more
        than the bot)."""
        self._set_priority(os.SCHED_IDLE, 19, self._idle_pids, self._idle_tids,
                           only_inner=sandboxed)

    def normal_priority(self) -> None:
        """Raise every thread of the bot from the idle start-up priority to normal."""
        self._set_priority(os.SCHED_OTHER, 0)
        self._idle_pids.clear()
        self._idle_tids.clear()

    def _set_priority(self, policy: int, group_nice: int,
                      pids_done: dict[int, int] | None = None,
                      tids_done: set[int] | None = None, only_inner: bool = False) -> None:
        for pid in self.pids():
            if only_inner and _sandbox_pid(pid) < 2:
                continue
            if pids_done is None:
                _set_autogroup(pid, group_nice)
            else:
                try:
                    session = os.getsid(pid)
                except OSError:  # gone
                    continue
                if pids_done.get(pid) != session:
                    _set_autogroup(pid, group_nice)
                    pids_done[pid] = session
            for tid in _tids(pid):
                if tids_done is not None and tid in tids_done:
                    continue
                try:
                    os.sched_setscheduler(tid, policy, os.sched_param(0))
                except OSError:  # the thread ended meanwhile
                    continue
                if tids_done is not None:
                    tids_done.add(tid)

    def kill_all(self, signal_number: int, spare: int | None = None) -> None:
        """Signal every process in the cgroup but ``spare`` (the arena sees them all).
        SIGKILL of every process, where the v2 cgroup has ``cgroup.kill``: written there,
        the kernel kills them all at once, frozen or not, and any forked meanwhile. Else
        SIGKILL with a freezer: freeze, kill every process, thaw (a frozen process dies
        at the thaw; no process can fork between the listing and the kill). Any other
        signal: thawed first (a frozen process does not act on it)."""
        if signal_number == signal.SIGKILL and spare is None and self._kill_file():
            self._frozen = self._pending = False
            self._write_freezer(False)  # (a v2 freeze does not hold off a kill)
            for pid in self._stopped:
                _signal(pid, signal.SIGCONT)
            self._stopped = []
            return
        if signal_number == signal.SIGKILL and self._write_freezer(True):
            self._signal_pids(signal_number, spare)
            self._frozen = self._pending = False
            self._write_freezer(False)
            for pid in self._stopped:
                _signal(pid, signal.SIGCONT)
            self._stopped = []
            return
        self.thaw()
        self._signal_pids(signal_number, spare)

    def _kill_file(self) -> bool:
        """Kill every process of the cgroup through v2's ``cgroup.kill``; whether it could
        (no such file: plain v1, or a kernel before 5.14)."""
        if self.unified is None or os.environ.get("ARENA_NO_CGROUP_KILL"):
            return False
        try:
            (self.unified / "cgroup.kill").write_text("1")
        except OSError:
            return False
        return True

    def _signal_pids(self, signal_number: int, spare: int | None) -> None:
        for pid in self.pids():
            if pid == spare:
                continue
            try:
                os.kill(pid, signal_number)
            except (ProcessLookupError, PermissionError):
                pass

    def remove(self) -> None:
        """Remove the cgroup folders (they must be empty: call after the processes end)."""
        self.thaw()
        self._close_files()
        for folder in self.dirs.values():
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # the last tasks are still being reaped
                    time.sleep(0.002)

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
        for line in _read(str(folder / "memory.stat")).splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                counts[key] = int(value)
        locked = counts.get("unevictable", 0)
        reclaimed = not os.environ.get("ARENA_NO_RECLAIM") and not (self.pids() and _has_swap())
        cached = max(0, counts.get("file" if self.v2 else "cache", 0) - counts.get("shmem", 0))
        if not reclaimed:
            cached = 0
        if not locked and not cached:
            return None
        mapped = counts.get("file_mapped" if self.v2 else "mapped_file", 0)
        return (f"{(locked + cached) >> 10} KiB held after the reclaim after its game "
                f"(locked {locked >> 10} KiB, page cache {cached >> 10} KiB, mapped "
                f"{mapped >> 10} KiB)")



# -- the v1 freezer's switch ---------------------------------------------------------

ANCHOR_LABEL = "anchor"
_anchor: Path | None = None
_anchor_owner = 0
_anchor_lock = threading.Lock()


def hold_freezer_anchor(base: Path) -> Path | None:
    """Keep one empty cgroup of this arena frozen in the v1 freezer ``base`` for as long as
    the arena runs (``arena-PID-anchor``; removed at exit, or by the sweep after a kill),
    and return it (None where it cannot be made: stops then cost more, nothing else).

    Why: since Linux 6.1 the v1 freezer turns a kernel-wide switch (the static key
    ``freezer_active``) on when a cgroup starts freezing while no other is, and off when
    the last one thaws; each turn patches the kernel's code on every CPU. Where a bot is
    the only one stopped between its calls (one external bot against built-in ones, as
    ``arena check-bot`` and ``arena play`` against ``heuristic``), every stop and continue
    paid that: measured here 120 us for a stop and 103 us for a continue, against 38 and
    23 us with the switch held on. (At a table of external bots the others are frozen
    while one is asked, which holds the switch on anyway: the referee benchmark's 4 bots
    showed no difference.) Held on, the kernel's freezing checks take their slow path,
    a test of two flags where a task would sleep or take a signal. The v2 freezer has no
    such switch."""
    global _anchor, _anchor_owner
    with _anchor_lock:
        if _anchor is not None and _anchor_owner == os.getpid():
            return _anchor
        folder = base / f"arena-{os.getpid()}-{ANCHOR_LABEL}"
        try:
            folder.mkdir(exist_ok=True)
            (folder / "freezer.state").write_text("FROZEN")
        except OSError:
            _rmdir_quietly(folder)
            return None
        if _anchor_owner != os.getpid():  # once per process
            atexit.register(release_freezer_anchor)
        _anchor, _anchor_owner = folder, os.getpid()
        return folder


def release_freezer_anchor() -> None:
    """Thaw and remove the anchor of :func:`hold_freezer_anchor` (at exit; safe twice; a
    forked child leaves its parent's alone)."""
    global _anchor
    with _anchor_lock:
        folder, _anchor = _anchor, None
    if folder is not None and _anchor_owner == os.getpid():
        _write_quietly(folder / "freezer.state", "THAWED")
        _rmdir_quietly(folder)

def _read(path: str) -> str:
    """A small kernel file's text ("" when it cannot be read): os-level, as it is read
    several times per decision."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return ""
    try:
        return os.read(fd, 65536).decode()
    except OSError:
        return ""
    finally:
        os.close(fd)


def _sandbox_pid(pid: int) -> int:
    """The process's pid inside its sandbox's PID namespace: 1 for bubblewrap's first
    process there, 2 or more for what it starts; 0 for a process in the arena's own
    namespace (the outer bubblewrap), or one that is gone. (The bot is not pid 1,
    ``bwrap --as-pid-1``: see docs/isolation.md.)"""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    ids = line.split()[1:]
                    return int(ids[-1]) if len(ids) > 1 else 0
    except (OSError, ValueError):
        pass
    return 0


def _thread_states(pid: int) -> list[str]:
    """The state letter of each thread of the process (``S``, ``R``, ``D``, ``T``...; [] when
    it is gone)."""
    states = []
    for tid in _tids(pid):
        state = _read(f"/proc/{pid}/task/{tid}/stat").rpartition(")")[2].split()[:1]
        states += state
    return states


def threads_stopped(pid: int) -> bool:
    """Whether every thread of the process is stopped (``T``/``t``), or gone."""
    return all(state in ("T", "t", "Z", "X") for state in _thread_states(pid))


def on_the_way(pids: list[int]) -> bool:
    """Whether some thread of the processes ``pids`` is runnable or in the kernel (``R``
    or ``D``): a process that is not (every thread asleep, stopped or gone) is making no
    progress of its own."""
    return any(state in ("R", "D") for pid in pids for state in _thread_states(pid))


def describe_processes(pids: list[int]) -> str:
    """What the processes ``pids`` are doing, their threads' states counted (``S``
    sleeping, ``R`` running, ``D`` in the kernel, ``T`` stopped...), e.g. ``3 processes,
    threads S x9 R x1``."""
    counts: dict[str, int] = {}
    for pid in pids:
        for state in _thread_states(pid):
            counts[state] = counts.get(state, 0) + 1
    return (f"{len(pids)} process{'es' if len(pids) != 1 else ''}, threads "
            + (" ".join(f"{s} x{n}" for s, n in sorted(counts.items())) or "none"))


def _tids(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _set_autogroup(pid: int, nice: int) -> None:
    try:
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:  # no autogroups here, or the process is gone
        pass


def _cpu_list(cores: list[int]) -> str:
    return ",".join(str(c) for c in cores)


def _signal(pid: int, signo: int) -> None:
    try:
        os.kill(pid, signo)
    except (ProcessLookupError, PermissionError):
        pass


def _event(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


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
        _write_quietly(kill, "1")
    else:
        freezer = next((folder / f for f in ("freezer.state", "cgroup.freeze")
                        if (folder / f).exists()), None)
        if freezer is not None:
            _write_quietly(freezer, "1" if freezer.name == "cgroup.freeze" else "FROZEN")
        for pid in _read(str(folder / "cgroup.procs")).split():
            _signal(int(pid), signal.SIGKILL)
            _signal(int(pid), signal.SIGCONT)
        if freezer is not None:
            _write_quietly(freezer, "0" if freezer.name == "cgroup.freeze" else "THAWED")
    _remove_folder(folder)


def _remove_folder(folder: Path) -> None:
    for _ in range(100):
        _rmdir_quietly(folder)
        if not folder.exists():
            return
        time.sleep(0.005)


def _has_swap() -> bool:
    """Whether this machine has swap in use (``/proc/swaps`` lists an area)."""
    return len(_read("/proc/swaps").strip().splitlines()) > 1


def _write_quietly(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError:
        pass


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
