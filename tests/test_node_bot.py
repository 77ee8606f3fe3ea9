"""The Node.js sample bot (sample_bots/node) as a real child process over real gRPC, and
its copy of the protocol (sample_bots/node/proto), which must be proto/ byte for byte."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from conftest import REPO, health_check, proto_copy_drift
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from arena.bots import make_bot
from arena.model import results
from arena.model.record import game_record, verify_record
from arena.rules import Decision, Game, new_game
from arena.v1 import bot_pb2, bot_pb2_grpc, game_pb2
from arena.wire import serde as wire

BOT_DIR = REPO / "sample_bots" / "node"
NODE = shutil.which("node")

# Every test but the proto copy's needs node and the bot's packages.
needs_node = pytest.mark.skipif(
    NODE is None or not (BOT_DIR / "node_modules").is_dir(),
    reason="node not found on PATH: the Node.js sample bot is not tested" if NODE is None
    else "sample_bots/node/node_modules is missing: run `npm ci` in sample_bots/node")

STARTUP_S = 10.0
CALL_S = 5.0


@dataclass
class NodeBot:
    """A running bot process, its socket and a stub connected to it."""

    proc: subprocess.Popen[bytes]
    socket: Path
    log: Path
    channel: grpc.Channel
    stub: bot_pb2_grpc.BotServiceStub

    def stop(self) -> int | None:
        """SIGTERM to the process group, SIGKILL if it lingers; the exit code (None if it
        had to be killed)."""
        self.channel.close()
        code: int | None = None
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:  # any child left in the group goes too
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait(timeout=5)
        return code



def _socket_dir(base: Path) -> Path:
    """``base`` if a socket path in it fits the ~100-byte limit, else a short temp dir."""
    return base if len(str(base / "bot.sock")) < 100 else Path(tempfile.mkdtemp(prefix="nb-"))


def start_bot(directory: Path, *, use_env: bool = True) -> NodeBot:
    """Start the bot on ``directory``/bot.sock (named in ARENA_BOT_LISTEN, or with
    ``--listen``), wait for the socket, then for the health check to say SERVING."""
    assert NODE is not None
    directory = _socket_dir(directory)
    socket, log = directory / "bot.sock", directory / "bot.log"
    target = f"unix:{socket}"
    env = {k: v for k, v in os.environ.items() if k != "ARENA_BOT_LISTEN"}
    args = [NODE, str(BOT_DIR / "bot.js")]
    if use_env:
        env["ARENA_BOT_LISTEN"] = target
    else:
        args += ["--listen", target]
    with open(log, "wb") as err:
        proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    channel = grpc.insecure_channel(target)
    bot = NodeBot(proc, socket, log, channel, bot_pb2_grpc.BotServiceStub(channel))
    try:
        deadline = time.monotonic() + STARTUP_S
        while not socket.exists():
            assert proc.poll() is None, f"the bot exited early: {log.read_text()}"
            assert time.monotonic() < deadline, f"no socket: {log.read_text()}"
            time.sleep(0.005)
        while True:
            try:
                if health_check(channel) == health_pb2.HealthCheckResponse.SERVING:
                    return bot
            except grpc.RpcError:
                pass
            assert time.monotonic() < deadline, f"not SERVING: {log.read_text()}"
            time.sleep(0.02)
    except BaseException:
        bot.stop()
        raise


@pytest.fixture(scope="module")
def node_bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeBot]:
    """One bot process for the module's game tests; it must shut down cleanly."""
    bot = start_bot(tmp_path_factory.mktemp("node"))
    try:
        yield bot
    finally:
        code = bot.stop()
        assert code == 0, f"exit code {code}: {bot.log.read_text()}"
        assert not bot.socket.exists()


# -- start-up, hand-shake and shutdown ----------------------------------------------------


def test_its_proto_copy_is_proto_byte_for_byte() -> None:
    """bot.js loads the protocol from its own folder (the sandbox shows it no other):
    ``make sample-protos`` refreshes the copy from proto/."""
    assert proto_copy_drift(BOT_DIR) == []
    assert "path.join(__dirname, 'proto')" in (BOT_DIR / "bot.js").read_text()


@needs_node
def test_no_address_is_a_one_line_error() -> None:
    assert NODE is not None
    env = {k: v for k, v in os.environ.items() if k != "ARENA_BOT_LISTEN"}
    result = subprocess.run([NODE, str(BOT_DIR / "bot.js")], env=env, capture_output=True,
                            text=True, timeout=30)
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1
    assert "ARENA_BOT_LISTEN" in result.stderr and "--listen" in result.stderr


@needs_node
def test_listen_flag_reflection_and_a_clean_sigterm(tmp_path: Path) -> None:
    bot = start_bot(tmp_path, use_env=False)
    try:
        assert (health_check(bot.channel, "arena.v1.BotService")
                == health_pb2.HealthCheckResponse.SERVING)
        reflection = ProtoReflectionDescriptorDatabase(bot.channel)
        assert set(reflection.get_services()) == {"arena.v1.BotService",
                                                  "grpc.health.v1.Health"}
    finally:
        code = bot.stop()
    assert code == 0, bot.log.read_text()
    assert not bot.socket.exists()
    assert "SIGTERM" in bot.log.read_text()


@needs_node
def test_hello(node_bot: NodeBot) -> None:
    reply = node_bot.stub.Hello(wire.hello_request("test"), timeout=CALL_S)
    assert (reply.name, reply.protocol_version) == ("node-sample", 1)
    assert reply.version and reply.author
    info = wire.bot_info_from_response(reply)
    assert info.games == ("wizard", "trumps")


