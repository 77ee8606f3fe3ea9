"""Tournaments end to end: real bot processes, the SQLite store, resume after kill -9,
clean stop on SIGINT, faults in the leaderboard, export and verify."""

from __future__ import annotations

import atexit
import gzip
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    REPO,
    arena_in_process,
    bot_cmd,
    done_games,
    is_bwrap,
    processes_with,
    tournament_toml,
)

FIELD = [("py-heuristic", bot_cmd(REPO / "sample_bots/python/heuristic_bot.py")),
         ("py-random", bot_cmd(REPO / "sample_bots/python/random_bot.py")),
         ("heuristic", "heuristic"), ("random", "random")]
"""Bot commands are absolute: a tournament file's relative paths are taken from its own
folder (these files are written to a temporary one)."""
NAMES = {name for name, _ in FIELD}


def tournament(deals: int = 10, extra: Sequence[tuple[str, str]] = (), *,
               seed: int | None = 424242, isolation: str | None = None,
               announce: bool = False) -> str:
    """Trumps for four: the field at one table over ``deals`` deals, or with ``extra``
    bots at one table each of their own (five bots: five tables)."""
    options: dict[str, Any] = {"draw": False, **({"announce": True} if announce else {})}
    return tournament_toml("resume-test", "trumps", 4, seed, deals, [*FIELD, *extra],
                           concurrency=3, move_ms=2000, options=options, isolation=isolation)


TOURNAMENT = tournament()
"""Four bots at one table, ten deals: under "deal" isolation a process plays each deal
once, so a bot needs a process per game of one deal: 4 here, where five bots at five
tables and 2 deals needed 16 (a sandboxed Python bot's start is the dearest thing these
tests do)."""
TOTAL = 1 * 10 * 4  # tables x deals x rotations


SOCKETS = Path(tempfile.mkdtemp(prefix="arena-t-"))
# every xdist worker imports this module, only one runs it: each removes its own
atexit.register(shutil.rmtree, SOCKETS, ignore_errors=True)
"""TMPDIR of the arenas these tests start: where their bots' socket folders go."""
ENV = dict(os.environ, TMPDIR=str(SOCKETS))


def real_arena(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena", *args], cwd=REPO, text=True,
                          capture_output=True, timeout=240, check=False, env=ENV)


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    """``arena ARGS`` in this process, for exit codes, output and stored results; the
    uninterrupted run (its progress on a pipe), kill -9, SIGINT and a resume after a kill
    (a new process's sweep of what the killed one left) use real processes."""
    return arena_in_process(*args, cwd=REPO, env=ENV)


def start_arena(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "arena", *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)


def socket_folders() -> list[Path]:
    return sorted(SOCKETS.glob("arena-bot-*"))


@pytest.fixture(scope="module", autouse=True)
def _sockets_folder() -> Iterator[None]:
    yield
    shutil.rmtree(SOCKETS, ignore_errors=True)


