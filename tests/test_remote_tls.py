"""Bots on their author's machine: TLS and a bearer token, end to end.

The Python sample bot runs as a real process, served by the SDK with TLS on 127.0.0.1
(port 0) and a token, with certificates made here by the ``openssl`` command (a test CA
and a server certificate it signs, for IP 127.0.0.1 and the name bot.test). ``arena
play`` and a tournament reach it with the right CA and token; a wrong token, a missing
one, a CA that did not sign it and a host name its certificate does not carry each end
in one line naming the bot. Plain ``grpc://`` to an address that is not loopback is
refused before any connection (no test here connects to one).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import arena_in_process

from arena.cli.tournament import insecure_warnings
from arena.model.spec import BotSpec, is_loopback
from arena.runs.config import ConfigError, load_config

REPO = Path(__file__).resolve().parent.parent
OPENSSL = shutil.which("openssl")
TOKEN = "s3cret-Token_42"

pytestmark = pytest.mark.skipif(OPENSSL is None, reason="needs the openssl command")


def openssl(*args: str | Path) -> None:
    assert OPENSSL is not None
    subprocess.run([OPENSSL, *map(str, args)], check=True, capture_output=True, timeout=60)


def make_ca(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed CA: (certificate, key)."""
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", f"/CN={name}",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign")
    return cert, key


@dataclass(frozen=True)
class Certs:
    ca: Path
    """The CA that signed the bot's certificate."""
    other_ca: Path
    """A CA that did not."""
    cert: Path
    key: Path


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    folder = tmp_path_factory.mktemp("certs")
    ca, ca_key = make_ca(folder, "test-ca")
    other, _ = make_ca(folder, "other-ca")
    key, csr, cert = folder / "bot.key", folder / "bot.csr", folder / "bot.pem"
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=bot.test")
    ext = folder / "san.ext"
    ext.write_text("subjectAltName = IP:127.0.0.1, DNS:bot.test\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
            "-days", "1", "-out", cert, "-extfile", ext)
    return Certs(ca, other, cert, key)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    return {**env, **extra}


def logged_port(proc: subprocess.Popen[bytes], log: Path, pattern: str) -> int:
    """The port a bot started on port 0 reports in its log (``pattern``'s group 1),
    waiting up to 30 s; the log is shown if it exits first."""
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the bot did not serve in 30 s"
        found = re.search(pattern, log.read_text())
        if found:
            return int(found.group(1))
        time.sleep(0.05)


@dataclass
class RunningBot:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path


