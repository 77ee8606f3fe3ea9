"""Whole games over real gRPC with real bot processes.

The Python sample bots and the misbehaving bots of tests/bots play against built-ins,
through ``arena play`` (a subprocess) or through ``seated_players`` and ``play_game``.
Every record must pass ``arena verify``; every fault must be recorded where it happened;
and after every test no bot process and no socket folder of the arena's may remain
(the ``arena_sandbox`` fixture checks).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import (
    REPO,
    SAMPLE_BOTS,
    TEST_BOTS,
    Sandbox,
    arena_command,
    arena_in_process,
    bot_cmd,
    bot_processes,
    decisions_of,
    gone,
    read_trace,
    replay,
    run_trio,
    wait_until,
)

from arena.bots import make_bot
from arena.cli import main as arena_main
from arena.model.limits import Confinement
from arena.model.record import verify_record
from arena.model.spec import BotSpec
from arena.play.players import LocalPlayer, RemotePlayer
from arena.play.referee import GameReport, TimeControl, default_action, describe_action, play_game
from arena.play.seats import SeatSpec, seated_players
from arena.proc.connection import BotConnection, HandshakeError
from arena.rules import IllegalAction, new_game

pytestmark = pytest.mark.usefixtures("arena_sandbox")

DEFAULT_CLOCK = TimeControl(move_ms=5000)
"""Generous: on a loaded machine a well-behaved bot must never time out, and a crashed
bot's restart (which counts against its next decision) must fit."""
TRUSTED = Confinement(sandbox=False)
"""These tests are about the referee and bot processes, and their bots write call traces
to the test's folder: they run unsandboxed (the sandbox has tests/test_isolation_*.py)."""
RANDOM_PY = bot_cmd(SAMPLE_BOTS / "random_bot.py")
HEURISTIC_PY = bot_cmd(SAMPLE_BOTS / "heuristic_bot.py")


def arena_play(sandbox: Sandbox, *argv: str) -> subprocess.CompletedProcess[str]:
    """``arena play`` in this process (the tests read its output and exit code); Ctrl-C
    and SIGTERM are sent to a real ``python -m arena play`` below."""
    return arena_in_process("play", "--no-sandbox", *argv, env=sandbox.env, cwd=REPO)


