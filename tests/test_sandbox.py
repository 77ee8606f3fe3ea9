"""The sandbox's parts: the bubblewrap command line, limits and their faults, the pool's
invariant (a process never meets a deal twice, never two games at once), and a restarted
bot that must repeat its hand-shake. Real processes, real gRPC; tests/test_isolation_*.py
plays whole tournaments against hostile bots."""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import trio
from conftest import REPO, SAMPLE_BOTS, TEST_BOTS, Sandbox, bot_cmd, gone, run_trio

from arena.bots import make_bot
from arena.model.errors import BotStartError
from arena.model.limits import Confinement, Limits
from arena.model.spec import BotSpec
from arena.play.players import LocalPlayer, RemotePlayer
from arena.play.pool import BotPool
from arena.play.referee import GameReport, TimeControl, play_game
from arena.proc.bwrap import bwrap_args, sandbox_works
from arena.proc.cgroup import limit_mechanism
from arena.proc.connection import BotConnection
from arena.proc.process import BotProcess
from arena.proc.view import runtime_view
from arena.rules import new_game

needs_sandbox = pytest.mark.skipif(
    sandbox_works() is not None and not os.environ.get("CI"),
    reason=f"no sandbox here: {sandbox_works()}")
needs_cgroups = pytest.mark.skipif(
    not limit_mechanism().cgroups and not os.environ.get("CI"),
    reason=f"no cgroups here: {limit_mechanism().note}")
RANDOM_PY = bot_cmd(SAMPLE_BOTS / "random_bot.py")
CLOCK = TimeControl(move_ms=5000)


def args_after(flag: str, argv: list[str]) -> list[str]:
    """Every value that follows ``flag`` in ``argv``."""
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


# -- the command line -----------------------------------------------------------------


@needs_sandbox
def test_the_output_folder_is_left_out_where_the_bot_folder_contains_it(tmp_path: Path) -> None:
    """The bot's folder is built from its exact leaves: every entry bound on its own but
    the output folder, which no option names (a cover would name it in the mount
    table)."""
    bot = tmp_path / "bot.py"
    bot.write_text("")
    (tmp_path / "data").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    argv = bwrap_args([sys.executable, str(bot)], tmp_path,
                      Confinement(), {"ARENA_BOT_LISTEN": "unix:x"}, hide=(out,))
    assert str(tmp_path) not in args_after("--ro-bind", argv)  # not bound whole
    assert {str(bot), str(tmp_path / "data")} <= set(args_after("--ro-bind", argv))
    assert str(tmp_path) in args_after("--dir", argv)
    assert str(out) not in argv  # named nowhere
    # besides /tmp and the socket folder, only the runtime view's empty covers (the
    # standard library's tests, a base installation's unused packages)
    tmpfs = args_after("--tmpfs", argv)
    assert tmpfs[0] == "/tmp" and tmpfs[-1] == "/run/arena", tmpfs
    left_out = {str(p) for p in runtime_view(Path(sys.executable)).exclude}
    assert set(tmpfs[1:-1]) <= left_out, tmpfs
    assert args_after("--bind", argv) == []  # nothing of the host is writable
    assert "--unshare-all" in argv and "--die-with-parent" in argv and "--clearenv" in argv
    assert args_after("--setenv", argv) == ["ARENA_BOT_LISTEN"]


@needs_sandbox
def test_a_command_runs_as_written_in_its_folder_even_where_an_argument_names_a_file(
        tmp_path: Path) -> None:
    """The arena never rewrites a command: an argument equal to the name of a folder or
    file in the working folder (here the output folder ``hog``) reaches the bot as
    written, the bot starts in that folder (which exists in the sandbox, otherwise
    empty), and relative paths in the command resolve as outside."""
    tour = tmp_path / "tour"
    (tour / "hog").mkdir(parents=True)
    (tour / "bots").mkdir()
    shutil.copy(TEST_BOTS / "named.py", tour / "bots" / "named.py")
    shutil.copy(TEST_BOTS / "_common.py", tour / "bots" / "_common.py")
    specs = [f"cmd:python {TEST_BOTS / 'named.py'} --name hog",  # the bot elsewhere
             "cmd:python bots/named.py --name bots/named.py",  # relative, and a file
             "random"]
    done = subprocess.run(
        [sys.executable, "-m", "arena", "play", "--game", "trumps", "--players", "3",
         "--seed", "3", "--quiet", "--bots", ",".join(specs),
         "--record", str(tmp_path / "r.json")],
        cwd=tour, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "r.json").read_text())
    # the names the bots were given on their command lines, as written
    assert record["seats"] == ["hog", "bots/named.py", "random"]


