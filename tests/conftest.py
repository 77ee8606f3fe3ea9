"""Shared helpers of the tests.

:func:`replay` walks a game record through the rules engine, decision by decision, so a
test can say which decision a fault belongs to and what the referee applied there.
:func:`arena_sandbox` gives a test its own temporary folder (``TMPDIR``) and checks, at
the end, that no bot process the arena started and no ``arena-bot-*`` socket folder is
left behind; :func:`processes_with` and :func:`children` find such processes.
:func:`start_server` and :func:`stop_server` run ``arena serve``; the ``browser`` and
``context`` fixtures drive the system's Chromium (the site tests).

The suite's cost: :func:`arena_in_process` runs a command in the test's own process
(about half a second of interpreter start and imports saved per command), for tests that
read only exit codes and output; real ``python -m arena`` processes stay where the test
is about the process (signals, kill -9, the entry point, a resume's sweep).
:func:`shared_folder` makes an expensive read-only input, such as a played and published
tournament, once per test run for every module that uses it.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import re
import select
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import closing, contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlsplit

import pytest
import trio

from arena.rules import Decision, Game, View, new_game
from arena.rules.cards import parse_card, parse_suit

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # Started as a shell's background job (``make test &`` in a script), the test
    # processes inherit an ignored SIGINT, and so would every arena they start: its
    # Ctrl-C and SIGTERM tests would then test the shell, not the arena. A handled
    # signal is reset to its default at exec, so the arenas start as from a terminal.
    signal.signal(signal.SIGINT, signal.default_int_handler)

FULL_EXAMPLES = os.environ.get("ARENA_HYPOTHESIS") == "full"
"""The property tests' example counts: a fifth of the full count by default (a quick
``make test``), the full count where ``ARENA_HYPOTHESIS=full`` (CI: ``.ci/run``)."""


def examples(full: int) -> int:
    """How many examples a property test runs: ``full`` in CI, a fifth (at least 10) by
    default."""
    return full if FULL_EXAMPLES else max(10, full // 5)


HEAVY_FIRST = (
    "test_ray", "test_field", "test_sample_bots", "test_tournament", "test_site_browser",
    "test_view",
    "test_isolation_secrets", "test_league_service", "test_isolation_limits",
    "test_isolation_counters", "test_stop",
    "test_grpc_games", "test_checkbot", "test_crash_reports", "test_isolation_pagecache",
    "test_isolation_neighbours", "test_store_lock", "test_league_web", "test_sandbox",
    "test_job", "test_league", "test_isolation_kernel", "test_view_images", "test_human",
    "test_ruby_bot", "test_loop_steps", "test_runtimes", "test_league_limits",
)
"""The test files that take longest (seconds of test time, most first, measured on a
2-core machine: 65 to 8 s; test_sample_bots builds the C++ sample on a fresh machine),
run first: the suite's workers take a file at a time in the order collected (with
pytest-xdist's ``--no-loadscope-reorder``, which ``make test`` passes: by default it
orders the files by their number of tests), and a long file taken last leaves the other
workers idle while it runs (longest first is the classic remedy). Every other file keeps
its place after."""


def pytest_sessionstart(session: pytest.Session) -> None:
    """Make the view images of the sample bots (arena/proc/images.py) once, before any
    test runs, in the controller: on a fresh machine that is some 15 s of system time
    for 2 GB, which would otherwise fall inside the first test that starts a sandboxed
    bot (and its timeout). Where images are not in force, nothing."""
    if hasattr(session.config, "workerinput"):
        return
    from arena.model.errors import SandboxError
    from arena.model.limits import Confinement
    from arena.proc.bwrap import view_images, warm_roots
    from arena.proc.images import image_mechanism

    if not image_mechanism().active:
        return
    for args in ([sys.executable, "sample_bots/python/heuristic_bot.py"],
                 ["node", "sample_bots/node/bot.js"], ["ruby", "sample_bots/ruby/bot.rb"]):
        try:
            roots, exclude, always = warm_roots(args, REPO, Confinement())
            view_images(roots, exclude, always)
        except (OSError, SandboxError) as e:  # only a cost: the tests make them later
            print(f"conftest: the view images of {args[1]} were not made first: {e}",
                  file=sys.stderr)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: k for k, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.path)).stem, len(rank)))


REPO = Path(__file__).resolve().parent.parent
VNU_JAVA = ("-Xss8m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
"""The JVM flags for the Nu Html Checker (``java *VNU_JAVA -jar vnu.jar``): a deep
stack for its parser, and the quick compiler only with the serial collector, since a
run of a few seconds never repays the optimising compiler (half the CPU; the same
checker and findings)."""
TEST_BOTS = REPO / "tests" / "bots"
SAMPLE_BOTS = REPO / "sample_bots" / "python"


def bot_cmd(script: Path, *args: object) -> str:
    """A ``cmd:`` spec running a Python bot script with arguments."""
    return "cmd:" + shlex.join(["python", str(script), *map(str, args)])


def tournament_toml(name: str, game: str, seats: int, seed: int | None, deals: int,
                    bots: Sequence[tuple[str, str]], *, concurrency: int = 2,
                    move_ms: int | None = None, options: dict[str, Any] | None = None,
                    isolation: str | None = None) -> str:
    """A round-robin tournament file's text: ``bots`` as (name, spec) pairs, every string
    quoted (JSON escapes are TOML's); no ``seed`` line for None (the arena draws one), no
    ``isolation`` line (the default) for None. One line a setting, so a test may change
    one by replacing its line."""
    lines = [f"name = {json.dumps(name)}", f"game = {json.dumps(game)}", f"seats = {seats}",
             *([f"seed = {seed}"] if seed is not None else []),
             *([f"isolation = {json.dumps(isolation)}"] if isolation is not None else []),
             f"concurrency = {concurrency}"]
    if options:
        lines += ["", "[options]", *(f"{key} = {json.dumps(value)}"
                                     for key, value in options.items())]
    if move_ms is not None:
        lines += ["", "[time]", f"move_ms = {move_ms}"]
    lines += ["", "[schedule]", 'format = "round-robin"', f"deals = {deals}"]
    for bot, spec in bots:
        lines += ["", "[[bots]]", f"name = {json.dumps(bot)}", f"spec = {json.dumps(spec)}"]
    return "\n".join(lines) + "\n"


def proto_copy_drift(sample: Path) -> list[str]:
    """How a sample bot's copy of the protocol (``SAMPLE/proto/arena/v1/``) differs from
    the repository's ``proto/arena/v1/``, one line a file (missing, extra or not the same
    bytes); [] when it is the same. ``make sample-protos`` refreshes the copies."""
    ours, theirs = REPO / "proto" / "arena" / "v1", sample / "proto" / "arena" / "v1"
    names = sorted({p.name for p in ours.iterdir()} | {p.name for p in theirs.glob("*")})
    where = theirs.relative_to(REPO) if theirs.is_relative_to(REPO) else theirs
    drift = []
    for name in names:
        if not (theirs / name).is_file():
            drift.append(f"{where}/{name} is missing (run make sample-protos)")
        elif not (ours / name).is_file():
            drift.append(f"{where}/{name} is not in proto/arena/v1")
        elif (theirs / name).read_bytes() != (ours / name).read_bytes():
            drift.append(f"{where}/{name} differs from proto/arena/v1/{name} "
                         "(run make sample-protos)")
    return drift


def health_check(channel: Any, service: str = "") -> int:
    """The status a bot's standard gRPC health service gives ``service`` (over
    ``channel``, a ``grpc.Channel``), as a ``HealthCheckResponse`` status number."""
    from grpc_health.v1 import health_pb2

    check = channel.unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
        response_deserializer=health_pb2.HealthCheckResponse.FromString)
    reply: health_pb2.HealthCheckResponse = check(
        health_pb2.HealthCheckRequest(service=service), timeout=1)
    return int(reply.status)


def run_trio(fn: Callable[..., Awaitable[Any]], *args: Any, clock: Any = None) -> Any:
    return trio.run(fn, *args, clock=clock)


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The calls a test bot traced (see tests/bots/_common.py); [] when there were none."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass(frozen=True)
class Step:
    """One decision of a recorded game: who decided, what they saw, what was applied."""

    seat: int
    view: View
    action: int
    game: Game
    """The game before the action (valid only while :func:`replay` is paused on it)."""

    @property
    def decision(self) -> Decision:
        assert self.view.decision is not None
        return self.view.decision

    @property
    def where(self) -> tuple[int, int | None]:
        """(round, trick) as a fault entry names it."""
        trick = len(self.view.tricks) + 1 if self.decision is Decision.PLAY else None
        return (self.view.round, trick)


def replay(record: dict[str, Any]) -> Iterator[Step]:
    """Every decision of a recorded game in order; the record must be valid."""
    game = new_game(record["game"], record["options"], record["seed"])
    n = game.players
    for rnd in record["rounds"]:
        position = 0  # index into this round's tricks, as cards are played
        played = 0
        while not game.is_over and game.log[-1].number == rnd["number"]:
            seat = game.to_move
            assert seat is not None
            decision = game.decision
            if decision is Decision.TRUMP:
                action = parse_suit(rnd["trump"])
            elif decision is Decision.BID:
                action = rnd["bids"][seat]
            else:
                trick = rnd["tricks"][position]
                action = parse_card(trick["cards"][played])
                assert (trick["leader"] + played) % n == seat
                played += 1
                if played == n:
                    position, played = position + 1, 0
            yield Step(seat, game.view(seat), action, game)
            game.apply(action)
    assert game.is_over


def decisions_of(record: dict[str, Any], seat: int) -> list[Step]:
    return [s for s in replay(record) if s.seat == seat]


# -- leaks ----------------------------------------------------------------------------


def _proc_env(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return int(text.rpartition(")")[2].split()[1])


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return False


def processes_with(needle: bytes, zombies: bool = True) -> list[int]:
    """Processes whose environment contains ``needle`` (without zombies if told)."""
    return [pid for pid in _pids()
            if needle in _proc_env(pid) and (zombies or not _zombie(pid))]


def bot_processes(tmp: Path) -> list[int]:
    """Live bot processes of arenas whose temporary folder is ``tmp``: an unsandboxed
    bot with its socket under ``tmp``, or a sandbox's bubblewrap, which the arena starts
    with ``TMPDIR`` (the bot inside listens in the sandbox's own ``/run/arena``)."""
    return sorted({*processes_with(f"ARENA_BOT_LISTEN=unix:{tmp}/".encode()),
                   *(pid for pid in processes_with(f"TMPDIR={tmp}\0".encode())
                     if is_bwrap(pid))})


def is_bwrap(pid: int) -> bool:
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except OSError:
        return False
    return os.path.basename(argv0) == b"bwrap"


def children(pid: int) -> list[int]:
    return [p for p in _pids() if _ppid(p) == pid]


def gone(pid: int) -> bool:
    """True when no process (not even a zombie) has ``pid``."""
    return not os.path.exists(f"/proc/{pid}")


T = TypeVar("T")


def shown_in_one_of(tries: int, attempt: Callable[[int], T], shows: Callable[[T], bool],
                    what: str, report: Callable[[T], object] = lambda found: found) -> T:
    """The first of up to ``tries`` results of ``attempt(k)`` (k = 0, 1, ...) in which
    ``shows`` sees what it must; otherwise the test fails, naming ``what`` with the
    ``report`` of every try. For the controls of the attacks: a loaded machine, or its
    own reclaim, can hide a channel that works in one run, so a control must show it in
    one of a few, and can still fail."""
    seen = []
    for k in range(tries):
        found = attempt(k)
        if shows(found):
            return found
        seen.append(report(found))
    pytest.fail(f"{what} never showed in {tries} tries: {seen}", pytrace=False)


def wait_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@contextmanager
def build_lock(name: str) -> Iterator[None]:
    """Held while a sample bot is built: the suite runs on several pytest-xdist workers
    (``make test``), and two builds in one folder at once would break each other. One
    lock per checkout: the suites of two checkouts (worktrees) build in folders of their
    own, and one waiting on the other's build (minutes of a cold C++ build) timed out."""
    checkout = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    with open(f"/tmp/trick-arena-test-build-{name}-{checkout}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@dataclass(frozen=True)
class Sandbox:
    tmp: Path
    """The test's TMPDIR: bot socket folders and default bot logs go here."""
    env: dict[str, str]
    """The environment for subprocesses (``arena play``), with TMPDIR set."""


LEFT_WAIT_S = 10.0
"""How long a test's teardown waits for its bot processes to be gone before it calls
them left running (a wait that ends as soon as they are: no cost when they are)."""


@pytest.fixture
def arena_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A private TMPDIR for the test; afterwards, no arena bot process nor socket folder
    may remain (any found are ended, and the test fails)."""
    # a short path: a unix socket's path must stay under 108 bytes
    tmp = Path(tempfile.mkdtemp(prefix="at-", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("TMPDIR", str(tmp))
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(REPO))
    try:
        yield Sandbox(tmp, env)
        # a process killed as its sandbox ends takes a moment to go (its namespace torn
        # down, on a busy machine longer): only one that stays is a leak
        wait_until(lambda: not bot_processes(tmp), LEFT_WAIT_S)
        leaked = bot_processes(tmp)
        for pid in leaked:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        assert not leaked, f"bot processes left running: {leaked}"
        own = children(os.getpid())
        assert not own, f"child processes left: {own}"
        dirs = sorted(p.name for p in tmp.glob("arena-bot-*"))
        assert not dirs, f"bot socket folders left: {dirs}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def shared_folder(factory: pytest.TempPathFactory, key: str,
                  make: Callable[[Path], object]) -> Path:
    """A folder that ``make(folder)`` fills once per test run and that every module asking
    for ``key`` then shares, read-only (copy it before changing it): under pytest-xdist
    one for all workers, made by the first to ask while the others wait on a lock. A
    ``make`` that failed leaves no folder for the next to trust: it is made again."""
    base = factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / f"shared-{key}"
    with open(root / f"shared-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".made").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".made").touch()
    return folder


def arena_command(*argv: str) -> list[str]:
    return [sys.executable, "-m", "arena", *argv]


def done_games(folder: Path) -> int:
    """Finished games in the store of ``folder``, which a run may be writing (0 while it
    is not made yet). Read-only: a plain connect would make an empty store before the
    arena does, which the arena then refuses."""
    try:
        with closing(sqlite3.connect(f"file:{folder / 'tournament.sqlite'}?mode=ro",
                                     uri=True, timeout=5)) as db:
            return int(db.execute(
                "SELECT COUNT(*) FROM games WHERE status = 'done'").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def arena_in_process(*argv: str | Path, cwd: Path | None = None,
                     env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """What ``python -m arena ARGV`` gives (exit code, stdout, stderr), run in this
    process by ``arena.cli.main``: no interpreter start and imports to pay per command.
    ``cwd`` and ``env`` (the whole environment, as for subprocess) hold while it runs.
    For tests of output and exit codes only: the real entry point, signals, a kill and
    anything that depends on the process's own state keep a real ``python -m arena``."""
    from arena.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd, saved_tmp = dict(os.environ), os.getcwd(), tempfile.tempdir
    before = set(children(os.getpid()))
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
            tempfile.tempdir = None  # TMPDIR read again, as a new process would
        if cwd is not None:
            os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main([str(a) for a in argv])
            except SystemExit as e:  # --help, --version
                code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        tempfile.tempdir = saved_tmp
        # as after a real command's exit: the bot processes it started are gone (a
        # sandbox's bubblewrap may take a moment to end after it is killed)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(
                not _zombie(pid) for pid in set(children(os.getpid())) - before):
            time.sleep(0.05)
    return subprocess.CompletedProcess(["arena", *map(str, argv)], code, out.getvalue(),
                                       err.getvalue())


# -- arena serve ----------------------------------------------------------------------


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[str]


def read_line(proc: subprocess.Popen[str], deadline: float) -> str | None:
    """The next line ``proc`` prints ("" at the end of its output), or None if none is
    whole by ``deadline``. Read a byte at a time from the pipe itself: a buffered
    ``readline`` may take the next lines into its buffer too, where ``select`` does not
    see them, so a line already printed would be waited for in vain."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    line = bytearray()
    while True:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
        byte = os.read(fd, 1)
        if not byte:
            return line.decode("utf-8", "replace")
        line += byte
        if byte == b"\n":
            return line.decode("utf-8", "replace")


def start_server(root: Path, prefix: Sequence[str] = ()) -> Server:
    """`arena serve ROOT --port 0` (run by the command ``prefix`` if given), its URL read
    from what it prints."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([*prefix, sys.executable, "-m", "arena", "serve", str(root),
                             "--port", "0"], cwd=REPO, text=True, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 15
    printed = []
    while time.monotonic() < deadline:
        line = read_line(proc, deadline)
        if not line:
            break
        printed.append(line)
        found = re.search(r"https?://[\w.\[\]:-]+/\S*", line)
        if found:
            return Server(found.group(0), proc)
    proc.kill()
    _, err = proc.communicate(timeout=10)
    pytest.fail(f"arena serve printed no URL: {printed} {err}")


