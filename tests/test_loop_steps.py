"""The trio-thread rule (docs/architecture.md, "What runs on the trio thread"): while a
league plays real sandboxed bot processes, a fresh one for every game (each started,
awaited and ended), and its live page is fetched, no step of the trio loop takes more than
a generous bound of CPU time. Measured by a trio instrument in the league's own process
(:class:`benchmarks.loop_steps.StepClock`): the thread's CPU time of each step, which a
loaded machine does not lengthen (waiting for a core is not CPU time), so load cannot
fail this; a step that scans ``/proc``, reads a log or parses a store's records on the
loop does. The figures themselves (before and after) are the benchmark's."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO

from benchmarks.loop_steps import BOUND_S, measure

GAMES = 3


def test_no_loop_step_takes_long_while_a_league_plays_and_its_page_is_read(
        tmp_path: Path) -> None:
    found = measure(tmp_path, GAMES, timeout_s=600)
    assert Path(found["arena"]).parent == REPO / "arena", found  # this tree's arena
    assert found["games"] >= GAMES, found  # processes started and ended meanwhile
    assert found["fetches"] > 0 and found["steps"] > 0, found
    assert found["over_bound"] == {}, (
        f"task steps over {BOUND_S * 1000:.0f} ms of CPU on the trio thread, by task: "
        f"{found['over_bound']}; the longest: {found['top_cpu_ms']}")
