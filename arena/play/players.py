"""The players the referee seats: a built-in bot in-process (:class:`LocalPlayer`), a
bot over gRPC (:class:`RemotePlayer`, on a
:class:`~arena.proc.connection.BotConnection`; several seats and games may share one
connection), and a seat whose bot could not start (:class:`UnreachablePlayer`).
"""

from __future__ import annotations

from collections.abc import Awaitable

import trio

from arena.bots import Bot
from arena.model.faults import Fault
from arena.model.results import GameResult, RoundResult
from arena.proc.connection import BotConnection
from arena.rules import Decision, View
from arena.wire.client import BotClient, CallFailed
from arena.wire.serde import WireError


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


_FAULTS_BY_CODE = {"DEADLINE_EXCEEDED": "timeout", "UNAVAILABLE": "crash"}
"""The fault a failed call is, by its status (any other status is a ``protocol`` fault)."""

_CALL_OF = {Decision.BID: "Bid", Decision.PLAY: "Play", Decision.TRUMP: "ChooseTrump"}
"""The protocol's call for each decision."""


class RemotePlayer:
    """A seat played by a bot over gRPC (see :class:`~arena.proc.connection.BotConnection`).

    ``last_call_ms`` is how long its last :meth:`decide` call took on the wire, start to
    answer: the bot's own time, not the arena's work around the call."""

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
        # a stop begun earlier (after the hand-shake, a notification) holds first: the
        # bot is never asked while a task of it is still running from before
        await _stopped(conn)
        stop_fault = conn.take_stop_fault()
        if stop_fault is not None:
            raise Fault("resource", stop_fault, forfeit=True)
        client = await conn.client()
        if client is None:
            raise Fault("crash", "not connected")
        process = conn.process
        before = conn.cpu_ns(stopped_ok=True)
        conn.wake()
        try:
            escaped = conn.cpu_while_stopped_ns()
            if escaped:
                conn.end_now()
                raise Fault("resource", f"used CPU while stopped ({escaped / 1e6:.1f} ms "
                                        f"between its calls); its process was killed",
                            forfeit=True)
            action, took = await client.decide(view, game_id, table_id, deadline_ms, bank_ms)
            self.last_call_ms = took * 1000
        except CallFailed as e:
            kind = _FAULTS_BY_CODE.get(e.code, "protocol")
            if kind == "timeout":
                raise Fault(kind, f"no answer within {deadline_ms} ms") from None
            if kind == "crash":
                call = _CALL_OF.get(view.decision) if view.decision else None
                raise Fault(*await conn.failure(e, process, call or "Play")) from None
            raise Fault(kind, f"answered with status {e.code}: {e.details}".rstrip(": ")
                        ) from None
        except WireError as e:
            raise Fault("protocol", str(e)) from None
        finally:
            conn.rest()
            # the CPU figure is taken once the bot has stopped: awaited, never waited for
            # on the trio thread (a failed stop kills the bot and is its fault: below,
            # or at its next decision when this call failed otherwise)
            await _stopped(conn)
            after = conn.cpu_ns(stopped_ok=True) if process is conn.process else None
            if before is not None and after is not None:
                self.last_cpu_ms = (after - before) / 1e6
        stop_fault = conn.take_stop_fault()
        if stop_fault is not None:
            raise Fault("resource", stop_fault, forfeit=True)
        return action

    def ran_while_stopped_ms(self) -> float | None:
        """The CPU time (ms) this seat's bot got while stopped, when it did (one of its
        processes escaped the stop, e.g. bubblewrap's init under the old arrangement),
        its processes killed at once; None as a rule. The referee asks after each other
        seat's call: what the bot took then was taken from that seat."""
        ran = self.connection.ran_while_stopped_ns()
        if not ran:
            return None
        self.connection.end_now()  # (killed frozen: no continue counts it again)
        return ran / 1e6

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None:
        """The RoundEnded notification, unless the bot declined it; when it fails,
        :class:`Fault` if the process died in it (saying how), else :class:`CallFailed`
        (the referee ignores both)."""
        info = self.connection.info
        if info is not None and info.skip_round_ended:
            return
        client = await self._notified()
        if client is not None:
            await self._notify("RoundEnded", client.round_ended(result, deadline_ms / 1000))

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None:
        """The GameEnded notification; when it fails, as :meth:`round_ended`."""
        client = await self._notified()
        if client is not None:
            await self._notify("GameEnded", client.game_ended(result, deadline_ms / 1000))

    async def _notified(self) -> BotClient | None:
        """The client for a notification, the bot woken for it (the caller puts it to rest
        again); None for a dead bot, which is not restarted just to hear the news."""
        client = await self.connection.client(restart=False)
        if client is not None:
            self.connection.wake()
        return client

    async def _notify(self, call: str, notification: Awaitable[None]) -> None:
        conn = self.connection
        process = conn.process
        try:
            await notification
        except CallFailed as e:
            if e.code == "UNAVAILABLE":
                kind, detail = await conn.failure(e, process, call, restarting=False)
                if process is not None and process.returncode is not None:
                    raise Fault(kind, detail) from None
            raise
        finally:
            conn.rest()
            await _stopped(conn)  # a failed stop is charged at the bot's next decision


async def _stopped(conn: BotConnection) -> None:
    """:meth:`BotConnection.stopped`, shielded (a decision cancelled at its deadline
    still waits for the stop it began, bounded by the bot's ``stop_ms``); nothing at all
    when the stop has already taken hold (as a rule: no cancel scope per decision)."""
    if conn.stop_pending:
        with trio.CancelScope(shield=True):
            await conn.stopped()
