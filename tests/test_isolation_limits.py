"""Hostile bots against the sandbox (the tournaments and what they leave:
tests/isolation_helpers.py): memory, processes, CPU cores and the socket folder's
size."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from isolation_helpers import (
    CONTROL,
    PY_HEURISTIC,
    World,
    games,
    hostile,
    learned,
    needs_sandbox,
    run_tournament,
    trusted,
)
from isolation_helpers import (
    world as world,
)

from arena.proc.cgroup import limit_mechanism

# -- memory and processes -------------------------------------------------------------


def hog_field(world: World, *args: object, **entry: Any) -> list[dict[str, Any]]:
    return [{"name": "hog", "spec": hostile(world, "hog.py", *args), **entry},
            {"name": "py-heuristic", "spec": PY_HEURISTIC},
            {"name": "heuristic", "spec": "heuristic"}]


@needs_sandbox
@pytest.mark.timeout(150)
def test_a_memory_hog_gets_a_resource_fault_and_the_tournament_finishes(
        world: World) -> None:
    run = run_tournament(world, "hog", hog_field(world, limits={"memory_mb": 256}),
                         move_ms=2000).check()
    assert run.games_done() == games(3, 1)
    resource = [f for f in run.faults() if f[1] == "resource"]
    assert resource, run.faults()
    assert {bot for bot, _, _ in resource} == {"hog"}
    assert any("memory" in detail for _, _, detail in resource), resource
    assert run.faults_of_others("hog") == []
    grabbed = [r["allocated_mb"] for r in run.reports("hog")]
    assert grabbed and max(grabbed) < 256 + 64, grabbed


@pytest.mark.timeout(120)
def test_control_an_unsandboxed_hog_gets_its_memory(world: World) -> None:
    run = run_tournament(world, "hog-control", trusted(hog_field(world, "--max-mb", 512)),
                         move_ms=3000, **CONTROL).check()
    assert any(r["done"] and r["allocated_mb"] == 512 for r in run.reports("hog"))
    assert [f for f in run.faults() if f[1] == "resource"] == []


FORKS = 300
"""More than the default process limit (128 processes and threads)."""


@needs_sandbox
@pytest.mark.timeout(120)
def test_a_fork_bomb_is_bounded_and_the_tournament_finishes(world: World) -> None:
    run = run_tournament(world, "forks", hog_field(world, "--fork-bomb", "--max-forks", FORKS),
                         move_ms=3000).check()
    assert run.games_done() == games(3, 1)
    final = [r for r in run.reports("forkbomb") if r["done"]]
    assert final, run.reports("forkbomb")
    assert all(r["forks"] < 128 for r in final), final
    assert run.faults_of_others("hog") == []


@pytest.mark.timeout(120)
def test_control_an_unsandboxed_fork_bomb_forks(world: World) -> None:
    field = hog_field(world, "--fork-bomb", "--max-forks", FORKS, limits={"processes": 0})
    run = run_tournament(world, "forks-control", trusted(field), move_ms=3000,
                         **CONTROL).check()
    assert any(r["done"] and r["forks"] == FORKS for r in run.reports("forkbomb"))


# -- CPU ------------------------------------------------------------------------------


@needs_sandbox
@pytest.mark.timeout(150)
def test_each_game_in_flight_holds_its_bots_to_a_core_of_its_own(world: World) -> None:
    """The mechanism behind fair CPU (the figures under load are in ``python -m
    benchmarks --only fairness``): at the default concurrency, one game per core, and
    every bot of a game held to that game's core while it thinks."""
    if not limit_mechanism().cgroups or not (Path("/sys/fs/cgroup/cpuset").is_dir()
                                             or Path("/sys/fs/cgroup/cpuset.cpus.effective"
                                                     ).exists()):
        pytest.skip("no cpuset controller here: bots are not pinned")
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("one core: nothing to share out")
    # each thinks on its first decision of a game: where it may run then is the check
    # (thinking on every decision only burnt 12 s more of CPU)
    bots = [{"name": f"thinker{i}",
             "spec": hostile(world, "thinker.py", "--cpu-ms", 50, "--per-game", 1)}
            for i in range(4)]
    # two deals: two games of one deal never run at once (DealsInFlight), two of
    # different deals do
    run = run_tournament(world, "cores", bots, seats=4, deals=2, move_ms=5000).check()
    reports = [r for r in run.reports("think") if r["thinks"]]
    assert len(reports) == 4 * games(4, 2), reports  # each thinker in each game
    by_game: dict[str, set[tuple[int, ...]]] = {}
    for r in reports:
        assert len(r["cpus"]) == 1 and r["cpus"][0] in cores, r
        by_game.setdefault(r["game"], set()).add(tuple(r["cpus"]))
    assert all(len(seen) == 1 for seen in by_game.values()), by_game  # one core per game
    used = {next(iter(seen)) for seen in by_game.values()}
    assert len(used) >= 2, by_game  # the games in flight had different cores


def sockfill_field(world: World, *args: object) -> list[dict[str, Any]]:
    return [{"name": "fill", "spec": hostile(world, "sockfill.py", *args)},
            {"name": "py-heuristic", "spec": PY_HEURISTIC},
            {"name": "heuristic", "spec": "heuristic"}]


def host_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@needs_sandbox
@pytest.mark.timeout(150)
def test_a_sandboxed_bot_fills_only_its_small_socket_folder(world: World) -> None:
    """The socket folder is a 64 KiB tmpfs inside the sandbox: the fill stops there and
    nothing of it is on the host."""
    run = run_tournament(world, "fill", sockfill_field(world)).check()
    assert run.games_done() == games(3, 1)
    reports = learned(run, "sockfill")
    assert all(r["folder"] == "/run/arena" and r["written_mb"] <= 1 and r["error"]
               for r in reports), reports
    assert host_files(world.tmp) == []
    assert run.faults() == []


@pytest.mark.timeout(150)
def test_control_an_unsandboxed_bot_fills_its_host_socket_folder(world: World) -> None:
    run = run_tournament(world, "fill-control", trusted(sockfill_field(world, "--max-mb", 20)),
                         **CONTROL).check()
    reports = learned(run, "sockfill")
    assert any(r["written_mb"] == 20 and r["folder"].startswith(str(world.tmp))
               for r in reports), reports
    left = host_files(world.tmp)
    assert any("hostile-sub" in p for p in left), left  # a subfolder stays on the host
    for folder in world.tmp.glob("arena-bot-*"):
        shutil.rmtree(folder)