def stop_server(server: Server, sig: signal.Signals) -> tuple[int, str, str]:
    """Send ``sig``; the exit code, stdout and stderr once it stopped (fails if not)."""
    server.proc.send_signal(sig)
    try:
        out, err = server.proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.communicate(timeout=10)
        pytest.fail(f"arena serve did not stop on {sig.name}")
    return server.proc.returncode, out, err


def listening_on(port: int) -> list[str]:
    """The local addresses listening on TCP ``port`` (from /proc/net/tcp and tcp6)."""
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hexport = local.split(":")
            if state == "0A" and int(hexport, 16) == port:
                out.append(address)
    return out


# -- the browser (the system's Chromium, driven by Playwright) ------------------------

REQUIRE = "ARENA_REQUIRE_BROWSER"
"""When set (CI sets it where it installs Chromium and Java), a missing browser, validator
or runtime fails these tests instead of skipping them."""


def skip_or_fail(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE):
        pytest.fail(f"{reason} ({REQUIRE} is set)", pytrace=False)
    pytest.skip(reason)


try:
    from playwright.sync_api import (
        Browser,
        BrowserContext,
        Page,
        Playwright,
        Request,
        Route,
        sync_playwright,
    )
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None  # type: ignore[assignment]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]
LOCAL_HOSTS = ("127.0.0.1", "localhost")


