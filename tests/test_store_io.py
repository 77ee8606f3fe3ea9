"""The store at scale and at its edges, on real SQLite files: every query a run makes per
game goes through an index (no scan, no temporary sort); the writer thread leaves trio's
loop running while SQLite waits; a version-1 store is read as it is and migrated once; a
read-only folder, a full disk and no temporary space are said as such, never as a
damaged store.

The read-only folders, full disks and tiny temporary spaces are real: ``bwrap`` binds a
folder read-only, or mounts a small tmpfs, around a real ``arena`` process (skipped
where bubblewrap cannot make a mount namespace).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import REPO, arena_in_process, tournament_toml

from arena.cli import main
from arena.runs.lock import LOCK_NAME
from arena.runs.schedule import ScheduledGame
from arena.runs.store import (
    SCHEMA_VERSION,
    STORE_NAME,
    Store,
    StoreError,
    StoreIOError,
    StoreLocked,
)
from arena.runs.writer import store_writer

TOURNAMENT = tournament_toml("io-test", "trumps", 3, 31, 1, [
    ("h1", "heuristic"), ("r1", "random"), ("r2", "random"), ("h2", "heuristic")],
    options={"draw": False})
TOTAL = 4 * 1 * 3


def arena(*args: str, cwd: Path = REPO, wrap: tuple[str, ...] = (),
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``arena ARGS``: run by the command ``wrap`` (a read-only folder, a small tmpfs) in
    a real process, else in this process (the tests read its exit code and output)."""
    if not wrap:
        return arena_in_process(*args, cwd=cwd, env=env)
    return subprocess.run([*wrap, sys.executable, "-m", "arena", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=240, check=False, env=env)


def bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    done = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--size", "65536", "--tmpfs",
                           "/mnt", "true"], capture_output=True, check=False, timeout=30)
    return done.returncode == 0


needs_bwrap = pytest.mark.skipif(not bwrap_works(),
                                 reason="bubblewrap cannot make a mount namespace here")


def read_only(folder: Path) -> tuple[str, ...]:
    """Run a command with ``folder`` read-only (everything else as it is)."""
    return ("bwrap", "--dev-bind", "/", "/", "--ro-bind", str(folder), str(folder))


def tmpfs(folder: Path, size: int) -> tuple[str, ...]:
    """Run a command with an empty tmpfs of ``size`` bytes mounted on ``folder``."""
    return ("bwrap", "--dev-bind", "/", "/", "--size", str(size), "--tmpfs", str(folder))


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("io")
    (folder / "t.toml").write_text(TOURNAMENT)
    assert main(["tournament", str(folder / "t.toml"), "--out", str(folder / "out"),
                 "--resamples", "20"]) == 0
    return folder


