"""What the referee makes of each way a call to a bot can fail, pinned with a scripted
bot in the test's own process (tests/scripted.py): ``RemotePlayer.decide``'s fault
mapping (arena/play/players.py), the greeting (``BotConnection._greet``) and the restart
(``BotConnection.client``, arena/proc/connection.py), call by call, over real gRPC on a
unix socket. The restart needs a process to kill: tests/bots/relay.py, a ``cmd:`` bot
that only passes the calls on to the script.

The same faults from real misbehaving processes (tests/bots/crasher.py, garbage.py,
sleepy.py, ...) stay in tests/test_grpc_games.py and tests/test_sandbox.py; those also
cover what only a real bot's process shows (a limit's ``resource`` fault, CPU used while
stopped, how a crashed process ended and its log), which no script reaches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
import trio
from conftest import Sandbox, bot_cmd
from scripted import ScriptedBot, hello, scripted_bot

from arena.model.faults import Fault
from arena.model.limits import Confinement
from arena.model.results import BotInfo
from arena.model.spec import BotSpec
from arena.play.players import RemotePlayer
from arena.proc import connection
from arena.proc.connection import BotConnection, HandshakeError
from arena.rules import Decision, View, new_game
from arena.v1 import bot_pb2, game_pb2
from arena.wire import serde

INFO = BotInfo("scripted", "1.0", "tests", serde.PROTOCOL_VERSION, ("wizard",))
_T = TypeVar("_T")


def first_view(decision: Decision) -> View:
    """The first view of a seeded Wizard game that asks ``decision`` (seed 0 turns a
    Wizard, so a trump is chosen in it)."""
    game = new_game("wizard", {"players": 3}, 0)
    while game.to_move is not None:
        view = game.view(game.to_move)
        if view.decision is decision:
            return view
        game.apply(view.legal[0])
    raise AssertionError(f"no {decision} in the game")


PLAY = first_view(Decision.PLAY)


@pytest.fixture
def bot() -> Iterator[ScriptedBot]:
    with scripted_bot() as scripted:
        yield scripted


@pytest.fixture
def greeted(bot: ScriptedBot) -> ScriptedBot:
    """The scripted bot, its first call a Hello answered with :data:`INFO`."""
    bot.expect("Hello", hello(INFO))
    return bot


def run(bot: ScriptedBot, tmp_path: Path, body: Callable[[BotConnection], Awaitable[_T]],
        expect: BotInfo | None = None) -> _T:
    """``body`` on a connection to ``bot`` (opened for Wizard only by ``body`` itself),
    closed after it; the script checked."""
    async def main() -> _T:
        conn = BotConnection("scripted", bot.spec, tmp_path, startup_s=5.0, expect=expect)
        try:
            return await body(conn)
        finally:
            await conn.aclose()

    value = trio.run(main)
    bot.check()
    return value


def decide(bot: ScriptedBot, tmp_path: Path, view: View = PLAY,
           deadline_ms: int = 5000) -> int:
    """Greet the bot (its script starts with Hello), then one decision of a
    RemotePlayer on it."""

    async def body(conn: BotConnection) -> int:
        await conn.open("wizard")
        return await RemotePlayer(conn).decide(view, "game-1", "table-1", deadline_ms, 0)

    return run(bot, tmp_path, body)


def fault_of(bot: ScriptedBot, tmp_path: Path, **kwargs: Any) -> Fault:
    with pytest.raises(Fault) as info:
        decide(bot, tmp_path, **kwargs)
    return info.value


# -- decisions --------------------------------------------------------------------------


@pytest.mark.parametrize(("decision", "method"), [
    (Decision.BID, "Bid"), (Decision.TRUMP, "ChooseTrump"), (Decision.PLAY, "Play")])
def test_an_answer_is_the_action_of_the_call_for_the_decision(
        greeted: ScriptedBot, tmp_path: Path, decision: Decision, method: str) -> None:
    view = first_view(decision)
    action = view.legal[-1]
    greeted.expect(method, serde.action_to_response(decision, action))
    assert decide(greeted, tmp_path, view, deadline_ms=1234) == action
    (greeting, call) = greeted.calls
    assert greeting.method == "Hello" and call.method == method
    assert call.request.deadline_ms == 1234 and call.request.game_id == "game-1"


def test_no_answer_by_the_deadline_is_a_timeout(greeted: ScriptedBot, tmp_path: Path) -> None:
    held = greeted.expect("Play", hold=True)
    fault = fault_of(greeted, tmp_path, deadline_ms=50)
    assert (fault.kind, fault.detail) == ("timeout", "no answer within 50 ms")
    assert held.ended.wait(5)  # the bot saw its call end: the deadline reached it


def test_unavailable_is_a_crash_naming_the_transport_error(
        greeted: ScriptedBot, tmp_path: Path) -> None:
    greeted.expect("Play", abort=grpc.StatusCode.UNAVAILABLE, details="Socket closed")
    fault = fault_of(greeted, tmp_path)
    # a bot the arena only reaches has no process to tell how it ended
    assert (fault.kind, fault.detail) == ("crash", "connection failed: Socket closed")


@pytest.mark.parametrize(("answer", "detail"), [
    (bot_pb2.PlayResponse(), "PlayResponse has no card"),
    (bot_pb2.PlayResponse(card=game_pb2.Card(kind=1, suit=2, rank=20)), "rank 20"),
])
def test_a_malformed_answer_is_a_protocol_fault(greeted: ScriptedBot, tmp_path: Path,
                                                answer: Any, detail: str) -> None:
    greeted.expect("Play", answer)
    fault = fault_of(greeted, tmp_path)
    assert fault.kind == "protocol" and detail in fault.detail and not fault.forfeit


@pytest.mark.parametrize("code", [grpc.StatusCode.INTERNAL, grpc.StatusCode.UNIMPLEMENTED,
                                  grpc.StatusCode.RESOURCE_EXHAUSTED])
def test_any_other_status_is_a_protocol_fault_naming_it(
        greeted: ScriptedBot, tmp_path: Path, code: grpc.StatusCode) -> None:
    greeted.expect("Play", abort=code, details="no luck")
    fault = fault_of(greeted, tmp_path)
    assert (fault.kind, fault.detail) == ("protocol",
                                          f"answered with status {code.name}: no luck")


def test_a_fault_leaves_the_bot_asked_again(greeted: ScriptedBot, tmp_path: Path) -> None:
    """After a fault the next decision goes to the same bot (no restart, no greeting
    again: a bot the arena only reaches is never restarted)."""
    greeted.expect("Play", abort=grpc.StatusCode.UNAVAILABLE, details="blip")
    greeted.expect("Play", hold=True)
    greeted.expect("Play", serde.action_to_response(Decision.PLAY, PLAY.legal[0]))

    async def body(conn: BotConnection) -> list[object]:
        await conn.open("wizard")
        player = RemotePlayer(conn)
        seen: list[object] = []
        for deadline_ms in (5000, 50, 5000):  # (the held call alone ends by its deadline)
            try:
                seen.append(await player.decide(PLAY, "g", "t", deadline_ms, 0))
            except Fault as fault:
                seen.append(fault.kind)
        return seen

    assert run(greeted, tmp_path, body) == ["crash", "timeout", PLAY.legal[0]]


# -- the greeting -----------------------------------------------------------------------


def greet(bot: ScriptedBot, tmp_path: Path, game: str = "wizard",
          expect: BotInfo | None = None) -> BotInfo:
    async def body(conn: BotConnection) -> BotInfo:
        return await conn.open(game)

    return run(bot, tmp_path, body, expect)


def refused(bot: ScriptedBot, tmp_path: Path, game: str = "wizard",
            expect: BotInfo | None = None) -> str:
    with pytest.raises(HandshakeError) as info:
        greet(bot, tmp_path, game, expect)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_a_greeting_gives_the_bots_info(bot: ScriptedBot, tmp_path: Path) -> None:
    bot.expect("Hello", hello(INFO))
    assert greet(bot, tmp_path) == INFO
    assert bot.calls[0].request.protocol_version == serde.PROTOCOL_VERSION


def test_a_newer_protocol_is_refused(bot: ScriptedBot, tmp_path: Path) -> None:
    newer = serde.PROTOCOL_VERSION + 1
    bot.expect("Hello", hello(BotInfo("scripted", "1.0", "tests", newer, ("wizard",))))
    assert refused(bot, tmp_path) == (
        f"bot scripted: speaks protocol version {newer}; this referee speaks "
        f"1..{serde.PROTOCOL_VERSION}")


def test_a_bot_that_does_not_play_the_game_is_refused(bot: ScriptedBot,
                                                      tmp_path: Path) -> None:
    bot.expect("Hello", hello(INFO))
    assert refused(bot, tmp_path, "trumps") == (
        "bot scripted: does not play trumps (it plays wizard)")


def test_a_greeting_unlike_the_first_is_refused(bot: ScriptedBot, tmp_path: Path) -> None:
    bot.expect("Hello", hello(INFO))
    first = BotInfo("original", "1.0", "tests", serde.PROTOCOL_VERSION, ("wizard",))
    assert refused(bot, tmp_path, expect=first) == (
        "bot scripted: a new process answered the hand-shake as 'scripted' (protocol 1), "
        "not as 'original' (protocol 1)")


def test_a_malformed_greeting_is_refused(bot: ScriptedBot, tmp_path: Path) -> None:
    bot.expect("Hello", bot_pb2.HelloResponse(name="scripted", version="1", protocol_version=1))
    assert refused(bot, tmp_path) == (
        "bot scripted: bad hand-shake: HelloResponse names no game this referee knows")


def test_a_refused_token_is_said(bot: ScriptedBot, tmp_path: Path) -> None:
    bot.expect("Hello", abort=grpc.StatusCode.UNAUTHENTICATED, details="bad token")
    assert refused(bot, tmp_path) == (
        "bot scripted: refused us (we sent no token): UNAUTHENTICATED bad token")


def test_a_greeting_never_answered_fails_at_its_limit(
        bot: ScriptedBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "HELLO_TIMEOUT_S", 0.05)
    held = bot.expect("Hello", hold=True)
    # (the status's text after its name is grpcio's: "Deadline Exceeded", or "Stream
    # removed (Deadline Exceeded)" when it ends the stream first)
    assert refused(bot, tmp_path).startswith(
        "bot scripted: hand-shake failed: DEADLINE_EXCEEDED ")
    assert held.ended.wait(5)


def test_a_greeting_cut_off_fails_naming_the_transport_error(
        bot: ScriptedBot, tmp_path: Path) -> None:
    bot.expect("Hello", abort=grpc.StatusCode.UNAVAILABLE, details="Socket closed")
    assert refused(bot, tmp_path) == (
        "bot scripted: hand-shake failed: UNAVAILABLE Socket closed")


# -- the script itself ------------------------------------------------------------------


def test_a_call_out_of_turn_is_reported(bot: ScriptedBot, tmp_path: Path) -> None:
    bot.expect("Bid", serde.action_to_response(Decision.BID, 0))
    with pytest.raises(HandshakeError, match="FAILED_PRECONDITION script: Hello came, "
                                             "not Bid"):
        greet(bot, tmp_path)
    with pytest.raises(AssertionError, match="Hello came, not Bid"):
        bot.check()


# -- the restart (a real process: a relay to the scripted bot) --------------------------

RELAY = Path(__file__).resolve().parent / "bots" / "relay.py"


def relayed(bot: ScriptedBot, sandbox: Sandbox) -> BotConnection:
    """A ``cmd:`` bot whose process (tests/bots/relay.py, unsandboxed) passes every call
    on to ``bot``: killing it is a crash; what its restart answers is the script's."""
    return BotConnection("relayed", BotSpec.parse(bot_cmd(RELAY, bot.address)),
                         sandbox.tmp / "logs", startup_s=30.0,
                         confinement=Confinement(sandbox=False))


