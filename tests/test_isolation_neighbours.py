"""Hostile bots against the sandbox (the tournaments and what they leave:
tests/isolation_helpers.py): the other bots: signals, their sockets, a daemon left
behind, file locks between two bots at one table."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import bot_processes
from isolation_helpers import (
    CONTROL,
    PY_HEURISTIC,
    PY_RANDOM,
    World,
    games,
    hostile,
    kill_all,
    learned,
    needs_sandbox,
    run_tournament,
    trusted,
    wait_until_gone,
    with_marker,
)
from isolation_helpers import (
    world as world,
)

# -- signalling the other bots --------------------------------------------------------


def victims_field(world: World, script: str, *args: object) -> list[dict[str, Any]]:
    return [{"name": "hostile", "spec": hostile(world, script, *args)},
            {"name": "py-heuristic", "spec": PY_HEURISTIC},
            {"name": "py-random", "spec": PY_RANDOM}]


@needs_sandbox
@pytest.mark.timeout(120)
def test_a_sandboxed_bot_cannot_signal_the_others(world: World) -> None:
    run = run_tournament(world, "signal", victims_field(world, "signaller.py")).check()
    assert run.reports("signal"), "the signaller reported nothing"
    assert run.games_done() == games(3, 1)
    assert run.faults_of_others("hostile") == []


@pytest.mark.timeout(120)
def test_control_an_unsandboxed_shared_bot_stops_and_kills_the_others(world: World) -> None:
    run = run_tournament(world, "signal-control", trusted(victims_field(world, "signaller.py")),
                         move_ms=500, **CONTROL).check()
    assert any(r["signalled"] for r in run.reports("signal"))
    # both victims are stopped and killed, but one whose process dies after its last
    # decision of the tournament is charged nothing: at least one victim must be
    harmed = {bot for bot, _, _ in run.faults_of_others("hostile")}
    assert harmed and harmed <= {"py-heuristic", "py-random"}, run.faults()


# -- taking over the other bots' sockets ----------------------------------------------


@needs_sandbox
@pytest.mark.timeout(120)
def test_a_sandboxed_bot_reaches_no_other_socket(world: World) -> None:
    run = run_tournament(world, "takeover", victims_field(world, "takeover.py")).check()
    reports = run.last_reports("takeover")
    assert reports, "the takeover bot reported nothing"
    for r in reports:
        assert r["connected"] == [] and r["spoke"] == [] and r["bound"] == [], r
        assert not [p for p in r["sockets_seen"] if "arena-bot-" in p], r
    assert run.faults_of_others("hostile") == []


@pytest.mark.timeout(120)
def test_control_an_unsandboxed_shared_bot_takes_over_the_others(world: World) -> None:
    run = run_tournament(world, "takeover-control",
                         trusted(victims_field(world, "takeover.py")), **CONTROL).check()
    reports = run.last_reports("takeover")
    assert any(r["connected"] for r in reports), reports
    assert any(r["bound"] for r in reports), reports


# -- leaving a daemon behind ----------------------------------------------------------


def daemon_field(world: World) -> list[dict[str, Any]]:
    return [{"name": "daemon", "spec": hostile(world, "daemon.py")},
            {"name": "heuristic", "spec": "heuristic"},
            {"name": "random", "spec": "random"}]


@needs_sandbox
@pytest.mark.timeout(120)
def test_a_sandboxed_bot_leaves_no_daemon(world: World) -> None:
    run = run_tournament(world, "daemon", daemon_field(world)).check()
    reports = run.reports("daemon")
    assert reports, "the daemon bot reported nothing"
    assert {r["marker"] for r in reports} == {f"hostile-daemon-{world.tag}"}
    marker = f"hostile-daemon-{world.tag}"
    assert wait_until_gone(lambda: with_marker(marker)) == []


@pytest.mark.timeout(120)
def test_control_an_unsandboxed_bot_leaves_a_daemon(world: World) -> None:
    # without the sandbox, only a cgroup still ends every process of a bot: none here
    run = run_tournament(world, "daemon-control", trusted(daemon_field(world)),
                         env={"ARENA_NO_CGROUPS": "1"}, **CONTROL).check()
    assert any(r["daemon_pid"] for r in run.reports("daemon"))
    # the run has exited and every bot process it started has ended: nothing of it is
    # left that could still end the daemon
    assert wait_until_gone(lambda: bot_processes(world.tmp)) == []
    alive = with_marker(f"hostile-daemon-{world.tag}")
    kill_all(alive)
    assert alive, "the daemon should outlive an unsandboxed tournament"


def locks_field(world: World, *control: str) -> list[dict[str, Any]]:
    return [{"name": "send", "spec": hostile(world, "locks.py", "--role", "send", *control)},
            {"name": "recv", "spec": hostile(world, "locks.py", "--role", "recv")},
            {"name": "heuristic", "spec": "heuristic"}]


@needs_sandbox
@pytest.mark.timeout(150)
def test_two_sandboxed_bots_at_one_table_pass_nothing_through_file_locks(
        world: World) -> None:
    run = run_tournament(world, "locks", locks_field(world)).check()
    assert run.games_done() == games(3, 1)
    reports = learned(run, "locks")
    assert all(r["hands_read"] == 0 and r["cards_right"] == 0 for r in reports), reports
    # the senders that played (a spare started ahead may never get a game: one table,
    # one deal, so its games are played one at a time)
    senders = [r for r in reports if r["role"] == "send" and r.get("phase") != "start"]
    assert senders and all(r["lock_errors"].get("setlk") == "EPERM" for r in senders), reports
    assert run.faults() == []


@pytest.mark.timeout(150)
def test_control_two_unsandboxed_bots_pass_their_hands_through_file_locks(
        world: World) -> None:
    run = run_tournament(world, "locks-control", trusted(locks_field(world))).check()
    reports = learned(run, "locks")
    assert sum(r["hands_read"] for r in reports if r["role"] == "recv") > 0, reports
    assert sum(r["cards_right"] for r in reports) > 0, reports
