"""The Go sample bot (sample_bots/go): built once per test session with ``make -C
sample_bots/go`` (offline, from Debian's Go packages in GOPATH mode), then run as a real
process over real gRPC: by hand (health, reflection, the strategy, the token, TLS, a
prompt clean exit on SIGTERM), through ``arena check-bot cmd:sample_bots/go/run`` and in
whole games of Wizard and Trumps through ``arena play``, in the sandbox.

Without the toolchain (golang-go, golang-google-grpc-dev,
golang-github-golang-protobuf-1-5-dev, protobuf-compiler, protoc-gen-go,
protoc-gen-go-grpc) the tests skip and name what is missing; with ``ARENA_REQUIRE_GO``
set (CI sets it) they fail instead."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from compiled_samples import (
    GAMES,
    GO,
    Running,
    check_bot,
    check_the_samples_strategy,
    check_the_token,
    make_certs,
    no_address_error,
    play_a_whole_game,
    short_folder,
)
from conftest import REPO, Sandbox
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from arena.wire import serde as wire

SPEC = "cmd:sample_bots/go/run"  # as the README and docs/writing-a-bot.md enter it


@pytest.fixture(scope="session")
def go_bot() -> Path:
    """The launcher, after ``make -C sample_bots/go`` (quick when it is up to date)."""
    return GO.build()


@pytest.fixture
def folder() -> Iterator[Path]:
    with short_folder("go-") as path:
        yield path


def test_no_address_is_a_one_line_error(go_bot: Path) -> None:
    result = no_address_error(go_bot)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "ARENA_BOT_LISTEN" in result.stderr and "--listen" in result.stderr


def test_health_reflection_strategy_and_a_prompt_clean_sigterm(go_bot: Path,
                                                               folder: Path) -> None:
    bot = Running(go_bot, folder)
    try:
        assert bot.health("arena.v1.BotService") == health_pb2.HealthCheckResponse.SERVING
        reflection = ProtoReflectionDescriptorDatabase(bot.channel)
        assert "arena.v1.BotService" in set(reflection.get_services())
        reply = bot.stub.Hello(wire.hello_request("test"), timeout=5)
        assert (reply.name, reply.protocol_version) == ("go-sample", 1)
        assert list(reply.games) == [1, 2] and not reply.skip_round_ended
        check_the_samples_strategy(bot.stub)
        # stopped between calls, as the arena does: the signal must still be taken
        os.kill(bot.proc.pid, signal.SIGSTOP)
        os.kill(bot.proc.pid, signal.SIGCONT)
    finally:
        code, took = bot.terminate()
    log = bot.log.read_text()
    assert code == 0, log
    assert took < 1.0, f"{took:.2f} s to exit on SIGTERM"
    assert GO.stop_line in log
    assert not (folder / "bot.sock").exists()


def test_a_token_guards_the_bot_service_but_not_health(go_bot: Path, folder: Path) -> None:
    bot = Running(go_bot, folder, env=dict(os.environ, ARENA_BOT_TOKEN="s3cret"))
    try:
        check_the_token(bot, "go-sample")
    finally:
        code, _ = bot.terminate()
    assert code == 0


def test_tls_and_a_token_on_a_tcp_port(go_bot: Path, folder: Path) -> None:
    certs = make_certs(folder)
    env = dict(os.environ, ARENA_BOT_TOKEN="s3cret", ARENA_BOT_TLS_CERT=str(certs.cert),
               ARENA_BOT_TLS_KEY=str(certs.key))
    bot = Running(go_bot, folder, env=env, tcp=True, ca=certs.ca)
    try:
        check_the_token(bot, "go-sample")
    finally:
        code, _ = bot.terminate()
    assert code == 0
    assert "with TLS, token required" in bot.log.read_text()


# -- through the arena ------------------------------------------------------------------


def test_check_bot_passes(go_bot: Path, arena_sandbox: Sandbox,
                          monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    report = check_bot(SPEC, arena_sandbox.tmp / "logs", capsys)
    assert report["bot"]["name"] == "go-sample"


@pytest.mark.parametrize(("game", "options", "bots"), GAMES)
def test_plays_a_whole_game_legally(go_bot: Path, arena_sandbox: Sandbox,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str], game: str,
                                    options: list[str], bots: str) -> None:
    monkeypatch.chdir(REPO)
    play_a_whole_game(SPEC, "go-sample", arena_sandbox, capsys, game, options, bots)