def test_a_killed_process_is_restarted_and_greeted_again(
        bot: ScriptedBot, arena_sandbox: Sandbox) -> None:
    answer = serde.action_to_response(Decision.PLAY, PLAY.legal[0])
    bot.expect("Hello", hello(INFO))
    bot.expect("Play", answer)
    bot.expect("Hello", hello(INFO))  # the new process's
    bot.expect("Play", answer)

    async def main() -> tuple[int | None, int | None, int]:
        conn = relayed(bot, arena_sandbox)
        try:
            await conn.open("wizard")
            player = RemotePlayer(conn)
            await player.decide(PLAY, "g", "t", 5000, 0)
            first = conn.pid
            conn.end_now()  # killed between its calls: its next call restarts it
            assert await player.decide(PLAY, "g", "t", 5000, 0) == PLAY.legal[0]
            return first, conn.pid, conn.restarts
        finally:
            await conn.aclose()

    first, second, restarts = trio.run(main)
    bot.check()
    assert restarts == 1 and first != second


def test_a_restart_greeted_as_another_bot_is_given_up(
        bot: ScriptedBot, arena_sandbox: Sandbox) -> None:
    """A new process must answer Hello as the first did; one that does not is a crash,
    and the bot is not started again (every later decision is the same crash)."""
    bot.expect("Hello", hello(INFO))
    bot.expect("Hello", hello(dataclasses.replace(INFO, name="impostor")))

    async def main() -> list[Fault]:
        conn = relayed(bot, arena_sandbox)
        faults = []
        try:
            await conn.open("wizard")
            conn.end_now()
            for _ in range(2):
                with pytest.raises(Fault) as info:
                    await RemotePlayer(conn).decide(PLAY, "g", "t", 5000, 0)
                faults.append(info.value)
            return faults
        finally:
            await conn.aclose()

    faults = trio.run(main)
    bot.check()
    said = ("restart failed: bot relayed: a new process answered the hand-shake as "
            "'impostor' (protocol 1), not as 'scripted' (protocol 1)")
    assert [(f.kind, f.detail) for f in faults] == [("crash", said)] * 2
