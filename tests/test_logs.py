"""Bot logs (arena/proc/logs.py): one thread pumps every bot process's stderr into its log
with ``epoll``, so a descriptor above 1,023 (which ``select`` refuses) is read like any
other; the size cap; a writer that outlives its process is let go. And end to end: an
``arena play`` that starts with 1,100 descriptors already open hears its bots to the end.
Real pipes and real bot processes."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, TEST_BOTS, Sandbox, bot_cmd

from arena.proc.bwrap import sandbox_works
from arena.proc.logs import LOG_CAP_BYTES, LogPump

HELD = 1100
"""Descriptors held open before the bots start: past select()'s 1,023."""


@pytest.fixture
def many_descriptors() -> Iterator[list[int]]:
    """:data:`HELD` descriptors of this process held open (the soft limit raised as far
    as needed); closed after the test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = HELD + 512
    if hard != resource.RLIM_INFINITY and hard < want:
        pytest.skip(f"the hard limit of open files is {hard}, under {want}")
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    held = [os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC) for _ in range(HELD)]
    try:
        yield held
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def pumped(tmp: Path, index: int) -> tuple[int, LogPump, Path]:
    """A pipe whose read end the pump copies into a new log; the write end and the log."""
    read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
    log = tmp / f"bot{index}.log"
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    return write_fd, LogPump(read_fd, log_fd, f"bot{index}"), log


def test_streams_above_descriptor_1023_are_pumped_to_the_end(
        tmp_path: Path, many_descriptors: list[int]) -> None:
    streams = [pumped(tmp_path, i) for i in range(40)]
    assert min(w for w, _, _ in streams) > 1023  # every pipe lies past select()'s reach
    lines = 200

    def write(index: int, fd: int) -> None:
        with os.fdopen(fd, "w") as out:
            for n in range(lines):
                out.write(f"bot {index} line {n}\n")
                out.flush()

    writers = [threading.Thread(target=write, args=(i, w)) for i, (w, _, _) in
               enumerate(streams)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join(60)
    for index, (_, pump, log) in enumerate(streams):
        assert pump.wait(30), f"bot{index}'s pump did not let go at end of file"
        assert log.read_text().splitlines() == [f"bot {index} line {n}" for n in range(lines)]


def test_the_log_is_cut_off_at_the_cap_and_the_writer_never_blocks(tmp_path: Path) -> None:
    write_fd, pump, log = pumped(tmp_path, 0)
    block = b"y" * 65536
    total = 3 * LOG_CAP_BYTES
    with os.fdopen(write_fd, "wb") as out:
        for _ in range(total // len(block)):
            out.write(block)  # the pump reads on past the cap: the pipe never fills for good
    assert pump.wait(30)
    data = log.read_bytes()
    marker = b"\n[log cut off at the size limit]\n"
    assert data.endswith(marker) and len(data) == LOG_CAP_BYTES + len(marker)
    assert set(data[:LOG_CAP_BYTES]) == {ord("y")}


def test_a_writer_that_outlives_its_process_is_let_go_after_stop(tmp_path: Path) -> None:
    write_fd, pump, log = pumped(tmp_path, 0)
    os.write(write_fd, b"before\n")
    try:
        assert not pump.wait(0.3)  # the writer is still there: the pump holds on
        pump.stop()
        assert pump.wait(30), "the pump held on to a pipe after stop()"
        assert log.read_text() == "before\n"
        with pytest.raises(BrokenPipeError):  # the read end is closed: nothing blocks
            os.write(write_fd, b"after\n")
    finally:
        os.close(write_fd)


CHATTY = bot_cmd(TEST_BOTS / "chatty.py", "--pad", 200)

RUN_WITH_HELD = f"""
import os, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, {HELD + 512}), hard))
held = [os.open("/dev/null", os.O_RDONLY) for _ in range({HELD})]
assert max(held) > 1023
from arena.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_arena_play_with_1100_descriptors_open_hears_every_bot_to_the_end(
        arena_sandbox: Sandbox, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    sandbox = [] if sandbox_works() is None else ["--no-sandbox"]
    done = subprocess.run(
        [sys.executable, "-c", RUN_WITH_HELD, "play", "--game", "wizard", "--players", "3",
         "--seed", "5", "--quiet", "--log-dir", str(logs), *sandbox, "--bots",
         f"{CHATTY},{CHATTY},random"],
        cwd=REPO, env=arena_sandbox.env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    files = sorted(logs.glob("*.log"))
    assert len(files) == 2, files
    for log in files:
        text = log.read_text().splitlines()
        said = [line for line in text if line.startswith("chatty: ")]
        assert said, f"{log.name} was not read to the end: {text[-3:]}"
        count = int(re.match(r"chatty: (\d+) decisions said", said[-1]).group(1))  # type: ignore[union-attr]
        assert count > 20
        decisions = [int(line.split()[1]) for line in text if line.startswith("decision ")]
        assert decisions == list(range(1, count + 1))


def test_the_arena_raises_its_own_soft_limit_of_open_files(arena_sandbox: Sandbox) -> None:
    """Started from a shell whose soft limit is 1,024 (a common default), the arena runs
    with its hard limit: a field of hundreds of bots holds more."""
    probe = ("import resource, sys\n"
             "from arena.proc.descriptors import raise_descriptor_limit\n"
             "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], raise_descriptor_limit(),"
             " resource.getrlimit(resource.RLIMIT_NOFILE)[0])")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= 1024:
        pytest.skip(f"the hard limit of open files is {hard}")
    done = subprocess.run(["prlimit", "--nofile=1024:" + ("unlimited" if hard ==
                           resource.RLIM_INFINITY else str(hard)), sys.executable, "-c", probe],
                          cwd=REPO, env=arena_sandbox.env, capture_output=True, text=True,
                          timeout=60)
    before, said, after = map(int, done.stdout.split())
    assert before == 1024 and said == after > 1024


def test_a_tournaments_log_names_are_the_documented_ones(
        arena_sandbox: Sandbox, tmp_path: Path) -> None:
    """docs/tournaments.md's rule for log names, against a real tournament's logs: a
    plain name as it is, a name with a space as ``_`` and six hex digits of its SHA-256,
    then ``.N`` for the bot's later processes."""
    import hashlib
    import json

    from conftest import arena_in_process, tournament_toml

    doc = " ".join((REPO / "docs" / "tournaments.md").read_text().split())
    digest = hashlib.sha256(b"my bot").hexdigest()[:6]
    assert f"the bot `my bot` logs to `logs/my_bot-{digest}.log`, `my_bot-{digest}.2.log`" in doc
    random_bot = bot_cmd(REPO / "sample_bots" / "python" / "random_bot.py")
    path = tmp_path / "t.toml"
    path.write_text(tournament_toml("logs", "trumps", 3, 4, 2,
                                    [("plain", random_bot), ("my bot", random_bot),
                                     ("h", "heuristic")], options={"draw": False}))
    done = arena_in_process("tournament", str(path), "--out", str(tmp_path / "out"),
                            "--resamples", "10", cwd=tmp_path, env=arena_sandbox.env)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (tmp_path / "out" / "logs").iterdir())
    rule = re.compile(rf"(plain|my_bot-{digest})(\.([2-9]|[1-9]\d+))?\.log")
    assert names and all(rule.fullmatch(n) for n in names), names
    assert {"plain.log", f"my_bot-{digest}.log"} <= set(names)
    assert json.loads((tmp_path / "out" / "leaderboard.json").read_text())["games"] == 6