@pytest.fixture
def out(played: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "out"
    shutil.copytree(played / "out", copy)
    shutil.copy(played / "t.toml", tmp_path / "t.toml")
    return copy


@contextlib.contextmanager
def db(folder: Path) -> Iterator[sqlite3.Connection]:
    with contextlib.closing(sqlite3.connect(folder / STORE_NAME)) as conn, conn:
        yield conn


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def head_of(folder: Path) -> str:
    return str(json.loads((folder / "leaderboard.json").read_text())["chain_head"])


def scheduled(i: int) -> ScheduledGame:
    return ScheduledGame(100 + i, 90 + i, 0, 0, 7, ("h1", "r1", "r2"))


def record_of(conn: sqlite3.Connection) -> dict[str, Any]:
    return dict(json.loads(conn.execute("SELECT record FROM games WHERE status = 'done'"
                                        " LIMIT 1").fetchone()[0]))


def timed(record: dict[str, Any], game: ScheduledGame, ms: float) -> dict[str, Any]:
    """``record`` as ``game``'s, each seat having taken ``ms`` for its one decision."""
    return {**record, "game_id": game.id,
            "timing": {"wall_ms": [[ms]] * 3, "cpu_ms": [[None]] * 3}}


# -- the game path uses indexes ---------------------------------------------------------


def test_every_query_a_run_makes_uses_an_index(out: Path) -> None:
    """The statements a run and a reader make (traced as SQLite runs them), each
    explained: no scan of a table or of a whole index, no temporary B-tree (a sort in
    temporary space)."""
    statements: list[str] = []
    with db(out) as conn:
        record = record_of(conn)
    with Store.open(out) as store:
        store.db.set_trace_callback(statements.append)
        store.reset_unfinished()
        store.done_ids()
        store.count_done()
        for i in range(3):
            game = scheduled(i)
            store.game_started(game)
            store.game_finished(game, {**record, "game_id": game.id})
        assert len(list(store.iter_games(chain_order=True))) == TOTAL + 3
        assert len(list(store.iter_games())) == TOTAL + 3
        store.db.set_trace_callback(None)
        queries = sorted({s for s in statements
                          if s.split()[0].upper() in ("SELECT", "UPDATE", "DELETE")})
        assert any("chain_seq DESC" in q for q in queries)  # the chain's end
        assert any("games_unchained" in q for q in queries)
        for query in queries:
            plan = [row[3] for row in store.db.execute(f"EXPLAIN QUERY PLAN {query}")]
            # a scan only of games_unchained: a partial index of exactly the games a
            # query wants (finished, not linked), empty once they are linked
            scans = [step for step in plan if step.startswith("SCAN")
                     and not step.endswith("INDEX games_unchained")]
            assert not scans, (query, plan)
            assert not any("TEMP B-TREE" in step for step in plan), (query, plan)
    with db(out) as conn:
        names = [r[1] for r in conn.execute("PRAGMA table_info(games)")]
    assert names[-1] == "record"  # after the small columns: no overflow page is read


def test_the_writer_thread_keeps_the_loop_running_while_sqlite_waits(out: Path) -> None:
    """Another connection holds the store's write lock: the finished game's write waits
    in the writer thread, while the trio loop goes on (it is the loop that ends the
    wait, by committing the other connection). A write on the loop would hang it."""
    with db(out) as conn:
        record = record_of(conn)
    blocker = sqlite3.connect(out / STORE_NAME, isolation_level=None)
    game = scheduled(0)

    async def run() -> int:
        ticks = 0
        with Store.open(out) as store:
            async with store_writer(store) as writer:
                await writer.game_started(game)
                blocker.execute("BEGIN IMMEDIATE")
                stored = trio.Event()

                async def finish() -> None:
                    await writer.game_finished(game, {**record, "game_id": game.id})
                    stored.set()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(finish)
                    while ticks < 200:  # the loop runs while the write waits
                        await trio.sleep(0.001)
                        ticks += 1
                    assert not stored.is_set()
                    blocker.execute("COMMIT")
                    await stored.wait()
        return ticks

    try:
        assert trio.run(run) == 200
    finally:
        blocker.close()
    with Store.open_readonly(out) as store:
        assert game.id in store.done_ids()


def test_a_write_that_fails_in_the_writer_thread_reaches_the_game_s_task(out: Path) -> None:
    async def run() -> None:
        with Store.open(out) as store:
            async with store_writer(store) as writer:
                with pytest.raises(StoreError, match="is not running in the store"):
                    await writer.game_finished(scheduled(5), {"totals": [0, 0, 0]})
                await writer.game_started(scheduled(6))  # the writer goes on

    trio.run(run)


def test_a_finished_game_is_finished_once_and_never_started_again(out: Path) -> None:
    """A game finished twice, or started again once finished, is refused: the stored
    game keeps its record and its place in the chain, and the chain gains no link."""
    with db(out) as conn:
        record = record_of(conn)
    game = scheduled(0)
    with Store.open(out) as store:
        store.game_started(game)
        store.game_started(game)  # a running game may start afresh (a lost attempt)
        store.game_finished(game, timed(record, game, 1.0))
        head = store.meta()["chain_head"]
        with pytest.raises(StoreError, match="is not running in the store"):
            store.game_finished(game, timed(record, game, 2.0))
        with pytest.raises(StoreError, match="is finished in the store already"):
            store.game_started(game)
        with pytest.raises(StoreError, match="is not running in the store"):
            store.game_finished(game, timed(record, game, 3.0))
        assert store.meta()["chain_head"] == head
        assert game.id in store.done_ids()
    with db(out) as conn:
        status, chain_seq = conn.execute("SELECT status, chain_seq FROM games WHERE id = ?",
                                         (game.id,)).fetchone()
        stored = json.loads(conn.execute("SELECT record FROM games WHERE id = ?",
                                         (game.id,)).fetchone()[0])
        walls = conn.execute("SELECT wall_ms FROM results WHERE game_id = ?",
                             (game.id,)).fetchall()
    assert status == "done" and chain_seq == TOTAL
    assert stored["timing"]["wall_ms"] == [[1.0]] * 3 and walls == [(1.0,)] * 3


def test_one_process_two_stores_one_writer(out: Path) -> None:
    with Store.open(out) as first, Store.open(out) as second:
        first.set_meta({"note": "first"})
        with pytest.raises(StoreLocked, match=r"another arena \(PID \d+\) is running"):
            second.set_meta({"note": "second"})
        assert second.meta()["note"] == "first"  # reading needs no lock
    with Store.open(out) as third:  # closing the first released it
        third.set_meta({"note": "third"})
    assert (out / LOCK_NAME).exists()


# -- version 1 ---------------------------------------------------------------------------


def downgrade(folder: Path) -> None:
    """The store as the arena before schema version 2 left it: the record before the
    chain's columns (added by ALTER TABLE), no indexes, version 1."""
    with db(folder) as conn:
        for name in ("games_status", "games_chain", "games_unchained", "faults_game"):
            conn.execute(f"DROP INDEX {name}")
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.executescript("""
            CREATE TABLE old_games (id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE,
                table_no INTEGER NOT NULL, deal_no INTEGER NOT NULL,
                rotation INTEGER NOT NULL, deal_seed TEXT NOT NULL, bots TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('running', 'done')),
                started_at REAL, ended_at REAL, record TEXT, chain_seq INTEGER,
                chain_prev TEXT, chain TEXT);
            INSERT INTO old_games SELECT id, seq, table_no, deal_no, rotation, deal_seed,
                bots, status, started_at, ended_at, record, chain_seq, chain_prev, chain
                FROM games;
            DROP TABLE games;
            ALTER TABLE old_games RENAME TO games;
            UPDATE meta SET value = '1' WHERE key = 'schema_version';
        """)
    conn.close()


def test_a_version_1_store_is_read_as_it_is_and_migrated_once(
        out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = head_of(out)
    downgrade(out)
    with db(out) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = digest(out / STORE_NAME)
    # read-only: verified and exported as it is, not changed
    assert main(["verify", str(out), "--head", head]) == 0
    assert main(["export", str(out), "--out", str(out.parent / "v1.jsonl")]) == 0
    assert main(["verify", str(out.parent / "v1.jsonl"), "--head", head]) == 0
    assert digest(out / STORE_NAME) == before
    capsys.readouterr()
    # four processes open it at once: one migrates, the others find it migrated
    code = ("import sys; from pathlib import Path; from arena.runs.store import Store; "
            "s = Store.open(Path(sys.argv[1])); print(s.meta()['schema_version'], "
            "len(list(s.iter_games(chain_order=True)))); s.close()")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(out)], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(4)]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, results
    assert [o.strip() for o, _ in results] == [f"{SCHEMA_VERSION} {TOTAL}"] * 4
    with db(out) as conn:
        names = [r[1] for r in conn.execute("PRAGMA table_info(games)")]
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master"
                                              " WHERE type = 'index'")}
        counts = [conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                  for t in ("games", "results")]
    assert names[-1] == "record" and names.count("chain") == 1
    assert {"games_status", "games_chain", "games_unchained", "faults_game"} <= indexes
    assert counts == [TOTAL, 3 * TOTAL]  # nothing cascaded away
    assert main(["verify", str(out), "--head", head]) == 0
    assert capsys.readouterr().out == f"{out}: ok ({TOTAL} games), chain head {head}\n"


