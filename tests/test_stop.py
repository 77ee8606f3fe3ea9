"""The stop between calls against bots that defeat it (``docs/isolation.md``, "Stopped
between calls"): bubblewrap's init made to run the bot's code, a bot that ran while
stopped (killed at once, its victims not charged), and a bot that cannot be stopped at
once (its stop never waits on the referee's thread: killed at its ``stop_ms``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import SAMPLE_BOTS, TEST_BOTS, Sandbox, bot_cmd, run_trio
from isolation_helpers import World, games, needs_sandbox, run_tournament
from isolation_helpers import world as world

from arena.model.faults import Fault
from arena.model.limits import Confinement
from arena.model.spec import BotSpec
from arena.play.players import RemotePlayer
from arena.play.referee import TimeControl, play_game
from arena.proc.bwrap import sandbox_works
from arena.proc.cgroup import STOPPED_SLACK_NS, Cgroup, limit_mechanism
from arena.proc.connection import BotConnection
from arena.proc.process import BotProcess
from arena.rules import new_game

MECHANISM = limit_mechanism()
HAS_FREEZER = ("freezer" in MECHANISM.base or MECHANISM.kind == "cgroup2") \
    and not os.environ.get("ARENA_NO_FREEZER")
needs_freezer = pytest.mark.skipif(sandbox_works() is not None or not HAS_FREEZER,
                                   reason="needs the sandbox and a cgroup freezer")
needs_v1_freezer = pytest.mark.skipif(
    MECHANISM.kind != "cgroup1", reason="the arena released bubblewrap's processes from "
                                        "the v1 freezer only (v2 has one hierarchy)")
INITJACK = TEST_BOTS / "hostile" / "initjack.py"
TRUMPS_2 = {"players": 2, "draw": False}


def reports(log: Path, attack: str) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line[len("HOSTILE "):]) for line in log.read_text().splitlines()
            if line.startswith("HOSTILE ") and f'"attack": "{attack}"' in line]


async def wait_for(check: Any, what: str, timeout_s: float = 20.0) -> None:
    with trio.move_on_after(timeout_s):
        while not check():
            await trio.sleep(0.01)
        return
    raise AssertionError(f"not within {timeout_s} s: {what}")


@pytest.fixture
def old_arrangement(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
                    ) -> Iterator[bool]:
    """``control``: bubblewrap's init released from the bot's freezer cgroup, as the arena
    once did (``ARENA_RELEASE_SANDBOX_INIT``); ``now``: the arena as it is."""
    control = request.param == "control"
    if control:
        monkeypatch.setenv("ARENA_RELEASE_SANDBOX_INIT", "1")
    yield control


# -- bubblewrap's init --------------------------------------------------------------


@needs_freezer
@needs_v1_freezer
@pytest.mark.parametrize("old_arrangement", ["now", "control"], indirect=True)
def test_bubblewrap_init_made_to_spin_by_its_bot_runs_only_while_the_bot_does(
        arena_sandbox: Sandbox, old_arrangement: bool) -> None:
    """Deterministic: a bot writes ``jmp $`` into the code of its sandbox's pid 1
    (bubblewrap's init, through ``/proc/1/mem``) and wakes it; the attack works (pid 1
    spins, on the bot's CPU time). Stopped, the bot's cgroup gains no CPU at all (pid 1
    is frozen with the bot), and its CPU time grows again once it is continued.
    Control, the old arrangement (the init out of the bot's freezer cgroup): the stopped
    bot's CPU time grows, and the continue counts it as used while stopped."""
    proc = BotProcess("jack", bot_cmd(INITJACK, "--when", "start")[4:],
                      arena_sandbox.tmp / "logs" / "jack.log", startup_s=120, idle=False,
                      confinement=Confinement(sandbox=True))

    async def check() -> None:
        channel = await proc.start()
        try:
            cgroup = proc._cgroup
            assert cgroup is not None
            attack = reports(proc.log_path, "initjack")
            assert attack and attack[-1]["wrote"] and attack[-1]["spinning"], attack
            proc.freeze()
            stopped = cgroup.cpu_at_rest
            assert stopped is not None
            if old_arrangement:
                await wait_for(lambda: (cgroup.cpu_ns() or 0) > stopped + STOPPED_SLACK_NS,
                               "the released init running while the bot is stopped")
                proc.thaw()
                assert cgroup.take_cpu_while_stopped() > STOPPED_SLACK_NS
                return
            await trio.sleep(0.5)  # the window watched: nothing may run in it
            assert cgroup.cpu_ns() == stopped
            proc.thaw()
            assert cgroup.take_cpu_while_stopped() == 0
            await wait_for(lambda: (cgroup.cpu_ns() or 0) > stopped + STOPPED_SLACK_NS,
                           "the init spinning once the bot is continued")
        finally:
            channel.close()
            await proc.aclose()

    run_trio(check)


@needs_freezer
@needs_v1_freezer
@pytest.mark.parametrize("old_arrangement", ["now", "control"], indirect=True)
def test_a_bot_that_ran_while_stopped_is_killed_and_its_victims_timeouts_not_charged(
        arena_sandbox: Sandbox, old_arrangement: bool) -> None:
    """A game of two seats: the hijacker of bubblewrap's init (its pid 1 spinning from
    start-up) and a bot that always answers too late. Control, the old arrangement (the
    init out of the freezer, so it spins through the other seat's calls): after such a
    call the referee finds the hijacker's CPU time grown while it was stopped, faults it
    ("used CPU while stopped (N ms since it stopped, found after the call of seat 1,
    late)"), kills its process and forfeits its seat at once; the victim's timeout in
    that call is recorded, names the culprit (``excused_by``), and does not count
    towards its forfeit, which comes at its third fault of its own. Now: nothing runs
    while stopped, no fault says so, none is excused, and the victim is forfeited at its
    third timeout."""
    logs = arena_sandbox.tmp / "logs"
    jack = BotConnection("jack", BotSpec.parse(bot_cmd(INITJACK, "--when", "start")), logs,
                         startup_s=120, confinement=Confinement(sandbox=True))
    late = BotConnection("late", BotSpec.parse(bot_cmd(TEST_BOTS / "sleepy.py",
                                                       "--sleep-ms", 700)),
                         logs, startup_s=120, confinement=Confinement(sandbox=True))

    async def play() -> tuple[dict[str, Any], bool]:
        try:
            for conn in (jack, late):
                await conn.open()
            game = new_game("trumps", TRUMPS_2, seed=5)
            report = await play_game(game, [RemotePlayer(jack), RemotePlayer(late)],
                                     TimeControl(move_ms=300, max_faults=3))
            return report.record, jack.process is not None and jack.process.killed
        finally:
            for conn in (jack, late):
                await conn.aclose()

    record, killed = run_trio(play)
    faults = record["faults"]
    attack = [r for log in sorted(logs.glob("jack*.log")) for r in reports(log, "initjack")]
    assert any(r["wrote"] and r["spinning"] for r in attack), attack
    ran = [f for f in faults if f["detail"].startswith("used CPU while stopped")]
    excused = [f for f in faults if f.get("excused_by")]
    victim = [f for f in faults if f["seat"] == 1]
    own = [f for f in victim if not f.get("excused_by")]
    assert victim and all(f["kind"] == "timeout" for f in victim), faults
    # forfeited at its third fault of its own, and only then
    assert [f for f in victim if f.get("forfeited")] == own[2:3], faults
    if not old_arrangement:
        assert not ran and not excused and len(own) >= 3 and not killed, faults
        assert not record["forfeited"][0], faults
        return
    # the hijacker: faulted, killed and forfeited at the first look that found it
    assert len(ran) == 1 and ran[0]["seat"] == 0 and ran[0]["kind"] == "resource" \
        and ran[0]["detail"].endswith("its process was killed") and ran[0]["forfeited"], faults
    assert killed and jack.restarts == 0 and record["forfeited"][0], faults
    # the victim (its seat leads with this seed): the call in which the hijacker was found
    # is excused, and only that one
    assert len(excused) == 1 and faults[faults.index(ran[0]) + 1] is excused[0], faults
    assert excused[0]["seat"] == 1 and excused[0]["excused_by"] == ["jack"] \
        and "not this bot's fault: jack used CPU while stopped" in excused[0]["detail"]


# -- a bot that cannot be stopped at once ----------------------------------------------


@needs_freezer
@pytest.mark.parametrize("stall", ["populate", "none"])
def test_the_stop_after_a_call_never_waits_on_the_referee_thread(
        cgroup_mode: str, arena_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch,
        stall: str) -> None:
    """A bot that answers while a thread of it is in the kernel filling 300 MiB (one
    ``mmap(MAP_POPULATE)``: frozen only when it leaves the kernel): the stop after its
    call returns at once with the bot not yet stopped, the trio loop goes on running
    other tasks while the stop is awaited, and once the bot has used its ``stop_ms`` (5
    ms) of CPU meanwhile it is killed and the decision is a ``resource`` fault "did not
    stop within 5 ms" that forfeits its seat (a referee asks it no more); asked again, a
    new process answers. Control, the same
    bot answering with no stall: stopped, no fault, its CPU figure taken."""
    spec = BotSpec.parse(bot_cmd(TEST_BOTS / "stall.py", "--stall", stall))
    conn = BotConnection("stall", spec, arena_sandbox.tmp / "logs", startup_s=120,
                         confinement=Confinement(sandbox=True))
    player = RemotePlayer(conn)
    game = new_game("trumps", TRUMPS_2, seed=3)
    seen: dict[str, Any] = {"pending": [], "turns_while_waiting": []}
    faulted: list[tuple[bool, int]] = []  # each faulted call's: its stop pending, turns
    turns = [0]
    rest, stopped = BotConnection.rest, BotConnection.stopped

    def watched_rest(self: BotConnection) -> None:
        rest(self)
        cgroup: Cgroup | None = self.process._cgroup if self.process else None
        seen["pending"].append(cgroup is not None and cgroup.stop_pending)
        seen["turns_at_rest"] = turns[0]

    async def watched_stopped(self: BotConnection) -> str | None:
        detail = await stopped(self)
        if "turns_at_rest" in seen:
            seen["turns_while_waiting"].append(turns[0] - seen.pop("turns_at_rest"))
        return detail

    monkeypatch.setattr(BotConnection, "rest", watched_rest)
    monkeypatch.setattr(BotConnection, "stopped", watched_stopped)

    async def ticker() -> None:
        while True:
            turns[0] += 1
            await trio.sleep(0)

    async def scenario() -> tuple[str | None, bool, int | None, int, float | None]:
        await conn.open()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ticker)
                view = game.view(game.to_move)  # type: ignore[arg-type]

                async def decision() -> str | None:
                    # a busy machine may give the stall its ~130 ms of CPU before the
                    # referee's thread begins the stop, which then finds the bot out of the
                    # kernel: such a call proves nothing, and the bot is asked again (5 times
                    # at most)
                    for _ in range(1 if stall == "none" else 5):
                        try:
                            await player.decide(view, "g", "t", 5000, 0)
                        except Fault as f:
                            faulted.append((seen["pending"][-1], seen["turns_while_waiting"][-1]))
                            return f"{f.kind}: {f.detail}" + (" (forfeit)" if f.forfeit else "")
                        if seen["pending"][-1]:
                            break  # the stop was pending, yet no fault: caught below
                    return None

                first = conn.process
                fault = await decision()
                killed = first is not None and first.killed
                # a new process if the first was killed: it answers (and stalls)
                again = await decision()
                nursery.cancel_scope.cancel()
            return fault, killed, again, conn.restarts, player.last_cpu_ms
        finally:
            await conn.aclose()

    fault, killed, again, restarts, cpu_ms = run_trio(scenario)
    if stall == "none":
        assert fault is None and again is None and not killed and restarts == 0
        assert cpu_ms is not None
        return
    for detail in (fault, again):
        assert detail is not None and detail.startswith(
            "resource: did not stop within 5 ms after its call"), detail
    assert fault is not None and fault.endswith("its process was killed (forfeit)"), fault
    assert killed and restarts == 1, (killed, restarts)
    # the faulted stops: rest() returned with the bot still running in the kernel, and
    # the loop turned while the stop was awaited (the referee's thread never waited)
    assert len(faulted) == 2 and all(pending and turns_meanwhile > 0
                                     for pending, turns_meanwhile in faulted), (faulted, seen)


@needs_sandbox
@needs_freezer
@pytest.mark.timeout(150)
def test_a_bot_that_cannot_be_stopped_at_once_is_faulted_and_no_other(world: World) -> None:
    """A tournament with the stall bot (300 MiB populated in the kernel after each
    answer): every fault is the stall bot's, "did not stop within 5 ms", one per game it
    plays (its seat forfeited at once), and every game is played. (The wall time against
    the same tournament without the stall: ``python -m benchmarks --only freezer``.)"""
    field = [{"name": "stall", "spec": bot_cmd(TEST_BOTS / "stall.py")},
             {"name": "py-heuristic", "spec": bot_cmd(SAMPLE_BOTS / "heuristic_bot.py")},
             {"name": "heuristic", "spec": "heuristic"}]
    run = run_tournament(world, "stall", field, move_ms=2000).check()
    assert run.games_done() == games(3, 1)
    faults = run.faults()
    assert {bot for bot, _, _ in faults} == {"stall"}, faults
    assert len(faults) == games(3, 1) and all(
        kind == "resource" and detail.startswith("did not stop within 5 ms")
        for _, kind, detail in faults), faults
    assert run.query("SELECT bot, COUNT(*) FROM results WHERE forfeited = 1 GROUP BY bot"
                     ) == [("stall", games(3, 1))]
