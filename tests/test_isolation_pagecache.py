"""Hostile bots against the sandbox (the tournaments and what they leave:
tests/isolation_helpers.py): the page cache (issue 17), by system call and by timing,
and two games of one deal at once."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from conftest import shown_in_one_of
from isolation_helpers import (
    PY_HEURISTIC,
    World,
    games,
    hostile,
    learned,
    needs_sandbox,
    run_tournament,
    same_deal_overlaps,
    trusted,
)
from isolation_helpers import (
    world as world,
)

from arena.proc.cgroup import limit_mechanism
from benchmarks.isolation import cold_file

# -- kernel state that every sandbox shares (issue 17) ----------------------------------


def data_file(world: World, mib: int = 24) -> Path:
    """A fresh NON-sparse file for page-cache bits, on disk and out of the page cache
    (evicted as the arena's user)."""
    path = world.folder / f"pages-{secrets.token_hex(4)}" / "pagecache.bin"
    path.parent.mkdir()
    return cold_file(path, mib)


def pagecache_field(world: World, channel: str, data: Path) -> list[dict[str, Any]]:
    return [{"name": "pages", "spec": hostile(world, "pagecache.py", "--channel", channel,
                                              "--data", data)},
            {"name": "py-heuristic", "spec": PY_HEURISTIC},
            {"name": "heuristic", "spec": "heuristic"}]


@needs_sandbox
@pytest.mark.timeout(180)
@pytest.mark.parametrize("channel", ["mincore", "cachestat", "nowait"])
def test_a_sandboxed_bot_reads_no_page_cache_bit(world: World, channel: str) -> None:
    run = run_tournament(world, f"pages-{channel}",
                         pagecache_field(world, channel, data_file(world))).check()
    assert run.games_done() == games(3, 1)
    reports = learned(run, "pagecache")
    assert all(r["deal_recognised"] == 0 and r["cards_right"] == 0 for r in reports), reports
    assert any(r["errors"].get(channel) == "EPERM" for r in reports), reports
    assert run.faults() == []


@pytest.mark.timeout(300)
def test_control_unsandboxed_processes_remember_deals_in_the_page_cache(world: World) -> None:
    """A fresh process per rotation (the default isolation) out of the sandbox, and
    without the reclaim after each game (which drops an unsandboxed bot's pages too):
    the later rotations read the earlier ones' bits. In one of three tournaments, each on
    a fresh file: the machine's own reclaim (and, on a loaded machine, other tests'
    processes) may take the marked pages back between two rotations (one full run in
    CI's settings saw none of three reports recognise the deal)."""
    shown_in_one_of(
        3, lambda k: learned(run_tournament(
            world, f"pages-control-{k}",
            trusted(pagecache_field(world, "mincore", data_file(world))),
            env={"ARENA_NO_RECLAIM": "1"}).check(), "pagecache"),
        lambda reports: (sum(r["deal_recognised"] for r in reports) >= 1
                         and sum(r["cards_right"] for r in reports) > 0),
        "a later rotation reading an earlier one's bits")


@needs_sandbox
@pytest.mark.timeout(180)
def test_a_sandboxed_bot_reads_no_page_cache_bit_by_timing(world: World) -> None:
    """Timing alone (no system call the filter refuses): what a process brought into the
    page cache is reclaimed with its cgroup's memory before another process plays, and
    no two games of one deal with one bot are in flight at once (at the default
    concurrency, with fewer deals than games in flight)."""
    if not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: nothing to reclaim with")
    # ``view = "system"``: the default view would read the data file (in the bot's own
    # folder) into the cache before the bot starts, and close the channel on its own
    # (tests/test_view.py); here the reclaim and the in-flight rule are under test
    field = [{**b, "view": "system"} if b["name"] == "pages" else b
             for b in pagecache_field(world, "timing", data_file(world))]
    run = run_tournament(world, "pages-timing", field, concurrency=2).check()
    assert run.games_done() == games(3, 1)
    assert same_deal_overlaps(run) == [], same_deal_overlaps(run)
    reports = learned(run, "pagecache")
    assert sum(r["writes"] for r in reports) > 0, reports  # it did write its bits
    assert all(r["deal_recognised"] == 0 and r["cards_right"] == 0 for r in reports), reports
    assert run.faults() == []


@pytest.mark.timeout(180)
def test_control_shared_processes_play_one_deal_in_two_games_at_once(world: World) -> None:
    """``shared`` isolation (trusted bots: one process serves every game) keeps no such
    rule: the same field, two games at once, overlaps on its one deal, so the check of
    the test above can fail."""
    field = [{"name": "py-heuristic", "spec": PY_HEURISTIC},
             {"name": "py-heuristic-2", "spec": PY_HEURISTIC},
             {"name": "heuristic", "spec": "heuristic"}]
    run = run_tournament(world, "overlap-control", trusted(field), isolation="shared",
                         concurrency=2).check()
    assert same_deal_overlaps(run), "no two games of the deal overlapped"


@needs_sandbox
@pytest.mark.timeout(180)
def test_control_without_reclaim_timing_recognises_the_deal(world: World) -> None:
    if not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: nothing to reclaim with")
    # Read timing is noisy on a loaded machine (other processes evict and warm pages
    # too): the channel must show in one of three tournaments, each on a fresh file.
    # ``view = "system"``: the default view reads the bot's own folder (the data file)
    # into the cache before it starts, which closes this channel on its own
    # (tests/test_view.py); here the reclaim alone is under test.
    def attempt(k: int) -> list[dict[str, Any]]:
        field = [{**b, "view": "system"} if b["name"] == "pages" else b
                 for b in pagecache_field(world, "timing", data_file(world))]
        return learned(run_tournament(world, f"pages-timing-control-{k}", field,
                                      concurrency=1, env={"ARENA_NO_RECLAIM": "1"}).check(),
                       "pagecache")

    shown_in_one_of(3, attempt, lambda reports: sum(r["deal_recognised"]
                                                    for r in reports) >= 1,
                    "the timing channel without reclaim")