def test_a_version_1_store_resumes_after_its_migration(out: Path) -> None:
    with db(out) as conn:  # a kill -9 left two games running, then an older arena
        last = [r[0] for r in conn.execute(
            "SELECT id FROM games ORDER BY chain_seq DESC LIMIT 2")]
        for game in last:
            for table in ("results", "faults"):
                conn.execute(f"DELETE FROM {table} WHERE game_id = ?", (game,))
            conn.execute("UPDATE games SET status = 'running', record = NULL, chain_seq ="
                         " NULL, chain_prev = NULL, chain = NULL WHERE id = ?", (game,))
        head = conn.execute("SELECT chain FROM games WHERE status = 'done' ORDER BY"
                            " chain_seq DESC LIMIT 1").fetchone()[0]
        conn.executemany("UPDATE meta SET value = ? WHERE key = ?",
                         [(head, "chain_head"), (str(TOTAL - 2), "chain_games")])
    downgrade(out)
    done = arena("tournament", str(out.parent / "t.toml"), "--out", str(out),
                 "--resamples", "20")
    assert done.returncode == 0, done.stderr
    assert f"resuming: {TOTAL - 2} of {TOTAL} games already played" in done.stdout
    checked = arena("verify", str(out), "--head", head_of(out))
    assert checked.returncode == 0, checked.stderr


