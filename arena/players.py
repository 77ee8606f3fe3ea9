"""The referee's side of a bot: in-process built-ins, and bots reached over gRPC.

:class:`BotConnection` is one bot (a process the arena runs, or an address): it starts
the process, checks its health, does the hand-shake, restarts it after a crash, and
ends it. :class:`RemotePlayer` puts a connection in a seat; several seats and games may
share one connection. :class:`LocalPlayer` seats a built-in bot.
"""

from __future__ import annotations

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
from arena.botproc import BotProcess, BotSpec, BotStartError, new_channel, wait_serving
from arena.bots import Bot, make_bot
from arena.files import safe_name
from arena.referee import Fault, Player
from arena.rules import Decision, View
from arena.trio_grpc import rpc_code, rpc_details, unary_call
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

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        return self.bot.act(view)

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None:
        return None

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None:
        return None


class BotConnection:
    """One external bot: a ``cmd:`` process the arena runs, or a ``grpc://``/``unix:`` address.

    :meth:`open` starts (or reaches) it and does the hand-shake; :meth:`stub` returns the
    stub for the next call, restarting a crashed process first; :meth:`close` ends it.
    """

    def __init__(self, name: str, spec: BotSpec, log_dir: Path, startup_s: float = 10.0,
                 cwd: Path | None = None) -> None:
        if spec.kind == "builtin":
            raise ValueError("a built-in bot needs no connection")
        self.name = name
        self.spec = spec
        self.info: BotInfo | None = None
        self.restarts = 0
        self._startup_s = startup_s
        self._process = (BotProcess(name, spec.value, log_dir / f"{safe_name(name)}.log",
                                    startup_s, cwd) if spec.kind == "cmd" else None)
        self._channel: grpc.Channel | None = None
        self._stub: bot_pb2_grpc.BotServiceStub | None = None
        self._keeper: Any = None
        self._lock = trio.Lock()
        self._dead = ""

    @property
    def log_path(self) -> Path | None:
        return self._process.log_path if self._process else None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    async def open(self, game: str | None = None) -> BotInfo:
        """Start or reach the bot and do the hand-shake; :class:`HandshakeError` if it fails."""
        try:
            await self._connect()
        except BotStartError as e:
            raise HandshakeError(str(e)) from None
        try:
            info = await self._hello()
        except grpc.RpcError as e:
            raise HandshakeError(f"bot {self.name}: hand-shake failed: "
                                 f"{_code_name(e)} {rpc_details(e)}".rstrip()) from None
        except WireError as e:
            raise HandshakeError(f"bot {self.name}: bad hand-shake: {e}") from None
        if not 1 <= info.protocol_version <= PROTOCOL_VERSION:
            raise HandshakeError(f"bot {self.name}: speaks protocol version "
                                 f"{info.protocol_version}; this referee speaks 1.."
                                 f"{PROTOCOL_VERSION}")
        if game is not None and game not in info.games:
            raise HandshakeError(f"bot {self.name}: does not play {game} "
                                 f"(it plays {', '.join(info.games)})")
        self.info = info
        return info

    async def _hello(self) -> BotInfo:
        assert self._stub is not None
        reply = await unary_call(self._stub.Hello, hello_request(__version__),
                                 timeout=HELLO_TIMEOUT_S)
        return bot_info_from_response(reply)

    async def _connect(self) -> None:
        self._drop_channel()
        if self._process is not None:
            self._channel = await self._process.start()
        else:
            channel = new_channel(self.spec.target)
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
        if process is not None and (self._stub is None or not process.alive()):
            if not restart:
                return None
            async with self._lock:
                if self._dead:
                    raise Fault("crash", self._dead)
                if self._stub is None or not process.alive():
                    await self._restart()
        if self._stub is None:
            raise Fault("crash", "not connected")
        return self._stub

    async def _restart(self) -> None:
        # Shielded, so a decision's deadline cannot leave a half-started process behind;
        # the start-up limit still bounds it.
        self.restarts += 1
        with trio.CancelScope(shield=True):
            try:
                await self._connect()
                await self._hello()
            except (BotStartError, grpc.RpcError, WireError) as e:
                self._drop_channel()
                if self._process is not None:
                    self._process.stop_now()
                self._dead = f"restart failed: {e}"
                raise Fault("crash", self._dead) from None

    async def crash_detail(self, error: grpc.RpcError) -> str:
        """What a failed connection means: the process's exit, or the transport error."""
        if self._process is not None:
            # a dying process closes its socket a moment before it has exited
            with trio.move_on_after(EXIT_WAIT_S):
                while self._process.pid is not None and self._process.returncode is None:
                    await trio.sleep(0.005)
            code = self._process.returncode
            if code is not None:
                return f"the bot process exited with code {code}; restarting it"
        return f"connection failed: {rpc_details(error)}"

    def _drop_channel(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            self._keeper = None
        if self._channel is not None:
            self._channel.close()
        self._channel = None
        self._stub = None

    def close(self) -> None:
        """End the bot (if the arena started it) and the channel; safe to call twice."""
        self._drop_channel()
        if self._process is not None:
            self._process.stop_now()


_FAULTS_BY_CODE = {
    grpc.StatusCode.DEADLINE_EXCEEDED: "timeout",
    grpc.StatusCode.UNAVAILABLE: "crash",
}


class RemotePlayer:
    """A seat played by a bot over gRPC."""

    def __init__(self, connection: BotConnection, name: str | None = None) -> None:
        self.connection = connection
        self.name = name or connection.name

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        stub = await self.connection.stub()
        assert stub is not None
        request = decision_request(view, game_id, table_id, deadline_ms, bank_ms)
        decision = view.decision
        method = (stub.Play if decision is Decision.PLAY else
                  stub.Bid if decision is Decision.BID else stub.ChooseTrump)
        try:
            response = await unary_call(method, request, timeout=deadline_ms / 1000)
        except grpc.RpcError as e:
            code = rpc_code(e)
            kind = "protocol" if code is None else _FAULTS_BY_CODE.get(code, "protocol")
            if kind == "timeout":
                raise Fault(kind, f"no answer within {deadline_ms} ms") from None
            if kind == "crash":
                raise Fault(kind, await self.connection.crash_detail(e)) from None
            raise Fault(kind, f"answered with status {_code_name(e)}: "
                              f"{rpc_details(e)}".rstrip(": ")) from None
        try:
            return action_from_response(response, view.game)
        except WireError as e:
            raise Fault("protocol", str(e)) from None

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None:
        info = self.connection.info
        if info is not None and info.skip_round_ended:
            return
        stub = await self.connection.stub(restart=False)
        if stub is not None:  # a dead bot is not restarted just to hear the news
            await unary_call(stub.RoundEnded, round_ended_request(result), deadline_ms / 1000)

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None:
        stub = await self.connection.stub(restart=False)
        if stub is not None:
            await unary_call(stub.GameEnded, game_ended_request(result), deadline_ms / 1000)


@dataclass(frozen=True, slots=True)
class SeatSpec:
    """A seat to fill: the bot's name at the table and how to reach it."""

    name: str
    spec: BotSpec


@asynccontextmanager
async def seated_players(seats: Sequence[SeatSpec], game: str, log_dir: Path,
                         seed: int | str = 0, startup_s: float = 10.0,
                         ) -> AsyncIterator[list[Player]]:
    """Players for ``seats``, one connection per external seat, ended on exit.

    The hand-shakes run concurrently; the first failure raises :class:`HandshakeError`
    after every started process has been ended.
    """
    connections: list[BotConnection] = []
    players: list[Player] = []
    try:
        for seat, entry in enumerate(seats):
            if entry.spec.kind == "builtin":
                players.append(LocalPlayer(make_bot(entry.spec.value, f"{seed}/{seat}"),
                                           entry.name))
            else:
                conn = BotConnection(entry.name, entry.spec, log_dir, startup_s)
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
        for conn in connections:
            conn.close()


def _code_name(error: grpc.RpcError) -> str:
    code = rpc_code(error)
    return code.name if code is not None else "UNKNOWN"


__all__ = [
    "BotConnection",
    "HandshakeError",
    "LocalPlayer",
    "RemotePlayer",
    "SeatSpec",
    "seated_players",
]
