"""The C++ sample bot (sample_bots/cpp): built with CMake from Debian's gRPC packages once
per test session, then run as a real process over real gRPC: by hand (health, reflection,
token, SIGTERM), through ``arena check-bot``, and in whole games of Wizard and Trumps
through ``arena play`` in the sandbox.

Without a C++ toolchain (cmake, a compiler, pkg-config, libgrpc++-dev,
protobuf-compiler-grpc) the tests skip and say what is missing; with ``ARENA_REQUIRE_CPP``
set (CI sets it where it can install the packages) they fail instead."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import grpc
import pytest
from conftest import REPO, Sandbox, build_lock, health_check, replay
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from arena.cli import main
from arena.model.record import verify_record
from arena.rules import Decision
from arena.v1 import bot_pb2_grpc
from arena.wire import serde as wire

SOURCE = REPO / "sample_bots" / "cpp"
BUILD = SOURCE / "build"
BINARY = BUILD / "cpp-sample"
REQUIRE = "ARENA_REQUIRE_CPP"
STARTUP_S = 10.0


def skip_or_fail(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE):
        pytest.fail(f"{reason} ({REQUIRE} is set)", pytrace=False)
    pytest.skip(reason)


def _missing_toolchain() -> str | None:
    """What of the C++ toolchain is missing (the Debian package to install), or None."""
    tools = {"cmake": "cmake", "c++": "g++", "pkg-config": "pkg-config",
             "protoc": "protobuf-compiler-grpc", "grpc_cpp_plugin": "protobuf-compiler-grpc"}
    missing = sorted({package for tool, package in tools.items() if shutil.which(tool) is None})
    if "pkg-config" not in missing and subprocess.run(
            ["pkg-config", "--exists", "grpc++", "protobuf"], check=False).returncode != 0:
        missing.append("libgrpc++-dev")
    return ", ".join(missing) if missing else None


@pytest.fixture(scope="session")
def cpp_bot() -> Path:
    """The built bot: configured once, then ``cmake --build`` (a no-op when up to date)."""
    missing = _missing_toolchain()
    if missing:
        skip_or_fail(f"no C++ toolchain for sample_bots/cpp: install {missing}")
    with build_lock("cpp-sample"):  # tests/test_sample_bots.py builds it too
        steps = [["cmake", "--build", str(BUILD), "-j2"]]
        if not (BUILD / "CMakeCache.txt").exists():
            steps.insert(0, ["cmake", "-S", str(SOURCE), "-B", str(BUILD),
                             "-DCMAKE_BUILD_TYPE=Release"])
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=600,
                                  check=False)
            if done.returncode != 0:
                pytest.fail(f"{shlex.join(step)} failed:\n"
                            f"{done.stdout[-3000:]}{done.stderr[-3000:]}", pytrace=False)
    assert BINARY.is_file(), f"the build made no {BINARY}"
    return BINARY


# -- the bot by hand --------------------------------------------------------------------


class Running:
    """The bot started by hand on a unix socket, with a channel to it."""

    def __init__(self, binary: Path, folder: Path, env: dict[str, str] | None = None) -> None:
        self.socket = folder / "bot.sock"
        self.log = folder / "bot.log"
        target = f"unix:{self.socket}"
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                [str(binary), "--listen", target], env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        self.channel = grpc.insecure_channel(target)
        self.stub = bot_pb2_grpc.BotServiceStub(self.channel)
        deadline = time.monotonic() + STARTUP_S
        while True:
            assert self.proc.poll() is None, f"the bot exited: {self.log.read_text()}"
            assert time.monotonic() < deadline, f"not serving: {self.log.read_text()}"
            try:
                if self.health("") == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                time.sleep(0.01)

    def health(self, service: str) -> int:
        return health_check(self.channel, service)

    def terminate(self) -> tuple[int | None, float]:
        """SIGTERM; the exit code (None if it had to be killed) and the seconds it took."""
        self.channel.close()
        started = time.monotonic()
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            code: int | None = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)
        return code, time.monotonic() - started


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cpp-", dir="/tmp"))  # short: a socket path
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_no_address_is_a_one_line_error(cpp_bot: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARENA_BOT_LISTEN"}
    result = subprocess.run([str(cpp_bot)], env=env, capture_output=True, text=True,
                            timeout=30, check=False)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "ARENA_BOT_LISTEN" in result.stderr and "--listen" in result.stderr


def test_health_reflection_hello_and_a_prompt_clean_sigterm(cpp_bot: Path,
                                                            folder: Path) -> None:
    bot = Running(cpp_bot, folder)
    try:
        assert bot.health("arena.v1.BotService") == health_pb2.HealthCheckResponse.SERVING
        reflection = ProtoReflectionDescriptorDatabase(bot.channel)
        assert "arena.v1.BotService" in set(reflection.get_services())
        reply = bot.stub.Hello(wire.hello_request("test"), timeout=5)
        assert (reply.name, reply.protocol_version) == ("cpp-sample", 1)
        assert list(reply.games) == [1, 2] and not reply.skip_round_ended
        # stopped between calls, as the arena does: the signal must still be taken
        os.kill(bot.proc.pid, signal.SIGSTOP)
        os.kill(bot.proc.pid, signal.SIGCONT)
    finally:
        code, took = bot.terminate()
    log = bot.log.read_text()
    assert code == 0, log
    assert took < 1.0, f"{took:.2f} s to exit on SIGTERM"
    assert "Terminated: shutting down" in log


def test_a_token_guards_the_bot_service_but_not_health(cpp_bot: Path, folder: Path) -> None:
    bot = Running(cpp_bot, folder, env=dict(os.environ, ARENA_BOT_TOKEN="s3cret"))
    try:
        with pytest.raises(grpc.RpcError) as refused:
            bot.stub.Hello(wire.hello_request("test"), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as wrong:
            bot.stub.Hello(wire.hello_request("test"), timeout=5,
                           metadata=[("authorization", "Bearer s3creT")])
        assert wrong.value.code() == grpc.StatusCode.UNAUTHENTICATED
        reply = bot.stub.Hello(wire.hello_request("test"), timeout=5,
                               metadata=[("authorization", "Bearer s3cret")])
        assert reply.name == "cpp-sample"
    finally:
        code, _ = bot.terminate()
    assert code == 0


# -- through the arena ------------------------------------------------------------------


def test_check_bot_passes(cpp_bot: Path, arena_sandbox: Sandbox,
                          capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check-bot", f"cmd:{cpp_bot}", "--games", "1", "--json",
                 "--log-dir", str(arena_sandbox.tmp / "logs")])
    out, err = capsys.readouterr()
    report: dict[str, Any] = json.loads(out)
    failed = [c for c in report["checks"] if not c["ok"]]
    assert code == 0 and report["ok"] and not failed, failed or err
    names = {(c["game"], c["name"]) for c in report["checks"]}
    assert {("wizard", "game 1"), ("trumps", "game 1"), (None, "process"),
            (None, "RoundEnded"), (None, "SIGTERM")} <= names
    assert report["bot"]["name"] == "cpp-sample"


@pytest.mark.parametrize(("game", "options", "bots"), [
    ("wizard", ["--option", "hook_rule=true"], "{bot},heuristic,random,{bot}"),
    ("trumps", ["--option", "announce=true"], "heuristic,{bot},random,{bot}"),
])
def test_plays_a_whole_game_legally(cpp_bot: Path, arena_sandbox: Sandbox,
                                    capsys: pytest.CaptureFixture[str], game: str,
                                    options: list[str], bots: str) -> None:
    record_path = arena_sandbox.tmp / "game.json"
    spec = f"cmd:{cpp_bot}"
    code = main(["play", "--game", game, "--players", "4", "--seed", "0", *options,
                 "--bots", bots.format(bot=spec), "--record", str(record_path), "--quiet",
                 "--log-dir", str(arena_sandbox.tmp / "logs")])
    _, err = capsys.readouterr()
    assert code == 0, err
    record = json.loads(record_path.read_text())
    verify_record(record)
    assert record["faults"] == [], record["faults"]
    seats = [s for s, name in enumerate(bots.split(",")) if name == "{bot}"]
    asked = {step.decision for seat in seats for step in replay(record) if step.seat == seat}
    assert {Decision.BID, Decision.PLAY} <= asked  # Wizard bids, Trumps announces
    # each seat's process got GameEnded, and logged its tally kept by (game_id, seat)
    logs = sorted((arena_sandbox.tmp / "logs").glob("*.log"))
    cpp_logs = [p.read_text() for p in logs if "cpp-sample" in p.read_text()]
    assert len(cpp_logs) == len(seats), [p.name for p in logs]
    rounds = len(record["rounds"])
    assert all(f"rounds {rounds} (bids made " in text for text in cpp_logs), cpp_logs