# -- read-only folders, full disks, no temporary space -------------------------------------


@needs_bwrap
def test_a_read_only_folder(out: Path, tmp_path: Path) -> None:
    wrap = read_only(out)
    before = digest(out / STORE_NAME)
    board = arena("leaderboard", str(out), "--format", "json", "--resamples", "20",
                  wrap=wrap)
    assert board.returncode == 0, board.stderr
    assert json.loads(board.stdout)["games"] == TOTAL
    assert board.stderr.startswith(f"note: {out}: read-only")
    checked = arena("verify", str(out), "--head", head_of(out), wrap=wrap)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout == f"{out}: ok ({TOTAL} games), chain head {head_of(out)}\n"
    exported = arena("export", str(out), "--out", str(tmp_path / "x.jsonl"), wrap=wrap)
    assert exported.returncode == 0, exported.stderr
    run = arena("tournament", str(out.parent / "t.toml"), "--out", str(out), wrap=wrap)
    assert run.returncode == 2, run.stderr
    assert run.stderr == (f"{out}: the output folder is read-only (Read-only file system): "
                          f"a tournament cannot store its games there\n")
    assert digest(out / STORE_NAME) == before


@needs_bwrap
def test_a_read_only_folder_with_changes_to_replay_is_an_io_error(out: Path) -> None:
    """Games in the write-ahead log (a writer killed) that SQLite can only read with a
    -shm file it cannot make there: exit 3, saying so, never a verdict on the store."""
    script = ("import os, sqlite3, sys; db = sqlite3.connect(sys.argv[1], isolation_level=None);"
              " db.execute('PRAGMA wal_autocheckpoint=0');"
              " db.execute(\"UPDATE meta SET value = 'x' WHERE key = 'name'\"); os._exit(0)")
    subprocess.run([sys.executable, "-c", script, str(out / STORE_NAME)], check=True)
    (out / f"{STORE_NAME}-shm").unlink()
    assert (out / f"{STORE_NAME}-wal").stat().st_size > 0
    checked = arena("verify", str(out), wrap=read_only(out))
    assert checked.returncode == 3, checked.stderr
    assert checked.stderr.count("\n") == 1 and "cannot read" in checked.stderr
    assert "damaged" not in checked.stderr
    assert arena("verify", str(out)).returncode == 0  # writable: SQLite replays the log


@needs_bwrap
def test_a_full_disk_while_games_run_is_said_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(tournament_toml(
        "full", "wizard", 4, 5, 10, [("a", "heuristic"), ("b", "random"), ("c", "random"),
                                     ("d", "heuristic")]))
    folder = tmp_path / "out"
    folder.mkdir()
    run = arena("tournament", str(tmp_path / "t.toml"), "--out", str(folder),
                wrap=tmpfs(folder, 1 << 20))  # a store of about 40 Wizard games: 2 MB
    assert run.returncode == 2, run.stderr
    last = run.stderr.splitlines()[-1]
    assert last == (f"{folder / STORE_NAME}: cannot write: disk full (database or disk is "
                    f"full)"), run.stderr
    assert "damaged" not in run.stderr and "internal error" not in run.stderr


