"""Hostile bots against the sandbox (the tournaments and what they leave:
tests/isolation_helpers.py): what a bot may learn: the seed and the store, deals it met
before, the arena's options and environment."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from isolation_helpers import (
    CONTROL,
    HOSTILE,
    PY_HEURISTIC,
    Run,
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

# -- reading secrets ------------------------------------------------------------------


def reader_field(world: World) -> list[dict[str, Any]]:
    return [{"name": "reader", "spec": hostile(world, "reader.py")},
            {"name": "py-heuristic", "spec": PY_HEURISTIC},
            {"name": "heuristic", "spec": "heuristic"}]


@needs_sandbox
@pytest.mark.timeout(180)
@pytest.mark.parametrize("output", ["beside", "inside the bot's folder"])
def test_a_sandboxed_bot_reads_no_secret(world: World, output: str) -> None:
    """Also where the output folder lies inside the bot's own folder (which the sandbox
    shows): the output is covered there too."""
    field, out = reader_field(world), None
    if output != "beside":
        own = world.folder / "reader-bot"
        shutil.copytree(HOSTILE, own)
        out = own / "out"
        field[0]["spec"] = field[0]["spec"].replace(HOSTILE, str(own))
    run = run_tournament(world, "reader", field, move_ms=5000, out=out).check()
    reports = run.last_reports("read")
    assert reports, "the reader reported nothing"
    for r in reports:
        assert r["store_found"] == [], r
        assert not r["seed_found"], r
        assert str(run.seed) not in r["seeds"] + r["toml_seeds"], r
        assert not r["arena_seen"], r
        assert r["other_logs"] == [], r
        assert r["other_bot_sources"] == [], r
        # its own PID namespace: the sandbox's init and itself
        assert r["n_visible"] <= 3, r["visible_pids"]
    assert run.faults_of_others("reader") == []


@pytest.mark.timeout(180)
def test_control_an_unsandboxed_shared_bot_finds_the_seed(world: World) -> None:
    run = run_tournament(world, "reader-control", trusted(reader_field(world)),
                         move_ms=5000, **CONTROL).check()
    reports = run.last_reports("read")
    assert reports
    assert any(str(run.seed) in r["seeds"] for r in reports), reports
    assert any(str(run.out) in p for r in reports for p in r["store_found"])
    assert any("py-heuristic" in Path(p).name for r in reports for p in r["other_logs"])
    assert any(r["arena_seen"] for r in reports)


# -- remembering deals ----------------------------------------------------------------


MEMORY_DEALS = 2


def memory_field(world: World) -> list[dict[str, Any]]:
    return [{"name": "memory", "spec": hostile(world, "memory.py")},
            {"name": "heuristic", "spec": "heuristic"},
            {"name": "random", "spec": "random"}]


def memory_totals(run: Run) -> dict[str, int]:
    last = run.last_reports("memory")
    return {key: sum(r[key] for r in last)
            for key in ("games_seen", "deal_recognised", "from_disk")}


@needs_sandbox
@pytest.mark.timeout(120)
def test_a_sandboxed_bot_never_meets_a_deal_twice(world: World) -> None:
    run = run_tournament(world, "memory", memory_field(world), deals=MEMORY_DEALS).check()
    totals = memory_totals(run)
    assert totals["games_seen"] == games(3, MEMORY_DEALS), totals
    assert totals["deal_recognised"] == 0, run.reports("memory")
    assert totals["from_disk"] == 0, run.reports("memory")


@pytest.mark.timeout(120)
def test_control_a_shared_process_recognises_the_deals(world: World) -> None:
    # one game at a time: each deal's first rotation ends before the next one starts
    run = run_tournament(world, "memory-control", trusted(memory_field(world)),
                         deals=MEMORY_DEALS, concurrency=1, **CONTROL).check()
    totals = memory_totals(run)
    assert totals["games_seen"] == games(3, MEMORY_DEALS)
    # every rotation after a deal's first
    assert totals["deal_recognised"] == MEMORY_DEALS * 2, run.reports("memory")


@pytest.mark.timeout(120)
def test_control_a_fresh_process_per_game_remembers_through_tmp(world: World) -> None:
    # isolation "game" without the sandbox: a shared /tmp carries the memory over
    run = run_tournament(world, "memory-disk", trusted(memory_field(world)),
                         deals=MEMORY_DEALS, concurrency=1, isolation="game").check()
    totals = memory_totals(run)
    assert totals["games_seen"] == games(3, MEMORY_DEALS)
    assert totals["from_disk"] == MEMORY_DEALS * 2, run.reports("memory")


DOCUMENTED_ENV = {"ARENA_BOT_LISTEN", "PYTHONUNBUFFERED", "PATH", "HOME", "TMPDIR", "LANG",
                  "PYTHONDONTWRITEBYTECODE", "PWD"}
"""docs/protocol.md's environment of a sandboxed bot (``PWD``: bubblewrap's own)."""


@needs_sandbox
@pytest.mark.timeout(150)
@pytest.mark.parametrize("output", ["beside", "inside the bot's folder"])
def test_a_sandboxed_bot_sees_no_arena_option_and_only_the_documented_environment(
        world: World, output: str) -> None:
    """Also where the output folder lies inside the bot's own folder: the view is built
    from that folder's exact leaves, so the output's name is in no mount either."""
    field = [{"name": "view", "spec": hostile(world, "view.py")},
             {"name": "py-heuristic", "spec": PY_HEURISTIC},
             {"name": "heuristic", "spec": "heuristic"}]
    out = None
    if output != "beside":
        own = world.folder / "view-bot"
        shutil.copytree(HOSTILE, own)
        out = own / "out-view"
        field[0]["spec"] = field[0]["spec"].replace(HOSTILE, str(own))
    run = run_tournament(world, f"view-{output[:6]}", field, out=out).check()
    reports = [r for r in learned(run, "view") if not r["control"]]
    assert reports
    for r in reports:
        argv = r["pid1_argv"]  # bubblewrap's init: its options are in a memfd (--args)
        assert argv[1:3] == ["--args", argv[2]] and argv[3] == "--", argv
        assert argv[5].endswith("/view.py") and "--tag" in argv, argv
        assert not any(a.startswith("--ro-bind") or a == "--setenv" for a in argv), argv
        keys = {e.partition("=")[0] for e in r["env_initial"]}
        assert keys == DOCUMENTED_ENV, keys
        assert r["env_added"] == [], r["env_added"]  # importing arena.sdk adds nothing
        assert str(run.out) not in " ".join(r["paths"]), r["paths"]
        assert run.out.name not in " ".join(m["target"] + " " + m["root"] for m in r["mounts"]), \
            r["mounts"]
        assert not r["arena_pid"], r
    assert run.faults() == []
