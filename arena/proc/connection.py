"""One external bot as the referee reaches it: a ``cmd:`` process the arena runs (started,
greeted, restarted after a crash, stopped between its calls, pinned to a core, ended),
or an address it only reaches (``grpc://``, ``grpcs://``, ``unix:``)."""

from __future__ import annotations

import time
from pathlib import Path

import trio

from arena import __version__
from arena.model.errors import BotStartError
from arena.model.faults import Fault
from arena.model.limits import Confinement
from arena.model.results import BotInfo
from arena.model.spec import BotSpec
from arena.proc.logs import LogFolder
from arena.proc.process import BotProcess
from arena.proc.supervise import EXIT_WAIT_S
from arena.wire.channels import Channel, remote_channel, wait_serving
from arena.wire.client import BotClient, CallFailed
from arena.wire.serde import PROTOCOL_VERSION, WireError

HELLO_TIMEOUT_S = 5.0


class HandshakeError(RuntimeError):
    """A bot that cannot play: unreachable, wrong protocol version, or not this game.

    The message is one line naming the bot.
    """


class BotConnection:
    """One external bot: a ``cmd:`` process the arena runs, or a ``grpc://``/``unix:`` address.

    :meth:`open` starts (or reaches) it and does the hand-shake; :meth:`client` returns
    the client for the next call, restarting a crashed process first (a new process,
    greeted and checked like the first); :meth:`aclose` ends it. Between its calls the
    process is stopped (where it has a cgroup): a bot uses CPU only while it is asked.
    """

    def __init__(self, name: str, spec: BotSpec, log_dir: Path | LogFolder, startup_s: float = 10.0,
                 cwd: Path | None = None, confinement: Confinement | None = None,
                 hide: tuple[Path, ...] = (), expect: BotInfo | None = None,
                 idle: bool = False) -> None:
        if spec.kind == "builtin":
            raise ValueError("a built-in bot needs no connection")
        self.name = name
        self.spec = spec
        self.info: BotInfo | None = None
        self.expect = expect
        """The hand-shake a restarted (or pooled) process must repeat: name and protocol."""
        self.restarts = 0
        self.games = 0
        """Games this connection has been leased for (see :mod:`arena.play.pool`)."""
        self.deals: set[int] = set()
        """Deal seeds this connection's processes have seen (see :mod:`arena.play.pool`)."""
        self._startup_s = startup_s
        self._cwd = cwd
        self._logs = log_dir if isinstance(log_dir, LogFolder) else LogFolder(log_dir)
        self.confinement = confinement or Confinement()
        self._hide = hide
        self._idle = idle
        self._process: BotProcess | None = None
        self._channel: Channel | None = None
        self._retired: list[Channel] = []
        """Channels replaced by a restart, closed once no call is in flight."""
        self._client: BotClient | None = None
        self._lock = trio.Lock()
        self._dead = ""
        self._busy = 0
        self._core: int | None = None
        self._stop_fault: str | None = None
        """Why the last stop failed, until a decision is charged with it."""
        self._reported: BotProcess | None = None
        """The process whose end :meth:`ended` last reported."""
        self.last_end = ""
        """How the last process that ended by itself ended (:meth:`BotProcess.ended_text`),
        for a report after the game (``arena check-bot``'s); "" while none has."""

    @property
    def log_path(self) -> Path | None:
        return self._process.log_path if self._process else None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def process(self) -> BotProcess | None:
        """The current process (a restart replaces it)."""
        return self._process

    @property
    def usable(self) -> bool:
        """Connected, and not given up on after a failed restart."""
        return not self._dead and self._client is not None and (
            self._process is None or self._process.alive())

    async def open(self, game: str | None = None) -> BotInfo:
        """Start or reach the bot and do the hand-shake; :class:`HandshakeError` if it fails."""
        try:
            await self._connect()
            info = await self._greet()
        except BotStartError as e:
            await self._end_process()
            raise HandshakeError(str(e)) from None
        except BaseException:  # a failed hand-shake, or a cancelled one: no process left
            await self._end_process()
            raise
        if game is not None and game not in info.games:
            await self._end_process()
            raise HandshakeError(f"bot {self.name}: does not play {game} "
                                 f"(it plays {', '.join(info.games)})")
        self.info = info
        self.expect = self.expect or info
        self._rest()
        with trio.CancelScope(shield=True):  # (bounded by its stop_ms)
            await self.stopped()  # (one that fails is charged at its first decision)
        return info

    async def _greet(self) -> BotInfo:
        """Hello, checked: the protocol version, and for a restarted or pooled process the
        same name and version as the first."""
        if self._client is None:
            raise HandshakeError(f"bot {self.name}: not connected")
        process = self._process
        try:
            info = await self._client.hello(__version__, HELLO_TIMEOUT_S)
        except CallFailed as e:
            # a bot that died in its Hello leaves UNAVAILABLE: wait for its exit then only
            ended = await self.ended(process, "Hello",
                                     wait_s=EXIT_WAIT_S if e.code == "UNAVAILABLE" else 0)
            if ended is not None:
                raise HandshakeError(f"bot {self.name}: {ended}") from None
            if e.code == "UNAUTHENTICATED":
                token = "our token" if self.spec.remote.token else "us (we sent no token)"
                raise HandshakeError(f"bot {self.name}: refused {token}: UNAUTHENTICATED"
                                     + (f" {e.details}" if e.details else "")) from None
            raise HandshakeError(f"bot {self.name}: hand-shake failed: {e}") from None
        except WireError as e:
            raise HandshakeError(f"bot {self.name}: bad hand-shake: {e}") from None
        if not 1 <= info.protocol_version <= PROTOCOL_VERSION:
            raise HandshakeError(f"bot {self.name}: speaks protocol version "
                                 f"{info.protocol_version}; this referee speaks 1.."
                                 f"{PROTOCOL_VERSION}")
        expect = self.expect
        if expect is not None and (info.name, info.protocol_version) != (
                expect.name, expect.protocol_version):
            raise HandshakeError(
                f"bot {self.name}: a new process answered the hand-shake as "
                f"{info.name!r} (protocol {info.protocol_version}), not as "
                f"{expect.name!r} (protocol {expect.protocol_version})")
        return info

    async def _connect(self) -> None:
        self._retire_channel()
        if self.spec.kind == "cmd":
            restart = self._process is not None
            # the log's number is found by looking at the folder: on a thread
            log_path = await trio.to_thread.run_sync(self._logs.next_path, self.name)
            self._process = BotProcess(
                self.name, self.spec.value, log_path,
                self._startup_s, self._cwd, self.confinement, self._hide,
                idle=self._idle and self._process is None)  # a restart is awaited
            await trio.to_thread.run_sync(self._process.warm_view, restart)
            # on the loop's thread, not a worker's: the parent-death signal of what a
            # thread forks fires when that thread ends (docs/architecture.md)
            self._process.spawn()
            self._process.pin(self._core)
            self._channel = await self._process.ready()
        else:
            channel = remote_channel(self.spec, self.name)
            try:
                await wait_serving(channel, time.monotonic() + self._startup_s, self.name)
            except BaseException:
                channel.close()
                raise
            self._channel = channel
        self._client = BotClient(self._channel)
        self._client.keep_polling()

    async def client(self, restart: bool = True) -> BotClient | None:
        """The client for the next call; a crashed process is restarted first (and greeted
        with Hello again). With ``restart`` False, None instead of a restart.

        Raises :class:`Fault` (``crash``) when the bot cannot be restarted.
        """
        if self._dead:
            raise Fault("crash", self._dead)
        process = self._process
        if self.spec.kind == "cmd" and (self._client is None or process is None
                                        or not process.alive() or process.killed):
            if not restart:
                return None
            async with self._lock:
                if self._dead:
                    raise Fault("crash", self._dead)
                if (self._client is None or self._process is None
                        or not self._process.alive() or self._process.killed):
                    await self._restart()
        if self._client is None:
            raise Fault("crash", "not connected")
        return self._client

    async def _restart(self) -> None:
        # Shielded, so a decision's deadline cannot leave a half-started process behind;
        # the start-up limit still bounds it.
        self.restarts += 1
        with trio.CancelScope(shield=True):
            old = self._process
            if old is not None and old is not self._reported and old.returncode is not None:
                # unreported: it died between calls
                self.last_end = await old.ended_report(None)
            await self._end_process()
            try:
                await self._connect()
                await self._greet()
            except (BotStartError, HandshakeError) as e:
                await self._end_process()
                self._dead = f"restart failed: {e}"
                raise Fault("crash", self._dead) from None
            if not self._busy:
                self._rest()
                await self.stopped()

    async def ended(self, process: BotProcess | None, call: str, then: str = "",
                    wait_s: float = EXIT_WAIT_S) -> str | None:
        """After a failed ``call`` to ``process`` (the one the call went to): how the
        process ended, in that call, with its log (:meth:`BotProcess.ended_text`, with
        ``then``), or None when it has not ended within ``wait_s``. Every command's
        report of a dead bot comes from here."""
        if process is None or not await process.settle(wait_s):
            return None
        self._reported = process
        ended: BotProcess = process

        def texts() -> tuple[str, str]:  # they read its log: on a thread
            return ended.ended_text(call), ended.ended_text(call, then)

        self.last_end, text = await trio.to_thread.run_sync(texts)
        return text

    async def failure(self, error: CallFailed, process: BotProcess | None,
                      call: str, restarting: bool = True) -> tuple[str, str]:
        """What a failed ``call`` means, as a fault (kind, detail): the end of ``process``
        (the one the call went to), ``resource`` where it hit a limit, or the transport
        error. ``restarting``: the detail says the process is restarted (for its next
        decision)."""
        ended = await self.ended(process, call, "restarting it" if restarting else "")
        if ended is None or process is None:
            return "crash", f"connection failed: {error.details}"
        return ("crash" if process.limit_detail() is None else "resource",
                f"the bot process {ended}")

    # -- stopping the bot between its calls -----------------------------------------

    def wake(self) -> None:
        """Before a call: thaw the process (calls may overlap in ``shared`` isolation)."""
        self._busy += 1
        if self._process is not None:
            self._process.thaw()

    def rest(self) -> None:
        """After a call: freeze the process once no call is in flight."""
        self._busy -= 1
        if not self._busy:
            self._rest()
            self._close_retired()

    def _rest(self) -> None:
        if self._process is not None and self._process.alive():
            self._process.rest()  # the fair clock's stop, after each call: begun here

    async def stopped(self) -> str | None:
        """Wait, off the trio thread's time, until the stop :meth:`rest` began holds
        (:meth:`BotProcess.stopped`): before the bot's next call, and before its CPU
        figure is taken. None when it does (or no stop is due: a call is in flight);
        else the fault's detail ("did not stop within N ms ..."), the process killed
        for it; the detail is also kept for :meth:`take_stop_fault` until taken."""
        process = self._process
        if self._busy or process is None:
            return None
        detail = await process.stopped()
        if detail is not None:
            self._stop_fault = detail
        return detail

    @property
    def stop_pending(self) -> bool:
        """A stop :meth:`rest` began has not taken hold yet (:meth:`stopped` waits)."""
        return self._process is not None and self._process.stop_pending

    def take_stop_fault(self) -> str | None:
        """The detail of a stop that failed (:meth:`stopped`) and was not yet charged to
        a decision (one after a notification, or in a call that failed otherwise), then
        None."""
        detail, self._stop_fault = self._stop_fault, None
        return detail

    def ran_while_stopped_ns(self) -> int:
        """CPU time (ns) the bot's processes got since they last stopped whole, when
        one ran while stopped (0 as a rule; a look: :meth:`cpu_while_stopped_ns` counts
        it again at the next continue)."""
        if self._busy or self._process is None:
            return 0
        return self._process.ran_while_stopped_ns()

    def end_now(self) -> None:
        """Kill the bot's processes at once (one that ran while stopped); its next call
        restarts it, as after a crash."""
        if self._process is not None:
            self._process.kill()

    def cpu_ns(self, stopped_ok: bool = False) -> int | None:
        return self._process.cpu_ns(stopped_ok) if self._process is not None else None

    async def reclaim(self) -> str | None:
        """Between two games of the process: drop what it brought into the kernel's
        caches (:meth:`arena.proc.process.BotProcess.reclaim`); what it still holds that
        it should not (then it must not play again), or None."""
        if self._process is not None and self._process.alive():
            return await self._process.reclaim()
        return None

    async def memory_bytes(self) -> int | None:
        """The memory its process holds now (stopped and reclaimed, what it keeps while
        idle), or None where nothing counts it."""
        if self._process is not None and self._process.alive():
            return await self._process.memory_bytes()
        return None

    def cpu_while_stopped_ns(self) -> int:
        """CPU time the bot got while it was stopped, found since this was last asked (0
        for a bot that was stopped whole: its processes cannot run while stopped)."""
        return self._process.take_cpu_while_stopped() if self._process is not None else 0

    def hurry(self, core: int | None) -> None:
        """A game now waits for this connection while its process starts (a spare started
        ahead, at idle priority): start it at normal priority, held to the game's core."""
        self._idle = False
        self.pin(core)
        if self._process is not None:
            self._process.hurry()

    def pin(self, core: int | None) -> None:
        """Hold this bot to ``core`` while it plays a game (a restart keeps it there):
        with one game per core, a thinking bot has its core to itself, and cannot take
        another game's core by spinning threads."""
        self._core = core
        if self._process is not None:
            self._process.pin(core)

    # -- ending ---------------------------------------------------------------------

    def _retire_channel(self) -> None:
        # a channel is closed only at the end: closing it under calls still in flight
        # (another game's, in shared isolation) would turn their failure into CANCELLED
        if self._client is not None:
            self._client.close()
        if self._channel is not None:
            self._retired.append(self._channel)
        self._channel = None
        self._client = None
        if not self._busy:
            self._close_retired()

    def _close_retired(self) -> None:
        for channel in self._retired:
            channel.close()
        self._retired.clear()

    async def _end_process(self, background: bool = True) -> None:
        if self._process is not None:
            with trio.CancelScope(shield=True):
                await self._process.aclose(background=background)

    async def aclose(self, background: bool = True) -> None:
        """End the bot (if the arena started it) and its channels; safe to call twice.
        ``background`` False: its memory is reclaimed before this returns
        (:meth:`arena.proc.process.BotProcess.aclose`)."""
        self._retire_channel()
        with trio.CancelScope(shield=True):
            await self._end_process(background)
        self._close_retired()

    def close(self) -> None:
        """A blocking :meth:`aclose`, for the last clean-up outside trio."""
        self._retire_channel()
        if self._process is not None:
            self._process.stop_now()
        self._close_retired()

