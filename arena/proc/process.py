"""Bot specs, and the bot processes the arena starts, watches, restarts and ends.

A spec is a built-in name (``random``, ``heuristic``), ``cmd:<command line>`` (a child
process the arena starts in its own process group, listening on a fresh unix socket in a
private temporary directory, named in ``ARENA_BOT_LISTEN``), or ``grpc://host:port`` /
``grpcs://host:port`` (TLS) / ``unix:PATH`` (a bot already running, never started or
stopped by the arena). How a remote bot is reached (its CA, server name, bearer token,
whether plain ``grpc://`` beyond this machine is allowed) is its :class:`Remote`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import trio

from arena.files import FolderError, private_dir, safe_name
from arena.model.errors import BotStartError, SandboxError
from arena.model.limits import STOP_WALL_S, Confinement
from arena.model.spec import command_args
from arena.proc import ids
from arena.proc.bwrap import (
    SOCKET_DIR,
    bwrap_binary,
    bwrap_options,
    idle_start_possible,
    options_fd,
    seccomp_fd,
    spawn_wrapper,
    view_images,
    warm_roots,
)
from arena.proc.cgroup import Cgroup, limit_mechanism
from arena.proc.logs import LogPump, log_text, open_new_log
from arena.proc.tasks import describe_processes, on_the_way
from arena.proc.view import WARM_CAP_BYTES, warm
from arena.wire.channels import Channel, new_channel, wait_serving

CALLS = {"Hello": "during the hand-shake", "Bid": "during a Bid", "Play": "during a Play",
         "ChooseTrump": "during a ChooseTrump", "RoundEnded": "during a RoundEnded",
         "GameEnded": "during a GameEnded"}
"""The calls of the protocol, and how a crash report says a process ended in one."""

STARTING = "start-up"
"""The "call" of a process that ended before it served (:meth:`BotProcess.ended_text`)."""

EXIT_WAIT_S = 0.5
"""How long a failed call waits for the bot process to have exited (and its last words
to be in its log), to say how it ended."""

KILLED_EXIT_WAIT_S = 10.0
"""How long it waits instead once the kernel has killed one of the bot's processes at its
memory limit: the process is ending, but on a loaded machine giving back hundreds of MiB
and tearing down the sandbox can take more than :data:`EXIT_WAIT_S`, and the fault must
then still say ``resource`` (the limit), not a lost connection."""

_over_cap_said: list[bool] = []
"""Whether the warning of a view above the warm cap was given (once a process)."""
_BOT_SECRETS = ("ARENA_BOT_TOKEN", "ARENA_BOT_TLS_CERT", "ARENA_BOT_TLS_KEY")
"""Variables of the arena's environment a bot it starts does not inherit: that bot serves
on a private unix socket, without TLS or a token."""


SOCKET_PATH_MAX = 107
"""The longest path of a unix socket (``sun_path`` holds 108 bytes with its NUL)."""

SHORT_ROOT = "/tmp"
"""Where socket folders go when the temporary folder's path is too long for a socket."""


def socket_root() -> str:
    """The folder that bots' socket folders are made in: the temporary folder
    (``TMPDIR``), or :data:`SHORT_ROOT` when a socket under it would pass
    :data:`SOCKET_PATH_MAX` bytes. ValueError (one line, naming the folder) when neither
    can hold one."""
    tail = len(f"/arena-bot-{os.getpid()}-xxxxxxxx/bot.sock")
    root = tempfile.gettempdir()
    if len(os.fsencode(root)) + tail <= SOCKET_PATH_MAX:
        return root
    if os.path.isdir(SHORT_ROOT) and os.access(SHORT_ROOT, os.W_OK | os.X_OK):
        return SHORT_ROOT
    raise ValueError(f"the temporary folder {root} is too long for a unix socket's path "
                     f"({SOCKET_PATH_MAX} bytes) and {SHORT_ROOT} is not writable: set "
                     "TMPDIR to a shorter folder")


