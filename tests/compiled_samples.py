"""What the tests of the Go and Java sample bots share (tests/test_go_bot.py,
tests/test_java_bot.py, tests/test_sample_bots.py): each sample is a folder with a
``Makefile`` that builds it offline from Debian's packages and a ``run`` launcher; here
are the build (``make -C FOLDER``, the command the READMEs give), the bot started by
hand as a real process on a unix socket or a TCP port, TLS certificates made with
``openssl``, the strategy every sample plays, and ``arena check-bot`` / ``arena play``
through the CLI in the sandbox.

A sample whose toolchain is missing is skipped with the Debian package to install, or
fails when its ``ARENA_REQUIRE_...`` variable is set (CI sets them)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import grpc
import pytest
from conftest import REPO, Sandbox, build_lock, health_check, replay
from grpc_health.v1 import health_pb2

from arena.cli import main
from arena.model.record import verify_record
from arena.rules import Decision
from arena.v1 import bot_pb2, bot_pb2_grpc, game_pb2
from arena.wire import serde as wire

STARTUP_S = 20.0
"""How long a bot started by hand may take to serve (a JVM on a loaded machine: 2 s)."""
CALL_S = 5.0


@dataclass(frozen=True)
class Sample:
    """A compiled sample bot's folder and what it takes to build it."""

    name: str
    """The bot's name in its Hello answer (and in its log lines)."""
    folder: Path
    require: str
    """The variable that turns a skip into a failure (``ARENA_REQUIRE_GO``)."""
    tools: tuple[tuple[str, str], ...]
    """(program on PATH, Debian package) pairs the build needs."""
    files: tuple[tuple[str, str], ...]
    """(file, Debian package) pairs the build needs."""
    stop_line: str
    """What it logs when SIGTERM stops it."""
    build_env: tuple[tuple[str, str], ...] = ()
    """Variables the build runs with besides the test's own environment."""

    @property
    def run(self) -> Path:
        return self.folder / "run"

    def missing(self) -> str | None:
        """The Debian packages to install for the build, or None when none is missing."""
        wanted = [package for tool, package in self.tools if shutil.which(tool) is None]
        wanted += [package for path, package in self.files if not Path(path).exists()]
        return " ".join(dict.fromkeys(wanted)) or None

    def skip_or_fail(self, reason: str) -> NoReturn:
        if os.environ.get(self.require):
            pytest.fail(f"{reason} ({self.require} is set)", pytrace=False)
        pytest.skip(reason)

    def build(self, folder: Path | None = None, *steps: list[str]) -> Path:
        """``make -C FOLDER`` (this sample's folder, or a copy of it), or the ``steps``
        given; the launcher."""
        missing = self.missing()
        if missing:
            self.skip_or_fail(f"cannot build {self.folder.relative_to(REPO)}: "
                              f"install {missing}")
        folder = folder or self.folder
        with build_lock(self.name):
            for step in steps or (["make", "-C", str(folder)],):
                done = subprocess.run(step, capture_output=True, text=True, timeout=600,
                                      check=False, env={**os.environ, **dict(self.build_env)})
                if done.returncode != 0:
                    pytest.fail(f"{shlex.join(step)} failed:\n"
                                f"{done.stdout[-3000:]}{done.stderr[-3000:]}", pytrace=False)
        return folder / "run"


GO = Sample(
    name="go-sample", folder=REPO / "sample_bots" / "go", require="ARENA_REQUIRE_GO",
    tools=(("make", "make"), ("go", "golang-go"), ("protoc", "protobuf-compiler"),
           ("protoc-gen-go", "protoc-gen-go"), ("protoc-gen-go-grpc", "protoc-gen-go-grpc")),
    files=(("/usr/share/gocode/src/google.golang.org/grpc/server.go", "golang-google-grpc-dev"),
           # registry.go is in the 1.5 runtime (the v2 API's wrapper), not in 1.3
           ("/usr/share/gocode/src/github.com/golang/protobuf/proto/registry.go",
            "golang-github-golang-protobuf-1-5-dev")),
    stop_line="terminated: shutting down")