def assert_verifies(record: dict[str, Any], path: Path,
                    capsys: pytest.CaptureFixture[str]) -> None:
    """``arena verify`` accepts the record."""
    if not path.exists():
        path.write_text(json.dumps(record))
    capsys.readouterr()
    code = arena_main(["verify", str(path)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    assert out == f"{path}: ok (1 record), no chain\n"


async def _game(game_name: str, options: dict[str, Any], seed: int, specs: list[str],
                tmp: Path, clock: TimeControl, connections: list[BotConnection],
                ) -> GameReport:
    game = new_game(game_name, options, seed)
    parsed = [BotSpec.parse(s) for s in specs]
    seats = [SeatSpec(p.value if p.kind == "builtin" else None, p) for p in parsed]
    async with seated_players(seats, game_name, tmp / "logs", seed,
                              confinement=TRUSTED) as players:
        connections.extend(p.connection for p in players if isinstance(p, RemotePlayer))
        # the processes the arena started: what the sandbox looks for at the end
        assert sorted(bot_processes(tmp)) == sorted(
            c.pid for c in connections if c.spec.kind == "cmd")
        return await play_game(game, players, clock, game_id=f"g{seed}", table_id="t")


def play_direct(sandbox: Sandbox, game_name: str, options: dict[str, Any], seed: int,
                specs: list[str], clock: TimeControl = DEFAULT_CLOCK,
                ) -> tuple[GameReport, list[BotConnection]]:
    """One game through seated_players and play_game; the bot processes have ended when
    this returns."""
    connections: list[BotConnection] = []
    report = run_trio(_game, game_name, options, seed, specs, sandbox.tmp, clock, connections)
    for conn in connections:
        assert conn.pid is None  # closed
    verify_record(report.record)
    return report, connections


def first_log(conn: BotConnection) -> Path:
    """The log of a restarted connection's first process (its own is numbered 2)."""
    log = conn.log_path
    assert log is not None and log.name.endswith(".2.log")
    first = log.with_name(log.name.removesuffix(".2.log") + ".log")
    assert first.exists()
    return first


def log_quote(log: Path) -> str:
    """How a crash report quotes the last lines of ``log``."""
    lines = [line.strip() for line in log.read_text().splitlines() if line.strip()]
    tail = " | ".join(lines[-3:])
    return '"' + (tail if len(tail) <= 120 else "…" + tail[-119:]) + '"'


def call_of(step: Any) -> str:
    """The protocol's call of a recorded decision."""
    return {"BID": "Bid", "PLAY": "Play", "TRUMP": "ChooseTrump"}[step.decision.name]


def decision_calls(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in trace if t["call"] in ("bid", "play", "trump")]


def fault_steps(record: dict[str, Any], seat: int) -> list[Any]:
    """The seat's decisions that have a fault, in order (matched by round and trick)."""
    faults = [f for f in record["faults"] if f["seat"] == seat]
    steps = decisions_of(record, seat)
    return [next(s for s in steps if s.where == (fault["round"], fault["trick"])
                 and describe_action(s.decision, s.action) == fault["action"])
            for fault in faults]


def check_fault_actions(record: dict[str, Any], seat: int) -> None:
    """Each fault names the default action, and that is what the record shows applied."""
    faults = [f for f in record["faults"] if f["seat"] == seat]
    for fault, step in zip(faults, fault_steps(record, seat), strict=True):
        assert step.action == default_action(step.view)
        assert fault["action"] == describe_action(step.decision, step.action)


def check_forfeit(record: dict[str, Any], seat: int, calls: int) -> None:
    """``seat`` was forfeited at its ``calls``-th decision: from there on every decision
    of it is the default action (and the bot was not asked: see its trace)."""
    faults = [f for f in record["faults"] if f["seat"] == seat]
    assert [bool(f.get("forfeited")) for f in faults] == [False] * (len(faults) - 1) + [True]
    assert record["forfeited"] == [s == seat for s in range(len(record["seats"]))]
    steps = decisions_of(record, seat)
    assert steps[calls - 1].where == (faults[-1]["round"], faults[-1]["trick"])
    for step in steps[calls - 1:]:
        assert step.action == default_action(step.view)


# -- whole games ----------------------------------------------------------------------


@pytest.mark.parametrize(("game", "options", "bots", "names", "rounds"), [
    ("wizard", ["--players", "6"],
     [RANDOM_PY, HEURISTIC_PY, "heuristic", "random", RANDOM_PY, "heuristic"],
     ["random-py", "heuristic-py", "heuristic", "random", "random-py", "heuristic"], 10),
    ("trumps", ["--players", "4", "--option", "announce=true"],
     [HEURISTIC_PY, "random", RANDOM_PY, "heuristic"],
     ["heuristic-py", "random", "random-py", "heuristic"], 1),
    ("trumps", ["--players", "5", "--option", "draw=false", "--option", "trump=S"],
     ["random", RANDOM_PY, HEURISTIC_PY, "heuristic", RANDOM_PY],
     ["random", "random-py", "heuristic-py", "heuristic", "random-py"], 1),
], ids=["wizard-6", "trumps-4-announce", "trumps-5-nodraw"])
def test_arena_play_a_full_game_with_python_bots(
        arena_sandbox: Sandbox, capsys: pytest.CaptureFixture[str], game: str,
        options: list[str], bots: list[str], names: list[str], rounds: int) -> None:
    path = arena_sandbox.tmp / "game.json"
    done = arena_play(arena_sandbox, "--game", game, *options, "--seed", "2026",
                      "--bots", ",".join(bots), "--record", str(path), "--quiet",
                      "--move-ms", "5000")
    assert (done.returncode, done.stderr) == (0, "")
    assert f"record written to {path}" in done.stdout
    record = json.loads(path.read_text())
    assert record["seats"] == names
    assert len(record["rounds"]) == rounds
    assert record["faults"] == [] and record["forfeited"] == [False] * len(names)
    assert_verifies(record, path, capsys)


def test_play_game_with_seated_bot_processes(arena_sandbox: Sandbox,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    specs = [HEURISTIC_PY, "random", RANDOM_PY]
    report, conns = play_direct(arena_sandbox, "wizard", {"players": 3, "hook_rule": True},
                                17, specs)
    record = report.record
    assert record["seats"] == ["heuristic-py", "random", "random-py"]
    assert record["faults"] == [] and record["game_id"] == "g17"
    assert [c.info.name for c in conns if c.info] == ["heuristic-py", "random-py"]
    assert [c.restarts for c in conns] == [0, 0]
    counts = [0, 0, 0]
    for step in replay(record):
        counts[step.seat] += 1
    assert [len(lat) for lat in report.latencies_ms] == counts
    assert all(0 < ms < 5000 for ms in report.latencies_ms[0])
    assert_verifies(record, arena_sandbox.tmp / "game.json", capsys)


def test_two_seats_can_share_one_bot_process(arena_sandbox: Sandbox) -> None:
    trace = arena_sandbox.tmp / "trace.jsonl"

    async def main() -> GameReport:
        conn = BotConnection("shared", BotSpec.parse(bot_cmd(TEST_BOTS / "sleepy.py",
                                                             "--sleep-ms", 0, "--trace",
                                                             trace)),
                             arena_sandbox.tmp / "logs", confinement=TRUSTED)
        try:
            await conn.open("trumps")
            players = [RemotePlayer(conn, "a"), LocalPlayer(make_bot("heuristic", 1)),
                       RemotePlayer(conn, "b")]
            return await play_game(new_game("trumps", {"players": 3}, 4), players,
                                   DEFAULT_CLOCK)
        finally:
            conn.close()

    report = run_trio(main)
    assert report.record["faults"] == []
    calls = decision_calls(read_trace(trace))
    assert len({c["pid"] for c in calls}) == 1
    assert len(calls) == len(decisions_of(report.record, 0)) + len(
        decisions_of(report.record, 2))
    assert report.record["seats"] == ["a", "heuristic", "b"]


@pytest.mark.parametrize("address", ["unix", "grpc"])
def test_a_running_bot_is_reached_by_address_and_left_running(
        arena_sandbox: Sandbox, address: str) -> None:
    sock = arena_sandbox.tmp / "ext.sock"
    listen = f"unix:{sock}" if address == "unix" else "127.0.0.1:0"
    env = {k: v for k, v in arena_sandbox.env.items() if not k.startswith("ARENA_")}
    bot = subprocess.Popen([sys.executable, str(SAMPLE_BOTS / "random_bot.py"),
                            "--listen", listen], env=env, stderr=subprocess.PIPE, text=True)
    try:
        spec = f"unix:{sock}"
        if address == "grpc":
            assert bot.stderr is not None
            line = ""
            while "serving on port" not in line:
                line = bot.stderr.readline()
                assert line, "the bot ended without serving"
            spec = f"grpc://127.0.0.1:{int(line.split()[-1])}"
        report, conns = play_direct(arena_sandbox, "trumps", {"players": 3}, 8,
                                    [spec, "heuristic", "random"])
        assert report.record["seats"][0] == "random-py" and report.faults == []
        assert conns[0].pid is None
        assert bot.poll() is None  # the arena ends only what it started
    finally:
        bot.terminate()
        assert bot.wait(5) == 0
        if bot.stderr is not None:
            bot.stderr.close()


# -- misbehaving bots -----------------------------------------------------------------


def test_a_bot_past_its_deadline_times_out_and_is_forfeited(
        arena_sandbox: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    trace = arena_sandbox.tmp / "trace.jsonl"
    sleepy = bot_cmd(TEST_BOTS / "sleepy.py", "--sleep-ms", 600, "--trace", trace)
    report, _ = play_direct(arena_sandbox, "trumps", {"players": 4, "draw": False}, 3,
                            ["random", sleepy, "heuristic", "random"],
                            TimeControl(move_ms=200, max_faults=3))
    record = report.record
    steps = decisions_of(record, 1)
    assert [(f["seat"], f["round"], f["trick"], f["kind"], f["detail"])
            for f in record["faults"]] == \
        [(1, 1, s.where[1], "timeout", "no answer within 200 ms") for s in steps[:3]]
    check_fault_actions(record, 1)
    check_forfeit(record, 1, 3)
    calls = read_trace(trace)
    assert len(decision_calls(calls)) == 3  # never asked again
    assert [c["deadline_ms"] for c in decision_calls(calls)] == [200] * 3
    assert "round_ended" not in [c["call"] for c in calls]
    (end,) = [c for c in calls if c["call"] == "game_ended"]
    assert end["forfeited"] and end["forfeit_reason"] == (
        "3 faults (the limit is 3); the last: timeout: no answer within 200 ms")
    assert_verifies(record, arena_sandbox.tmp / "game.json", capsys)


def test_a_slow_bot_draws_on_its_time_bank_before_it_is_faulted(
        arena_sandbox: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    trace = arena_sandbox.tmp / "trace.jsonl"
    sleep_ms, move_ms, bank_ms = 150, 100, 400
    sleepy = bot_cmd(TEST_BOTS / "sleepy.py", "--sleep-ms", sleep_ms, "--trace", trace)
    report, _ = play_direct(arena_sandbox, "wizard", {"players": 3}, 3,
                            [sleepy, "heuristic", "random"],
                            TimeControl(move_ms=move_ms, bank_ms=bank_ms, max_faults=3))
    record = report.record
    calls = decision_calls(read_trace(trace))
    banks = [c["bank_ms"] for c in calls]
    assert banks[0] == bank_ms
    assert [c["deadline_ms"] for c in calls] == [move_ms + b for b in banks]
    faulted = {(f["round"], f["trick"]) for f in record["faults"]}
    for call, after in zip(calls, banks[1:], strict=False):
        if (call["round"], call["trick"]) not in faulted:  # answered: drew >= 50 ms
            assert after <= max(0, call["bank_ms"] - (sleep_ms - move_ms))
    # no fault while the bank covers the extra 50 ms (with 200 ms to spare for a busy
    # machine); then timeouts, and the seat is forfeited
    for call in calls:
        if call["bank_ms"] >= sleep_ms - move_ms + 200:
            assert (call["round"], call["trick"]) not in faulted
    assert banks[-1] == 0
    assert len(calls) >= 4
    assert [f["kind"] for f in record["faults"]] == ["timeout"] * 3
    for fault, step in zip(record["faults"], fault_steps(record, 0), strict=True):
        assert fault["detail"].startswith("no answer within ")
        assert step.where == (fault["round"], fault["trick"])
    check_fault_actions(record, 0)
    check_forfeit(record, 0, len(calls))
    assert_verifies(record, arena_sandbox.tmp / "game.json", capsys)


def test_illegal_answers_are_faults_saying_why(arena_sandbox: Sandbox,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(TEST_BOTS))
    from illegal import illegal_action  # the bot's own choice

    trace = arena_sandbox.tmp / "trace.jsonl"
    bad = bot_cmd(TEST_BOTS / "illegal.py", "--trace", trace)
    report, _ = play_direct(arena_sandbox, "wizard", {"players": 4}, 21,
                            ["heuristic", bad, "random", "heuristic"])
    record = report.record
    faults = record["faults"]
    assert len(faults) == 3
    checked = 0
    for step in replay(record):  # the game paused at each decision: ask it why
        if step.seat != 1 or checked == 3:
            continue
        fault = faults[checked]
        checked += 1
        answer = illegal_action(step.view)
        with pytest.raises(IllegalAction) as why:
            step.game.check(answer)
        assert fault["seat"] == 1 and fault["kind"] == "illegal"
        assert (fault["round"], fault["trick"]) == step.where
        assert fault["detail"] == f"{describe_action(step.decision, answer)}: {why.value}"
    assert checked == 3
    assert {f["detail"].split()[0] for f in faults} == {"bid", "play"}
    check_fault_actions(record, 1)
    check_forfeit(record, 1, 3)
    assert len(decision_calls(read_trace(trace))) == 3
    assert_verifies(record, arena_sandbox.tmp / "game.json", capsys)


def test_a_crashed_bot_is_restarted_for_its_next_decision(
        arena_sandbox: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    trace = arena_sandbox.tmp / "trace.jsonl"
    crasher = bot_cmd(TEST_BOTS / "crasher.py", "--exit-on", 4, "--marker",
                      arena_sandbox.tmp / "crashed", "--trace", trace)
    report, conns = play_direct(arena_sandbox, "wizard", {"players": 3}, 5,
                                ["random", "heuristic", crasher])
    record = report.record
    steps = decisions_of(record, 2)
    (fault,) = record["faults"]
    crashed_log = first_log(conns[0])
    assert fault == {"seat": 2, "round": steps[3].where[0], "trick": steps[3].where[1],
                     "kind": "crash",
                     "detail": f"the bot process exited with code 3 during a "
                               f"{call_of(steps[3])}; restarting it; log {crashed_log}: "
                               f"{log_quote(crashed_log)}",
                     "action": describe_action(steps[3].decision,
                                               default_action(steps[3].view))}
    assert record["forfeited"] == [False] * 3
    assert conns[0].restarts == 1
    calls = decision_calls(read_trace(trace))
    first, second = calls[0]["pid"], calls[4]["pid"]
    assert [c["pid"] for c in calls] == [first] * 4 + [second] * (len(steps) - 4)
    assert first != second and gone(first) and gone(second)
    for i, step in enumerate(steps):  # the restarted bot's answers are used
        assert step.action == (default_action(step.view) if i == 3 else min(step.view.legal))
    assert_verifies(record, arena_sandbox.tmp / "game.json", capsys)


def test_a_restart_slower_than_the_deadline_costs_one_timeout(arena_sandbox: Sandbox) -> None:
    """Seat 2 crashes on its 4th decision (round 2, trick 1) and takes 1.2 s to restart,
    more than its 5th decision's 400 ms (+ grace): that decision times out, but the
    restart completes and the bot plays the rest of the game. (It once stayed "not
    connected" for the rest of the game.)"""
    trace = arena_sandbox.tmp / "trace.jsonl"
    crasher = bot_cmd(TEST_BOTS / "crasher.py", "--exit-on", 4, "--restart-ms", 1200,
                      "--marker", arena_sandbox.tmp / "crashed", "--trace", trace)
    report, conns = play_direct(arena_sandbox, "wizard", {"players": 3}, 5,
                                ["random", "heuristic", crasher], TimeControl(move_ms=400))
    record = report.record
    steps = decisions_of(record, 2)
    crashed = f"the bot process exited with code 3 during a {call_of(steps[3])}; restarting it"
    assert [(f["kind"], (f["round"], f["trick"]), f["detail"].partition("; log ")[0])
            for f in record["faults"]] == [
        ("crash", steps[3].where, crashed),
        ("timeout", steps[4].where, "no answer within 400 ms")]
    assert steps[4].where == (2, 2)
    assert record["forfeited"] == [False] * 3
    assert conns[0].restarts == 1
    trace_calls = read_trace(trace)
    calls = decision_calls(trace_calls)
    old, new = calls[0]["pid"], trace_calls[-1]["pid"]
    assert old != new
    assert [c["pid"] for c in calls[:4]] == [old] * 4
    # the 5th decision's call may or may not have reached the new process before it
    # was abandoned; every later one did
    assert len(calls) - 4 - len(steps[5:]) in (0, 1)
    assert {c["pid"] for c in calls[4:]} == {new}
    assert next(c["call"] for c in trace_calls if c["pid"] == new) == "hello"
    for step in steps[5:]:
        assert step.action == min(step.view.legal)


def test_a_bot_that_cannot_be_restarted_is_forfeited(arena_sandbox: Sandbox) -> None:
    trace = arena_sandbox.tmp / "trace.jsonl"
    crasher = bot_cmd(TEST_BOTS / "crasher.py", "--exit-on", 2, "--no-restart", "--marker",
                      arena_sandbox.tmp / "crashed", "--trace", trace)
    report, conns = play_direct(arena_sandbox, "trumps", {"players": 3, "draw": False}, 6,
                                [crasher, "heuristic", "random"])
    record = report.record
    details = [f["detail"] for f in record["faults"]]
    assert [f["kind"] for f in record["faults"]] == ["crash"] * 3
    crashed_log = first_log(conns[0])
    assert details[0] == (f"the bot process exited with code 3 during a Play; restarting it; "
                          f"log {crashed_log}: {log_quote(crashed_log)}")
    log = conns[0].log_path  # the restarted process's own log: the first one's, numbered 2
    assert log is not None and log.name.endswith(".2.log")
    assert details[1] == details[2] == (
        f"restart failed: bot {conns[0].name}: exited with code 4 before serving; "
        f'log {log}: "crasher: crashed before, refusing to start"')
    check_forfeit(record, 0, 4)
    steps = decisions_of(record, 0)
    assert [(f["round"], f["trick"]) for f in record["faults"]] == \
        [s.where for s in steps[1:4]]
    assert len(decision_calls(read_trace(trace))) == 2
    assert conns[0].restarts == 1
    assert "crashed before, refusing to start" in log.read_text()


GARBAGE = {
    "nocard": "PlayResponse has no card",
    "nokind": "card kind not given (CARD_KIND_UNSPECIFIED)",
    "badkind": "unknown card kind 7",
    "wizard": "the trumps deck has no Wizard",
    "badsuit": "card has unknown suit 9",
    "nosuit": "a suited card has no suit (SUIT_UNSPECIFIED)",
    "badrank": "card rank 1 is not in the trumps deck (2..14)",
    "internal": "answered with status INTERNAL: garbage bot: boom",
    "oversized": "answered with status RESOURCE_EXHAUSTED: ",
}


def test_garbage_answers_are_protocol_faults(arena_sandbox: Sandbox,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    trace = arena_sandbox.tmp / "trace.jsonl"
    path = arena_sandbox.tmp / "game.json"
    garbage = bot_cmd(TEST_BOTS / "garbage.py", "--kinds", ",".join(GARBAGE), "--trace", trace)
    done = arena_play(arena_sandbox, "--game", "trumps", "--players", "4", "--seed", "5",
                      "--bots", f"heuristic,random,{garbage},random", "--max-faults", "20",
                      "--move-ms", "5000",
                      "--record", str(path), "--quiet")
    assert (done.returncode, done.stderr) == (0, "")
    record = json.loads(path.read_text())
    faults = record["faults"]
    expected = list(GARBAGE.values())
    assert len(faults) == 13  # every play of the game
    for i, fault in enumerate(faults):
        assert (fault["seat"], fault["round"], fault["trick"], fault["kind"]) == \
            (2, 1, i + 1, "protocol")
        assert fault["detail"].startswith(expected[i % len(expected)])
    assert "262144" in faults[8]["detail"]  # the referee's limit is 256 KiB
    assert record["forfeited"] == [False] * 4
    check_fault_actions(record, 2)
    assert len(decision_calls(read_trace(trace))) == 13
    assert_verifies(record, path, capsys)


def test_a_bid_past_any_number_of_tricks_is_illegal_not_a_crash(
        arena_sandbox: Sandbox) -> None:
    trace = arena_sandbox.tmp / "trace.jsonl"
    bad = bot_cmd(TEST_BOTS / "illegal.py", "--trace", trace)
    report, _ = play_direct(arena_sandbox, "trumps", {"players": 2, "announce": True,
                                                      "draw": False}, 2, [bad, "random"],
                            TimeControl(move_ms=5000, max_faults=1))
    (fault,) = report.faults
    assert fault["kind"] == "illegal" and fault["trick"] is None
    assert fault["detail"].startswith("bid 8: ") and fault["forfeited"] is True


# -- hand-shake failures --------------------------------------------------------------


def _handshake(mode: str) -> str:
    return bot_cmd(TEST_BOTS / "handshake.py", "--mode", mode)


@pytest.mark.parametrize(("spec", "message"), [
    ("cmd:/nonexistent/bot --fast",
     "bot seat1: cannot start '/nonexistent/bot --fast': No such file or directory"),
    (_handshake("version99"), "bot seat1: speaks protocol version 99; this referee speaks 1..1"),
    (_handshake("wizard-only"), "bot seat1: does not play trumps (it plays wizard)"),
    (_handshake("noname"), "bot seat1: bad hand-shake: HelloResponse has no name"),
    (_handshake("unimplemented"),
     "bot seat1: hand-shake failed: UNIMPLEMENTED no hand-shake here"),
    (_handshake("exit"), "bot seat1: exited with code 5 before serving; log "),
], ids=["no-program", "version99", "no-trumps", "no-name", "unimplemented", "exits"])
def test_arena_play_stops_before_the_game_when_a_bot_cannot_play(
        arena_sandbox: Sandbox, spec: str, message: str) -> None:
    path = arena_sandbox.tmp / "game.json"
    done = arena_play(arena_sandbox, "--game", "trumps", "--seed", "1", "--bots",
                      f"{RANDOM_PY},{spec},heuristic,random", "--record", str(path))
    assert done.returncode == 1
    assert done.stdout == ""
    message = message.replace("bot seat1:", f"bot seat1 ({spec}):")  # the seat and its spec
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"arena play: {message}")
    assert "Traceback" not in done.stderr
    assert not path.exists()


@pytest.mark.parametrize(("spec", "message", "startup_s"), [
    ("unix:/nonexistent/bot.sock", "bot seat1: not serving after the start-up limit", 0.5),
    (_handshake("nosocket"), "bot seat1: no socket after 1 s (does it listen on "
                             "$ARENA_BOT_LISTEN?); see ", 1.0),
], ids=["unreachable", "no-socket"])
def test_a_bot_that_never_serves_fails_within_the_startup_limit(
        arena_sandbox: Sandbox, spec: str, message: str, startup_s: float) -> None:
    async def main() -> None:
        seats = [SeatSpec(f"seat{i}", BotSpec.parse(s))
                 for i, s in enumerate(["heuristic", spec, "random"])]
        async with seated_players(seats, "wizard", arena_sandbox.tmp / "logs", 1,
                                  startup_s=startup_s, confinement=TRUSTED):
            raise AssertionError("the game must not start")

    started = time.monotonic()
    with pytest.raises(HandshakeError) as error:
        run_trio(main)
    assert time.monotonic() - started < startup_s + 3
    text = str(error.value)
    assert text.startswith(message) and "\n" not in text


# -- interruption ---------------------------------------------------------------------


@pytest.mark.parametrize("when", ["mid-game", "hand-shake", "sigterm"])
def test_ctrl_c_ends_every_bot_process(arena_sandbox: Sandbox, when: str) -> None:
    """Ctrl-C (SIGINT to the terminal's process group), mid-game or during the hand-shake,
    or SIGTERM to the arena alone (what a supervisor sends): the game is abandoned and
    every bot process ends."""
    traces = [arena_sandbox.tmp / f"trace{i}.jsonl" for i in range(2)]
    bots = [bot_cmd(TEST_BOTS / "sleepy.py", "--sleep-ms", 30, "--trace", traces[0]),
            bot_cmd(TEST_BOTS / "sleepy.py", "--sleep-ms", 30, "--trace", traces[1])
            if when != "hand-shake" else
            bot_cmd(TEST_BOTS / "handshake.py", "--mode", "slowhello", "--trace", traces[1])]
    # a shell's background job ignores SIGINT, and its children inherit that: not here
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        arena = subprocess.Popen(
            arena_command("play", "--no-sandbox", "--game", "wizard", "--players", "3",
                          "--seed", "4",
                          "--bots", f"{bots[0]},heuristic,{bots[1]}", "--move-ms", "5000",
                          "--quiet"),
            env=arena_sandbox.env, cwd=REPO, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True)
    finally:
        signal.signal(signal.SIGINT, ignored)
    try:
        if when != "hand-shake":
            started = wait_until(lambda: all(len(decision_calls(read_trace(t))) >= 2
                                             for t in traces), 20)
        else:  # the arena is waiting for the second bot's answer to Hello
            started = wait_until(lambda: all(read_trace(t) for t in traces), 20)
        assert started, "the bots were not called"
        pids = {read_trace(t)[0]["pid"] for t in traces}
        assert len(pids) == 2 and not any(gone(p) for p in pids)
        if when == "sigterm":
            arena.terminate()
        else:
            os.killpg(arena.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        out, err = arena.communicate(timeout=20)
    finally:
        if arena.poll() is None:
            arena.kill()
            arena.communicate()
    assert arena.returncode == 130
    assert err == "arena: interrupted\n"
    assert "Final standings" not in out
    for pid in pids:  # each bot led its own process group
        assert gone(pid)
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)


def test_round_ended_goes_only_to_bots_that_want_it(arena_sandbox: Sandbox) -> None:
    listener, plain = arena_sandbox.tmp / "listener.jsonl", arena_sandbox.tmp / "plain.jsonl"
    script = TEST_BOTS / "listener.py"
    report, _ = play_direct(arena_sandbox, "wizard", {"players": 6}, 3,
                            [bot_cmd(script, "--trace", listener),
                             bot_cmd(script, "--plain", "--trace", plain),
                             "random", "random", "random", "random"])
    assert report.faults == []
    heard = [c["round"] for c in read_trace(listener) if c["call"] == "round_ended"]
    assert heard == list(range(1, 11))  # 6 players: 10 rounds
    assert [c for c in read_trace(plain) if c["call"] == "round_ended"] == []
    assert decision_calls(read_trace(plain))  # it did play


async def _game_with_a_stalled_arena(specs: list[str], tmp: Path, clock: TimeControl,
                                     stall_s: float, gap_s: float) -> GameReport:
    """A game while another task of the arena's trio thread keeps it busy: blocked for
    ``stall_s`` out of every ``stall_s + gap_s`` (an arena starting processes, encoding
    other games' requests...)."""
    game = new_game("trumps", {"players": 4}, 7)
    seats = [SeatSpec(f"seat{i}", BotSpec.parse(s)) for i, s in enumerate(specs)]
    async with (seated_players(seats, "trumps", tmp / "logs", 7,
                               confinement=TRUSTED) as players,
                trio.open_nursery() as nursery):
        async def stall() -> None:
            while True:
                await trio.sleep(gap_s)
                time.sleep(stall_s)  # the trio thread itself is busy

        nursery.start_soon(stall)
        report = await play_game(game, players, clock, game_id="g", table_id="t")
        nursery.cancel_scope.cancel()
    return report


def test_a_busy_arena_does_not_spend_the_bots_clock(arena_sandbox: Sandbox) -> None:
    # The bot answers after 100 ms of its 300; the arena's own thread is stalled for 350
    # ms at a time, so it gets to each answer after the deadline. The bot's clock is its
    # call (send to answer), not the arena's stall: no timeout, and the recorded times
    # are the calls'.
    sleepy = bot_cmd(TEST_BOTS / "sleepy.py", "--sleep-ms", 100)
    report = run_trio(_game_with_a_stalled_arena, [sleepy, "heuristic", "random", "random"],
                      arena_sandbox.tmp, TimeControl(move_ms=300, max_faults=99),
                      0.35, 0.01)
    record = report.record
    assert [f for f in record["faults"] if f["seat"] == 0] == []
    times = report.latencies_ms[0]
    assert times and all(100 <= t < 300 for t in times), times
