"""A started bot process supervised to its end: its exit awaited (:mod:`arena.proc.exits`),
how it ended said in one line (its exit code or signal, the limit it hit, the call it was
in, its log's last lines), and its end: SIGTERM, SIGKILL at the grace, what is left in
its cgroup killed, the cgroup reclaimed and removed, its uid and socket folder given
back. :class:`Supervised` is the part of :class:`~arena.proc.process.BotProcess` that
does not start it; the start (the sandbox, the socket, the greeting's wait) is
:mod:`arena.proc.process`'s."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import trio

from arena.model.limits import Confinement
from arena.proc import ids
from arena.proc.cgroup import Cgroup
from arena.proc.exits import ExitWatch
from arena.proc.logs import LogPump, log_text
from arena.proc.tasks import describe_processes, on_the_way

CALLS = {"Hello": "during the hand-shake", "Bid": "during a Bid", "Play": "during a Play",
         "ChooseTrump": "during a ChooseTrump", "RoundEnded": "during a RoundEnded",
         "GameEnded": "during a GameEnded"}
"""The calls of the protocol, and how a crash report says a process ended in one."""

STARTING = "start-up"
"""The "call" of a process that ended before it served (:meth:`BotProcess.ended_text`)."""

BUSY_LOOK_S = 0.05
"""How often :meth:`BotProcess.terminate` looks again, past its wait, whether a bot is
still on its way out (its exit ends the wait at once)."""

EXIT_WAIT_S = 0.5
"""How long a failed call waits for the bot process to have exited (and its last words
to be in its log), to say how it ended."""

KILLED_EXIT_WAIT_S = 10.0
"""How long it waits instead once the kernel has killed one of the bot's processes at its
memory limit: the process is ending, but on a loaded machine giving back hundreds of MiB
and tearing down the sandbox can take more than :data:`EXIT_WAIT_S`, and the fault must
then still say ``resource`` (the limit), not a lost connection."""


class Supervised:
    """A bot process the arena started, from its start to its end (the attributes are
    set by :class:`~arena.proc.process.BotProcess`, which starts it)."""

    name: str
    log_path: Path
    confinement: Confinement
    _proc: subprocess.Popen[bytes] | None
    _exit: ExitWatch | None
    _drain: LogPump | None
    _cgroup: Cgroup | None
    _lease: ids.Lease | None
    _dir: str | None
    _info: int | None
    _sock_dir: int | None
    _sock: int | None
    _exit_code: int | None
    _sent_kill: bool
    _last_cpu_ns: int | None
    _last_limit_hit: str | None

    @property
    def pid(self) -> int | None:
        """The process id while it is ours (None before the start and after the end)."""
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> int | None:
        """None while the process runs (or before it was started); then its exit code."""
        if self._exit_code is None and self._proc is not None:
            self._exit_code = self._proc.poll()
        return self._exit_code

    def alive(self) -> bool:
        return self._proc is not None and self.returncode is None

    def cpu_ns(self, stopped_ok: bool = False) -> int | None:
        """CPU time the bot's processes have used so far (None where not measurable).
        With ``stopped_ok``, the figure noted when it was last stopped, if it still is
        (it cannot have changed: one file read less per decision)."""
        cgroup = self._cgroup
        if cgroup is None:
            return self._last_cpu_ns  # ended: the figure when its cgroup was removed
        if stopped_ok and cgroup.stopped and cgroup.cpu_at_rest is not None:
            return cgroup.cpu_at_rest
        return cgroup.cpu_ns()

    def limit_detail(self) -> str | None:
        """The limit an ended process ran into, as a fault detail ("memory limit 1024 MiB
        reached"), or None when it ended for another reason."""
        limits = self.confinement.limits
        hit = self._cgroup.limit_hit() if self._cgroup is not None else self._last_limit_hit
        if hit is not None:
            return hit
        signo = self._signal()
        # a SIGKILL the arena did not send, at the CPU limit: the kernel's, for the hard
        # limit. The kernel counts in ticks, the cgroup exactly: the latter may be less
        if signo == signal.SIGXCPU or (signo == signal.SIGKILL and limits.cpu_s
                                       and not self._sent_kill
                                       and (self.cpu_ns() or 0) >= limits.cpu_s * 9 * 10**8):
            return f"CPU time limit {limits.cpu_s} s reached"
        if signo == signal.SIGXFSZ:
            return f"file size limit {limits.file_mb} MiB reached"
        return None

    def _signal(self) -> int | None:
        """The signal that ended the process, or None (running, or it exited)."""
        code = self.returncode
        if code is None:
            return None
        if code < 0:
            return -code
        if code > 128 and self.confinement.sandbox:  # bubblewrap reports a signal so
            return code - 128
        return None

    def exit_text(self) -> str:
        """How the process ended, for fault details: ``exited with code 3``, ``was killed
        by SIGSEGV (signal 11)``, or the limit it hit: ``was killed: memory limit 1024
        MiB reached`` (a limit that does not kill, such as the process limit, follows
        how it ended: ``exited with code 1: process limit 128 reached ...``)."""
        code = self.returncode
        if code is None:
            return "still running"
        signo = self._signal()
        ended = (f"exited with code {code}" if signo is None else
                 f"was killed by {_signal_name(signo)}")
        limit = self.limit_detail()
        if limit is None:
            return ended
        if signo in (signal.SIGKILL, signal.SIGXCPU, signal.SIGXFSZ):
            return f"was killed: {limit}"  # by the kernel, for the limit
        return f"{ended}: {limit}"

    def ended_text(self, call: str | None, then: str = "") -> str:
        """The one line that says a process has ended, for every command's error or
        fault detail: how (:meth:`exit_text`), in which call (a key of :data:`CALLS`, or
        :data:`STARTING`: before it served; None: between calls), ``then`` (what the arena
        does about it, if given), and its log with the log's last lines, e.g. ``exited
        with code 3 during a Play; log logs/mybot.log: "ZeroDivisionError: division by
        zero"``. Call :meth:`settle` first, so that its last words are in its log."""
        if call == STARTING:
            during = " before serving"
        elif call is None:
            during = " between calls"
        else:
            during = " " + CALLS.get(call, f"during a {call}")
        then = f"; {then}" if then else ""
        return f"{self.exit_text()}{during}{then}; {log_text(self.log_path)}"

    async def ended_report(self, call: str | None, then: str = "") -> str:
        """:meth:`ended_text`, made on a thread: it reads the log's last lines."""
        return await trio.to_thread.run_sync(self.ended_text, call, then)

    async def settle(self, wait_s: float = EXIT_WAIT_S) -> bool:
        """Wait up to ``wait_s`` for the process to have exited and all it wrote to its
        stderr to be in its log; whether it has exited. (A dying process closes its
        socket a moment before it has exited, and its log is written by a thread.) Up
        to :data:`KILLED_EXIT_WAIT_S` instead when the kernel has killed it at its
        memory limit (so the kind of the fault does not hang on the machine's load)."""
        await self._settle(wait_s)
        cgroup = self._cgroup
        if self.returncode is None and cgroup is not None and await trio.to_thread.run_sync(
                cgroup.oom_killed):
            await self._settle(KILLED_EXIT_WAIT_S)
        return self.returncode is not None

    async def _settle(self, wait_s: float) -> None:
        with trio.move_on_after(wait_s):
            if self._exit is not None and self.returncode is None:
                await self._exit.wait()
            if self._drain is not None:
                await self._drain.finished()

    # -- ending it --------------------------------------------------------------------

    async def aclose(self, grace_s: float = 1.0, background: bool = True) -> None:
        """End the process and everything it started: SIGTERM, then SIGKILL after
        ``grace_s``. Never blocks the trio thread but with ``background`` False: the
        reclaim of its cgroup is then done before it returns (some ms), not on a thread
        (for a process that held pages: no later process may find them). Safe to call
        twice."""
        proc, exit_watch = self._proc, self._exit
        if proc is not None and exit_watch is not None and proc.poll() is None:
            self._signal_all(signal.SIGTERM)
            with trio.move_on_after(grace_s):
                await exit_watch.wait()
        if proc is not None and exit_watch is not None:
            self._signal_all(signal.SIGKILL)
            with trio.move_on_after(5):
                await exit_watch.wait()
            cgroup = self._cgroup
            if cgroup is not None:  # it empties a moment after the leader is reaped
                await trio.to_thread.run_sync(_kill_while_held, cgroup, 1.0,
                                              abandon_on_cancel=False)
        self._detach()
        # the cgroup's figures, its reclaim, the uid's processes, the socket folder: files
        # and /proc, so on a thread (the trio task waits; see _cleanup)
        await trio.to_thread.run_sync(self._cleanup, background)

    @property
    def signals_reach_bot(self) -> bool:
        """Whether SIGTERM reaches the bot's own processes: with cgroups, or outside the
        sandbox. (Without cgroups it reaches bubblewrap, which ends the sandbox itself.)"""
        return self._cgroup is not None or not self.confinement.sandbox

    async def terminate(self, wait_s: float, busy_s: float = 0.0,
                        busy_cpu_s: float = 1.0) -> float | None:
        """SIGTERM, as :meth:`aclose` sends it, then wait up to ``wait_s`` for the process
        to exit: the seconds it took, or None if it is still running (:meth:`aclose`
        then ends it).

        ``busy_s`` (over ``wait_s``): past ``wait_s``, go on waiting, up to ``busy_s``
        seconds in all, while the bot is still on its way out on a busy machine: some
        thread of its processes runnable or in the kernel (waiting for a CPU, or for the
        pages of its code that a reclaim dropped), and under ``busy_cpu_s`` of CPU used
        since the signal (where that is measured). A bot that ignores the signal sleeps,
        and one that spins in its handler uses up that CPU: either is still judged at
        ``wait_s`` of the machine's time, or as soon as it has had that CPU."""
        proc, exit_watch = self._proc, self._exit
        if proc is None or exit_watch is None or proc.poll() is not None:
            raise RuntimeError("terminate() needs a running process")
        started = time.monotonic()
        cpu_before = self.cpu_ns()
        self._signal_all(signal.SIGTERM)

        def on_its_way() -> bool:  # reads /proc: on a thread
            cpu = self.cpu_ns()
            if cpu is not None and cpu_before is not None and (
                    cpu - cpu_before >= busy_cpu_s * 1e9):
                return False
            return on_the_way(self._cgroup.pids() if self._cgroup is not None else [proc.pid])

        with trio.move_on_after(max(wait_s, busy_s)):
            with trio.move_on_after(wait_s):
                await exit_watch.wait()
                return time.monotonic() - started
            # past wait_s: go on waiting while it is on its way out, looking again at
            # each BUSY_LOOK_S; its exit still ends the wait at once
            while await trio.to_thread.run_sync(on_its_way):
                with trio.move_on_after(BUSY_LOOK_S):
                    await exit_watch.wait()
                    return time.monotonic() - started
        return None

    def describe(self) -> str:
        """What its processes are doing now, for a report of one that did not end: its
        cgroup's (:meth:`Cgroup.describe`), else its own process's threads."""
        if self._cgroup is not None:
            return self._cgroup.describe()
        return describe_processes([self._proc.pid] if self._proc is not None else [])

    def stop_now(self, grace_s: float = 1.0) -> None:
        """A blocking :meth:`aclose`, for the last clean-up outside trio."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            self._signal_all(signal.SIGTERM)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                pass
        if proc is not None:
            self._signal_all(signal.SIGKILL)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._finish()

    def _signal_all(self, signo: int) -> None:
        proc = self._proc
        if proc is None:
            return
        if signo == signal.SIGKILL and proc.poll() is None:
            self._sent_kill = True
        if self._cgroup is not None:
            # (a frozen bot is thawed for a SIGTERM, killed frozen then thawed for SIGKILL)
            # SIGTERM goes to the bot, not to bubblewrap, which would end it with SIGKILL
            spare = proc.pid if signo == signal.SIGTERM and self.confinement.sandbox else None
            self._cgroup.kill_all(signo, spare)
            if spare is not None:
                return
        try:  # the process group: the wrapper, bubblewrap or an unsandboxed bot's children
            os.killpg(proc.pid, signo)
        except (ProcessLookupError, PermissionError):
            pass

    def _finish(self, background: bool = False) -> None:
        self._detach()
        self._cleanup(background)

    def _detach(self) -> None:
        """The process has ended (or is given up on): no pid any more, its exit code
        stays; its pidfd closed, its log pump told. On the trio thread (what tasks read)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            self._exit_code = proc.poll()
        if self._exit is not None:
            self._exit.close()
        if self._drain is not None:
            self._drain.stop()  # one byte: the pump lets go by itself

    def _cleanup(self, background: bool = False) -> None:
        """Close what is open, and remove the socket folder and the cgroup, the latter
        after reclaiming its memory (what its processes brought into the page cache and
        the dentry cache would stay there, handed to the parent cgroup); ``background``:
        that on a thread of its own, not to hold up the caller (some tens of ms).

        It reads files and ``/proc``: :meth:`aclose` runs it on a thread, after
        :meth:`_detach`. Other tasks may read the process meanwhile: its CPU and limit
        figures are noted before the cgroup is let go, so they see either."""
        _close(self._info, self._sock_dir, self._sock)
        self._info = self._sock_dir = self._sock = None
        cgroup = self._cgroup
        if cgroup is not None and cgroup.pids() and self._proc is None and background:
            # ended, yet processes are left in its cgroup (one forked as it was killed):
            # killed again on a thread of its own until the cgroup is empty, then
            # removed, and its uid given back
            self._cgroup, lease, self._lease = None, self._lease, None
            threading.Thread(target=_kill_until_empty, args=(cgroup, lease),
                             name="bot-cgroup-survivors", daemon=True).start()
            cgroup = None
        if cgroup is not None and not cgroup.pids():
            # what a report of its end needs, read before the cgroup goes
            self._last_cpu_ns = cgroup.cpu_ns()
            self._last_limit_hit = cgroup.limit_hit()
            self._cgroup = None
            if background:  # (if the arena ends first, its reaper removes the cgroup)
                threading.Thread(target=_reclaim_and_remove, args=(cgroup,),
                                 name="bot-cgroup-end", daemon=True).start()
            else:
                _reclaim_and_remove(cgroup)
        self._end_lease(emptied=cgroup is not None and self._cgroup is None)
        if self._dir is not None:
            for entry in os.listdir(self._dir):
                try:
                    os.unlink(os.path.join(self._dir, entry))
                except OSError:
                    pass
            try:
                os.rmdir(self._dir)
            except OSError:
                pass
            self._dir = None


    def _end_lease(self, emptied: bool) -> None:
        """Give the uid back once no process runs as it: its cgroup was ``emptied`` (one
        still holding some keeps the uid until the arena ends); without cgroups, the
        processes are looked for."""
        lease = self._lease
        if lease is None or (self._proc is not None and self._proc.poll() is None):
            return
        if not emptied and (self._cgroup is not None or ids.processes_of(lease.uid)):
            return
        self._lease = None
        lease.release()


def _kill_while_held(cgroup: Cgroup, wait_s: float) -> None:
    """SIGKILL what is left in ``cgroup`` until it is empty, up to ``wait_s`` (blocks:
    on a thread): the cgroup empties a moment after its leader is reaped."""
    ends = time.monotonic() + wait_s
    while cgroup.pids() and time.monotonic() < ends:
        cgroup.kill_all(signal.SIGKILL)
        time.sleep(0.005)


def _reclaim_and_remove(cgroup: Cgroup) -> None:
    cgroup.reclaim()
    cgroup.remove()


SURVIVOR_TRIES = 200
"""How many times (50 ms apart) a cgroup whose processes outlived their bot is killed
again before it is left to the next run's sweep."""


def _kill_until_empty(cgroup: Cgroup, lease: ids.Lease | None) -> None:
    for _ in range(SURVIVOR_TRIES):
        if not cgroup.pids():
            _reclaim_and_remove(cgroup)
            if lease is not None:
                lease.release()
            return
        cgroup.kill_all(signal.SIGKILL)
        time.sleep(0.05)
    # still not empty: the cgroup and the uid stay held until the arena ends (its
    # reaper and the next run's sweep kill what is left)


def _close(*fds: int | None) -> None:
    for fd in fds:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


def _signal_name(signo: int) -> str:
    """``SIGSEGV (signal 11)``, or ``signal 40`` for a number without a name."""
    try:
        return f"{signal.Signals(signo).name} (signal {signo})"
    except ValueError:
        return f"signal {signo}"
