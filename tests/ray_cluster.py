"""Run ``arena tournament --ray`` on a two-node Ray cluster on this machine and report.

tests/test_ray.py runs this inside a network namespace of its own (only loopback exists
there, so Ray cannot reach any other address):
``unshare --net --map-root-user sh -c 'ip link set lo up && exec python tests/ray_cluster.py
MODE FILE OUT [MODE FILE OUT ...]'``. The scenarios run one after the other on one cluster
(starting one takes seconds); ``remove-node`` can only be the last. It prints one JSON
list on stdout, a report per scenario. MODE:

- ``run``: one run; reports the driver's exit and output, the most games seen running
  at once (the run's game hosts, Ray actors, titled ``ray::GameHost.play`` while they
  play one) and the fewest CPUs Ray had free.
- ``remove-node``: the worker node is removed once some games are stored, with a game
  on it held in flight: its game host is stopped (SIGSTOP) while it still plays the
  game, so the game must be played again.
- ``kill``: the driver is killed with SIGKILL once some games are stored, then run again.
- ``interrupt``: the driver gets SIGINT (Ctrl-C) once some games are stored; reports its
  exit and output and the bot processes left while the cluster still runs, then runs it
  again to the end.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import ray
from ray._private import ray_constants
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from arena.proc.tasks import threads_stopped

DEADLINE_S = 180.0
"""How long one run may take before it is killed: a safety net for a hang, far above
an idle machine's some seconds, so that a loaded one does not fail the run."""