@needs_sandbox
def test_a_sandboxed_process_sees_only_what_it_was_given(arena_sandbox: Sandbox,
                                                         tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the seed")
    granted = tmp_path / "granted.txt"
    granted.write_text("a model")
    probe = tmp_path / "bot" / "probe.py"
    probe.parent.mkdir()
    probe.write_text(
        "import os, socket, sys\n"
        f"print('secret', os.path.exists({str(secret)!r}))\n"
        f"print('granted', open({str(granted)!r}).read())\n"
        "print('pids', sorted(p for p in os.listdir('/proc') if p.isdigit()))\n"
        "print('env', sorted(os.environ))\n"
        "s = socket.socket()\n"
        "try:\n    s.connect(('127.0.0.1', 22)); print('net', 'open')\n"
        "except OSError as e:\n    print('net', e.errno)\n"
        "open('/tmp/x', 'w').write('mine')\n"
        "print('tmp', os.listdir('/tmp'))\n")
    conf = Confinement(read_only=(granted,), env=(("MODEL", "x"),))
    (tmp_path / "sock").mkdir()
    argv = bwrap_args([sys.executable, str(probe)], tmp_path / "bot", conf,
                      {"ARENA_BOT_LISTEN": "unix:/nowhere", "MODEL": "x"})
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["secret"] == "False"
    assert lines["granted"] == "a model"
    assert lines["pids"] in ("['1', '2']", "['1', '2', '3']")  # bubblewrap's init and it
    assert lines["env"] == "['ARENA_BOT_LISTEN', 'LC_CTYPE', 'MODEL', 'PWD']"
    assert lines["net"] in ("111", "101")  # refused or unreachable: no network of its own
    # its own /tmp: what it writes there (and the paths to what is bound into it, when
    # they lie below /tmp) is all it sees, and nothing reaches the real /tmp
    assert "'x'" in lines["tmp"] and not Path("/tmp/x").exists()
    bound = {Path(p).parts[2] for p in args_after("--ro-bind", argv) + args_after("--bind", argv)
             if Path(p).is_relative_to("/tmp")}
    assert set(ast.literal_eval(lines["tmp"])) <= {"x"} | bound


# -- limits -----------------------------------------------------------------------------


async def _one_game(conn: BotConnection, game: str = "trumps",
                    options: dict[str, object] | None = None,
                    clock: TimeControl = CLOCK) -> GameReport:
    try:
        await conn.open(game)
        players = [RemotePlayer(conn, "bot"), LocalPlayer(make_bot("heuristic", 1)),
                   LocalPlayer(make_bot("random", 2))]
        return await play_game(new_game(game, options or {"players": 3, "draw": False}, 5),
                               players, clock)
    finally:
        await conn.aclose()


@needs_cgroups
def test_the_cpu_limit_is_a_resource_fault_charged_to_that_bot(arena_sandbox: Sandbox) -> None:
    thinker = bot_cmd(TEST_BOTS / "hostile" / "thinker.py", "--cpu-ms", 700)
    conn = BotConnection("thinker", BotSpec.parse(thinker), arena_sandbox.tmp / "logs",
                         confinement=Confinement(sandbox=sandbox_works() is None,
                                                 limits=Limits(cpu_s=1)))
    report = run_trio(_one_game, conn)
    faults = report.record["faults"]
    assert faults and all(f["seat"] == 0 for f in faults)
    assert faults[0]["kind"] == "resource"
    assert faults[0]["detail"].startswith(
        "the bot process was killed: CPU time limit 1 s reached during a ")


@needs_cgroups
def test_cpu_time_per_decision_is_measured_and_recorded(arena_sandbox: Sandbox) -> None:
    thinker = bot_cmd(TEST_BOTS / "hostile" / "thinker.py", "--cpu-ms", 150, "--per-game", 2)
    conn = BotConnection("thinker", BotSpec.parse(thinker), arena_sandbox.tmp / "logs",
                         confinement=Confinement(sandbox=sandbox_works() is None))
    report = run_trio(_one_game, conn)
    cpu = report.cpu_ms[0]
    assert len(cpu) == len(report.latencies_ms[0]) > 2 and None not in cpu
    assert 140 <= cpu[0] < 400 and 140 <= cpu[1] < 400  # its two thinks
    assert max(cpu[2:]) < 100  # the rest: answered at once
    assert report.cpu_ms[1] == [None] * len(report.latencies_ms[1])  # built-in: not measured
    assert report.record["timing"]["cpu_ms"][0] == [round(x, 3) for x in cpu]


# -- restarts -----------------------------------------------------------------------------


def test_a_restarted_bot_must_give_the_same_name(arena_sandbox: Sandbox) -> None:
    marker = arena_sandbox.tmp / "crashed"
    crasher = bot_cmd(TEST_BOTS / "crasher.py", "--exit-on", 2, "--marker", marker,
                      "--rename")
    # unsandboxed: the marker file is how the restarted process knows it is one
    conn = BotConnection("crasher", BotSpec.parse(crasher), arena_sandbox.tmp / "logs",
                         confinement=Confinement(sandbox=False))
    report = run_trio(_one_game, conn)
    faults = report.record["faults"]
    assert faults[0]["detail"].startswith(
        "the bot process exited with code 3 during a Play; restarting it; log ")
    assert faults[1]["kind"] == "crash"
    assert ("a new process answered the hand-shake as 'impostor' (protocol 1), not as "
            "'crasher'") in faults[1]["detail"]
    assert report.record["forfeited"][0]


# -- the pool ---------------------------------------------------------------------------


@needs_sandbox
def test_the_pool_never_gives_a_process_a_deal_twice_or_two_games_at_once(
        arena_sandbox: Sandbox) -> None:
    async def main() -> list[int]:
        pids: list[int] = []
        async with BotPool("r", BotSpec.parse(RANDOM_PY), arena_sandbox.tmp / "logs", 10.0,
                           Confinement(), "deal", deals=3) as pool:
            await pool.open("wizard")
            a = await pool.lease(1)
            b = await pool.lease(1)  # the same deal at another table, at the same time
            assert a is not b
            assert a.pid and b.pid and a.pid != b.pid
            await pool.release(a)
            await pool.release(b)
            c = await pool.lease(2)
            assert c in (a, b)  # a process that has not seen deal 2 is used again
            d = await pool.lease(1)
            assert d not in (a, b)  # both saw deal 1
            assert {frozenset(x.deals) for x in (a, b, d)} >= {frozenset({1})}
            for conn in (c, d):
                await pool.release(conn)
            e = await pool.lease(3)
            assert 3 in e.deals
            pids = [x.pid for x in (a, b, d) if x.pid is not None]
            await pool.release(e)
        return pids

    pids = run_trio(main)
    assert pids and all(gone(pid) for pid in pids)


@needs_sandbox
def test_a_spare_is_started_only_for_a_coming_game_that_needs_one(
        arena_sandbox: Sandbox) -> None:
    """No process starts for nothing: after the first, a spare starts only when a coming
    game (what the runner tells the pool) is one no idle process may play (each plays
    at most one of them, and never a deal it saw), and at most the pool's cap of them.
    (The arena once kept a spare per bot whatever came: 140 of 852 processes of a
    30-bot field never played.)"""
    async def main() -> None:
        async with BotPool("r", BotSpec.parse(RANDOM_PY), arena_sandbox.tmp / "logs", 30.0,
                           Confinement(), "deal", deals=3, spares=2) as pool:
            await pool.open("wizard")
            assert pool.started == 1
            pool.prepare([1])  # the idle first process plays it
            pool.prepare([])
            assert pool.started == 1
            pool.prepare([1, 1])  # two games of deal 1 at once: one more process
            assert pool.started == 2
            pool.prepare([1, 1, 1, 1])  # four: the cap, two spares at once
            assert pool.started == 3
            a = await pool.lease(1)  # the idle one
            b = await pool.lease(1)  # a spare
            c = await pool.lease(1)  # the other spare
            assert len({a.pid, b.pid, c.pid}) == 3 and pool.started == 3
            for conn in (a, b, c):
                await pool.release(conn)
            pool.prepare([2, 2, 2])  # three idle processes, none has seen deal 2
            assert pool.started == 3

    run_trio(main)


@needs_sandbox
def test_game_isolation_ends_every_process_after_its_game(arena_sandbox: Sandbox) -> None:
    async def main() -> None:
        async with BotPool("r", BotSpec.parse(RANDOM_PY), arena_sandbox.tmp / "logs", 10.0,
                           Confinement(), "game", deals=5) as pool:
            await pool.open("wizard")
            first = await pool.lease(1)
            pid = first.pid
            await pool.release(first)
            assert pid is not None and first.pid is None
            second = await pool.lease(2)
            assert second is not first and second.pid != pid
            await pool.release(second)
            assert pool.started >= 2  # the first, and a fresh one for the next game

    run_trio(main)


# -- the stop is asynchronous ----------------------------------------------------------


def test_ending_a_bot_that_ignores_sigterm_does_not_block_the_loop(arena_sandbox: Sandbox,
                                                                   tmp_path: Path) -> None:
    stubborn = tmp_path / "stubborn.py"
    ignoring = tmp_path / "ignoring"
    stubborn.write_text("import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                        "open(sys.argv[1], 'w').close()\ntime.sleep(60)\n")

    async def main() -> float:
        process = BotProcess("stubborn", f"python {stubborn} {ignoring}", tmp_path / "s.log",
                             confinement=Confinement(sandbox=False))
        process.spawn()
        with trio.fail_after(30):  # its handler is installed: it says so with a file
            while not ignoring.exists():
                await trio.sleep(0.01)
        pid = process.pid
        assert pid is not None
        ticks_in_grace = 0

        def in_grace() -> bool:  # it runs on, SIGTERM ignored: not killed, nor reaped
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                return False
            return stat.rpartition(")")[2].split()[0] != "Z"

        async def tick() -> None:
            nonlocal ticks_in_grace
            while True:
                await trio.sleep(0.01)
                ticks_in_grace += in_grace()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(tick)
            started = trio.current_time()
            with trio.fail_after(30):
                await process.aclose(grace_s=0.5)
            elapsed = trio.current_time() - started
            nursery.cancel_scope.cancel()
        assert process.returncode == -signal.SIGKILL
        # the loop ran another task while the bot was still in its grace (an aclose
        # that waited on the trio thread would let it run only after the kill)
        assert ticks_in_grace >= 1
        return elapsed

    assert run_trio(main) > 0.45  # the grace was given before the SIGKILL


def test_a_missing_program_is_one_line(arena_sandbox: Sandbox) -> None:
    conn = BotConnection("nobody", BotSpec.parse("cmd:/nonexistent/bot"), arena_sandbox.tmp / "l")
    from arena.proc.connection import HandshakeError

    with pytest.raises(HandshakeError) as error:
        run_trio(conn.open)
    assert str(error.value) == ("bot nobody: cannot start '/nonexistent/bot': "
                                "No such file or directory")


def test_the_arena_refuses_to_run_unsandboxed_when_bubblewrap_is_missing(
        arena_sandbox: Sandbox, tmp_path: Path) -> None:
    env = dict(arena_sandbox.env, PATH=str(tmp_path))  # no bwrap on this PATH
    (tmp_path / "python").symlink_to(sys.executable)
    done = subprocess.run([sys.executable, "-m", "arena", "play", "--game", "wizard",
                           "--players", "3", "--bots", f"{RANDOM_PY},random,random"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "'bubblewrap' package" in done.stderr
    assert shutil.which("bwrap", path=str(tmp_path)) is None


# -- ending ----------------------------------------------------------------------------


@needs_cgroups
def test_sdk_bots_stopped_between_calls_end_on_sigterm_not_sigkill(
        arena_sandbox: Sandbox) -> None:
    # A Python bot stopped and continued between its calls (as in every game) must act
    # on the SIGTERM that ends it well inside the grace before SIGKILL, whichever of its
    # threads the kernel hands the signal to: a bot that waits out the grace holds up the
    # game that retires it. Six bots, so a signal sometimes lands off the main thread.
    conns = [BotConnection(f"py{i}", BotSpec.parse(bot_cmd(SAMPLE_BOTS / script)),
                           arena_sandbox.tmp / "logs",
                           confinement=Confinement(sandbox=sandbox_works() is None))
             for i, script in enumerate(["random_bot.py", "heuristic_bot.py"] * 3)]

    async def scenario() -> list[tuple[float, BotProcess]]:
        async with trio.open_nursery() as nursery:
            for conn in conns:
                nursery.start_soon(conn.open, "wizard")
        ended = []
        for conn in conns:
            process = conn.process
            assert process is not None
            for _ in range(3):  # calls: continued, then stopped again
                conn.wake()
                await trio.sleep(0.02)
                conn.rest()
            started = trio.current_time()
            await conn.aclose()
            ended.append((trio.current_time() - started, process))
        return ended

    for took, process in run_trio(scenario):
        # it ended on the SIGTERM, within the grace: no SIGKILL was sent while it ran
        assert process.exit_text() == "exited with code 0", process.exit_text()
        assert not process.killed, took
        assert "stopping" in process.log_path.read_text()


async def _stopped_cpu(proc: BotProcess, rest_s: float) -> tuple[int, int, int]:
    """Start ``proc``; stop it; its CPU time when stopped and ``rest_s`` later; then,
    continued, once its CPU time has grown past that (the bot does use CPU)."""
    channel = await proc.start()
    channel.close()
    try:
        await trio.sleep(0.2)  # let it get going
        proc.freeze()
        stopped = proc.cpu_ns() or 0
        await trio.sleep(rest_s)
        later = proc.cpu_ns() or 0
        proc.thaw()
        running = later
        with trio.move_on_after(20):
            while running <= later:
                await trio.sleep(0.01)
                running = proc.cpu_ns() or 0
        return stopped, later, running
    finally:
        await proc.aclose()


@needs_cgroups
@pytest.mark.parametrize("bot", ["spinner.py", "forkchain.py --chain sh"])
@pytest.mark.parametrize("stop", ["freezer", "sweep"])
def test_a_stopped_bot_gets_no_cpu(arena_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch,
                                   bot: str, stop: str) -> None:
    """Deterministic: a stopped bot's CPU time does not move, whatever the machine's load
    (a busy loop in two threads; a chain of short-lived processes, which outruns a
    SIGSTOP sweep, so only the freezer is asked to hold it). Control: continued, the
    same bot's CPU time grows."""
    if stop == "sweep":
        if bot.startswith("forkchain"):
            pytest.skip("a fork chain outruns a SIGSTOP sweep: see the forkchain tests")
        monkeypatch.setenv("ARENA_NO_FREEZER", "1")
    elif "freezer" not in limit_mechanism().base and limit_mechanism().kind != "cgroup2":
        pytest.skip("no cgroup freezer here")
    script, *args = bot.split()
    proc = BotProcess("stopped", bot_cmd(TEST_BOTS / "hostile" / script, *args)[4:],
                      arena_sandbox.tmp / "logs" / "stopped.log", startup_s=60, idle=False,
                      confinement=Confinement(sandbox=sandbox_works() is None))
    stopped, later, running = run_trio(_stopped_cpu, proc, 0.5)
    assert later == stopped, (stopped, later)
    assert running > later, (later, running)


@needs_sandbox
def test_a_socket_symlink_made_by_the_bot_is_never_followed(arena_sandbox: Sandbox) -> None:
    """The arena opens the bot's socket with O_NOFOLLOW through the sandbox's root: a
    ``bot.sock`` symlink pointing at a socket of the host is refused, and that socket
    sees no connection (control: it accepts one from here)."""
    import socket as sockets

    host = arena_sandbox.tmp / "host.sock"
    server = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    server.bind(str(host))
    server.listen(4)
    server.setblocking(False)
    script = arena_sandbox.tmp / "bot" / "liar.py"
    script.parent.mkdir()
    script.write_text(f"import os, time\nos.symlink({str(host)!r}, '/run/arena/bot.sock')\n"
                      "time.sleep(60)\n")
    proc = BotProcess("liar", f"python {script}", arena_sandbox.tmp / "logs" / "liar.log",
                      startup_s=2, confinement=Confinement(sandbox=True))
    try:
        with pytest.raises(BotStartError, match="no socket after 2 s"):
            run_trio(proc.start)
        with pytest.raises(BlockingIOError):
            server.accept()
        probe = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        probe.connect(str(host))  # the control: the host socket does accept
        server.accept()[0].close()
        probe.close()
    finally:
        proc.stop_now()
        server.close()


def test_an_unsandboxed_bot_socket_fits_under_a_long_temporary_folder(
        arena_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """A socket's path takes at most 107 bytes: under a longer TMPDIR the socket folder of
    an unsandboxed bot is made in /tmp instead, and the bot serves."""
    long_dir = arena_sandbox.tmp / ("x" * 60) / ("y" * 60)
    long_dir.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(long_dir))
    proc = BotProcess("short", RANDOM_PY[4:], arena_sandbox.tmp / "logs" / "short.log",
                      startup_s=120, confinement=Confinement(sandbox=False))  # any load

    async def serve() -> str:
        channel = await proc.start()
        channel.close()
        target = proc.target
        await proc.aclose()
        return target

    target = run_trio(serve)
    assert target.startswith("unix:/tmp/arena-bot-") and len(target) - 5 <= 107, target


def test_the_stop_does_not_hang_on_a_writer_that_outlives_the_bot(
        arena_sandbox: Sandbox) -> None:
    """Another process holds the bot's stderr open (here this test, through
    /proc/PID/fd/2: it wrote a line, then keeps still) while the bot is killed: the log
    pump lets go a moment after the process has ended, and the arena's stop returns (it
    used to wait for the end of file for ever, closing the pipe under the pump)."""
    proc = BotProcess("held", RANDOM_PY[4:], arena_sandbox.tmp / "logs" / "held.log",
                      startup_s=60, confinement=Confinement(sandbox=sandbox_works() is None))

    async def run() -> None:
        channel = await proc.start()
        channel.close()
        assert proc.pid is not None
        held = os.open(f"/proc/{proc.pid}/fd/2", os.O_WRONLY)
        try:
            os.write(held, b"still here\n")
            await trio.sleep(0.05)
            with trio.fail_after(60):  # a guard against the hang, not a timing
                await proc.aclose()
                pump = proc._drain
                assert pump is not None
                while pump.is_alive():
                    await trio.sleep(0.01)
        finally:
            os.close(held)

    run_trio(run)
    assert "still here" in (arena_sandbox.tmp / "logs" / "held.log").read_text()


@needs_sandbox
def test_a_start_that_fails_after_its_cgroup_and_uid_leaves_neither(tmp_path: Path) -> None:
    """The log cannot be made (its folder is a file): one line naming the bot, and the
    cgroup, the uid lease and the descriptors made for the start are all given back."""
    (tmp_path / "logs").write_text("a file, not a folder")
    proc = BotProcess("nolog", RANDOM_PY[4:], tmp_path / "logs" / "nolog.log",
                      confinement=Confinement())
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(BotStartError, match=r"^bot nolog: cannot make its log: "):
        proc.spawn()
    assert proc._cgroup is None and proc._lease is None and proc.pid is None
    assert set(os.listdir("/proc/self/fd")) <= before  # nothing left open
