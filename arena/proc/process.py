"""One ``cmd:`` bot process (:class:`BotProcess`): its start (confined, in its cgroup, in
its own process group and session, listening on a fresh unix socket named in
``ARENA_BOT_LISTEN``), the wait until it serves, and its controls while it runs (the stop
between calls, the core it is held to, its CPU time). Its supervision to its end, and the
report of how it ended, are :mod:`arena.proc.supervise`'s (its base class)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from arena.files import FolderError, private_dir, safe_name
from arena.model.errors import BotStartError, SandboxError
from arena.model.limits import STOP_WALL_S, Confinement
from arena.model.spec import command_args
from arena.proc import ids, keeper
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
from arena.proc.exits import ExitWatch
from arena.proc.logs import LogPump, open_new_log
from arena.proc.supervise import STARTING, Supervised, _close
from arena.proc.supervise import _kill_until_empty as _kill_until_empty  # (tests use it)
from arena.proc.view import WARM_CAP_BYTES, warm
from arena.wire.channels import Channel, new_channel, wait_serving

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


class BotProcess(Supervised):
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
        self._exit: ExitWatch | None = None
        """The process's exit, awaited (:mod:`arena.proc.exits`)."""
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
        self._exit = ExitWatch(self._proc)
        self._drain = LogPump(err_r, log_fd, str(self._proc.pid))
        self._deadline = time.monotonic() + self.startup_s

    async def ready(self) -> Channel:
        """Wait until the spawned process serves; a channel to it. On failure the process
        is ended and :class:`BotStartError` says why."""
        assert self._proc is not None and self._exit is not None
        exit_watch = self._exit
        try:
            starting = (self._cgroup if self.idle and idle_start_possible(self._cgroup)
                        else None)
            served: list[Channel] = []
            failed: list[Exception] = []
            async with trio.open_nursery() as nursery:

                async def serve() -> None:
                    try:
                        served.append(await self._serve(starting))
                    except Exception as e:  # raised below, not in a group
                        failed.append(e)
                    nursery.cancel_scope.cancel()

                nursery.start_soon(serve)
                await exit_watch.wait()  # it ended first: the start stops at once
                nursery.cancel_scope.cancel()
            if served and self.returncode is None:
                return served[0]
            for channel in served:
                channel.close()
            if failed and (self.returncode is None
                           or not isinstance(failed[0], BotStartError)):
                raise failed[0]
            await self.settle()  # it ended: say how, with its log's last words
            ended = await self.ended_report(STARTING)
            raise BotStartError(f"bot {self.name}: {ended}")
        except BaseException:
            with trio.CancelScope(shield=True):
                await self.aclose()
            raise

    async def _serve(self, starting: Cgroup | None) -> Channel:
        """The start's steps while the process runs (:meth:`ready` stops them when it
        ends): its socket, then its health service saying SERVING."""
        assert self._proc is not None
        while not await trio.to_thread.run_sync(self._start_turn, starting):
            if time.monotonic() > self._deadline:
                raise BotStartError(f"bot {self.name}: no socket after {self.startup_s:g}"
                                    f" s (does it listen on $ARENA_BOT_LISTEN?); "
                                    f"see {self.log_path}")
            await trio.sleep(SOCKET_LOOK_S)
        if self._cgroup is not None and self.confinement.sandbox:
            # bubblewrap's processes stay out of the stops (see release_wrappers)
            self._cgroup.release_wrappers([self._proc.pid, self._child_pid])
        channel = new_channel(self.target)
        try:
            await wait_serving(channel, self._deadline, self.name, self._ended_before_serving)
        except BaseException:
            channel.close()
            raise
        if starting is not None:
            # it started at idle priority (/proc walked: on a thread)
            await trio.to_thread.run_sync(starting.normal_priority)
        return channel

    def _start_turn(self, starting: Cgroup | None) -> bool:
        """One look for the socket while the process starts, on a thread (it reads
        ``/proc``): the new threads of a spare starting at idle priority put there, then
        whether its socket is there (:meth:`_socket_found`)."""
        if starting is not None and self.idle:
            starting.idle_priority(self.confinement.sandbox)
        return self._socket_found()

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
        # on the loop's thread, not a worker's: the parent-death signal of what a thread
        # forks fires when that thread ends (docs/architecture.md)
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
        if done.over_cap and keeper.current().first_time("view above the warm cap"):
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
                state = await trio.to_thread.run_sync(cgroup.describe)  # (/proc)
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

    async def memory_bytes(self) -> int | None:
        """The memory charged to the bot's processes now (:meth:`Cgroup.memory_bytes`),
        read off the trio thread; None without a memory cgroup."""
        cgroup = self._cgroup
        if cgroup is None:
            return None
        return await trio.to_thread.run_sync(cgroup.memory_bytes)

    def take_cpu_while_stopped(self) -> int:
        """CPU time (ns) the bot's processes got while stopped since this was last asked:
        0 unless a process escaped the stop (see :meth:`Cgroup.thaw`)."""
        return self._cgroup.take_cpu_while_stopped() if self._cgroup is not None else 0

    def pin(self, core: int | None) -> None:
        """Hold the bot's processes to one core (None: release), where cgroups allow."""
        if self._cgroup is not None:
            self._cgroup.pin(core)

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

SOCKET_LOOK_S = 0.005
"""How often a starting process's socket is looked for (its exit is awaited, not looked
for: :mod:`arena.proc.exits`)."""
