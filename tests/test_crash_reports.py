"""A bot process that dies is reported in one line by every command: how it ended (its
exit code, the signal, or the limit it hit), the call it was in, its log and the log's
last lines, sanitised. Real bot processes (``tests/bots/dier.py``), in the sandbox where
it works, through ``arena check-bot``, ``arena play`` and ``arena tournament`` (whose
faults are checked in the store and counted on the leaderboard)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, TEST_BOTS, Sandbox, arena_in_process, bot_cmd, tournament_toml

from arena.proc.bwrap import sandbox_works
from arena.proc.cgroup import limit_mechanism
from arena.runs.store import Store

SANDBOX: list[str] = [] if sandbox_works() is None else ["--no-sandbox"]
"""The sandbox where it works here (what every user gets), else none: the reports are
the same either way."""

SAY = r"last words\x1b[31m in red\x07 and a bell"
"""What the bot writes to its stderr before it dies (the escapes decoded by the bot)."""
SAID = "last words in red and a bell"
"""How the report quotes it: the escape sequence and the bell removed."""

MEMORY_MB = 200

MOVE_MS = 20000
"""Time per decision: long, since every death is prompt, but a bot near its memory limit
reclaims its own page cache before it is killed, which on a loaded machine took over the
default second (CI and a full run here: the fault was the Bid's timeout, not the limit)."""


@dataclass(frozen=True)
class Death:
    args: tuple[str, ...]
    how: str
    """How the report says the process ended."""
    call: str
    """The call it was in, as the report says it."""
    kind: str = "crash"


DEATHS = {
    "exit-in-hello": Death(("--in", "hello", "--code", "7"), "exited with code 7",
                           "during the hand-shake"),
    "signal-in-a-bid": Death(("--in", "bid", "--signal", "KILL"),
                             "was killed by SIGKILL (signal 9)", "during a Bid"),
    "exit-in-a-play": Death(("--in", "play", "--code", "5"), "exited with code 5",
                            "during a Play"),
    "memory-limit": Death(("--in", "bid", "--allocate"),
                          f"was killed: memory limit {MEMORY_MB} MiB reached", "during a Bid",
                          "resource"),
}


def dier(death: Death) -> str:
    return bot_cmd(TEST_BOTS / "dier.py", *death.args, "--say", SAY)


def needs_limits(name: str) -> None:
    if name == "memory-limit" and not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: a memory limit is an rlimit, and a bot that hits it "
                    "fails its allocation instead of being killed")


def run(sandbox: Sandbox, *argv: str) -> subprocess.CompletedProcess[str]:
    """``arena ARGV`` in this process (the tests read its report lines and exit code)."""
    return arena_in_process(*argv, env=sandbox.env, cwd=REPO)


def check_report(line: str, death: Death, restarting: bool) -> Path:
    """``line`` reports the death as it should: how, in which call, then the log (which
    holds the bot's last words) quoted; the log's path."""
    then = "; restarting it" if restarting else ""
    pattern = (re.escape(f"{death.how} {death.call}{then}; log ") + r"(\S+\.log)"
               + re.escape(': "') + r"[^\"]*" + re.escape(f'{SAID}"'))
    found = re.search(pattern, line)
    assert found, line
    assert "\x1b" not in line and "\x07" not in line
    log = Path(found.group(1))
    assert log.is_file() and "last words\x1b[31m in red\x07" in log.read_text()
    return log


