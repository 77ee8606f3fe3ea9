"""Hostile bots against the sandbox: real tournaments through the CLI, one attack each.

Each bot of ``tests/bots/hostile/`` plays legally while it tries one attack, and reports
what it achieved as ``HOSTILE {json}`` lines on its stderr, which the arena keeps in the
bot's log files (``logs/*.log`` in the output folder). With the defaults (every ``cmd:``
bot under bubblewrap with cgroup limits, isolation ``deal``) each attack must achieve
nothing and hurt no other bot. Where it is cheap, a control runs the same attack on a
trusted bot (``sandbox = false``) with ``isolation = "shared"`` and shows that it works
there: the test can fail.

The tests that rely on the sandbox are skipped where bubblewrap is not installed, except
in CI (``CI`` set), where it must be. Every test has its own ``TMPDIR`` and a tag in its
hostile bots' command lines; no process with the tag or with a socket in that TMPDIR,
and no socket folder, may be left afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, bot_cmd

from arena.proc.cgroup import limit_mechanism

HOSTILE = str(REPO / "tests/bots/hostile")
PY_HEURISTIC = bot_cmd(REPO / "sample_bots/python/heuristic_bot.py")
PY_RANDOM = bot_cmd(REPO / "sample_bots/python/random_bot.py")
"""Absolute: a tournament file's relative paths are taken from its folder (a temporary one)."""
RUN_TIMEOUT_S = 150

needs_sandbox = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap (bwrap) is not installed (in CI it must be)")


# -- the test's world: TMPDIR, a tag, and nothing left behind -------------------------