def wait_for_games(folder: Path, count: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while done_games(folder) < count:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the tournament made no progress"
        time.sleep(0.05)


def bot_pids(arena_pid: int) -> list[int]:
    """Live bot processes of the arena process ``arena_pid``: unsandboxed ones by their
    socket folder, whose name carries the arena's pid; sandboxed ones by their
    bubblewrap, started with ``TMPDIR`` (this module's, and one arena runs at a time here)
    in its own environment, also once the arena is gone (its bot listens inside the
    sandbox, in its own /run/arena)."""
    unsandboxed = processes_with(
        f"ARENA_BOT_LISTEN=unix:{SOCKETS}/arena-bot-{arena_pid}-".encode(), zombies=False)
    sandboxes = [pid for pid in processes_with(f"TMPDIR={SOCKETS}\0".encode(), zombies=False)
                 if is_bwrap(pid)]  # not the reaper of an arena run in this process
    return sorted({*unsandboxed, *sandboxes})


def results(folder: Path) -> dict[str, Any]:
    board = json.loads((folder / "leaderboard.json").read_text())
    assert len(board.pop("chain_head")) == 64  # the records' timing and order differ
    for bot in board["bots"]:
        bot.pop("latency_ms")  # measured times differ from run to run
        bot.pop("cpu_ms")
    with sqlite3.connect(folder / "tournament.sqlite") as db:
        records = {}
        for game_id, text in db.execute("SELECT id, record FROM games ORDER BY seq"):
            record = json.loads(text)
            assert set(record.pop("timing")) == {"wall_ms", "cpu_ms"}
            records[game_id] = record
    return {"board": board, "records": records}


@pytest.fixture(scope="module")
def tournament_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("t") / "resume.toml"
    path.write_text(TOURNAMENT)
    return path


PRINTED: dict[str, str] = {}
"""What the uninterrupted run printed on its standard error (a pipe, not a terminal)."""


@pytest.fixture(scope="module")
def uninterrupted(tournament_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("straight")
    done = real_arena("tournament", str(tournament_file), "--out", str(out), "--resamples", "200")
    assert done.returncode == 0, done.stderr
    assert f"{TOTAL} of {TOTAL} games done" in done.stdout
    PRINTED["stderr"] = done.stderr
    PRINTED["stdout"] = done.stdout
    return out


PROGRESS = re.compile(r"games (\d+)/(\d+) \((\d+)%\), (\S+) elapsed, (eta \S+|done), "
                      r"faults (\d+); Elo so far: 1\. (\S+) (\d+), 2\. (\S+) (\d+), "
                      r"3\. (\S+) (\d+)")


def test_progress_lines_with_eta_and_standings_when_not_a_terminal(
        uninterrupted: Path) -> None:
    lines = [line for line in PRINTED["stderr"].splitlines() if line.startswith("games ")]
    found = [PROGRESS.fullmatch(line) for line in lines]
    assert lines and all(found), lines
    done = [int(m.group(1)) for m in found if m]
    assert done == [1, *range(4, TOTAL + 1, 4)]  # after the first game, then every 10%
    assert all(int(m.group(2)) == TOTAL for m in found if m)
    assert [m.group(5).startswith("eta ") for m in found if m] == [True] * 10 + [False]
    assert f"{TOTAL} games to play; a progress line after the first game and every 4 " \
        "games, with the time left" in PRINTED["stdout"]
    last = found[-1]
    assert last is not None
    top = [last.group(7), last.group(9), last.group(11)]
    assert set(top) <= NAMES and len(set(top)) == 3
    elos = [int(last.group(i)) for i in (8, 10, 12)]
    assert elos == sorted(elos, reverse=True)


def test_a_tournament_runs_stores_and_publishes(uninterrupted: Path) -> None:
    board = json.loads((uninterrupted / "leaderboard.json").read_text())
    assert board["games"] == TOTAL
    assert {b["name"] for b in board["bots"]} == NAMES
    assert board["seed"] == 424242
    assert board["seed_commitment"] == __import__("hashlib").sha256(b"424242").hexdigest()
    for name in ("leaderboard.md", "leaderboard.csv"):
        assert (uninterrupted / name).stat().st_size > 0
    with sqlite3.connect(uninterrupted / "tournament.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        versions = dict(db.execute("SELECT name, version FROM bots").fetchall())
        assert versions["py-heuristic"] == "1.0"
        seats = db.execute("SELECT bot, COUNT(*) FROM results GROUP BY bot").fetchall()
        assert {n for _, n in seats} == {TOTAL}


def test_export_then_verify_every_record(uninterrupted: Path) -> None:
    exported = arena("export", str(uninterrupted))
    assert exported.returncode == 0, exported.stderr
    lines = (uninterrupted / "games.jsonl").read_text().splitlines()
    assert len(lines) == TOTAL
    checked = arena("verify", str(uninterrupted / "games.jsonl"))
    assert checked.returncode == 0, checked.stderr
    assert f"ok ({TOTAL} records)" in checked.stdout


def test_running_again_plays_nothing_twice(tournament_file: Path, uninterrupted: Path) -> None:
    before = results(uninterrupted)
    again = arena("tournament", str(tournament_file), "--out", str(uninterrupted),
                  "--resamples", "200")
    assert again.returncode == 0, again.stderr
    assert f"resuming: {TOTAL} of {TOTAL} games already played" in again.stdout
    assert "played 0 games" in again.stdout
    assert results(uninterrupted) == before


def test_resume_after_kill_9_gives_identical_results(
        tournament_file: Path, uninterrupted: Path, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    proc = start_arena("tournament", str(tournament_file), "--out", str(out),
                       "--resamples", "200")
    try:
        wait_for_games(out, 7, proc)
        assert bot_pids(proc.pid), "the tournament's bots should be running"
        # (a sandboxed bot's socket is inside its sandbox: no folder here to leave behind)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    kept = done_games(out)
    assert 7 <= kept < TOTAL
    # the orphaned bots die with their arena (bubblewrap's --die-with-parent)
    deadline = time.monotonic() + 10
    while bot_pids(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not bot_pids(proc.pid)
    resumed = real_arena("tournament", str(tournament_file), "--out", str(out),
                         "--resamples", "200")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {kept} of {TOTAL} games already played" in resumed.stdout
    assert f"played {TOTAL - kept} games" in resumed.stdout
    assert results(out) == results(uninterrupted)
    # the data, not just the messages: every game once, every fault once, every link once
    with sqlite3.connect(out / "tournament.sqlite") as got, \
            sqlite3.connect(uninterrupted / "tournament.sqlite") as want:
        done = "SELECT COUNT(*), COUNT(DISTINCT id) FROM games WHERE status = 'done'"
        assert got.execute(done).fetchone() == (TOTAL, TOTAL)
        faults = "SELECT game_id, seat, kind FROM faults ORDER BY game_id, seat, kind"
        assert got.execute(faults).fetchall() == want.execute(faults).fetchall()
        meta = dict(got.execute("SELECT key, value FROM meta").fetchall())
        assert meta["chain_games"] == str(TOTAL)
    # the chain goes on from where the killed run left it, whole
    checked = arena("verify", str(out))
    assert checked.returncode == 0, checked.stderr
    assert f"ok ({TOTAL} games), chain head" in checked.stdout
    # the killed arena could not remove its bots' socket folders; the next run did
    assert not list(SOCKETS.glob(f"arena-bot-{proc.pid}-*"))


def test_sigint_stops_cleanly_and_says_how_to_resume(tournament_file: Path,
                                                     tmp_path: Path) -> None:
    out = tmp_path / "stopped"
    leftover = socket_folders()  # a kill -9 in another test cannot clean up its own
    proc = start_arena("tournament", str(tournament_file), "--out", str(out))
    try:
        wait_for_games(out, 3, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert f"resume with: arena tournament {tournament_file}" in err
    # a sandbox's bubblewrap may still be ending (it is killed, then reaped by the kernel)
    deadline = time.monotonic() + 10
    while bot_pids(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not bot_pids(proc.pid)
    assert socket_folders() == leftover  # a clean stop removes its bots' socket folders
    with sqlite3.connect(out / "tournament.sqlite") as db:
        statuses = {s for (s,) in db.execute("SELECT status FROM games")}
    assert statuses <= {"done", "running"}
    assert done_games(out) >= 3


def test_a_changed_file_is_refused_unless_fresh(tournament_file: Path, uninterrupted: Path,
                                                tmp_path: Path) -> None:
    changed = tmp_path / "changed.toml"
    changed.write_text(tournament(11))
    refused = arena("tournament", str(changed), "--out", str(uninterrupted))
    assert refused.returncode == 2
    assert "has changed since the tournament" in refused.stderr
    assert "--fresh" in refused.stderr and refused.stderr.count("\n") == 1


def test_a_misbehaving_bot_finishes_with_its_faults_in_the_leaderboard(tmp_path: Path) -> None:
    illegal = bot_cmd(REPO / "tests/bots/illegal.py")
    # one process per bot for all games: this test is about faults, and "deal" isolation
    # would start three processes a game (tests/test_crash_reports.py has the faults of
    # bots under the default)
    path = tmp_path / "faulty.toml"
    path.write_text(tournament(1, [("illegal", illegal)], isolation="shared", announce=True))
    done = arena("tournament", str(path), "--out", str(tmp_path / "out"), "--resamples", "100")
    assert done.returncode == 0, done.stderr
    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    faults = {b["name"]: b["faults"] for b in board["bots"]}
    assert faults["illegal"]["illegal"] > 0
    assert sum(faults["illegal"].values()) == faults["illegal"]["illegal"]
    for name, counts in faults.items():
        if name != "illegal":
            assert sum(counts.values()) == 0, name
    forfeits = {b["name"]: b["forfeits"] for b in board["bots"]}
    assert forfeits["illegal"] > 0
    assert sum(forfeits.values()) == forfeits["illegal"]


# one process per bot for all games ("shared"): this test is about the seed, and with
# one deal "deal" isolation would start a process per bot per game
SLEEPY = ("sleepy", bot_cmd(REPO / "tests/bots/sleepy.py", "--sleep-ms", 15))
SEEDLESS = tournament(1, [SLEEPY], seed=None, isolation="shared")
SEEDLESS_TOTAL = 5 * 1 * 4


def stored_games(folder: Path) -> dict[str, tuple[str, str]]:
    """Every game row of the store: id -> (deal seed, status)."""
    with sqlite3.connect(folder / "tournament.sqlite") as db:
        return {i: (seed, status) for i, seed, status in
                db.execute("SELECT id, deal_seed, status FROM games")}


def stored_seed(folder: Path) -> str:
    with sqlite3.connect(folder / "tournament.sqlite") as db:
        return str(db.execute("SELECT value FROM meta WHERE key = 'seed'").fetchone()[0])


def check_only_done_games_are_counted(out: Path, done: set[str], tmp_path: Path) -> None:
    """export, leaderboard (every format) and publish of a store with `running` rows."""
    n = len(done)
    exported = arena("export", str(out), "--out", str(tmp_path / "games.jsonl"))
    assert exported.returncode == 0, exported.stderr
    lines = (tmp_path / "games.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["game_id"] for line in lines) == sorted(done)
    shown = {}
    for fmt in ("json", "csv", "md", "table"):
        board = arena("leaderboard", str(out), "--format", fmt, "--resamples", "50")
        assert board.returncode == 0, board.stderr
        shown[fmt] = board.stdout
    board_json = json.loads(shown["json"])
    assert board_json["games"] == n
    assert sum(b["games"] for b in board_json["bots"]) == 4 * n
    rows = list(__import__("csv").DictReader(shown["csv"].splitlines()))
    assert sum(int(row["games"]) for row in rows) == 4 * n
    assert f"{n} games" in shown["md"] and f"{n} games" in shown["table"]
    site = tmp_path / "site"
    published = arena("publish", str(out), "--out", str(site), "--resamples", "50")
    assert published.returncode == 0, published.stderr
    records = gzip.decompress((site / "data" / "games.jsonl.gz").read_bytes()).splitlines()
    assert sorted(json.loads(line)["game_id"] for line in records) == sorted(done)
    listing = (site / "games.html").read_text()
    assert f'id="games-count" for="filter-bot filter-table filter-deal">{n} games<' in listing


def test_a_seedless_tournament_killed_and_resumed_keeps_its_drawn_seed(tmp_path: Path) -> None:
    """No `seed` in the file: the first run draws one and stores it; after a kill -9 the
    store (with `running` rows) exports, ranks and publishes its finished games only, and
    the resumed run reuses the stored seed: the same deal seeds, and the same results as
    an uninterrupted run of the file with that seed written in."""
    path = tmp_path / "seedless.toml"
    path.write_text(SEEDLESS)
    out = tmp_path / "killed"
    proc = start_arena("tournament", str(path), "--out", str(out), "--resamples", "200")
    try:
        wait_for_games(out, 3, proc)
        deadline = time.monotonic() + 60
        while "running" not in {status for _, status in stored_games(out).values()}:
            assert proc.poll() is None and time.monotonic() < deadline, "no game started"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)  # while a game is running
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    before = stored_games(out)
    seed = stored_seed(out)
    done = {i for i, (_, status) in before.items() if status == "done"}
    assert "running" in {status for _, status in before.values()}, before
    assert 3 <= len(done) < SEEDLESS_TOTAL
    check_only_done_games_are_counted(out, done, tmp_path)
    resumed = real_arena("tournament", str(path), "--out", str(out), "--resamples", "200")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {len(done)} of {SEEDLESS_TOTAL} games already played" in resumed.stdout
    assert stored_seed(out) == seed
    after = stored_games(out)
    assert {i: s for i, (s, _) in before.items()} == {i: after[i][0] for i in before}
    assert {status for _, status in after.values()} == {"done"}
    seeded = tmp_path / "seeded.toml"
    seeded.write_text(tournament(1, [SLEEPY], seed=int(seed), isolation="shared"))
    straight = tmp_path / "straight"
    done_straight = arena("tournament", str(seeded), "--out", str(straight),
                          "--resamples", "200")
    assert done_straight.returncode == 0, done_straight.stderr
    assert stored_games(straight) == after
    resumed_results, straight_results = results(out), results(straight)
    for board in (resumed_results["board"], straight_results["board"]):
        board.pop("tournament_hash")  # the files differ by the seed line
    assert resumed_results == straight_results