@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", list(DEATHS))
def test_check_bot_reports_how_the_bot_died(arena_sandbox: Sandbox, name: str) -> None:
    needs_limits(name)
    death = DEATHS[name]
    spec = dier(death)
    logs = arena_sandbox.tmp / "logs"
    done = run(arena_sandbox, "check-bot", spec, *SANDBOX, "--game", "wizard", "--games",
               "1", "--memory-mb", str(MEMORY_MB), "--log-dir", str(logs), "--json",
               "--move-ms", str(MOVE_MS))
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    if death.call == "during the hand-shake":
        assert done.stderr.count("\n") == 1
        assert done.stderr.startswith(f"arena check-bot: bot {spec}: {death.how} {death.call}")
        check_report(done.stderr, death, restarting=False)
        assert report["error"] == done.stderr.removeprefix("arena check-bot: ").rstrip("\n")
        return
    failed = [c for c in report["checks"] if not c["ok"]]
    assert failed, report
    first = failed[0]["reason"]
    assert f": {death.kind}: the bot process {death.how} {death.call}" in first
    check_report(first, death, restarting=True)
    (process,) = [c for c in report["checks"] if c["name"] == "process"]
    assert not process["ok"]
    assert process["reason"].startswith("crashed and was restarted ")
    assert f"; the last process {death.how} {death.call}; log " in process["reason"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", list(DEATHS))
def test_play_reports_how_the_bot_died(arena_sandbox: Sandbox, name: str) -> None:
    needs_limits(name)
    death = DEATHS[name]
    spec = dier(death)
    path = arena_sandbox.tmp / "game.json"
    done = run(arena_sandbox, "play", *SANDBOX, "--game", "wizard", "--players", "3",
               "--seed", "4", "--bots", f"random,{spec},heuristic", "--memory-mb",
               str(MEMORY_MB), "--log-dir", str(arena_sandbox.tmp / "logs"),
               "--record", str(path), "--quiet", "--move-ms", str(MOVE_MS))
    if death.call == "during the hand-shake":
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr.count("\n") == 1
        assert done.stderr.startswith(
            f"arena play: bot seat1 ({spec}): {death.how} {death.call}; log ")
        check_report(done.stderr, death, restarting=False)
        assert not path.exists()
        return
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    faults = json.loads(path.read_text())["faults"]
    assert faults and {f["seat"] for f in faults} == {1}
    first = faults[0]
    assert first["kind"] == death.kind, first
    assert first["detail"].startswith(f"the bot process {death.how} {death.call}")
    log = check_report(first["detail"], death, restarting=True)
    assert first["detail"] in done.stdout  # printed under the standings, on one line
    assert log.parent == arena_sandbox.tmp / "logs"


@pytest.mark.timeout(180)
def test_a_memory_limit_death_is_a_resource_fault_however_slowly_the_bot_ends(
        arena_sandbox: Sandbox) -> None:
    """On a loaded machine a bot killed at its memory limit could take longer to end than
    the usual wait for its exit, and its fault read ``crash`` (connection failed). Once
    the kernel has killed it at the limit the wait is longer: here the killed bot's parent
    outlives it by 2 s (4 times the usual wait), and the fault still names the limit."""
    needs_limits("memory-limit")
    death = DEATHS["memory-limit"]
    script = TEST_BOTS / "dier.py"
    outlive = ("import subprocess, sys, time; "
               "subprocess.call([sys.executable, *sys.argv[1:]]); time.sleep(2)")
    spec = "cmd:" + shlex.join(["python", "-c", outlive, str(script), *death.args,
                                "--say", SAY])
    path = arena_sandbox.tmp / "game.json"
    done = run(arena_sandbox, "play", *SANDBOX, "--game", "wizard", "--players", "3",
               "--seed", "4", "--bots", f"random,{spec},heuristic", "--memory-mb",
               str(MEMORY_MB), "--record", str(path), "--quiet", "--move-ms", str(MOVE_MS))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    first = json.loads(path.read_text())["faults"][0]
    assert (first["seat"], first["kind"]) == (1, "resource"), first
    assert f"memory limit {MEMORY_MB} MiB reached during a Bid" in first["detail"], first


def _tournament(sandbox: Sandbox, spec: str) -> Path:
    text = tournament_toml("crash-report", "trumps", 2, 99, 1,
                           [("dier", spec), ("random", "random")],
                           concurrency=1, move_ms=MOVE_MS,
                           options={"draw": False, "announce": True})
    text += f"\n[limits]\nmemory_mb = {MEMORY_MB}\n"
    if SANDBOX:
        text = text.replace(f'name = "dier"\nspec = {json.dumps(spec)}',
                            f'name = "dier"\nspec = {json.dumps(spec)}\nsandbox = false')
    path = sandbox.tmp / "t" / "crash.toml"
    path.parent.mkdir()
    path.write_text(text)
    return path


@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", list(DEATHS))
def test_a_tournament_reports_how_the_bot_died(arena_sandbox: Sandbox, name: str) -> None:
    needs_limits(name)
    death = DEATHS[name]
    path = _tournament(arena_sandbox, dier(death))
    done = run(arena_sandbox, "tournament", str(path), "--resamples", "20")
    out = path.parent / "out" / "crash-report"
    if death.call == "during the hand-shake":
        assert done.returncode == 1
        line = done.stderr.splitlines()[-1]
        assert line.startswith(f"{path}: bot dier: {death.how} {death.call}; log ")
        log = check_report(line, death, restarting=False)
        assert log.parent == out / "logs"
        return
    assert done.returncode == 0, done.stderr
    with Store.open_readonly(out) as store:
        faults: list[dict[str, Any]] = [f for game in store.iter_games()
                                        for f in game.record["faults"]]
    assert faults and all(f["seat"] in (0, 1) for f in faults)
    first = faults[0]
    assert first["kind"] == death.kind, first
    assert first["detail"].startswith(f"the bot process {death.how} {death.call}")
    log = check_report(first["detail"], death, restarting=True)
    assert log.parent == out / "logs"
    board = json.loads((out / "leaderboard.json").read_text())
    (row,) = [b for b in board["bots"] if b["name"] == "dier"]
    # every fault counted under its kind (on a loaded machine a restarted bot may also
    # time out: a fault of another kind, counted as such)
    assert {kind: n for kind, n in row["faults"].items() if n} == Counter(
        f["kind"] for f in faults)
