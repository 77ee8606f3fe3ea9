"""``arena tournament --ray`` on a real two-node Ray cluster on this machine.

Every Ray process runs inside a network namespace the test makes (only loopback exists
there: outside one, Ray binds and connects to the machine's own non-loopback address),
through tests/ray_cluster.py, which plays every scenario on one cluster (a start costs
seconds) and reports JSON. Checked: the same games as a local run; bots reaching the nodes
through ``working_dir``; resume after the driver is killed with SIGKILL or stopped with
Ctrl-C; a node removed mid-run (every game stored once, the retry counted, not a bot's
fault); one CPU per game; and the rules of a local run, told by a bot's own trace: no
two games of one deal with the bot in flight at once, a process never on a deal twice,
kept between games and reclaimed after each. Skips only where ``ray`` cannot be
imported.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import REPO, TEST_BOTS, tournament_toml

from arena.proc.cgroup import limit_mechanism
from arena.proc.tasks import has_swap
from arena.runs.field import wire_ids

try:
    import ray  # noqa: F401
except ImportError:
    if os.environ.get("ARENA_REQUIRE_RAY"):  # CI installs it: its absence is a failure
        raise
    pytest.skip("ray is not installed (pip install 'trick-arena[ray]')",
                allow_module_level=True)

# the cluster fixture plays six runs on one cluster (its start and each driver's some
# 20 s in a network namespace, each run's games some 10-40 s): past the suite's 300 s
# for the test that sets it up; a hang is ended by the namespace's own timeout
pytestmark = pytest.mark.timeout(900)

def tournament(bot: str) -> str:
    """Trumps for four at one table, four deals: a bot process, the built-in heuristic
    and two random ones. (Under "deal" isolation a process plays each deal once: at one
    table a bot needs a process per rotation, where five bots at five tables over one deal
    needed one per game.)"""
    return tournament_toml("ray-test", "trumps", 4, 4711, 4, [
        ("py-random", f"cmd:python {bot}"), ("heuristic", "heuristic"),
        ("random", "random"), ("random2", "random")],
        move_ms=3000)


TOTAL = 1 * 4 * 4  # tables x deals x rotations


def probe_tournament(folder: Path, name: str, seats: int, deals: int,
                     probes: tuple[str, ...]) -> Path:
    """Trumps, a round robin of ``probes`` (tests/bots/page_probe.py, run unsandboxed:
    it counts its own file's pages in the page cache) and built-in bots, four in all,
    at ``seats`` seats over ``deals`` deals. Each probe's trace: ``NAME-BOT.jsonl``
    beside the file."""
    pages = folder / f"{name}-pages"
    pages.mkdir()
    specs = {bot: "cmd:" + " ".join([
        "python", str(TEST_BOTS / "page_probe.py"), "--trace",
        str(folder / f"{name}-{bot}.jsonl"), "--pages", str(pages), "--pace", "0.05"])
        for bot in probes}
    field = [*specs.items(), ("heuristic", "heuristic"), ("random", "random"),
             ("random2", "random")][:4]
    text = tournament_toml(f"ray-{name}", "trumps", seats, 4712, deals, field, move_ms=3000)
    for spec in specs.values():
        text = text.replace(f"spec = {json.dumps(spec)}",
                            f"spec = {json.dumps(spec)}\nsandbox = false")
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


SOCKETS = Path(tempfile.mkdtemp(prefix="arena-r-"))
# every xdist worker imports this module, only one runs it: each removes its own
atexit.register(shutil.rmtree, SOCKETS, ignore_errors=True)
ENV = dict(os.environ, TMPDIR=str(SOCKETS))


@pytest.fixture(scope="module", autouse=True)
def _sockets_folder() -> Iterator[None]:
    yield
    shutil.rmtree(SOCKETS, ignore_errors=True)


def in_namespace(*runs: tuple[str, Path, Path]) -> list[dict[str, Any]]:
    """tests/ray_cluster.py with ``runs`` (mode, file, out), one after the other on one
    cluster, in a network namespace of its own; a report per run."""
    args = " ".join(f"{mode} {file} {out}" for mode, file, out in runs)
    script = f"ip link set lo up && exec {sys.executable} tests/ray_cluster.py {args}"
    done = subprocess.run(["unshare", "--net", "--map-root-user", "sh", "-c", script],
                          cwd=REPO, text=True, capture_output=True, timeout=60 + 240 * len(runs),
                          check=False, env=ENV)
    assert done.returncode == 0, done.stderr[-2000:]
    reports: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return reports


def finished(report: dict[str, Any]) -> dict[str, Any]:
    """``report``, checked: the run ended well and no bot outlived the cluster."""
    assert report["rc"] == 0, report["stderr"]
    assert report["bots_left"] == 0, "bot processes outlived the cluster"
    return report


def games(out: Path) -> dict[str, tuple[Any, ...]]:
    """Each stored game: deal seed, seats, status and record without its timings."""
    db = sqlite3.connect(f"file:{out / 'tournament.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT id, deal_seed, bots, status, record FROM games").fetchall()
        results = db.execute("SELECT count(*) FROM results").fetchone()[0]
    finally:
        db.close()
    assert results == 4 * len(rows)
    stored: dict[str, tuple[Any, ...]] = {}
    for game_id, deal_seed, bots, status, record in rows:
        assert game_id not in stored
        data = json.loads(record)
        data.pop("timing", None)
        stored[game_id] = (deal_seed, bots, status, data)
    return stored


def retries(stdout: str) -> int:
    match = re.search(r"(\d+)\s+game\(s\)\s+played\s+again", stdout)
    assert match, stdout
    return int(match.group(1))


@pytest.fixture(scope="module")
def tournament_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ray") / "ray.toml"
    path.write_text(tournament(str(REPO / "sample_bots/python/random_bot.py")))
    return path


@pytest.fixture(scope="module")
def local(tournament_file: Path) -> dict[str, tuple[Any, ...]]:
    out = tournament_file.parent / "local"
    done = subprocess.run([sys.executable, "-m", "arena", "tournament", str(tournament_file),
                           "--out", str(out), "--resamples", "50"], cwd=REPO, text=True,
                          capture_output=True, timeout=120, check=False, env=ENV)
    assert done.returncode == 0, done.stderr
    stored = games(out)
    assert len(stored) == TOTAL
    return stored


@pytest.fixture(scope="module")
def cluster(tournament_file: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Every scenario on one two-node cluster (each start costs seconds), by name: its
    output folder and report. The node's removal goes last."""
    folder = tournament_file.parent
    bots = folder / "bots"  # [cluster] working_dir: Ray copies it to the nodes
    bots.mkdir()
    shutil.copy(REPO / "sample_bots" / "python" / "random_bot.py", bots)
    wd_file = folder / "wd.toml"
    wd_file.write_text(tournament("random_bot.py")
                       + '\n[cluster]\nworking_dir = "bots"\n')
    # one uninterrupted run, the bots copied through working_dir; the other scenarios
    # give the bots by their path on the machine's file system
    runs = {"working_dir": ("run", wd_file),
            # the rules of a local run, told by the bots: one deal, two probes with
            # tables of their own as well as tables together (12 games); three deals at
            # one table of four (12 games), for processes kept between games
            "deal-rule": ("run", probe_tournament(folder, "deal-rule", 3, 1, ("p", "q"))),
            "kept": ("run", probe_tournament(folder, "kept", 4, 3, ("p",))),
            "kill": ("kill", tournament_file), "interrupt": ("interrupt", tournament_file),
            "remove-node": ("remove-node", tournament_file)}
    reports = in_namespace(*((mode, file, folder / name) for name, (mode, file)
                             in runs.items()))
    return {name: (folder / name, report)
            for name, report in zip(runs, reports, strict=True)}


@pytest.fixture(scope="module")
def ray_run(cluster: dict[str, tuple[Path, dict[str, Any]]]) -> tuple[Path, dict[str, Any]]:
    """The uninterrupted run (its bots through ``working_dir``)."""
    out, report = cluster["working_dir"]
    return out, finished(report)


def test_ray_run_stores_the_same_games_as_a_local_run(
        local: dict[str, tuple[Any, ...]], ray_run: tuple[Path, dict[str, Any]]) -> None:
    out, report = ray_run
    assert f"played {TOTAL} games" in report["stdout"]
    assert "engine: ray (" in report["driver_stderr"]
    assert retries(report["stdout"]) == 0
    assert games(out) == local  # deal seeds, seats, every action, totals


def test_two_games_of_one_deal_with_a_bot_in_common_are_never_in_flight_at_once(
        ray_run: tuple[Path, dict[str, Any]]) -> None:
    """The rule of a local run, kept on the cluster: the bot process's pages of one
    rotation of a deal are never there for another rotation played beside it. Two games
    ran at once (test_one_cpu_per_game), each with the bot process, and no two of them
    shared a deal (the driver's start and end of each game, as stored)."""
    out, _ = ray_run
    db = sqlite3.connect(f"file:{out / 'tournament.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT id, deal_seed, started_at, ended_at FROM games"
                          " WHERE status = 'done'").fetchall()
    finally:
        db.close()
    assert len(rows) == TOTAL
    overlapping = [(a, b) for i, (a, deal_a, start_a, end_a) in enumerate(rows)
                   for b, deal_b, start_b, end_b in rows[i + 1:]
                   if start_a < end_b and start_b < end_a]
    assert overlapping  # games did run side by side
    same_deal = [(a, b) for a, b in overlapping
                 if dict((r[0], r[1]) for r in rows)[a] == dict((r[0], r[1]) for r in rows)[b]]
    assert same_deal == []


def probe_trace(cluster: dict[str, tuple[Path, dict[str, Any]]], name: str, games: int
                ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Run ``name`` (of ``games`` games), checked: every call its probes were asked
    (``bot``; the process, the game's id as the bot was sent it, when), and the deal
    seed of each game by that id (the store's games, under the store's seed)."""
    out, report = cluster[name]
    finished(report)
    assert retries(report["stdout"]) == 0
    db = sqlite3.connect(f"file:{out / 'tournament.sqlite'}?mode=ro", uri=True)
    try:
        seed = int(db.execute("SELECT value FROM meta WHERE key = 'seed'").fetchone()[0])
        rows = db.execute("SELECT id, deal_seed FROM games WHERE status = 'done'").fetchall()
    finally:
        db.close()
    assert len(rows) == games
    deal_of = {wire_ids(seed, SimpleNamespace(id=game_id))[0]: deal  # type: ignore[arg-type]
               for game_id, deal in rows}
    calls = [{**json.loads(line), "bot": trace.stem.removeprefix(f"{name}-")}
             for trace in sorted(out.parent.glob(f"{name}-*.jsonl"))
             for line in trace.read_text().splitlines()]
    assert {c["game"] for c in calls} <= set(deal_of)
    return calls, deal_of


def spans(calls: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[float, float]]:
    """Each game of each probe (bot, game): from its first call to its last."""
    found: dict[tuple[str, str], tuple[float, float]] = {}
    for call in calls:
        key = (call["bot"], call["game"])
        first, last = found.get(key, (call["t"], call["t"]))
        found[key] = (min(first, call["t"]), max(last, call["t"]))
    return found


def test_a_bot_never_plays_one_deal_in_two_games_at_once_on_the_cluster(
        cluster: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    """The rule between games in flight (:class:`arena.play.pool.DealsInFlight`), kept
    by the driver for every node, told by the bots: from a probe's first call of a game
    to its last, no call of another game came to it, on either node (every game is of
    the one deal); yet the two probes, at tables of their own, did play the deal at
    once (the rule is about a bot in common, not one game at a time). Without the rule
    (the driver's ``flight.take`` taking the queue's first game whatever is in flight)
    the first two games, both with both probes, go to the two hosts at once, and this
    fails."""
    calls, _ = probe_trace(cluster, "deal-rule", 4 * 3)
    found = spans(calls)
    assert len(found) == 2 * 3 * 3  # each probe at 3 tables, 3 rotations
    probes_in: dict[str, set[str]] = {}
    for bot, game in found:
        probes_in.setdefault(game, set()).add(bot)
    overlaps = [(a, b) for i, a in enumerate(sorted(found)) for b in sorted(found)[i + 1:]
                if a[1] != b[1] and found[a][0] <= found[b][1] and found[b][0] <= found[a][1]]
    # two games at once with a probe in common (all of the one deal)
    clashes = [(a, b) for a, b in overlaps if probes_in[a[1]] & probes_in[b[1]]]
    assert clashes == [], clashes
    assert overlaps, found  # a game of p alone beside one of q alone


def test_a_node_keeps_a_bot_s_processes_by_the_rules_of_a_local_run(
        cluster: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    """A game host keeps the bot's processes between its games, in the pools of a local
    run: a process never plays a deal twice, and its cgroup is reclaimed after each
    game it is kept for. The probe counts, at each game's first call, its own file's
    pages in the page cache, which it read whole in its last game: none are left, so
    they went with its cgroup's reclaim (with ``ARENA_NO_RECLAIM=1`` on the cluster a
    kept process finds nearly all of them, and this fails)."""
    calls, deal_of = probe_trace(cluster, "kept", 4 * 3)
    firsts = sorted((c for c in calls if "resident" in c), key=lambda c: c["t"])
    assert len(firsts) == 4 * 3  # the probe is in every game
    by_process: dict[int, list[dict[str, Any]]] = {}
    for call in firsts:
        by_process.setdefault(call["pid"], []).append(call)
    for games_of_process in by_process.values():
        deals = [deal_of[c["game"]] for c in games_of_process]
        assert len(deals) == len(set(deals)), games_of_process  # never a deal twice
    kept = [c for games_of_process in by_process.values() for c in games_of_process[1:]]
    assert kept, "no process played two games: the hosts kept none"
    if not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: nothing to reclaim with")
    if has_swap():
        pytest.skip("swap in use: the reclaim waits for a process's end (cgroup_memory)")
    assert [c for c in kept if c["resident"] != 0] == [], kept


def test_one_cpu_per_game(ray_run: tuple[Path, dict[str, Any]]) -> None:
    """Two nodes of one CPU each: never more than two games at once (the run's game
    hosts playing one, by their process title), and the games held every CPU."""
    _, report = ray_run
    assert report["most_at_once"] == 2
    assert report["fewest_free_cpus"] == 0


def test_a_node_removed_mid_run_loses_no_game_and_doubles_none(
        cluster: dict[str, tuple[Path, dict[str, Any]]],
        local: dict[str, tuple[Any, ...]]) -> None:
    out, report = cluster["remove-node"]
    finished(report)
    assert report["acted"], "the run ended before the node could be removed"
    assert games(out) == local  # each game once, played again from its start
    assert retries(report["stdout"]) >= 1, report  # the game on the node went with it
    assert "0 faults" in report["stdout"]  # a lost node is no bot's fault


def test_resume_after_the_driver_is_killed(
        cluster: dict[str, tuple[Path, dict[str, Any]]],
        local: dict[str, tuple[Any, ...]]) -> None:
    out, report = cluster["kill"]
    finished(report)
    assert report["killed_rc"] == -9
    kept = report["kept"]
    assert 3 <= kept < TOTAL
    assert f"resuming: {kept} of {TOTAL} games already played" in report["stdout"]
    assert f"played {TOTAL - kept} games" in report["stdout"]
    assert games(out) == local


def test_ctrl_c_stops_the_cluster_games_and_resumes_like_a_local_run(
        tournament_file: Path, cluster: dict[str, tuple[Path, dict[str, Any]]],
        local: dict[str, tuple[Any, ...]]) -> None:
    """SIGINT to the driver: it stops as a local run does (exit 130, finished games kept,
    how to resume), its games on the cluster end with their bots, and a second run
    plays only the rest."""
    out, report = cluster["interrupt"]
    finished(report)
    assert report["acted"], "the run ended before it could be interrupted"
    assert report["stopped_rc"] == 130, report["stopped_stderr"]
    assert "Traceback" not in report["stopped_stderr"]
    assert f"resume with: arena tournament {tournament_file}" in report["stopped_stderr"]
    assert report["bots_left_after_stop"] == 0, "bots outlived the interrupted run"
    assert report["tasks_left_after_stop"] == 0, "game tasks outlived the interrupted run"
    kept = report["kept"]
    assert 3 <= kept < TOTAL
    assert f"resuming: {kept} of {TOTAL} games already played" in report["stdout"]
    assert games(out) == local


def test_without_ray_installed_says_how_to_install_it(
        tournament_file: Path, tmp_path: Path) -> None:
    fake = tmp_path / "noray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    env = dict(ENV, PYTHONPATH=str(fake.parent))
    done = subprocess.run([sys.executable, "-m", "arena", "tournament", str(tournament_file),
                           "--out", str(tmp_path / "out"), "--ray"], cwd=REPO, text=True,
                          capture_output=True, timeout=60, check=False, env=env)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "pip install 'trick-arena[ray]'" in lines[0]
    assert not (tmp_path / "out").exists()  # refused before anything was made


def test_bots_reach_the_nodes_through_working_dir(
        cluster: dict[str, tuple[Path, dict[str, Any]]],
        local: dict[str, tuple[Any, ...]]) -> None:
    """With ``[cluster] working_dir`` Ray copies the folder to the nodes and the bot's
    command runs in that copy: the driver's folder has no random_bot.py of its own."""
    assert not (REPO / "random_bot.py").exists()
    out, report = cluster["working_dir"]
    finished(report)
    assert games(out) == local
    assert retries(report["stdout"]) == 0