@pytest.fixture(scope="module")
def tls_bot(certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBot]:
    """The sample random bot serving TLS with a token (given in its environment)."""
    log = tmp_path_factory.mktemp("bot") / "bot.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(REPO / "sample_bots" / "python" / "random_bot.py"),
             "--listen", "127.0.0.1:0", "--tls-cert", str(certs.cert),
             "--tls-key", str(certs.key)],
            env=clean_env(ARENA_BOT_TOKEN=TOKEN), stdout=subprocess.DEVNULL, stderr=out)
    try:
        port = logged_port(proc, log, r"serving \(TLS, token required\) on port (\d+)")
        yield RunningBot(proc, port, log)
        assert proc.poll() is None  # the arena never ends a bot it did not start
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def arena(*args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``arena ARGS`` in this process, in the environment ``clean_env(**env)``."""
    return arena_in_process(*args, cwd=REPO, env=clean_env(**env))


def play(bot: str, *flags: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    return arena("play", "--game", "trumps", "--players", "3", "--seed", "7", "--quiet",
                 "--bots", f"{bot},heuristic,random", *flags, **env)


def test_arena_play_reaches_a_tls_bot_with_its_token(
        certs: Certs, tls_bot: RunningBot, tmp_path: Path) -> None:
    record = tmp_path / "game.json"
    done = play(f"grpcs://127.0.0.1:{tls_bot.port}", "--tls-ca", certs.ca, "--record",
                record, ARENA_BOT_TOKEN=TOKEN)
    assert done.returncode == 0, done.stderr
    game = json.loads(record.read_text())
    assert game["seats"][0] == "random-py" and game["faults"] == []


def test_the_server_name_can_differ_from_the_host_dialled(
        certs: Certs, tls_bot: RunningBot) -> None:
    spec = f"grpcs://localhost:{tls_bot.port}"
    refused = play(spec, "--tls-ca", certs.ca, "--token", TOKEN)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"arena play: bot seat0 ({spec}): TLS: its certificate does not name the host we "
        f"dialled (set tls_server_name?)"]
    done = play(spec, "--tls-ca", certs.ca, "--token", TOKEN, "--tls-server-name", "bot.test")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("token", ["wrong", None])
def test_a_bot_refusing_our_token_is_one_line_naming_it(
        certs: Certs, tls_bot: RunningBot, token: str | None) -> None:
    spec = f"grpcs://127.0.0.1:{tls_bot.port}"
    done = play(spec, "--tls-ca", certs.ca, *(("--token", token) if token else ()))
    assert done.returncode == 1
    who = "our token" if token else "us (we sent no token)"
    assert done.stderr.splitlines() == [
        f"arena play: bot seat0 ({spec}): refused {who}: UNAUTHENTICATED missing or wrong "
        f"bearer token"]
    assert f"refused a call to /arena.v1.BotService/Hello: {'wrong' if token else 'no'} " \
        "bearer token" in tls_bot.log.read_text()


def test_a_certificate_from_another_ca_is_one_line_naming_the_bot(
        certs: Certs, tls_bot: RunningBot) -> None:
    spec = f"grpcs://127.0.0.1:{tls_bot.port}"
    started = time.monotonic()
    done = play(spec, "--tls-ca", certs.other_ca, "--token", TOKEN, "--startup-ms", "60000")
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"arena play: bot seat0 ({spec}): TLS: its certificate is not "
                           "signed by a CA we trust (its tls_ca, else the system's): ")
    assert len(line) < 300
    assert time.monotonic() - started < 45  # not a wait for the start-up limit


def test_check_bot_takes_the_same_flags(certs: Certs, tls_bot: RunningBot) -> None:
    spec = f"grpcs://127.0.0.1:{tls_bot.port}"
    done = arena("check-bot", spec, "--game", "trumps", "--games", "1", "--tls-ca", certs.ca,
                 ARENA_BOT_TOKEN=TOKEN)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all" in done.stdout and "checks passed" in done.stdout
    refused = arena("check-bot", spec, "--tls-ca", certs.ca, "--token", "nope")
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"arena check-bot: bot {spec}: refused our token: UNAUTHENTICATED missing or wrong "
        "bearer token"]


def tournament_text(spec: str, extra: str) -> str:
    return f"""
name = "remote-tls"
game = "trumps"
seats = 3
seed = 11

[schedule]
deals = 1

[[bots]]
name = "far"
spec = "{spec}"
{extra}

[[bots]]
name = "heuristic"
spec = "heuristic"

[[bots]]
name = "random"
spec = "random"
"""


def test_a_tournament_plays_a_tls_bot_with_its_ca_and_token_from_the_environment(
        certs: Certs, tls_bot: RunningBot, tmp_path: Path) -> None:
    path = tmp_path / "remote.toml"
    path.write_text(tournament_text(f"grpcs://127.0.0.1:{tls_bot.port}",
                                    f'tls_ca = "{certs.ca}"\ntoken_env = "FAR_TOKEN"'))
    out = tmp_path / "out"
    done = arena("tournament", path, "--out", out, "--resamples", "20", FAR_TOKEN=TOKEN)
    assert done.returncode == 0, done.stderr
    assert "insecure" not in done.stderr
    board = arena("leaderboard", out, "--format", "json", "--resamples", "20")
    lb = json.loads(board.stdout)
    (far,) = [b for b in lb["bots"] if b["name"] == "far"]
    assert far["games"] == lb["games"] > 0
    assert far["insecure"] is False and far["sandboxed"] is False
    assert sum(far["faults"].values()) == 0

    # a wrong token: one line naming the file and the bot, no game played
    wrong = arena("tournament", path, "--out", tmp_path / "out2", FAR_TOKEN="wrong")
    assert wrong.returncode != 0
    assert wrong.stderr.splitlines()[-1] == (
        f"{path}: bot far: refused our token: UNAUTHENTICATED missing or wrong bearer token")
    # without the variable the file is refused before any game
    again = arena("tournament", path, "--out", tmp_path / "out2")
    assert again.returncode == 2
    assert again.stderr.splitlines() == [
        f"{path}: bots[0].token_env: the environment variable FAR_TOKEN is not set"]


# -- plain grpc:// beyond loopback: refused unless insecure (checked, never dialled) -------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.2.1", "localhost", "LocalHost", "::1"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)
    spec = BotSpec.parse(f"grpc://{'[::1]' if host == '::1' else host}:5")
    assert spec.transport_problem() is None and not spec.plain_remote


@pytest.mark.parametrize("host", ["192.0.2.10", "10.0.0.1", "0.0.0.0", "bots.example",
                                  "localhost.example", "[2001:db8::1]"])
def test_other_hosts_need_insecure(host: str, tmp_path: Path) -> None:
    spec = f"grpc://{host}:50051"
    path = tmp_path / "t.toml"
    path.write_text(tournament_text(spec, ""))
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value) == (
        f"{path}: bots[0].spec: bot far: {spec} is not a loopback address, and plain "
        "grpc:// has no TLS and no authentication; use grpcs:// or allow it with "
        "insecure = true")
    # grpcs:// may go anywhere
    path.write_text(tournament_text(spec.replace("grpc://", "grpcs://"), ""))
    assert load_config(path).bots[0].spec.kind == "grpcs"


def test_insecure_is_allowed_printed_and_flagged(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(tournament_text("grpc://192.0.2.10:50051", 'insecure = true\n'
                                    'token = "abc"'))
    config = load_config(path)
    spec = config.bots[0].spec
    assert spec.plain_remote and spec.remote.insecure and spec.remote.token == "abc"
    assert "abc" not in repr(spec)  # a token is never printed with its spec
    assert insecure_warnings(config) == [
        "warning: bot far: grpc://192.0.2.10:50051 without TLS (insecure = true): its "
        "moves and token travel unencrypted; marked (insecure) on the leaderboard"]
    path.write_text(tournament_text("grpc://127.0.0.1:50051", "insecure = true"))
    assert insecure_warnings(load_config(path)) == []  # loopback: nothing to warn of


@pytest.mark.parametrize("command", ["play", "check-bot"])
def test_the_command_line_needs_insecure_too(command: str) -> None:
    spec = "grpc://192.0.2.10:50051"
    args = (["play", "--game", "trumps", "--players", "3", "--bots",
             f"{spec},random,random"] if command == "play" else ["check-bot", spec])
    done = arena(*args)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"arena {command}: {spec} is not a loopback address, and plain grpc:// has no TLS "
        "and no authentication; use grpcs:// or allow it with --insecure"]


BAD_KEYS = [
    ("grpc://127.0.0.1:1", 'tls_ca = "{ca}"',
     "bots[0].tls_ca: only for a grpcs:// bot (TLS), not grpc://127.0.0.1:1"),
    ("grpc://127.0.0.1:1", 'tls_server_name = "x"',
     "bots[0].tls_server_name: only for a grpcs:// bot (TLS), not grpc://127.0.0.1:1"),
    ("grpcs://127.0.0.1:1", "insecure = true",
     "bots[0].insecure: only for a grpc:// bot, not grpcs://127.0.0.1:1"),
    ("grpc://192.0.2.1:1", 'insecure = "yes"',
     "bots[0].insecure: expected true or false, got 'yes'"),
    ("cmd:python x.py", 'token = "t"',
     "bots[0].token: only for a grpc:// or grpcs:// bot, not cmd:python x.py"),
    ("grpcs://127.0.0.1:1", 'token = "t"\ntoken_env = "T"',
     "bots[0].token_env: give token or token_env, not both"),
    ("grpcs://127.0.0.1:1", 'token = "two words"',
     "bots[0].token: a token is printable ASCII without spaces"),
    ("grpcs://127.0.0.1:1", 'tls_ca = "{missing}"',
     "bots[0].tls_ca: cannot read '{missing}': No such file or directory"),
    ("grpcs://127.0.0.1:1", 'tls_ca = "{notpem}"',
     "bots[0].tls_ca: '{notpem}' holds no PEM certificate"),
]


@pytest.mark.parametrize(("spec", "extra", "error"), BAD_KEYS)
def test_bad_remote_keys_are_one_line_errors(certs: Certs, tmp_path: Path, spec: str,
                                             extra: str, error: str) -> None:
    names = {"ca": str(certs.ca), "missing": str(tmp_path / "nope.pem"),
             "notpem": str(certs.key)}
    if spec.startswith("cmd:"):
        (tmp_path / "x.py").write_text("")
        spec = f"cmd:python {tmp_path / 'x.py'}"
        error = error.replace("cmd:python x.py", spec)
    path = tmp_path / "t.toml"
    path.write_text(tournament_text(spec, extra.format(**names)))
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value) == f"{path}: {error.format(**names)}"


# -- the Node.js sample bot serves TLS and checks the token the same way ------------------

NODE = shutil.which("node")
NODE_DIR = REPO / "sample_bots" / "node"


@pytest.mark.skipif(NODE is None or not (NODE_DIR / "node_modules").is_dir(),
                    reason="needs node and `npm ci` in sample_bots/node")
def test_the_node_sample_serves_tls_and_checks_the_token(certs: Certs, tmp_path: Path) -> None:
    assert NODE is not None
    log = tmp_path / "node.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [NODE, str(NODE_DIR / "bot.js"), "--listen", "127.0.0.1:0"],
            env=clean_env(ARENA_BOT_TOKEN=TOKEN, ARENA_BOT_TLS_CERT=str(certs.cert),
                          ARENA_BOT_TLS_KEY=str(certs.key)),
            stdout=subprocess.DEVNULL, stderr=out)
    try:
        port = logged_port(proc, log, r"\(port (\d+)\) with TLS, token required")
        spec = f"grpcs://127.0.0.1:{port}"
        done = play(spec, "--tls-ca", certs.ca, "--token", TOKEN)
        assert done.returncode == 0, done.stderr
        assert "0:node-sample" in done.stdout
        refused = play(spec, "--tls-ca", certs.ca, "--token", "wrong")
        assert refused.returncode == 1
        assert refused.stderr.splitlines() == [
            f"arena play: bot seat0 ({spec}): refused our token: UNAUTHENTICATED missing or "
            "wrong bearer token"]
        assert proc.poll() is None
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_a_bot_the_arena_starts_does_not_inherit_the_token(tmp_path: Path) -> None:
    # an author with ARENA_BOT_TOKEN exported for their own bot also plays cmd: bots; the
    # SDK bot would refuse the arena (which sends no token to a cmd: bot) if it inherited it
    bot = f"cmd:python {REPO / 'sample_bots' / 'python' / 'random_bot.py'}"
    done = play(bot, "--no-sandbox", "--log-dir", tmp_path, ARENA_BOT_TOKEN=TOKEN,
                ARENA_BOT_TLS_CERT=str(tmp_path / "none.pem"),
                ARENA_BOT_TLS_KEY=str(tmp_path / "none.key"))
    assert done.returncode == 0, done.stderr
    assert "0:random-py" in done.stdout