@dataclass(frozen=True)
class World:
    tag: str
    """In every hostile bot's command line (``--tag``) and its daemon's marker."""
    tmp: Path
    """The arena's TMPDIR (short: a unix socket's path must stay under 108 bytes)."""
    folder: Path
    """Tournament files and output folders."""
    env: dict[str, str]


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def live_pids(pick: Callable[[int], bool]) -> list[int]:
    """Live processes (zombies aside) but this one that ``pick`` picks."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        state = _read(f"/proc/{entry}/stat").rpartition(b")")[2].split()[:1]
        if state not in ([], [b"Z"]) and pick(int(entry)):
            found.append(int(entry))
    return found


def with_marker(marker: str) -> list[int]:
    """Live processes whose command line contains ``marker``."""
    return live_pids(lambda pid: marker.encode() in _read(f"/proc/{pid}/cmdline"))


def leftovers(world: World) -> list[int]:
    """Live processes of this test: a hostile bot or its daemon (the tag in the command
    line), or any bot of its arenas (a socket in the test's TMPDIR)."""
    socket = f"ARENA_BOT_LISTEN=unix:{world.tmp}/".encode()
    return live_pids(lambda pid: world.tag.encode() in _read(f"/proc/{pid}/cmdline")
                     or socket in _read(f"/proc/{pid}/environ"))


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def wait_until_gone(find: Callable[[], list[int]], timeout_s: float = 5.0) -> list[int]:
    """What ``find`` still finds after up to ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (left := find()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    tmp = Path(tempfile.mkdtemp(prefix="hi-", dir="/tmp"))
    tag = f"hostile-{secrets.token_hex(5)}"
    here = World(tag, tmp, tmp_path, dict(os.environ, TMPDIR=str(tmp)))
    try:
        yield here
        left = wait_until_gone(lambda: leftovers(here), 3.0)
        kill_all(left)
        assert not left, f"processes of this test left running: {left}"
        folders = sorted(p.name for p in tmp.glob("arena-bot-*"))
        assert not folders, f"bot socket folders left: {folders}"
    finally:
        kill_all(leftovers(here))
        shutil.rmtree(tmp, ignore_errors=True)


# -- tournament files -----------------------------------------------------------------


def toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {value!r}")


def tournament_text(name: str, bots: list[dict[str, Any]], *, seed: int, seats: int = 3,
                    deals: int = 1, move_ms: int = 1000, game: str = "trumps",
                    options: dict[str, Any] | None = None, **top: Any) -> str:
    """A tournament file; ``top`` adds top-level keys (``isolation``, ``concurrency``,
    ``limits`` as an inline table). Trumps without drawing by default: 7 tricks."""
    if options is None:
        options = {"draw": False} if game == "trumps" else {}
    lines = [f"name = {toml(name)}", f"game = {toml(game)}", f"seats = {seats}",
             f"seed = {seed}"]
    lines += [f"{key} = {toml(value)}" for key, value in top.items()]
    lines += ["", "[options]"] + [f"{k} = {toml(v)}" for k, v in options.items()]
    lines += ["", "[time]", f"move_ms = {move_ms}", "", "[schedule]", f"deals = {deals}"]
    for bot in bots:
        lines += ["", "[[bots]]"] + [f"{k} = {toml(v)}" for k, v in bot.items()]
    return "\n".join(lines) + "\n"


def hostile(world: World, script: str, *args: object) -> str:
    """The spec of a hostile bot, tagged with the test's tag."""
    words = ["python", f"{HOSTILE}/{script}", "--tag", world.tag, *map(str, args)]
    return "cmd:" + " ".join(words)


def trusted(bots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The control's field: every ``cmd:`` bot out of the sandbox."""
    return [{**b, "sandbox": False} if b["spec"].startswith("cmd:") else b for b in bots]


CONTROL = {"isolation": "shared"}
"""The control's top-level keys: one process per bot for every game (the old way)."""


# -- running one and reading what happened --------------------------------------------


@dataclass
class Run:
    out: Path
    done: subprocess.CompletedProcess[str]
    seed: int

    def check(self) -> Run:
        assert self.done.returncode == 0, self.done.stdout + self.done.stderr
        return self

    def reports(self, attack: str) -> list[dict[str, Any]]:
        """Every HOSTILE report of ``attack`` in the tournament's logs, in order per file."""
        found = []
        for log in sorted(self.out.rglob("*.log")):
            for line in log.read_text(errors="replace").splitlines():
                if not line.startswith("HOSTILE "):
                    continue
                try:
                    entry = json.loads(line[len("HOSTILE "):])
                except ValueError:
                    continue
                if entry.get("attack") == attack:
                    found.append({**entry, "log": log.name})
        return found

    def last_reports(self, attack: str) -> list[dict[str, Any]]:
        """The last report of each process (reports are cumulative)."""
        last: dict[str, dict[str, Any]] = {}
        for entry in self.reports(attack):
            last[entry["proc"]] = entry
        return list(last.values())

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        with contextlib.closing(sqlite3.connect(self.out / "tournament.sqlite")) as db:
            return db.execute(sql).fetchall()

    def faults(self) -> list[tuple[str, str, str]]:
        """(bot, kind, detail) of every fault of the tournament."""
        return [tuple(row) for row in self.query("SELECT bot, kind, detail FROM faults")]

    def faults_of_others(self, hostile_bot: str) -> list[tuple[str, str, str]]:
        return [f for f in self.faults() if f[0] != hostile_bot]

    def games_done(self) -> int:
        return int(self.query("SELECT COUNT(*) FROM games WHERE status = 'done'")[0][0])


def run_tournament(world: World, name: str, bots: list[dict[str, Any]],
                   env: dict[str, str] | None = None, out: Path | None = None,
                   **kw: Any) -> Run:
    seed = secrets.randbits(62)
    path = world.folder / f"{name}.toml"
    path.write_text(tournament_text(name, bots, seed=seed, **kw))
    out = out or world.folder / f"out-{name}"
    done = subprocess.run(
        [sys.executable, "-m", "arena", "tournament", str(path), "--out", str(out),
         "--resamples", "20"],
        cwd=REPO, env={**world.env, **(env or {})}, text=True, capture_output=True,
        timeout=RUN_TIMEOUT_S, check=False)
    return Run(out, done, seed)


def same_deal_overlaps(run: Run) -> list[tuple[str, str]]:
    """Pairs of stored games of one deal (its seed) with a bot in common whose times
    overlapped: what :class:`arena.play.pool.DealsInFlight` forbids."""
    import sqlite3

    db = sqlite3.connect(f"file:{run.out / 'tournament.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT id, deal_seed, bots, started_at, ended_at FROM games"
                          " WHERE status = 'done'").fetchall()
    finally:
        db.close()
    found = []
    for i, (a, seed_a, bots_a, start_a, end_a) in enumerate(rows):
        for b, seed_b, bots_b, start_b, end_b in rows[i + 1:]:
            shared = set(json.loads(bots_a)) & set(json.loads(bots_b)) - {"heuristic"}
            if seed_a == seed_b and shared and start_a < end_b and start_b < end_a:
                found.append((a, b))
    return found


def games(seats: int, deals: int) -> int:
    """Games of a round robin of exactly ``seats`` bots."""
    return seats * deals


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
    time.sleep(0.5)
    alive = with_marker(f"hostile-daemon-{world.tag}")
    kill_all(alive)
    assert alive, "the daemon should outlive an unsandboxed tournament"


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


THINK = ("--cpu-ms", 600, "--per-game", 2)
"""600 ms of CPU on each of the first 2 decisions of a game, against move_ms 1000."""


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
    bots = [{"name": f"thinker{i}", "spec": hostile(world, "thinker.py", "--cpu-ms", 50)}
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


# -- kernel state that every sandbox shares (issue 17) ----------------------------------


def data_file(world: World, mib: int = 24) -> Path:
    """A fresh NON-sparse file for page-cache bits (a hole reads without I/O), on disk
    (fsync) and out of the page cache (evicted as the arena's user)."""
    path = world.folder / f"pages-{secrets.token_hex(4)}" / "pagecache.bin"
    path.parent.mkdir()
    block = os.urandom(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for _ in range(mib):
            os.write(fd, block)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return path


def pagecache_field(world: World, channel: str, data: Path) -> list[dict[str, Any]]:
    return [{"name": "pages", "spec": hostile(world, "pagecache.py", "--channel", channel,
                                              "--data", data)},
            {"name": "py-heuristic", "spec": PY_HEURISTIC},
            {"name": "heuristic", "spec": "heuristic"}]


def learned(run: Run, attack: str) -> list[dict[str, Any]]:
    reports = run.last_reports(attack)
    assert reports, f"no {attack} report in the logs"
    return reports


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


@pytest.mark.timeout(180)
def test_control_unsandboxed_processes_remember_deals_in_the_page_cache(world: World) -> None:
    """A fresh process per rotation (the default isolation) out of the sandbox, and
    without the reclaim after each game (which drops an unsandboxed bot's pages too):
    the later rotations read the earlier ones' bits."""
    field = trusted(pagecache_field(world, "mincore", data_file(world)))
    run = run_tournament(world, "pages-control", field, env={"ARENA_NO_RECLAIM": "1"}).check()
    reports = learned(run, "pagecache")
    assert sum(r["deal_recognised"] for r in reports) >= 1, reports
    assert sum(r["cards_right"] for r in reports) > 0, reports


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


@needs_sandbox
@pytest.mark.timeout(150)
def test_a_sandboxed_bot_can_neither_trace_nor_make_a_user_namespace(world: World) -> None:
    field = [{"name": "ptrace", "spec": hostile(world, "ptrace.py")},
             {"name": "unshare", "spec": hostile(world, "unshare.py")},
             {"name": "heuristic", "spec": "heuristic"}]
    run = run_tournament(world, "ptrace", field, move_ms=5000).check()
    assert run.games_done() == games(3, 1)
    traced = learned(run, "ptrace")
    assert all(not r.get("attached") and not r.get("peeked") and not r.get("vm_read")
               for r in traced), traced
    assert all(r["errors"].get("attach") == "EPERM" for r in traced), traced
    nested = learned(run, "unshare")
    assert all(r["unshare_user"] != "ok" and not r["root_inside"] for r in nested), nested
    assert all(r["unshare_command"] != "ok" for r in nested), nested
    assert run.faults() == []


@needs_sandbox
def test_control_without_the_filter_the_same_sandbox_traces_and_unshares(
        tmp_path: Path) -> None:
    """The same bubblewrap view without the seccomp options: ptrace and a nested user
    namespace work, so the test above can fail."""
    from arena.model.limits import Confinement
    from arena.proc.bwrap import bwrap_args

    probe = ("import ctypes, os, sys\n"
             "libc = ctypes.CDLL(None, use_errno=True)\n"
             "pid = os.fork()\n"
             "if pid == 0:\n"
             "    import time; time.sleep(5); os._exit(0)\n"
             "ok = libc.ptrace(16, pid, None, None) == 0\n"
             "os.kill(pid, 9); os.waitpid(pid, 0)\n"
             "print('attach', ok, 'unshare', libc.unshare(0x10000000) == 0)\n")
    script = tmp_path / "probe.py"
    script.write_text(probe)
    args = bwrap_args([sys.executable, str(script)], tmp_path,
                      Confinement(), {"PATH": "/usr/bin:/bin"})
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.split() == ["attach", "True", "unshare", "True"], done


def forkchain_field(world: World) -> list[dict[str, Any]]:
    return [{"name": "chain", "spec": hostile(world, "forkchain.py", "--chain", "sh")},
            {"name": "py-heuristic", "spec": PY_HEURISTIC},
            {"name": "heuristic", "spec": "heuristic"}]


@needs_sandbox
@pytest.mark.timeout(150)
def test_a_fork_chain_does_no_work_while_stopped(world: World) -> None:
    """The cgroup freezer stops the whole cgroup at once, new processes included."""
    if not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: bots are not stopped between calls")
    run = run_tournament(world, "chain", forkchain_field(world), move_ms=3000).check()
    assert run.games_done() == games(3, 1)
    reports = learned(run, "forkchain")
    assert sum(r["links"] for r in reports) > 0, reports  # the chain ran
    assert all(r["stopped_links"] == 0 for r in reports), reports
    assert run.faults() == []


@needs_sandbox
@pytest.mark.timeout(150)
def test_control_a_fork_chain_outruns_a_sigstop_sweep_and_is_faulted(world: World) -> None:
    """Without the freezer (a SIGSTOP sweep, repeated until the list is stable and every
    thread has stopped): the chain's links run while the bot's main process is stopped.
    Where one outlives the sweep, the CPU check at the next call says so, with a resource
    fault against that bot only (an honest bot is never faulted)."""
    if not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: bots are not stopped between calls")
    run = run_tournament(world, "chain-control", forkchain_field(world), move_ms=3000,
                         env={"ARENA_NO_FREEZER": "1"}).check()
    reports = learned(run, "forkchain")
    assert sum(r["stopped_links"] for r in reports) > 0, reports
    faults = run.faults()
    assert {bot for bot, _, _ in faults} <= {"chain"}, faults
    assert all(kind == "resource" and "used CPU while stopped" in detail
               for _, kind, detail in faults), faults


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
    tries = []
    for attempt in range(3):
        field = [{**b, "view": "system"} if b["name"] == "pages" else b
                 for b in pagecache_field(world, "timing", data_file(world))]
        run = run_tournament(world, f"pages-timing-control-{attempt}", field,
                             concurrency=1, env={"ARENA_NO_RECLAIM": "1"}).check()
        reports = learned(run, "pagecache")
        tries.append(reports)
        if sum(r["deal_recognised"] for r in reports) >= 1:
            return
    pytest.fail(f"the timing channel never showed without reclaim: {tries}")