# -- the strategy --------------------------------------------------------------------------


def _card(text: str) -> game_pb2.Card:
    return wire.card_to_message({"W": 64, "J": 65}.get(text) or _suited(text))


def _suited(text: str) -> int:
    return "CDHS".index(text[0]) << 4 | int(text[1:])


def _play_request(bid: int | None, legal: list[str]) -> bot_pb2.PlayRequest:
    """Seat 0 of a 3-player Wizard round 4 (trump spades), no trick won yet, to lead."""
    req = bot_pb2.PlayRequest(game_id="g", table_id="t", deadline_ms=1000,
                              legal_cards=[_card(c) for c in legal])
    view = req.view
    view.game = game_pb2.GAME_WIZARD
    view.options.players = view.players = 3
    view.round, view.rounds, view.dealer = 4, 20, 2
    view.hand.extend(req.legal_cards)
    view.trump = game_pb2.SUIT_SPADES
    if bid is not None:
        view.bids.add(seat=0, tricks=bid)
    view.trick.leader = 0
    view.won.extend([0, 0, 0])
    view.scores.extend([0, 0, 0])
    view.tricks_in_round = 4
    return req


@needs_node
def test_plays_high_while_it_needs_tricks_else_low(node_bot: NodeBot) -> None:
    legal = ["C13", "H3", "S2", "W", "J"]
    for bid, expected in [(1, "W"), (0, "J")]:
        reply = node_bot.stub.Play(_play_request(bid, legal), timeout=CALL_S)
        assert reply.card == _card(expected), bid
    reply = node_bot.stub.Play(_play_request(2, ["C13", "H3", "S2"]), timeout=CALL_S)
    assert reply.card == _card("S2")  # a trump beats a king of another suit
    reply = node_bot.stub.Play(_play_request(0, ["C13", "H3", "S2"]), timeout=CALL_S)
    assert reply.card == _card("H3")


@needs_node
def test_chooses_the_suit_it_holds_most_of(node_bot: NodeBot) -> None:
    req = bot_pb2.ChooseTrumpRequest(game_id="g", table_id="t", deadline_ms=1000,
                                     legal_suits=[wire.suit_to_enum(s) for s in range(4)])
    req.view.hand.extend([_card(c) for c in ["C2", "H4", "H9", "D1", "H12", "W"]])
    assert node_bot.stub.ChooseTrump(req, timeout=CALL_S).suit == game_pb2.SUIT_HEARTS


# -- whole games ---------------------------------------------------------------------------


def _play_game(node_bot: NodeBot, g: Game, seats: list[str]) -> set[Decision]:
    """Play ``g`` to its end: the seats named ``node`` by the Node bot over gRPC (with
    the RoundEnded and GameEnded notifications), the others by in-process bots."""
    calls: dict[type, Callable[..., Any]] = {
        bot_pb2.BidRequest: node_bot.stub.Bid, bot_pb2.PlayRequest: node_bot.stub.Play,
        bot_pb2.ChooseTrumpRequest: node_bot.stub.ChooseTrump}
    local = {i: make_bot(name, i) for i, name in enumerate(seats) if name != "node"}
    node_seats = [i for i, name in enumerate(seats) if name == "node"]
    game_id = f"{g.name}-test"
    asked: set[Decision] = set()
    while g.to_move is not None:
        view = g.view(g.to_move)
        if g.to_move in local:
            action = local[g.to_move].act(view)
        else:
            assert view.decision is not None
            asked.add(view.decision)
            request = wire.decision_request(view, game_id, "table-1", 5000, 0)
            action = wire.action_from_response(calls[type(request)](request, timeout=CALL_S),
                                               g.name)
            assert action in view.legal, f"seat {view.seat}: {action} not in {view.legal}"
        finished = len(g.log)
        g.apply(action)
        if len(g.log) > finished or g.to_move is None:
            for seat in node_seats:
                result = results.round_result(g, finished, seat, game_id, "table-1")
                reply = node_bot.stub.RoundEnded(wire.round_ended_request(result),
                                                 timeout=CALL_S)
                assert reply == bot_pb2.RoundEndedResponse()
    for seat in node_seats:
        outcome = results.game_result(g, seat, game_id, "table-1")
        ended = node_bot.stub.GameEnded(wire.game_ended_request(outcome), timeout=CALL_S)
        assert ended == bot_pb2.GameEndedResponse()
    assert g.is_over
    verify_record(game_record(g, [s if s != "node" else "node-sample" for s in seats]))
    return asked


@needs_node
def test_a_wizard_game_with_the_bot_in_every_seat(node_bot: NodeBot) -> None:
    # Seed 0 turns a Wizard once, so the bot is asked to choose trump too.
    g = new_game("wizard", {"players": 4, "hook_rule": True}, 0)
    asked = _play_game(node_bot, g, ["node"] * 4)
    assert asked == {Decision.BID, Decision.TRUMP, Decision.PLAY}
    assert len(g.log) == 15


@needs_node
def test_a_trumps_game_with_announcements(node_bot: NodeBot) -> None:
    g = new_game("trumps", {"players": 4, "announce": True}, 1)
    asked = _play_game(node_bot, g, ["node", "random", "node", "heuristic"])
    assert asked == {Decision.BID, Decision.PLAY}
    assert all(b is not None for b in g.log[0].bids or ())
    assert "game trumps-test over" in node_bot.log.read_text()