@needs_bwrap
def test_no_temporary_space_is_not_a_verdict(out: Path, tmp_path: Path) -> None:
    """With a full temporary space, verify and export still work (the chain order is read
    along an index, no sort), and a statement that does need the space (the records
    copied into a temporary table whose cache is made tiny, so it spills) is an I/O error
    naming the full disk, not a damaged store."""
    space = tmp_path / "tmp"
    space.mkdir()
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(space), "SQLITE_TMPDIR": str(space)}
    wrap = tmpfs(space, 4096)
    checked = arena("verify", str(out), "--head", head_of(out), wrap=wrap, env=env)
    assert checked.returncode == 0, checked.stderr
    exported = arena("export", str(out), "--out", str(tmp_path / "x.jsonl"), wrap=wrap,
                     env=env)
    assert exported.returncode == 0, exported.stderr
    script = (
        "import sys; from pathlib import Path\n"
        "from arena.runs.store import Store, StoreIOError\n"
        "store = Store.open_readonly(Path(sys.argv[1]))\n"
        "store.db.execute('PRAGMA temp.cache_size = 2')\n"
        "try:\n"
        "    store._read('CREATE TEMP TABLE copy AS SELECT record FROM games')\n"
        "except StoreIOError as e:\n"
        "    print(e)\n")
    done = subprocess.run([*wrap, sys.executable, "-c", script, str(out)], cwd=REPO,
                          text=True, capture_output=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"{out / STORE_NAME}: cannot read: disk full (database or disk "
                           f"is full)\n")


def test_a_store_error_class_follows_sqlite_s_code_not_its_text(out: Path) -> None:
    """A real SQLITE_FULL (the page limit reached) is an I/O error; a trigger that raises
    the same words is not a full disk."""
    with db(out) as conn:
        record = record_of(conn)
    with Store.open(out) as store:
        store.game_started(scheduled(0))
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(StoreIOError, match="cannot write: disk full"):
            store.game_finished(scheduled(0), {**record, "game_id": scheduled(0).id,
                                               "timing": {"wall_ms": [[1.0] * 400] * 3,
                                                          "cpu_ms": [[None] * 400] * 3}})
    with db(out) as conn:
        conn.execute("CREATE TRIGGER full BEFORE UPDATE ON games BEGIN"
                     " SELECT RAISE(ABORT, 'database or disk is full'); END")
    with Store.open(out) as store, pytest.raises(StoreError) as caught:
        store.game_finished(scheduled(0), {**record, "game_id": scheduled(0).id})
    assert not isinstance(caught.value, StoreIOError)


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandboxed", "no-sandbox"])
def test_a_temporary_folder_too_long_for_a_socket_is_not_the_bot_s_fault(
        tmp_path: Path, sandbox: bool) -> None:
    """TMPDIR's path leaves no room for a unix socket (107 bytes): the bots' sockets go
    to a short folder instead, and every game is played without a fault."""
    deep = tmp_path / ("t" * 60) / ("m" * 60)
    deep.mkdir(parents=True)
    bot = REPO / "sample_bots" / "python" / "random_bot.py"
    config = tmp_path / "long.toml"
    text = tournament_toml("long-tmp", "trumps", 2, 7, 1, [
        ("a", f"cmd:python {bot}"), ("b", f"cmd:python {bot}")], options={"draw": False})
    if not sandbox:
        text = "\n".join(line + ("\nsandbox = false" if line.startswith("spec =") else "")
                         for line in text.splitlines()) + "\n"
    config.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TMPDIR"] = str(deep)
    done = arena("tournament", str(config), "--out", str(tmp_path / "out"),
                 "--resamples", "5", env=env)
    assert done.returncode == 0, done.stderr
    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    assert board["games"] == 2 and all(sum(b["faults"].values()) == 0 for b in board["bots"])
    assert not [p for p in deep.iterdir() if p.name.startswith("arena-bot-")]