class BotProcess:
    """One ``cmd:`` bot process, confined (see :mod:`arena.proc.bwrap`), on a private socket.

    :meth:`spawn` starts it; :meth:`ready` waits until it serves and returns a channel;
    :meth:`aclose` ends it without blocking the trio thread (SIGTERM, then SIGKILL) and
    removes its socket folder and cgroup. Its stderr goes to ``log_path``, cut off at
    :data:`LOG_CAP_BYTES`. One object is one process: a restart is a new object, so an
    exit code always belongs to the process that had it.
    """

    def __init__(self, name: str, command: str, log_path: Path, startup_s: float = 10.0,
                 cwd: Path | None = None, confinement: Confinement | None = None,
                 hide: tuple[Path, ...] = (), idle: bool = True) -> None:
        self.name = name
        self.command = command
        self.idle = idle
        """Start at idle CPU priority (a spare, started ahead); False for a start a game
        waits for (it is held to that game's core instead)."""
        self.log_path = log_path
        self.startup_s = startup_s
        self.cwd = cwd
        self.confinement = confinement or Confinement(sandbox=False)
        self.hide = hide
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None
        self._cgroup: Cgroup | None = None
        self._deadline = 0.0
        self._exit_code: int | None = None
        self._drain: LogPump | None = None
        self.target = ""
        """The arena's address of the bot's socket (known once it serves)."""
        self._sent_kill = False
        """Whether the arena sent SIGKILL while the process ran (then a SIGKILL death is
        not the CPU limit's)."""
        self._last_cpu_ns: int | None = None
        self._last_limit_hit: str | None = None
        self._info: int | None = None
        self._info_text = b""
        self._child_pid: int | None = None
        self._sock_dir: int | None = None
        self._sock: int | None = None
        self._lease: ids.Lease | None = None
        """The uid this process runs as outside its sandbox (:mod:`arena.proc.ids`)."""
        self._images: dict[Path, Path] = {}
        """The image of each shared folder of its view (:mod:`arena.proc.images`), found
        by :meth:`warm_view`."""

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

    def spawn(self) -> None:
        """Start the process (confined, in its cgroup); :class:`BotStartError` if it cannot."""
        if self._proc is not None:
            raise RuntimeError("a BotProcess starts once")
        cwd = (self.cwd or Path.cwd()).absolute()
        confinement = self.confinement
        if confinement.sandbox:  # its socket folder is a tmpfs in its sandbox: nothing here
            listen = f"unix:{SOCKET_DIR}/{SOCKET_NAME}"
        else:  # a folder of ours on the host, short enough for a socket's path
            try:
                root = socket_root()
            except ValueError as e:
                raise BotStartError(f"bot {self.name}: {e}") from None
            self._dir = tempfile.mkdtemp(prefix=f"arena-bot-{os.getpid()}-", dir=root)
            listen = self.target = f"unix:{os.path.join(self._dir, SOCKET_NAME)}"
        args = command_args(self.command)
        program = shutil.which(args[0], path=os.environ.get("PATH")) if os.sep not in args[0] \
            else str(cwd / args[0])
        if program is None or not os.path.exists(program):
            self._cleanup()
            raise BotStartError(f"bot {self.name}: cannot start {self.command!r}: "
                                f"No such file or directory")
        if not os.access(program, os.X_OK) or os.path.isdir(program):
            self._cleanup()
            raise BotStartError(f"bot {self.name}: cannot start {self.command!r}: "
                                f"Permission denied")
        env = bot_environment(listen, confinement)
        mechanism = limit_mechanism()
        filter_fd: int | None = None
        info_w: int | None = None
        args_fd: int | None = None
        staged: list[ids.Staged] | None = None
        mounts: list[Path] | None = None
        log_fd: int | None = None
        err_r: int | None = None
        err_w: int | None = None
        try:
            try:
                if confinement.sandbox:
                    self._lease = ids.lease()  # a uid of its own, where the arena is root
                    staged = [] if self._lease is not None else None
                    mounts = [] if self._lease is not None else None
                    filter_fd = seccomp_fd()
                    self._info, info_w = os.pipe2(os.O_CLOEXEC)
                    os.set_blocking(self._info, False)
                    # every option in a sealed memfd (--args): none on a command line
                    args_fd = options_fd(bwrap_options(args, cwd, confinement, env,
                                                       self.hide, seccomp=filter_fd,
                                                       info_fd=info_w, staged=staged,
                                                       images=self._images, mounts=mounts))
                    args = [bwrap_binary(), "--args", str(args_fd), "--", *args]
                    # bubblewrap's own environment (the bot's is cleared and set inside):
                    # only the arena's temporary folder, which says whose sandbox it is
                    env = {"TMPDIR": tempfile.gettempdir()}
                else:
                    env = {**{k: v for k, v in os.environ.items() if k not in _BOT_SECRETS},
                           **env}
                if mechanism.cgroups:
                    self._cgroup = Cgroup(mechanism, confinement.limits,
                                          safe_name(self.name)[:40])
            except (SandboxError, OSError) as e:
                raise _StartFailed(str(e)) from None
            args = spawn_wrapper(self._cgroup, confinement.limits, mechanism, self._lease,
                                 staged, mounts) + args
            try:  # a new file in a folder of ours: a planted symlink is never followed
                private_dir(self.log_path.parent)
                log_fd, self.log_path = open_new_log(self.log_path)
            except (FolderError, OSError) as e:
                why = str(e) if isinstance(e, FolderError) else f"{e.filename}: {e.strerror}"
                raise _StartFailed(f"cannot make its log: {why}") from None
            try:
                # the process's stderr is a pipe of ours, not Popen's: the pump owns its
                # read end (see LogPump), and the arena holds no copy of the write end
                err_r, err_w = os.pipe2(os.O_CLOEXEC)
            except OSError as e:
                raise _StartFailed(f"cannot make its stderr pipe: {e.strerror}") from None
            try:
                self._proc = subprocess.Popen(
                    args, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=err_w, start_new_session=True,
                    pass_fds=tuple(fd for fd in (filter_fd, info_w, args_fd) if fd is not None))
            except OSError as e:
                raise _StartFailed(f"cannot start {self.command!r}: {e.strerror}") from None
        except _StartFailed as e:
            _close(log_fd, err_r)
            self._cleanup()
            raise BotStartError(f"bot {self.name}: {e}") from None
        finally:
            _close(filter_fd, info_w, args_fd, err_w)  # the child has its own copies
        assert log_fd is not None and err_r is not None
        self._drain = LogPump(err_r, log_fd, str(self._proc.pid))
        self._deadline = time.monotonic() + self.startup_s

    async def ready(self) -> Channel:
        """Wait until the spawned process serves; a channel to it. On failure the process
        is ended and :class:`BotStartError` says why."""
        assert self._proc is not None
        try:
            starting = (self._cgroup if self.idle and idle_start_possible(self._cgroup)
                        else None)
            while not self._socket_found():
                if starting is not None and self.idle:
                    starting.idle_priority(self.confinement.sandbox)
                if self.returncode is not None:
                    await self.settle()
                    raise BotStartError(f"bot {self.name}: {self.ended_text(STARTING)}")
                if time.monotonic() > self._deadline:
                    raise BotStartError(f"bot {self.name}: no socket after {self.startup_s:g}"
                                        f" s (does it listen on $ARENA_BOT_LISTEN?); "
                                        f"see {self.log_path}")
                await trio.sleep(0.005)
            if self._cgroup is not None and self.confinement.sandbox:
                # bubblewrap's processes stay out of the stops (see release_wrappers)
                self._cgroup.release_wrappers([self._proc.pid, self._child_pid])
            channel = new_channel(self.target)
            try:
                await wait_serving(channel, self._deadline, self.name, self._ended_before_serving)
            except BotStartError:
                channel.close()
                if self.returncode is None:
                    raise
                await self.settle()  # it ended: say how, with its log's last words
                raise BotStartError(f"bot {self.name}: {self.ended_text(STARTING)}") from None
            except BaseException:
                channel.close()
                raise
            if starting is not None:
                starting.normal_priority()  # it started at idle priority
        except BaseException:
            with trio.CancelScope(shield=True):
                await self.aclose()
            raise
        return channel

    def _socket_found(self) -> bool:
        """Whether the bot's socket is there; then :attr:`target` names it.

        Outside the sandbox: the socket file in its folder. In the sandbox: the arena
        learns the sandbox's first process from bubblewrap's ``--info-fd``, opens the
        socket folder through that process's root (``/proc/PID/root``), each step with
        ``O_PATH|O_NOFOLLOW`` (a symlink the bot made is never followed), checks that
        ``bot.sock`` is a socket, and connects to it through its descriptor
        (``unix:/proc/self/fd/N``): never a path the bot could point elsewhere."""
        if not self.confinement.sandbox:
            return self._dir is not None and os.path.exists(
                os.path.join(self._dir, SOCKET_NAME))
        if self._sock is not None:
            return True
        if self._child_pid is None:
            self._child_pid = self._read_info()
            if self._child_pid is None:
                return False
        if self._sock_dir is None:
            self._sock_dir = _open_path(f"/proc/{self._child_pid}/root",
                                        *SOCKET_DIR.strip("/").split("/"))
            if self._sock_dir is None:
                return False
        try:
            fd = os.open(SOCKET_NAME, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=self._sock_dir)
        except OSError:
            return False
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            os.close(fd)  # not a socket (yet): a bot that never makes one times out
            return False
        self._sock = fd
        self.target = f"unix:/proc/self/fd/{fd}"
        return True

    def _read_info(self) -> int | None:
        """The sandbox's first process from bubblewrap's ``--info-fd``, once written."""
        if self._info is None:
            return None
        try:
            chunk = os.read(self._info, 4096)
        except BlockingIOError:
            return None
        except OSError:
            chunk = b""
        self._info_text += chunk
        try:
            pid = json.loads(self._info_text).get("child-pid")
        except ValueError:
            if chunk:
                return None
            pid = None  # ended without a whole answer: bubblewrap failed (its log says)
        os.close(self._info)
        self._info = None
        return pid if isinstance(pid, int) and pid > 0 else None

    def _ended_before_serving(self) -> str | None:
        if self.returncode is None:
            return None
        return self.exit_text()

    def hurry(self) -> None:
        """Stop starting at idle priority: a game now waits for this process."""
        if self.idle:
            self.idle = False
            if self._cgroup is not None and idle_start_possible(self._cgroup):
                self._cgroup.normal_priority()

    async def start(self) -> Channel:
        """:meth:`warm_view` (on a thread), :meth:`spawn`, then :meth:`ready`."""
        await trio.to_thread.run_sync(self.warm_view)
        self.spawn()
        return await self.ready()

    def warm_view(self, again: bool = False) -> None:
        """Read the part of the bot's sandbox view that other bots see too into the page
        cache, so that reading it sets no bit another bot could time
        (:mod:`arena.proc.view`). Blocks: call it on a thread, before :meth:`spawn`.
        ``again``: a restart after a crash, on the bot's clock: what this process already
        found warm is not walked again. :class:`BotStartError` when its command reaches
        beyond what it may show (:mod:`arena.proc.gate`)."""
        args = command_args(self.command)
        cwd = (self.cwd or Path.cwd()).absolute()
        try:
            roots, exclude, always = warm_roots(args, cwd, self.confinement, self.hide)
        except SandboxError as e:  # the gate refused its command (arena.proc.gate)
            raise BotStartError(f"bot {self.name}: {e}") from None
        if not roots:
            return
        self._images = view_images(roots, exclude, always, self.hide)
        # what the bot reads from an image comes through the image's pages: those are
        # warmed, not the folder's own, which no sandbox shows
        roots = [r for r in roots if not any(r.is_relative_to(i) for i in self._images)]
        done = warm([*roots, *self._images.values()], exclude, always=always, again=again)
        if done.over_cap and not _over_cap_said:
            _over_cap_said.append(True)
            print(f"arena: warning: the sandbox view of bot {self.name} is above the "
                  f"{WARM_CAP_BYTES >> 20} MiB read into the page cache before bots start; "
                  f"{len(done.over_cap)} files (e.g. {done.over_cap[0]}) are not, and "
                  f"reading them is a page-cache timing channel between bots",
                  file=sys.stderr, flush=True)

    # -- while it runs ----------------------------------------------------------------

    def freeze(self, settle: bool = True) -> None:
        """Stop the bot's processes and wait until they are (where it has a cgroup;
        ``settle``: see :meth:`Cgroup.freeze`): blocking, for a stop outside a game. The
        referee's stop is :meth:`rest` and :meth:`stopped`."""
        if self._cgroup is not None:
            self._cgroup.freeze(settle)

    def rest(self) -> None:
        """Begin the stop after a call (:meth:`Cgroup.begin_stop`), without waiting for
        it: :meth:`stopped` waits."""
        if self._cgroup is not None:
            self._cgroup.begin_stop()

    async def stopped(self) -> str | None:
        """Wait, without holding up the trio thread, until the stop :meth:`rest` began
        holds: None once it does (or there is none), else why not, after the process was
        killed for it.

        The bound is the process's ``stop_ms`` (:class:`~arena.model.limits.Limits`): the
        CPU time it may use from when it is found not yet stopped (a task in the kernel
        stops when it leaves it; an honest bot's stop takes microseconds of its CPU, even
        when a busy machine makes it wait for a core), or :data:`STOP_WALL_S` of wall time
        at most. The state is read again at each turn of the trio loop at first, then
        every millisecond: other games go on meanwhile."""
        cgroup = self._cgroup
        if cgroup is None or not cgroup.stop_pending or cgroup.stop_done():
            return None
        bound_ms = self.confinement.limits.stop_ms
        started = time.monotonic()
        cpu_before = cgroup.cpu_ns()
        turns = 0
        while cgroup.stop_pending and not cgroup.stop_done():  # (or continued meanwhile)
            if not self.alive():
                return None  # ended meanwhile: nothing left to stop
            turns += 1
            ran_ns = (cgroup.cpu_ns() or 0) - (cpu_before or 0) if cpu_before is not None else 0
            waited_s = time.monotonic() - started
            if bound_ms and (ran_ns >= bound_ms * 1_000_000 or waited_s >= STOP_WALL_S):
                state = cgroup.describe()
                self._signal_all(signal.SIGKILL)
                why = (f"it ran {ran_ns / 1e6:.1f} ms of CPU meanwhile"
                       if ran_ns >= bound_ms * 1_000_000 else
                       f"not stopped {waited_s * 1000:.0f} ms after it was asked")
                return (f"did not stop within {bound_ms} ms after its call ({why}; "
                        f"{state}); its process was killed")
            await trio.sleep(0 if turns < 8 else 0.001)
        return None

    @property
    def stop_pending(self) -> bool:
        """A stop :meth:`rest` began has not taken hold yet."""
        return self._cgroup is not None and self._cgroup.stop_pending

    def ran_while_stopped_ns(self) -> int:
        """CPU time (ns) the bot's processes have got since they stopped whole, above the
        slack (:meth:`Cgroup.cpu_while_stopped_now`): 0 unless one escaped the stop."""
        if self._cgroup is None:  # (a process gone has no CPU time to gain)
            return 0
        return self._cgroup.cpu_while_stopped_now()

    @property
    def killed(self) -> bool:
        """The arena sent the process SIGKILL while it ran (:meth:`kill`, or its end)."""
        return self._sent_kill

    def kill(self) -> None:
        """SIGKILL to every process of the bot now (frozen or not), as :meth:`aclose`
        ends it, without waiting: :meth:`aclose` (or a restart) reaps it."""
        if self.alive():
            self._signal_all(signal.SIGKILL)

    def thaw(self) -> None:
        if self._cgroup is not None:
            self._cgroup.thaw()

    async def reclaim(self) -> str | None:
        """Drop what the bot's processes brought into the kernel's caches (see
        :meth:`Cgroup.reclaim`), off the trio thread; between its games, while stopped.
        What they still hold then, where they should hold nothing
        (:meth:`Cgroup.held_after_reclaim`: the process must not play again), or None."""
        cgroup = self._cgroup
        if cgroup is None:
            return None

        def reclaim() -> str | None:
            cgroup.reclaim()
            return cgroup.held_after_reclaim()

        return await trio.to_thread.run_sync(reclaim)

    def take_cpu_while_stopped(self) -> int:
        """CPU time (ns) the bot's processes got while stopped since this was last asked:
        0 unless a process escaped the stop (see :meth:`Cgroup.thaw`)."""
        return self._cgroup.take_cpu_while_stopped() if self._cgroup is not None else 0

    def pin(self, core: int | None) -> None:
        """Hold the bot's processes to one core (None: release), where cgroups allow."""
        if self._cgroup is not None:
            self._cgroup.pin(core)

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

    async def settle(self, wait_s: float = EXIT_WAIT_S) -> bool:
        """Wait up to ``wait_s`` for the process to have exited and all it wrote to its
        stderr to be in its log; whether it has exited. (A dying process closes its
        socket a moment before it has exited, and its log is written by a thread.) Up
        to :data:`KILLED_EXIT_WAIT_S` instead when the kernel has killed it at its
        memory limit (so the kind of the fault does not hang on the machine's load)."""
        await self._settle(wait_s)
        cgroup = self._cgroup
        if self.returncode is None and cgroup is not None and cgroup.oom_killed():
            await self._settle(KILLED_EXIT_WAIT_S)
        return self.returncode is not None

    async def _settle(self, wait_s: float) -> None:
        with trio.move_on_after(wait_s):
            while self.returncode is None:
                await trio.sleep(0.005)
            while self._drain is not None and self._drain.is_alive():
                await trio.sleep(0.005)

    # -- ending it --------------------------------------------------------------------

    async def aclose(self, grace_s: float = 1.0, background: bool = True) -> None:
        """End the process and everything it started: SIGTERM, then SIGKILL after
        ``grace_s``. Never blocks the trio thread but with ``background`` False: the
        reclaim of its cgroup is then done before it returns (some ms), not on a thread
        (for a process that held pages: no later process may find them). Safe to call
        twice."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            self._signal_all(signal.SIGTERM)
            with trio.move_on_after(grace_s):
                while proc.poll() is None:
                    await trio.sleep(0.005)
        if proc is not None:
            self._signal_all(signal.SIGKILL)
            with trio.move_on_after(5):
                while proc.poll() is None:
                    await trio.sleep(0.005)
            # the cgroup empties a moment after the leader is reaped
            with trio.move_on_after(1):
                while self._cgroup is not None and self._cgroup.pids():
                    self._signal_all(signal.SIGKILL)
                    await trio.sleep(0.005)
        self._finish(background=background)

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
        proc = self._proc
        if proc is None or proc.poll() is not None:
            raise RuntimeError("terminate() needs a running process")
        started = time.monotonic()
        cpu_before = self.cpu_ns()
        self._signal_all(signal.SIGTERM)

        def on_its_way() -> bool:
            cpu = self.cpu_ns()
            if cpu is not None and cpu_before is not None and (
                    cpu - cpu_before >= busy_cpu_s * 1e9):
                return False
            return on_the_way(self._cgroup.pids() if self._cgroup is not None else [proc.pid])

        with trio.move_on_after(max(wait_s, busy_s)):
            while proc.poll() is None:
                if time.monotonic() - started > wait_s and not on_its_way():
                    return None
                await trio.sleep(0.005)
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
        proc, self._proc = self._proc, None  # ended: no pid any more, its exit code stays
        if proc is not None:
            self._exit_code = proc.poll()
        if self._drain is not None:
            self._drain.stop()  # one byte: the pump lets go by itself
        self._cleanup(background)

    def _cleanup(self, background: bool = False) -> None:
        """Close what is open, and remove the socket folder and the cgroup, the latter
        after reclaiming its memory (what its processes brought into the page cache and
        the dentry cache would stay there, handed to the parent cgroup); ``background``:
        that on a thread of its own, not to hold up the caller (some tens of ms)."""
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


class _StartFailed(Exception):
    """Why a spawn failed (one line), on its way to a :class:`BotStartError`."""


def bot_environment(target: str, confinement: Confinement) -> dict[str, str]:
    """The variables a bot process gets (documented in docs/protocol.md): the listen
    address, and in the sandbox a plain PATH, HOME and locale; plus what the tournament
    file grants the bot."""
    env = {"ARENA_BOT_LISTEN": target, "PYTHONUNBUFFERED": "1"}
    if confinement.sandbox:
        env.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp",
                    "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(dict(confinement.env))
    return env


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


def _open_path(root: str, *names: str) -> int | None:
    """``root``/``names`` as an ``O_PATH`` descriptor of a folder, every name opened with
    ``O_NOFOLLOW`` (a symlink is refused); None where it is not there (yet)."""
    flags = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
    try:
        fd = os.open(root, flags)
    except OSError:
        return None
    for name in names:
        try:
            inner = os.open(name, flags | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = inner
    return fd


SOCKET_NAME = "bot.sock"



def _signal_name(signo: int) -> str:
    """``SIGSEGV (signal 11)``, or ``signal 40`` for a number without a name."""
    try:
        return f"{signal.Signals(signo).name} (signal {signo})"
    except ValueError:
        return f"signal {signo}"