def done_games(out: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{out / 'tournament.sqlite'}?mode=ro", uri=True,
                             timeout=1)
        try:
            return int(db.execute("SELECT count(*) FROM games WHERE status = 'done'")
                       .fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def _descends_from_here(pid: str) -> bool:
    """Whether process ``pid`` is this script's descendant. This script is a child
    subreaper (see :func:`main`), so a bot that outlives the Ray worker that started it is
    reparented here and still counts; processes of tests running beside this one
    (pytest-xdist) do not."""
    here = str(os.getpid())
    for _ in range(64):
        if pid == here:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = stat.rsplit(")", 1)[1].split()[1]
        if pid in ("0", "1"):
            return False
    return False


BOTS = (b"random_bot.py", b"page_probe.py")
"""What the bot processes of the scenarios run (by their command lines)."""


def bot_count(needles: tuple[bytes, ...] = BOTS) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if any(n in cmd for n in needles) and b"bwrap" not in cmd.split(b"\0")[0] \
                    and _descends_from_here(entry):
                count += 1
    return count


def titled(title: bytes) -> dict[str, str]:
    """Ray workers running a task of ``title`` now, with their parents' pids (Ray sets a
    worker's process title to ``ray::NAME`` while it runs task NAME, ``ray::IDLE``
    otherwise)."""
    found: dict[str, str] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if cmd.startswith(b"ray::" + title):
                found[entry] = stat.rsplit(")", 1)[1].split()[1]  # the parent's pid
    return found


def tasks_running(title: bytes) -> int:
    """Ray workers running a task of ``title`` now. A worker's child between its fork and
    its exec (a bot being started) has the same title: it is not counted."""
    running = titled(title)
    return sum(1 for parent in running.values() if parent not in running)


PLAYING = b"GameHost.play"
"""The title of a game host (a Ray actor of the run) while it plays a game."""


def games_started_on(node: Any) -> set[str]:
    """The game hosts of ``node`` (children of its raylet) playing a game now."""
    raylet = str(node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid)
    return {pid for pid, parent in titled(PLAYING).items() if parent == raylet}


def title_of(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def hold_a_game_on(node: Any) -> str | None:
    """A game host of ``node`` stopped (SIGSTOP) in the middle of a game, or None.

    Ray titles an actor's worker ``ray::GameHost.play`` while the method runs and
    retitles it ``ray::GameHost`` as the method returns, before the result is stored or
    sent. So a host that still bears the title once all its threads have stopped holds a game
    whose result cannot reach the driver: it is in flight, whatever the machine's load
    (which once slowed this loop past a "task just begun" window, so the node never
    went; and a title read just before a task ended once let the node go with nothing
    in flight)."""
    for pid in games_started_on(node):
        try:
            os.kill(int(pid), signal.SIGSTOP)
        except ProcessLookupError:
            continue
        until = time.monotonic() + 5
        while not threads_stopped(int(pid)) and time.monotonic() < until:
            time.sleep(0.005)
        if threads_stopped(int(pid)) and title_of(pid).startswith(b"ray::" + PLAYING):
            return pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGCONT)
    return None


@ray.remote(num_cpus=1)
def _occupy(seconds: float) -> None:
    time.sleep(seconds)


def occupy_the_head(cluster: Cluster) -> Any:
    """A task of this script's own that holds the head node's CPU, so that the run's games
    are played on the worker node until it is removed (cancel it then).

    Left to Ray, a short run's games can all go to the head: a new driver's first tasks
    find warm workers there while the worker node starts a Python worker for the job, and
    in some runs (2 in 12, on an idle machine) no game was ever seen on the worker."""
    head = NodeAffinitySchedulingStrategy(node_id=cluster.head_node.node_id, soft=False)
    blocker = _occupy.options(scheduling_strategy=head).remote(DEADLINE_S)
    until = time.monotonic() + 30
    while not titled(b"_occupy") and time.monotonic() < until:
        time.sleep(0.05)
    return blocker


def start_driver(file: str, out: str, address: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "arena", "tournament", file, "--out", out, "--resamples",
         "50", "--ray", address], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def scenario(cluster: Cluster, worker: Any, mode: str, file: str, out: Path) -> dict[str, Any]:
    """One run of the tournament in ``file`` to ``out``, acted on as ``mode`` says."""
    report: dict[str, Any] = {"mode": mode}
    blocker = occupy_the_head(cluster) if mode == "remove-node" else None
    driver = start_driver(file, str(out), cluster.address)
    most, fewest_cpus = 0, float("inf")
    deadline = time.monotonic() + DEADLINE_S
    acted = False
    while driver.poll() is None and time.monotonic() < deadline:
        running = tasks_running(PLAYING)
        most = max(most, running)
        fewest_cpus = min(fewest_cpus, ray.available_resources().get("CPU", 0.0))
        if mode == "remove-node" and not acted:
            held = hold_a_game_on(worker) if done_games(out) >= 3 else None
            if held is not None:
                removing = time.monotonic()
                cluster.remove_node(worker)
                report["removal_s"] = round(time.monotonic() - removing, 2)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(held), signal.SIGCONT)  # a SIGTERM it was sent applies
                ray.cancel(blocker, force=True)  # the head plays the rest
                acted = True
        elif not acted and done_games(out) >= 3:
            if mode == "interrupt":
                driver.send_signal(signal.SIGINT)
                stopped_out, stopped_err = driver.communicate(timeout=30)
                report.update(stopped_rc=driver.returncode, stopped_stdout=stopped_out,
                              stopped_stderr=stopped_err[-2000:],
                              kept=done_games(out))
                until = time.monotonic() + 10
                while bot_count() and time.monotonic() < until:
                    time.sleep(0.1)
                report["bots_left_after_stop"] = bot_count()
                report["tasks_left_after_stop"] = tasks_running(PLAYING)
                driver = start_driver(file, str(out), cluster.address)
                acted = True
            elif mode == "kill":
                report["kept_before_kill"] = done_games(out)
                driver.send_signal(signal.SIGKILL)
                driver.wait()
                report["killed_rc"] = driver.returncode
                report["kept"] = done_games(out)
                driver.communicate()
                time.sleep(1)
                driver = start_driver(file, str(out), cluster.address)
                acted = True
        time.sleep(0.05)
    if driver.poll() is None:
        driver.kill()
    if blocker is not None and not acted:
        ray.cancel(blocker, force=True)
    stdout, stderr = driver.communicate()
    report.update(rc=driver.returncode, stdout=stdout, stderr=stderr[-2000:],
                  driver_stderr=stderr[:2000],
                  most_at_once=most, fewest_free_cpus=fewest_cpus, acted=acted)
    return report


def main() -> None:
    # orphans (a bot whose Ray worker ended before it) are reparented here, not to init,
    # so bot_count still sees them
    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    args = sys.argv[1:]
    runs = [(args[i], args[i + 1], Path(args[i + 2])) for i in range(0, len(args), 3)]
    assert all(mode != "remove-node" for mode, _, _ in runs[:-1]), "remove-node goes last"
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": False})
    worker = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    reports: list[dict[str, Any]] = []
    try:
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        for mode, file, out in runs:
            reports.append(scenario(cluster, worker, mode, file, out))
    finally:
        ray.shutdown()
        cluster.shutdown()
    deadline = time.monotonic() + 10
    while bot_count() and time.monotonic() < deadline:
        time.sleep(0.1)
    left = bot_count()
    for report in reports:
        report["bots_left"] = left  # bots kept by Ray's workers end with the cluster
    print(json.dumps(reports))


if __name__ == "__main__":
    main()
