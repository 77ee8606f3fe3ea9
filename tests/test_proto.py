"""The arena.v1 contract: generated code is current, Buf lint is clean, gRPC works end to end."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from conftest import REPO

from arena import _genproto
from arena.model import results
from arena.rules import Decision, View, new_game
from arena.v1 import bot_pb2, bot_pb2_grpc, game_pb2
from arena.wire import serde as wire

BUF_DIR = REPO / "tools" / "buf"


# -- generated code ---------------------------------------------------------------------


def test_generated_code_is_current() -> None:
    result = subprocess.run([sys.executable, "-m", "arena._genproto", "--check"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the repository's proto/ and arena/v1/."""
    shutil.copytree(REPO / "proto", tmp_path / "proto")
    shutil.copytree(REPO / "arena" / "v1", tmp_path / "arena" / "v1",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_the_check_names_every_drifting_file(tree: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert _genproto.drift(tree) == []
    v1 = tree / "arena" / "v1"
    with (v1 / "bot_pb2.pyi").open("a") as f:
        f.write("# edited by hand\n")
    (v1 / "game_pb2.py").unlink()
    (v1 / "old_pb2.py").write_text("# from a .proto that is gone\n")
    assert _genproto.main(["--check", "--root", str(tree)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    for name in ("arena/v1/bot_pb2.pyi", "arena/v1/game_pb2.py", "arena/v1/old_pb2.py"):
        assert name in err
    assert "bot_pb2.py," not in err  # the unchanged files are not named

    assert _genproto.main(["--root", str(tree)]) == 0
    assert _genproto.drift(tree) == []
    assert not (v1 / "old_pb2.py").exists()


def test_a_changed_proto_needs_regenerated_code(tree: Path) -> None:
    proto = tree / "proto" / "arena" / "v1" / "bot.proto"
    text = proto.read_text()
    assert "string author = 3;" in text
    proto.write_text(text.replace("string author = 3;", "string authors = 3;"))
    assert _genproto.drift(tree) == ["arena/v1/bot_pb2.py", "arena/v1/bot_pb2.pyi"]


# -- the contract -----------------------------------------------------------------------


def test_the_service_has_the_calls_of_the_protocol() -> None:
    service = bot_pb2.DESCRIPTOR.services_by_name["BotService"]
    calls = {m.name: (m.input_type.name, m.output_type.name) for m in service.methods}
    assert calls == {name: (f"{name}Request", f"{name}Response") for name in (
        "Hello", "Bid", "ChooseTrump", "Play", "RoundEnded", "GameEnded")}
    assert not any(m.client_streaming or m.server_streaming for m in service.methods)
    assert bot_pb2.DESCRIPTOR.package == "arena.v1"
    versions = bot_pb2.ProtocolVersion.values()
    assert wire.PROTOCOL_VERSION == max(versions) == 1


def test_every_decision_request_carries_ids_view_legal_actions_and_time() -> None:
    for name, legal in [("BidRequest", "legal_bids"), ("ChooseTrumpRequest", "legal_suits"),
                        ("PlayRequest", "legal_cards")]:
        fields = bot_pb2.DESCRIPTOR.message_types_by_name[name].fields_by_name
        assert set(fields) == {"game_id", "table_id", "view", legal, "deadline_ms", "bank_ms"}
    view = game_pb2.SeatView.DESCRIPTOR.fields_by_name
    assert set(View.__slots__) - {"decision", "legal"} <= set(view)


def _buf() -> list[str]:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx not found (Node.js is not installed): Buf lint not run")
    if not (BUF_DIR / "node_modules" / ".bin" / "buf").exists():
        pytest.skip("tools/buf/node_modules is missing: run `npm ci --prefix tools/buf` "
                    "to lint the .proto files")
    return [npx, "--no", "--", "buf"]


def test_buf_lint_is_clean() -> None:
    result = subprocess.run([*_buf(), "lint", str(REPO)], cwd=BUF_DIR, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_buf_lint_wants_every_field_documented(tmp_path: Path) -> None:
    buf = _buf()
    shutil.copytree(REPO / "proto", tmp_path / "proto")
    shutil.copy(REPO / "buf.yaml", tmp_path / "buf.yaml")
    proto = tmp_path / "proto" / "arena" / "v1" / "game.proto"
    text = proto.read_text()
    assert "  // The seat that made it.\n  uint32 seat = 1;" in text
    proto.write_text(text.replace("  // The seat that made it.\n", ""))
    result = subprocess.run([*buf, "lint", str(tmp_path)], cwd=BUF_DIR, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0
    assert 'Field "seat" should have a non-empty comment' in result.stdout


# -- over a real gRPC connection --------------------------------------------------------


class RecordingBot(bot_pb2_grpc.BotServiceServicer):
    """A random bot on the bot side of the wire, recording what it was told."""

    def __init__(self) -> None:
        self.rng = random.Random(3)
        self.views: list[View] = []
        self.rounds: list[results.RoundResult] = []
        self.results: list[results.GameResult] = []

    def Hello(self, request: bot_pb2.HelloRequest, context: Any) -> bot_pb2.HelloResponse:
        return wire.hello_response(results.BotInfo(
            "recorder", "1.0", "tests", min(request.protocol_version, wire.PROTOCOL_VERSION),
            ("wizard", "trumps")))

    def _decide(self, request: wire.DecisionRequest) -> wire.DecisionResponse:
        view = wire.view_from_request(request)
        self.views.append(view)
        assert view.decision is not None
        return wire.action_to_response(view.decision, self.rng.choice(view.legal))

    def Bid(self, request: bot_pb2.BidRequest, context: Any) -> Any:
        return self._decide(request)

    def ChooseTrump(self, request: bot_pb2.ChooseTrumpRequest, context: Any) -> Any:
        return self._decide(request)

    def Play(self, request: bot_pb2.PlayRequest, context: Any) -> Any:
        return self._decide(request)

    def RoundEnded(self, request: bot_pb2.RoundEndedRequest,
                   context: Any) -> bot_pb2.RoundEndedResponse:
        self.rounds.append(wire.round_result_from_request(request))
        return bot_pb2.RoundEndedResponse()

    def GameEnded(self, request: bot_pb2.GameEndedRequest,
                  context: Any) -> bot_pb2.GameEndedResponse:
        self.results.append(wire.game_result_from_request(request))
        return bot_pb2.GameEndedResponse()


@pytest.fixture
def bot() -> Iterator[tuple[RecordingBot, bot_pb2_grpc.BotServiceStub]]:
    """A RecordingBot served on a unix socket, and a stub connected to it."""
    servicer = RecordingBot()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    bot_pb2_grpc.add_BotServiceServicer_to_server(servicer, server)
    with tempfile.TemporaryDirectory(prefix="arena-") as tmp:  # short: socket paths are
        address = f"unix:{tmp}/bot.sock"                       # limited to ~100 bytes
        server.add_insecure_port(address)
        server.start()
        channel = grpc.insecure_channel(address)
        try:
            yield servicer, bot_pb2_grpc.BotServiceStub(channel)
        finally:
            channel.close()
            server.stop(None).wait()


def test_a_whole_game_over_grpc(bot: tuple[RecordingBot, bot_pb2_grpc.BotServiceStub]) -> None:
    servicer, stub = bot
    info = wire.bot_info_from_response(stub.Hello(wire.hello_request("test"), timeout=5))
    assert info == results.BotInfo("recorder", "1.0", "tests", 1, ("wizard", "trumps"))
    # Seed 0 turns a Wizard three times, so every kind of decision is asked.
    g = new_game("wizard", {"players": 3, "hook_rule": True}, 0)
    calls: dict[type, Any] = {bot_pb2.BidRequest: stub.Bid, bot_pb2.PlayRequest: stub.Play,
                              bot_pb2.ChooseTrumpRequest: stub.ChooseTrump}
    decisions = set()
    while g.to_move is not None:
        view = g.view(g.to_move)
        decisions.add(view.decision)
        request = wire.decision_request(view, "game-1", "table-1", 5000, 0)
        action = wire.action_from_response(calls[type(request)](request, timeout=5), g.name)
        assert servicer.views[-1] == view  # the bot saw exactly the referee's view
        assert action in view.legal
        finished = len(g.log)
        g.apply(action)
        if len(g.log) > finished or g.to_move is None:
            for seat in range(g.players):
                result = results.round_result(g, finished, seat, "game-1", "table-1")
                stub.RoundEnded(wire.round_ended_request(result), timeout=5)
    for seat in range(g.players):
        result = results.game_result(g, seat, "game-1", "table-1")
        stub.GameEnded(wire.game_ended_request(result), timeout=5)
    assert decisions == {Decision.BID, Decision.TRUMP, Decision.PLAY}
    assert len(servicer.views) == 3 * 20 + 3 * sum(range(1, 21)) + sum(
        e.trump_card == 64 for e in g.log)
    assert [r.round for r in servicer.rounds] == [r for r in range(1, 21) for _ in range(3)]
    assert servicer.rounds[-1].totals == tuple(g.totals)
    assert [r.places for r in servicer.results] == [g.outcome().places] * 3