JAVA = Sample(
    name="java-sample", folder=REPO / "sample_bots" / "java", require="ARENA_REQUIRE_JAVA",
    tools=(("make", "make"), ("javac", "openjdk-17-jdk-headless"),
           ("jlink", "openjdk-17-jdk-headless"), ("protoc", "protobuf-compiler"),
           ("grpc_java_plugin", "protobuf-compiler-grpc-java-plugin")),
    files=tuple((f"/usr/share/java/{jar}.jar", package) for jar, package in (
        ("grpc-core", "libgrpc-java"), ("grpc-netty", "libgrpc-java"),
        ("protobuf", "libprotobuf-java"), ("netty-codec-http2", "libnetty-java"),
        ("perfmark-api", "libperfmark-java"), ("guava", "libguava-java"),
        ("geronimo-annotation-1.3-spec", "libgeronimo-annotation-1.3-spec-java"))),
    stop_line="SIGTERM: shutting down",
    # javac and jlink, started a few times a run (a copy of the folder is built from
    # scratch: tests/test_sample_bots.py), never repay the optimising compiler: the quick
    # one only, with the serial collector, builds the same files for 12 s of CPU, not 29
    build_env=(("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"),))


CPP = Sample(
    name="cpp-sample", folder=REPO / "sample_bots" / "cpp", require="ARENA_REQUIRE_CPP",
    tools=(("cmake", "cmake"), ("c++", "g++"), ("pkg-config", "pkg-config"),
           ("protoc", "protobuf-compiler-grpc"), ("grpc_cpp_plugin", "protobuf-compiler-grpc")),
    files=(("/usr/include/grpcpp/grpcpp.h", "libgrpc++-dev"),),
    stop_line="Terminated: shutting down")
"""The C++ sample (tests/test_cpp_bot.py tests it), built with CMake, not make -C: its
``build`` is given the steps; it has no ``run``."""


def built_cpp() -> Path:
    """The C++ sample built in its own folder, as tests/test_cpp_bot.py builds it
    (configured once, then ``cmake --build``, a no-op when up to date): its binary."""
    build = CPP.folder / "build"
    steps = [["cmake", "--build", str(build), "-j2"]]
    if not (build / "CMakeCache.txt").exists():
        steps.insert(0, ["cmake", "-S", str(CPP.folder), "-B", str(build),
                         "-DCMAKE_BUILD_TYPE=Release"])
    CPP.build(CPP.folder, *steps)
    return build / "cpp-sample"


# -- the bot by hand --------------------------------------------------------------------


