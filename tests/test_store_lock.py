"""One writer per store, with real ``arena`` processes: two tournaments started at once on
one output folder (one refused, naming the other; the chain of the other verifies), a
kill -9 of the holder (the lock is free at once), ``--fresh`` against a running
tournament, readers during a run, and two matches on one folder."""

from __future__ import annotations

import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest
from conftest import REPO, arena_in_process, done_games, tournament_toml

from arena.files import claim_folder
from arena.runs.lock import LOCK_NAME, PROBE_WAIT_S, Held, RunLock, run_holds

BOTS = [("h1", "heuristic"), ("r1", "random"), ("h2", "heuristic"), ("r2", "random"),
        ("r3", "random")]
DEALS = 4
TOURNAMENT = tournament_toml("lock-test", "wizard", 4, 17, DEALS, BOTS)
"""Wizard for four between built-in bots: 5 tables x 4 deals x 4 rotations, a couple of
seconds: long enough for a second arena to be refused and for readers during the run."""
TOTAL = 5 * DEALS * 4


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "arena", *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    """``arena ARGS`` in this process, against the folder of a real arena process that
    :func:`start` runs (the lock is flock's: it holds between processes)."""
    return arena_in_process(*args, cwd=REPO)


def wait_for_games(folder: Path, count: int, proc: subprocess.Popen[str]) -> int:
    deadline = time.monotonic() + 120
    while (done := done_games(folder)) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the tournament made no progress"
        time.sleep(0.02)
    return done


def refusal(folder: Path, pid: int, what: str = "tournament") -> str:
    return (f"{folder}: another arena (PID {pid}) is running this {what}; wait for it to "
            f"end, or stop it\n")


def chain_positions(folder: Path) -> list[int]:
    with closing(sqlite3.connect(folder / "tournament.sqlite")) as db:
        return [r[0] for r in db.execute("SELECT chain_seq FROM games WHERE status = 'done'"
                                         " ORDER BY chain_seq")]


def test_two_tournaments_at_once_one_is_refused_naming_the_other(tmp_path: Path) -> None:
    path, out = tmp_path / "t.toml", tmp_path / "out"
    path.write_text(TOURNAMENT)
    # the folder made first: two processes making and marking one folder at the same
    # moment can each find the other's half-written mark (claim_folder's own matter)
    claim_folder(out, "tournament", "")
    procs = [start("tournament", str(path), "--out", str(out), "--resamples", "20")
             for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], results
    loser, winner = codes.index(2), codes.index(0)
    assert results[loser] == ("", refusal(out, procs[winner].pid)), results[loser]
    assert f"{TOTAL} of {TOTAL} games done" in results[winner][0]
    checked = arena("verify", str(out))
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith(f"{out}: ok ({TOTAL} games), chain head ")
    assert chain_positions(out) == list(range(TOTAL))  # every game once, one chain


def test_a_kill_9_frees_the_lock(tmp_path: Path) -> None:
    path, out = tmp_path / "t.toml", tmp_path / "out"
    path.write_text(TOURNAMENT)
    proc = start("tournament", str(path), "--out", str(out), "--resamples", "20")
    wait_for_games(out, 10, proc)
    proc.kill()
    proc.communicate(timeout=60)
    kept = done_games(out)
    assert kept < TOTAL
    assert (out / LOCK_NAME).read_text().strip() == str(proc.pid)  # left, and stale
    resumed = arena("tournament", str(path), "--out", str(out), "--resamples", "20")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {kept} of {TOTAL} games already played" in resumed.stdout
    checked = arena("verify", str(out))
    assert checked.returncode == 0, checked.stderr
    assert chain_positions(out) == list(range(TOTAL))


def test_fresh_against_a_running_tournament_removes_nothing_and_readers_keep_working(
        tmp_path: Path) -> None:
    path, out = tmp_path / "t.toml", tmp_path / "out"
    path.write_text(TOURNAMENT)
    proc = start("tournament", str(path), "--out", str(out), "--resamples", "20")
    wait_for_games(out, 5, proc)
    fresh = arena("tournament", str(path), "--out", str(out), "--fresh")
    assert (fresh.returncode, fresh.stdout, fresh.stderr) == (2, "", refusal(out, proc.pid))
    assert (out / "tournament.sqlite").exists()
    reads = 0
    while proc.poll() is None and reads < 3:  # readers during the run, each consistent
        checked = arena("verify", str(out))
        assert checked.returncode == 0, checked.stderr
        exported = arena("export", str(out), "--out", str(tmp_path / "g.jsonl"))
        assert exported.returncode == 0, exported.stderr
        assert arena("verify", str(tmp_path / "g.jsonl")).returncode == 0
        board = arena("leaderboard", str(out), "--format", "json", "--resamples", "20")
        assert board.returncode == 0, board.stderr
        reads += 1
    assert reads >= 1, "the tournament ended before the readers could read"
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    checked = arena("verify", str(out))
    assert checked.returncode == 0 and f"ok ({TOTAL} games)" in checked.stdout


def test_two_matches_on_one_folder(tmp_path: Path) -> None:
    out = tmp_path / "m"
    args = ("match", "heuristic", "heuristic", "--game", "wizard", "--max-games", "4000",
            "--seed", "3", "--concurrency", "2", "--out", str(out))
    proc = start(*args)
    wait_for_games(out, 4, proc)
    second = arena(*args)
    assert second.returncode == 2
    assert second.stderr == "arena match: " + refusal(out, proc.pid, "match")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode in (0, 1, 130), stderr
    assert arena("verify", str(out)).returncode == 0


def test_a_readers_probe_tells_a_held_folder_and_never_refuses_a_run(tmp_path: Path) -> None:
    """``run_holds`` (the published index's "running") is a shared lock tried and dropped:
    True while a run holds the folder, False otherwise, and a run that starts while a
    probe holds its shared lock waits it out instead of being refused as held."""
    folder = tmp_path / "out"
    folder.mkdir()
    assert not run_holds(folder)  # no lock file yet
    with RunLock.take(folder):
        assert run_holds(folder)
        with pytest.raises(Held):  # a second run is still refused
            RunLock.take(folder)
    assert not run_holds(folder)
    fd = os.open(folder / LOCK_NAME, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)  # a probe, caught in the middle
    threading.Timer(PROBE_WAIT_S / 4, os.close, (fd,)).start()
    with RunLock.take(folder):
        assert run_holds(folder)
