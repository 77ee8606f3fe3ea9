"""The Ruby sample bot (sample_bots/ruby), on Debian's ruby-grpc and ruby-google-protobuf:
its copy of the protocol and its committed stubs (which must be what
``grpc_tools_ruby_protoc`` makes of the copy); the bot by hand as a real process over
real gRPC (health, the strategy, the token, TLS, a prompt clean exit on SIGTERM); and
through the arena as it is started plainly, ``cmd:ruby sample_bots/ruby/bot.rb`` in the
default sandbox: ``arena check-bot``, whole games, a tournament, and a league that takes
its folder as a bundle with ``runtime = "ruby"``.

The sandbox shows it Ruby's library through the built-in ``ruby`` runtime
(arena/proc/runtimes.py): the control is the same bot with that runtime reduced to what
the view held before (the base view), which dies at ``require 'grpc'``.

Without ruby, ruby-grpc and ruby-google-protobuf (ruby-grpc-tools for the stubs' check)
the tests skip and name the packages; with ``ARENA_REQUIRE_RUBY`` set (CI sets it) they
fail instead."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from compiled_samples import (
    GAMES,
    Running,
    check_bot,
    check_the_samples_strategy,
    check_the_token,
    make_certs,
    no_address_error,
    play_a_whole_game,
    short_folder,
)
from conftest import REPO, Sandbox, proto_copy_drift
from grpc_health.v1 import health_pb2
from league_helpers import League, copy_tree, submit, wait_clean

from arena.cli import main
from arena.model.league_api import ACCEPTED, CHECK
from arena.proc import runtimes
from arena.proc.runtimes import Runtime
from arena.wire import serde as wire

BOT_DIR = REPO / "sample_bots" / "ruby"
BOT = BOT_DIR / "bot.rb"
SPEC = "cmd:ruby sample_bots/ruby/bot.rb"  # as the README and docs/writing-a-bot.md enter it
STUBS = ("game_pb.rb", "bot_pb.rb", "bot_services_pb.rb")
REQUIRED = bool(os.environ.get("ARENA_REQUIRE_RUBY"))


def _missing() -> str | None:
    """The Debian packages to install to run the bot, or None."""
    if shutil.which("ruby") is None:
        return "ruby ruby-grpc ruby-google-protobuf"
    done = subprocess.run(["ruby", "-e", "require 'grpc'; require 'google/protobuf'"],
                          capture_output=True, text=True, timeout=60, check=False)
    return None if done.returncode == 0 else "ruby-grpc ruby-google-protobuf"


MISSING = _missing()


def needs_ruby() -> None:
    """Every test but the proto copy's and the stubs' needs Ruby with its gRPC gems."""
    if MISSING is not None:
        reason = f"the Ruby sample needs: apt-get install {MISSING}"
        if REQUIRED:
            pytest.fail(f"{reason} (ARENA_REQUIRE_RUBY is set)", pytrace=False)
        pytest.skip(reason)


@pytest.fixture
def folder() -> Iterator[Path]:
    needs_ruby()
    with short_folder("rb-") as path:
        yield path


@pytest.mark.skipif(not REQUIRED, reason="ARENA_REQUIRE_RUBY is not set")
def test_ruby_is_here_where_required() -> None:
    assert MISSING is None, MISSING


# -- its protocol and stubs ---------------------------------------------------------------


def test_its_proto_copy_is_proto_byte_for_byte() -> None:
    """bot.rb loads its stubs from its own folder (the sandbox shows it no other)."""
    assert proto_copy_drift(BOT_DIR) == []
    assert "$LOAD_PATH.unshift(File.join(__dir__, 'lib'))" in BOT.read_text()


def _generate(proto: Path, out: Path) -> dict[str, bytes]:
    protoc = shutil.which("grpc_tools_ruby_protoc")
    if protoc is None:
        reason = "the stubs' check needs grpc_tools_ruby_protoc: apt-get install ruby-grpc-tools"
        if REQUIRED:
            pytest.fail(f"{reason} (ARENA_REQUIRE_RUBY is set)", pytrace=False)
        pytest.skip(reason)
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([protoc, "-I", str(proto), f"--ruby_out={out}", f"--grpc_out={out}",
                    "arena/v1/game.proto", "arena/v1/bot.proto"], check=True, timeout=120,
                   capture_output=True)
    return {p.name: p.read_bytes() for p in sorted((out / "arena" / "v1").iterdir())}


def test_its_committed_stubs_are_what_its_proto_makes(tmp_path: Path) -> None:
    committed = {p.name: p.read_bytes() for p in sorted((BOT_DIR / "lib/arena/v1").iterdir())}
    assert sorted(committed) == sorted(STUBS)
    assert _generate(BOT_DIR / "proto", tmp_path / "now") == committed, \
        "run make -C sample_bots/ruby (the stubs differ from what proto/ makes)"
    # the control: a field added to the copy makes other stubs, which the check sees
    changed = copy_tree(BOT_DIR / "proto", tmp_path / "proto")
    bot = changed / "arena" / "v1" / "bot.proto"
    text = bot.read_text()
    assert "  uint32 tricks = 1;\n}" in text
    bot.write_text(text.replace("  uint32 tricks = 1;\n}", "  uint32 tricks = 1;\n"
                                                         "  uint32 extra = 2;\n}"))
    assert _generate(changed, tmp_path / "changed") != committed


# -- the bot by hand ----------------------------------------------------------------------


def test_no_address_is_a_one_line_error(folder: Path) -> None:
    result = no_address_error(BOT)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "ARENA_BOT_LISTEN" in result.stderr and "--listen" in result.stderr


def test_health_strategy_and_a_prompt_clean_sigterm(folder: Path) -> None:
    bot = Running(BOT, folder)
    try:
        assert bot.health("arena.v1.BotService") == health_pb2.HealthCheckResponse.SERVING
        reply = bot.stub.Hello(wire.hello_request("test"), timeout=5)
        assert (reply.name, reply.protocol_version) == ("ruby-sample", 1)
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
    assert "[ruby-sample] SIGTERM: shutting down" in log and "stopped" in log
    assert not (folder / "bot.sock").exists()


def test_a_token_guards_the_bot_service_but_not_health(folder: Path) -> None:
    bot = Running(BOT, folder, env=dict(os.environ, ARENA_BOT_TOKEN="s3cret"))
    try:
        check_the_token(bot, "ruby-sample")
    finally:
        code, _ = bot.terminate()
    assert code == 0


def test_tls_and_a_token_on_a_tcp_port(folder: Path) -> None:
    certs = make_certs(folder)
    env = dict(os.environ, ARENA_BOT_TOKEN="s3cret", ARENA_BOT_TLS_CERT=str(certs.cert),
               ARENA_BOT_TLS_KEY=str(certs.key))
    bot = Running(BOT, folder, env=env, tcp=True, ca=certs.ca)
    try:
        check_the_token(bot, "ruby-sample")
    finally:
        code, _ = bot.terminate()
    assert code == 0
    assert "with TLS, token required" in bot.log.read_text()


# -- through the arena, started plainly ---------------------------------------------------


def test_check_bot_passes_sandboxed_as_started_plainly(
        arena_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    needs_ruby()
    monkeypatch.chdir(REPO)
    report = check_bot(SPEC, arena_sandbox.tmp / "logs", capsys)
    assert report["bot"]["name"] == "ruby-sample"
    # the control: Ruby as the view had it before the runtime (the base view only): the
    # interpreter starts and does not find its library
    monkeypatch.setitem(runtimes.BUILTIN, "ruby", Runtime("ruby", ("ruby",)))
    code = main(["check-bot", SPEC, "--games", "1", "--json",
                 "--log-dir", str(arena_sandbox.tmp / "control")])
    out, err = capsys.readouterr()
    assert code != 0
    assert "cannot load such file" in out + err, out + err


@pytest.mark.parametrize(("game", "options", "bots"), GAMES)
def test_plays_a_whole_game_legally(arena_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str], game: str,
                                    options: list[str], bots: str) -> None:
    needs_ruby()
    monkeypatch.chdir(REPO)
    play_a_whole_game(SPEC, "ruby-sample", arena_sandbox, capsys, game, options, bots)


def test_plays_in_a_tournament_whose_start_names_its_runtime(
        tmp_path: Path, arena_sandbox: Sandbox) -> None:
    needs_ruby()
    path = tmp_path / "ruby.toml"
    path.write_text('name = "ruby"\ngame = "trumps"\nseats = 3\nseed = 7\nconcurrency = 1\n'
                    '[options]\ndraw = false\n'
                    f'[[bots]]\nname = "rb"\nspec = "cmd:ruby {BOT}"\n'
                    '[[bots]]\nname = "h"\nspec = "heuristic"\n'
                    '[[bots]]\nname = "r"\nspec = "random"\n')
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "arena", "tournament", str(path), "--out",
                           str(out), "--resamples", "20"], cwd=tmp_path,
                          env=arena_sandbox.env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bot rb: runtime ruby\n" in done.stderr, done.stderr
    with contextlib.closing(sqlite3.connect(out / "tournament.sqlite")) as db:
        assert db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'").fetchone() == (3,)
        assert db.execute("SELECT bot, kind, detail FROM faults").fetchall() == []


def test_a_league_takes_its_folder_as_a_bundle_of_the_ruby_runtime(tmp_path: Path) -> None:
    needs_ruby()
    tmp = Path(os.path.realpath(tmp_path / "tmp"))
    tmp.mkdir()
    league = League(tmp_path / "out", tmp)
    league.out.mkdir()
    league.start()
    try:
        token = league.author("rita")
        bundle = copy_tree(BOT_DIR, tmp_path / "bundle")
        assert 'runtime = "ruby"' in (bundle / "bot.toml").read_text()
        with league.client(token) as client:
            steps = submit(client, bundle)
            assert "ruby" in client.status().runtimes
        assert steps[-1].verdict == ACCEPTED, [s.text for s in steps]
        assert any(s.stage == CHECK and s.ok and s.text.startswith("PASS hand-shake: "
                                                                   "ruby-sample")
                   for s in steps), [s.text for s in steps]
        assert any("runtime ruby, command ruby bot.rb" in s.text for s in steps)
    finally:
        league.stop()
    assert wait_clean(league) == []
    assert league.errors is not None
    served = [line for line in league.errors.read_text().splitlines()
              if line.startswith("runtimes a bot.toml may name: ")]
    assert served and "ruby" in served[0].split(": ", 1)[1].split(", "), served
    status = subprocess.run([sys.executable, "-m", "arena", "league", "status",
                             str(league.file), "--json"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120, check=False,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert "ruby" in data["runtimes"] and data["runtimes_from"] == "as served last", data
    assert any(line.startswith("ruby (built in: Debian packages ruby, ruby-grpc")
               for line in data["runtime_views"]), data["runtime_views"]