class Running:
    """A sample started by hand with ``--listen`` (a unix socket in ``folder``, or
    ``127.0.0.1:0`` with ``tcp``), serving; ``channel`` and ``stub`` reach it (over TLS
    with ``ca``)."""

    def __init__(self, launcher: Path, folder: Path, env: dict[str, str] | None = None,
                 tcp: bool = False, ca: Path | None = None) -> None:
        self.log = folder / "bot.log"
        socket = folder / "bot.sock"
        listen = "127.0.0.1:0" if tcp else f"unix:{socket}"
        environ = {k: v for k, v in (env or os.environ).items() if k != "ARENA_BOT_LISTEN"}
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                [str(launcher), "--listen", listen], env=environ, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            if tcp:
                target = f"127.0.0.1:{self._logged_port()}"
            else:
                self._wait_for(socket.exists)
                target = f"unix:{socket}"
            if ca is not None:
                # the certificate names 127.0.0.1 and bot.test
                self.channel = grpc.secure_channel(
                    target, grpc.ssl_channel_credentials(ca.read_bytes()))
            else:
                self.channel = grpc.insecure_channel(target)
            self.stub = bot_pb2_grpc.BotServiceStub(self.channel)
            self._wait_for(self._serving)
        except BaseException:
            self.terminate()
            raise

    def _wait_for(self, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + STARTUP_S
        while not ready():
            assert self.proc.poll() is None, f"the bot exited: {self.log.read_text()}"
            assert time.monotonic() < deadline, f"not serving: {self.log.read_text()}"
            time.sleep(0.01)

    def _logged_port(self) -> int:
        port: list[int] = []

        def logged() -> bool:
            for line in self.log.read_text().splitlines():
                if "listening on" in line and "(port " in line:
                    port.append(int(line.split("(port ")[1].split(")")[0]))
                    return True
            return False

        self._wait_for(logged)
        return port[0]

    def _serving(self) -> bool:
        try:
            return self.health("") == health_pb2.HealthCheckResponse.SERVING
        except grpc.RpcError:
            return False

    def health(self, service: str) -> int:
        return health_check(self.channel, service)

    def terminate(self) -> tuple[int | None, float]:
        """SIGTERM; the exit code (None if it had to be killed) and the seconds it took."""
        channel = getattr(self, "channel", None)
        if channel is not None:
            channel.close()
        started = time.monotonic()
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            code: int | None = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        took = time.monotonic() - started
        try:  # anything left in its group goes too
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait(timeout=5)
        return code, took


@contextmanager
def short_folder(prefix: str) -> Iterator[Path]:
    """A new folder under /tmp with a short path (a unix socket's path is at most 107
    bytes), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def no_address_error(launcher: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ARENA_BOT_LISTEN"}
    return subprocess.run([str(launcher)], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


# -- TLS ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Certs:
    ca: Path
    cert: Path
    key: Path


def make_certs(folder: Path) -> Certs:
    """A test CA and a certificate it signs for IP 127.0.0.1 and bot.test (EC keys, the
    key in PKCS#8), as docs/writing-a-bot.md makes them with ``openssl``."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command")

    def run(*args: str | Path) -> None:
        subprocess.run([openssl, *map(str, args)], check=True, capture_output=True, timeout=60)

    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    key, csr, cert, ext = (folder / n for n in ("bot.key", "bot.csr", "bot.pem", "san.ext"))
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", ca_key, "-out", ca, "-days", "1", "-subj", "/CN=test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    run("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", csr, "-subj", "/CN=bot.test")
    ext.write_text("subjectAltName = IP:127.0.0.1, DNS:bot.test\n")
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "1",
        "-out", cert, "-extfile", ext)
    return Certs(ca, cert, key)


# -- the strategy -------------------------------------------------------------------------


def card(text: str) -> game_pb2.Card:
    """A card from its record form: ``C13``, ``W``, ``J``."""
    if text in ("W", "J"):
        return wire.card_to_message({"W": 64, "J": 65}[text])
    return wire.card_to_message("CDHS".index(text[0]) << 4 | int(text[1:]))


def play_request(bid: int | None, legal: list[str]) -> bot_pb2.PlayRequest:
    """Seat 0 of a 3-player Wizard round 4 (trump spades), no trick won yet, to lead."""
    req = bot_pb2.PlayRequest(game_id="g", table_id="t", deadline_ms=1000,
                              legal_cards=[card(c) for c in legal])
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


def check_the_samples_strategy(stub: bot_pb2_grpc.BotServiceStub) -> None:
    """The strategy every sample plays (C++, Node.js, Go, Java): high while it needs
    tricks, else low; a trump beats a king of another suit; trump the suit held most;
    bid the likely winners."""
    legal = ["C13", "H3", "S2", "W", "J"]
    for bid, expected in [(1, "W"), (0, "J"), (None, "W")]:
        assert stub.Play(play_request(bid, legal), timeout=CALL_S).card == card(expected), bid
    assert stub.Play(play_request(2, ["C13", "H3", "S2"]), timeout=CALL_S).card == card("S2")
    assert stub.Play(play_request(0, ["C13", "H3", "S2"]), timeout=CALL_S).card == card("H3")
    trump = bot_pb2.ChooseTrumpRequest(game_id="g", table_id="t", deadline_ms=1000,
                                       legal_suits=[wire.suit_to_enum(s) for s in range(4)])
    trump.view.hand.extend([card(c) for c in ["C2", "H4", "H9", "D1", "H12", "W"]])
    assert stub.ChooseTrump(trump, timeout=CALL_S).suit == game_pb2.SUIT_HEARTS
    # winners: the Wizard, S12 (a trump of the top four ranks), C13 (a top rank): 3 of 4
    # cards, 4 tricks to play: bid 3
    bidding = bot_pb2.BidRequest(game_id="g", table_id="t", deadline_ms=1000,
                                 legal_bids=[0, 1, 2, 3, 4])
    bidding.view.CopyFrom(play_request(None, ["W", "S12", "C13", "H2"]).view)
    assert stub.Bid(bidding, timeout=CALL_S).tricks == 3
    # empty legal lists are answered with an error, never a made-up action
    with pytest.raises(grpc.RpcError) as empty:
        stub.Play(play_request(None, []), timeout=CALL_S)
    assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def check_the_token(bot: Running, name: str) -> None:
    """With ARENA_BOT_TOKEN=s3cret: Hello only with ``Bearer s3cret``; health open."""
    assert bot.health("") == health_pb2.HealthCheckResponse.SERVING
    for metadata in ((), (("authorization", "Bearer s3creT"),), (("authorization", "s3cret"),)):
        with pytest.raises(grpc.RpcError) as refused:
            bot.stub.Hello(wire.hello_request("test"), timeout=CALL_S, metadata=metadata)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, metadata
    reply = bot.stub.Hello(wire.hello_request("test"), timeout=CALL_S,
                           metadata=(("authorization", "Bearer s3cret"),))
    assert reply.name == name


# -- through the arena --------------------------------------------------------------------


def check_bot(spec: str, log_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """``arena check-bot SPEC --games 1 --json`` (sandboxed, the default): its report,
    after asserting that every check passed."""
    code = main(["check-bot", spec, "--games", "1", "--json", "--log-dir", str(log_dir)])
    out, err = capsys.readouterr()
    report: dict[str, Any] = json.loads(out)
    assert "checks" in report, (report, err)
    failed = [c for c in report["checks"] if not c["ok"]]
    assert code == 0 and report["ok"] and not failed, failed or err
    names = {(c["game"], c["name"]) for c in report["checks"]}
    assert {("wizard", "game 1"), ("trumps", "game 1"), (None, "process"),
            (None, "RoundEnded"), (None, "SIGTERM")} <= names, names
    return report


GAMES = [
    ("wizard", ["--option", "hook_rule=true"], "{bot},heuristic,random,{bot}"),
    ("trumps", ["--option", "announce=true"], "heuristic,{bot},random,{bot}"),
]
"""Whole games for ``play_a_whole_game``: the game, its options and the seats (the
sample in two of them, so one game has two processes of it)."""


def play_a_whole_game(spec: str, name: str, sandbox: Sandbox,
                      capsys: pytest.CaptureFixture[str], game: str, options: list[str],
                      bots: str) -> None:
    """``arena play`` (sandboxed) with the sample in the seats named ``{bot}``: the record
    verifies, has no fault, and the sample bid and played; each of its processes logged
    its RoundEnded tally for every round at GameEnded."""
    record_path = sandbox.tmp / "game.json"
    logs = sandbox.tmp / "logs"
    code = main(["play", "--game", game, "--players", "4", "--seed", "0", *options,
                 "--bots", bots.format(bot=spec), "--record", str(record_path), "--quiet",
                 "--log-dir", str(logs)])
    _, err = capsys.readouterr()
    assert code == 0, err
    record = json.loads(record_path.read_text())
    verify_record(record)
    assert record["faults"] == [], record["faults"]
    seats = [s for s, seat in enumerate(bots.split(",")) if seat == "{bot}"]
    asked = {step.decision for step in replay(record) if step.seat in seats}
    assert {Decision.BID, Decision.PLAY} <= asked  # Wizard bids, Trumps announces
    texts = [p.read_text() for p in sorted(logs.glob("*.log"))]
    mine = [t for t in texts if f"[{name}]" in t]
    assert len(mine) == len(seats), texts
    rounds = len(record["rounds"])
    assert all(f"rounds {rounds} (bids made " in text for text in mine), mine
