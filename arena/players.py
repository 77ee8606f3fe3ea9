"""The referee's side of a bot: in-process built-ins, and bots reached over gRPC.

:class:`BotConnection` is one bot (a process the arena runs, or an address): it starts
the process, checks its health, does the hand-shake, restarts it after a crash, and
ends it. :class:`RemotePlayer` puts a connection in a seat; several seats and games may
share one connection. :class:`LocalPlayer` seats a built-in bot.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import trio
from grpc_health.v1 import health_pb2

from arena import __version__
from arena.botproc import BotProcess, BotSpec, BotStartError, remote_channel, wait_serving
from arena.bots import Bot, make_bot
from arena.files import safe_name
from arena.referee import Fault, Player
from arena.rules import Decision, View
from arena.sandbox import Confinement
from arena.trio_grpc import rpc_code, rpc_details, timed_unary_call, unary_call
from arena.v1 import bot_pb2_grpc
from arena.wire import (
    PROTOCOL_VERSION,
    BotInfo,
    GameResult,
    RoundResult,
    WireError,
    action_from_response,
    bot_info_from_response,
    decision_request,
    game_ended_request,
    hello_request,
    round_ended_request,
)

HELLO_TIMEOUT_S = 5.0
EXIT_WAIT_S = 0.5
"""How long a failed call waits for the bot process to have exited, to say so."""


class HandshakeError(RuntimeError):
    """A bot that cannot play: unreachable, wrong protocol version, or not this game.

    The message is one line naming the bot.
    """


class LocalPlayer:
    """A built-in bot, called in-process (it sees only the view, like any bot)."""

    def __init__(self, bot: Bot, name: str | None = None) -> None:
        self.bot = bot
        self.name = name or bot.name
        self.last_cpu_ms: float | None = None

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        act_within = getattr(self.bot, "act_within", None)
        if act_within is not None:
            # a searching bot thinks in a thread, so the event loop (the other games'
            # clocks) keeps running meanwhile; it plans on the move's own time and leaves
            # the bank (the rest of the deadline) for a slow machine to draw on
            action: int = await trio.to_thread.run_sync(
                act_within, view, deadline_ms - bank_ms, abandon_on_cancel=True)
            return action
        return self.bot.act(view)

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None:
        return None

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None:
        return None


class BotConnection:
    """One external bot: a ``cmd:`` process the arena runs, or a ``grpc://``/``unix:`` address.

    :meth:`open` starts (or reaches) it and does the hand-shake; :meth:`stub` returns the
    stub for the next call, restarting a crashed process first (a new process, greeted
    and checked like the first); :meth:`aclose` ends it. Between its calls the process is
    stopped (SIGSTOP, where it has a cgroup): a bot uses CPU only while it is asked.
    """

    def __init__(self, name: str, spec: BotSpec, log_dir: Path, startup_s: float = 10.0,
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
        """Games this connection has been leased for (see :mod:`arena.pool`)."""
        self.deals: set[int] = set()
        """Deal seeds this connection's processes have seen (see :mod:`arena.pool`)."""
        self._startup_s = startup_s
        self._cwd = cwd
        self._log_dir = log_dir
        self.confinement = confinement or Confinement()
        self._hide = hide
        self._idle = idle
        self._process: BotProcess | None = None
        self._channel: grpc.Channel | None = None
        self._retired: list[grpc.Channel] = []
        self._stub: bot_pb2_grpc.BotServiceStub | None = None
        self._keeper: Any = None
        self._lock = trio.Lock()
        self._dead = ""
        self._busy = 0
        self._core: int | None = None

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
        return not self._dead and self._stub is not None and (
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
        return info

    async def _greet(self) -> BotInfo:
        """Hello, checked: the protocol version, and for a restarted or pooled process the
        same name and version as the first."""
        assert self._stub is not None
        try:
            reply = await unary_call(self._stub.Hello, hello_request(__version__),
                                     timeout=HELLO_TIMEOUT_S)
            info = bot_info_from_response(reply)
        except grpc.RpcError as e:
            if rpc_code(e) == grpc.StatusCode.UNAUTHENTICATED:
                token = "our token" if self.spec.remote.token else "us (we sent no token)"
                detail = rpc_details(e)
                raise HandshakeError(f"bot {self.name}: refused {token}: UNAUTHENTICATED"
                                     + (f" {detail}" if detail else "")) from None
            raise HandshakeError(f"bot {self.name}: hand-shake failed: "
                                 f"{_code_name(e)} {rpc_details(e)}".rstrip()) from None
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
            self._process = BotProcess(
                self.name, self.spec.value, next_log_path(self._log_dir, self.name),
                self._startup_s, self._cwd, self.confinement, self._hide,
                idle=self._idle and self._process is None)  # a restart is awaited
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
        self._stub = bot_pb2_grpc.BotServiceStub(self._channel)
        # grpcio's sync channel starts a polling thread whenever a call begins with none in
        # flight, and ends it when the count drops to zero: about one thread per decision.
        # One long-lived call (a health Watch nobody reads) keeps that thread alive.
        watch = self._channel.unary_stream(
            "/grpc.health.v1.Health/Watch",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString)
        self._keeper = watch(health_pb2.HealthCheckRequest(service=""))

    async def stub(self, restart: bool = True) -> bot_pb2_grpc.BotServiceStub | None:
        """The stub for the next call; a crashed process is restarted first (and greeted
        with Hello again). With ``restart`` False, None instead of a restart.

        Raises :class:`Fault` (``crash``) when the bot cannot be restarted.
        """
        if self._dead:
            raise Fault("crash", self._dead)
        process = self._process
        if self.spec.kind == "cmd" and (self._stub is None or process is None
                                        or not process.alive()):
            if not restart:
                return None
            async with self._lock:
                if self._dead:
                    raise Fault("crash", self._dead)
                if self._stub is None or self._process is None or not self._process.alive():
                    await self._restart()
        if self._stub is None:
            raise Fault("crash", "not connected")
        return self._stub

    async def _restart(self) -> None:
        # Shielded, so a decision's deadline cannot leave a half-started process behind;
        # the start-up limit still bounds it.
        self.restarts += 1
        with trio.CancelScope(shield=True):
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

    async def failure(self, error: grpc.RpcError,
                      process: BotProcess | None) -> tuple[str, str]:
        """What a failed call means, as a fault (kind, detail): the exit of ``process``
        (the one the call went to), a limit it hit, or the transport error."""
        if process is not None:
            # a dying process closes its socket a moment before it has exited
            with trio.move_on_after(EXIT_WAIT_S):
                while process.returncode is None:
                    await trio.sleep(0.005)
            if process.returncode is not None:
                limit = process.limit_detail()
                if limit is not None:
                    return "resource", f"{limit}; the process was ended; restarting it"
                return "crash", f"the bot process {process.exit_text()}; restarting it"
        return "crash", f"connection failed: {rpc_details(error)}"

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

    def _rest(self) -> None:
        if self._process is not None and self._process.alive():
            self._process.freeze()

    def cpu_ns(self, stopped_ok: bool = False) -> int | None:
        return self._process.cpu_ns(stopped_ok) if self._process is not None else None

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
        if self._keeper is not None:
            self._keeper.cancel()
            self._keeper = None
        if self._channel is not None:
            self._retired.append(self._channel)
        self._channel = None
        self._stub = None

    async def _end_process(self) -> None:
        if self._process is not None:
            with trio.CancelScope(shield=True):
                await self._process.aclose()

    async def aclose(self) -> None:
        """End the bot (if the arena started it) and its channels; safe to call twice."""
        self._retire_channel()
        with trio.CancelScope(shield=True):
            await self._end_process()
        for channel in self._retired:
            channel.close()
        self._retired.clear()

    def close(self) -> None:
        """A blocking :meth:`aclose`, for the last clean-up outside trio."""
        self._retire_channel()
        if self._process is not None:
            self._process.stop_now()
        for channel in self._retired:
            channel.close()
        self._retired.clear()


_log_numbers: dict[tuple[Path, str], int] = {}


def log_stem(name: str) -> str:
    """The stem of a bot's log files: its name, or, when that is not a safe file name, the
    safe name with a short digest, so two bots never share one."""
    stem = safe_name(name)
    if stem != name:
        stem += "-" + hashlib.sha256(name.encode()).hexdigest()[:6]
    return stem


def next_log_path(log_dir: Path, name: str) -> Path:
    """A new log file per process: ``NAME.log``, then ``NAME.2.log``, ``NAME.3.log``, ...
    (see :func:`log_stem`); a name already in the folder (an earlier run's log, or
    anything else) is skipped, so no file is ever written twice."""
    stem = log_stem(name)
    key = (log_dir, stem)
    number = _log_numbers.get(key, 0)
    while True:
        number += 1
        path = log_dir / (f"{stem}.log" if number == 1 else f"{stem}.{number}.log")
        if not os.path.lexists(path):
            break
    _log_numbers[key] = number
    return path


class UnreachablePlayer:
    """A seat whose bot could not be started for this game: every decision is a
    ``crash`` fault (so the seat is forfeited after ``max_faults``), charged to that bot."""

    def __init__(self, name: str, detail: str) -> None:
        self.name = name
        self.detail = detail
        self.last_cpu_ms: float | None = None

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        raise Fault("crash", self.detail)

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None:
        return None

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None:
        return None


_FAULTS_BY_CODE = {
    grpc.StatusCode.DEADLINE_EXCEEDED: "timeout",
    grpc.StatusCode.UNAVAILABLE: "crash",
}


class RemotePlayer:
    """A seat played by a bot over gRPC."""

    def __init__(self, connection: BotConnection, name: str | None = None) -> None:
        self.connection = connection
        self.name = name or connection.name
        self.last_cpu_ms: float | None = None
        self.last_call_ms: float | None = None

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        conn = self.connection
        self.last_cpu_ms = None
        self.last_call_ms = None
        stub = await conn.stub()
        assert stub is not None
        process = conn.process
        request = decision_request(view, game_id, table_id, deadline_ms, bank_ms)
        decision = view.decision
        method = (stub.Play if decision is Decision.PLAY else
                  stub.Bid if decision is Decision.BID else stub.ChooseTrump)
        before = conn.cpu_ns(stopped_ok=True)
        conn.wake()
        try:
            response, took = await timed_unary_call(method, request, deadline_ms / 1000)
            self.last_call_ms = took * 1000
        except grpc.RpcError as e:
            code = rpc_code(e)
            kind = "protocol" if code is None else _FAULTS_BY_CODE.get(code, "protocol")
            if kind == "timeout":
                raise Fault(kind, f"no answer within {deadline_ms} ms") from None
            if kind == "crash":
                raise Fault(*await conn.failure(e, process)) from None
            raise Fault(kind, f"answered with status {_code_name(e)}: "
                              f"{rpc_details(e)}".rstrip(": ")) from None
        finally:
            conn.rest()
            after = conn.cpu_ns(stopped_ok=True) if process is conn.process else None
            if before is not None and after is not None:
                self.last_cpu_ms = (after - before) / 1e6
        try:
            return action_from_response(response, view.game)
        except WireError as e:
            raise Fault("protocol", str(e)) from None

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None:
        info = self.connection.info
        if info is not None and info.skip_round_ended:
            return
        await self._notify("RoundEnded", round_ended_request(result), deadline_ms)

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None:
        await self._notify("GameEnded", game_ended_request(result), deadline_ms)

    async def _notify(self, method: str, request: Any, deadline_ms: int) -> None:
        conn = self.connection
        stub = await conn.stub(restart=False)
        if stub is None:  # a dead bot is not restarted just to hear the news
            return
        conn.wake()
        try:
            await unary_call(getattr(stub, method), request, deadline_ms / 1000)
        finally:
            conn.rest()


@dataclass(frozen=True, slots=True)
class SeatSpec:
    """A seat to fill: the bot's name at the table and how to reach it."""

    name: str
    spec: BotSpec
    player: Player | None = None
    """A player the caller made (a person's seat, :mod:`arena.human`): seated as it is."""


@asynccontextmanager
async def seated_players(seats: Sequence[SeatSpec], game: str, log_dir: Path,
                         seed: int | str = 0, startup_s: float = 10.0,
                         confinement: Confinement | None = None,
                         ) -> AsyncIterator[list[Player]]:
    """Players for ``seats``, one connection per external seat, ended on exit.

    ``cmd:`` bots run confined as ``confinement`` says (default: sandboxed, with the
    default limits).

    The hand-shakes run concurrently; the first failure raises :class:`HandshakeError`
    after every started process has been ended.
    """
    connections: list[BotConnection] = []
    players: list[Player] = []
    try:
        for seat, entry in enumerate(seats):
            if entry.player is not None:
                players.append(entry.player)
            elif entry.spec.kind == "builtin":
                players.append(LocalPlayer(make_bot(entry.spec.value, f"{seed}/{seat}"),
                                           entry.name))
            else:
                conn = BotConnection(entry.name, entry.spec, log_dir, startup_s,
                                     confinement=confinement)
                connections.append(conn)
                players.append(RemotePlayer(conn))
        errors: list[HandshakeError] = []

        async def open_one(conn: BotConnection) -> None:
            try:
                await conn.open(game)
            except HandshakeError as e:
                errors.append(e)

        async with trio.open_nursery() as nursery:
            for conn in connections:
                nursery.start_soon(open_one, conn)
        if errors:
            raise errors[0]
        for player in players:
            if isinstance(player, RemotePlayer) and player.connection.info is not None:
                player.name = player.connection.info.name
        yield players
    finally:
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for conn in connections:
                    nursery.start_soon(conn.aclose)


def _code_name(error: grpc.RpcError) -> str:
    code = rpc_code(error)
    return code.name if code is not None else "UNKNOWN"


__all__ = [
    "BotConnection",
    "HandshakeError",
    "LocalPlayer",
    "RemotePlayer",
    "SeatSpec",
    "UnreachablePlayer",
    "seated_players",
]