def chromium_path() -> str | None:
    """The system's Chromium: $ARENA_CHROMIUM, else chromium or chromium-browser on PATH."""
    given = os.environ.get("ARENA_CHROMIUM")
    if given:
        return given if os.access(given, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if sync_playwright is None:
        skip_or_fail("Playwright for Python is not installed (pip install -e '.[test]')")
    executable = chromium_path()
    if executable is None:
        skip_or_fail("no Chromium to drive: install Debian's chromium package "
                     "(apt-get install chromium), or set ARENA_CHROMIUM")
    pw: Playwright = sync_playwright().start()
    try:
        chromium = pw.chromium.launch(executable_path=executable, headless=True,
                                      args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        pw.stop()


@dataclass
class Watch:
    """Console errors, page errors, failed loads and requests that would leave the
    machine, for every page of one browser context. Outside requests are aborted."""

    origin: str | None = None
    """The http origin pages may load from (``arena serve``), or None: file:// only."""
    problems: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)

    def local(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in ("file", "data", "blob", "about"):
            return True
        if parts.scheme in ("http", "https", "ws", "wss") and self.origin is not None:
            origin = urlsplit(self.origin)
            return (parts.hostname in LOCAL_HOSTS and parts.hostname == origin.hostname
                    and parts.port == origin.port)
        return False

    def attach(self, context: BrowserContext) -> None:
        context.route("**/*", self._route)
        context.on("request", self._request)
        context.on("requestfailed", lambda r: self.problems.append(
            f"request failed: {r.url}: {r.failure}"))
        context.on("response", lambda r: None if r.status < 400 or r.url.endswith(
            "/favicon.ico") else self.problems.append(f"HTTP {r.status}: {r.url}"))
        context.on("console", lambda m: self.problems.append(
            f"console error: {m.text} ({m.location.get('url')}:{m.location.get('lineNumber')})"
        ) if m.type == "error" else None)
        context.on("weberror", lambda e: self.problems.append(f"page error: {e.error}"))

    def check(self) -> None:
        """Fail on anything seen so far (and forget it, so it is reported once)."""
        blocked, problems = self.blocked[:], self.problems[:]
        self.blocked.clear()
        self.problems.clear()
        assert not blocked, f"requests leaving the machine: {blocked}"
        assert not problems, "\n".join(problems)

    def _route(self, route: Route) -> None:
        url = route.request.url
        if self.local(url):
            route.continue_()
        else:
            if url not in self.blocked:
                self.blocked.append(url)
            route.abort()

    def _request(self, request: Request) -> None:
        if not self.local(request.url) and request.url not in self.blocked:
            self.blocked.append(request.url)


@pytest.fixture
def context(browser: Browser) -> Iterator[tuple[BrowserContext, Watch]]:
    """A fresh browser context whose requests and errors are watched; a test that uses
    it fails when any page it opened logged an error or asked for the outside world."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(10_000)
    watch = Watch()
    watch.attach(ctx)
    try:
        yield ctx, watch
        watch.check()
    finally:
        ctx.close()


def open_page(ctx: BrowserContext, url: str) -> Page:
    page = ctx.new_page()
    page.goto(url, wait_until="load")
    return page


STATE_JS = """() => {
    const r = document.getElementById('replay');
    const hands = {};
    for (const h of document.querySelectorAll('div.hand[data-seat]'))
        hands[h.dataset.seat] = [...h.querySelectorAll('span.card')].map(c => c.dataset.card);
    const tw = document.querySelector('span#trick-winner');
    const cells = sel => Object.fromEntries([...document.querySelectorAll('table#scores ' + sel)]
        .map(td => [td.dataset.seat, td.textContent.trim()]));
    return {round: +r.dataset.round, trick: +r.dataset.trick, step: +r.dataset.step, hands,
            winner: tw && tw.dataset.seat !== undefined && tw.dataset.seat !== ''
                    ? +tw.dataset.seat : null,
            winnerName: tw ? tw.textContent.trim() : null,
            log: [...document.querySelectorAll('ol#tricks-log > li')].map(
                li => [li.dataset.trick, li.dataset.winner]),
            totals: cells('td.total'), won: cells('td.won'),
            winningCards: [...document.querySelectorAll('div#trick .winner')].map(
                e => e.dataset.card || null)};
}"""


def state(page: Page) -> dict[str, Any]:
    return dict(page.evaluate(STATE_JS))


CGROUP_MODES = ("v1", "unified")
"""The two ways the arena uses cgroups on a machine with v1 and the v2 hierarchy beside
it ("hybrid"): v1 for everything, or v2 for the stop, the kill, the CPU time and the sweep
(``ARENA_CGROUP=unified``). The isolation, fair-clock, reaper and kill -9 tests run both."""


def unified_why_not() -> str | None:
    """Why the v2 hierarchy beside v1 cannot be used here (None: it can)."""
    from arena.proc.mechanism import UNIFIED_MOUNT
    from arena.proc.mechanism import unified_beside as _unified_beside

    if not (Path("/sys/fs/cgroup/memory").is_dir() and UNIFIED_MOUNT.is_dir()):
        return "not a machine with cgroup v1 and the v2 hierarchy beside it"
    if os.geteuid() != 0:
        return "not root"
    beside = _unified_beside()
    if isinstance(beside, Path):
        try:  # this process's folder there, made by the probe: empty again
            beside.rmdir()
        except OSError:
            pass
        return None
    return beside


@pytest.fixture(params=CGROUP_MODES)
def cgroup_mode(request: pytest.FixtureRequest,
                monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each of :data:`CGROUP_MODES`, in this process (``limit_mechanism`` detected again)
    and for the arenas it starts (``ARENA_CGROUP``); ``unified`` skips where the machine
    has no v2 hierarchy beside v1 that the arena can use."""
    from arena.proc.cgroup import limit_mechanism

    mode = str(request.param)
    if mode == "unified":
        why = unified_why_not()
        if why is not None:
            pytest.skip(f"ARENA_CGROUP=unified: {why}")
        monkeypatch.setenv("ARENA_CGROUP", "unified")
    else:
        monkeypatch.delenv("ARENA_CGROUP", raising=False)
    limit_mechanism.cache_clear()
    try:
        yield mode
    finally:
        monkeypatch.undo()
        limit_mechanism.cache_clear()
