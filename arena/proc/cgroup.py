"""Bot processes' cgroups: :class:`Cgroup` is one bot process's cgroup (one per
controller on v1): limits, the list of its processes (stopped between its calls), its CPU
time, its priority while it starts, and why it was killed.

Beside it: how this machine does it (:mod:`arena.proc.mechanism`), the threads and
priorities in ``/proc`` (:mod:`arena.proc.tasks`), the v1 freezer's switch
(:mod:`arena.proc.anchor`) and the sweep of what a dead arena left
(:mod:`arena.proc.sweep`).
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from collections.abc import Sequence
from pathlib import Path

from arena.model.errors import SandboxError
from arena.model.limits import Limits
from arena.proc import keeper
from arena.proc.cgroup_memory import CgroupMemory, event_count
from arena.proc.mechanism import Mechanism, limit_mechanism, rmdir_quietly, write_quietly
from arena.proc.tasks import (
    describe_processes,
    read_small,
    sandbox_pid,
    set_priority,
    signal_quietly,
    threads_stopped,
)

__all__ = ["QUICK_READS", "STOPPED_SLACK_NS", "Cgroup", "Mechanism", "limit_mechanism"]


STOPPED_SLACK_NS = 1_000_000
"""CPU time a stopped bot may seem to gain between a stop and the next continue without
a fault: the kernel may account a task's last slice a moment after it stopped (seen
here: some microseconds). A process escaping the stop gains far more (a fork chain
outrunning a SIGSTOP sweep: tens of ms); under the freezer none can escape at all."""

QUICK_READS = 4
"""How many times :meth:`Cgroup.begin_stop` reads whether the bot is frozen before it
returns (a few microseconds each): as a rule the bot's tasks are frozen by the third;
one that is not is waited for off the referee's time (:meth:`BotProcess.stopped`)."""


class Cgroup(CgroupMemory):
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
                rmdir_quietly(folder)
            raise SandboxError(f"cannot create the bot's cgroup: {e}") from None
        if self._freezer is not None and self._freezer.name == "freezer.state":
            keeper.current().hold_freezer_anchor(mechanism.base["freezer"])

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
        text = read_small(self._procs)
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
            state = read_small(str(self._freezer)).strip() or "unreadable"
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
            if pid is None or read_small(f"/proc/{pid}/comm").strip() != "bwrap":
                continue
            if sandbox_pid(pid) != 0 and not init_too:
                continue  # inside the sandbox's PID namespace: within the bot's reach
            write_quietly(target / "cgroup.procs", str(pid))

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
            return event_count(self._read_kept(str(self.unified / "cgroup.events")),
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
            signal_quietly(pid, signal.SIGSTOP)
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
            signal_quietly(pid, signal.SIGCONT)
        self._stopped = []

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
        set_priority(self.pids(), os.SCHED_IDLE, 19, self._idle_pids, self._idle_tids,
                           only_inner=sandboxed)

    def normal_priority(self) -> None:
        """Raise every thread of the bot from the idle start-up priority to normal."""
        set_priority(self.pids(), os.SCHED_OTHER, 0)
        self._idle_pids.clear()
        self._idle_tids.clear()

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
                signal_quietly(pid, signal.SIGCONT)
            self._stopped = []
            return
        if signal_number == signal.SIGKILL and self._write_freezer(True):
            self._signal_pids(signal_number, spare)
            self._frozen = self._pending = False
            self._write_freezer(False)
            for pid in self._stopped:
                signal_quietly(pid, signal.SIGCONT)
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


def _cpu_list(cores: list[int]) -> str:
    return ",".join(str(c) for c in cores)
