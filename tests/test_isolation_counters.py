"""Hostile bots against the sandbox (the tournaments and what they leave:
tests/isolation_helpers.py): counters of the whole machine (issue 35).

Two bots at one table talk through a counter the kernel keeps for the whole machine
(``tests/bots/hostile/counters.py``): the sender locks pages (``/proc/vmstat``'s
``unevictable_pgs_mlocked``) and forks (``/proc/stat``'s ``processes``) by amounts that
spell its hand, the receiver reads both at its next turn. In the sandbox ``mlock`` is
refused and ``/proc`` shows no counter (``arena/proc/procfs.py``); the controls show the
same bots talking where they are not (out of the sandbox; in it with the masking off).
The rest of the class (``meminfo``, ``loadavg``, ``file-nr``, ``sysinfo``...) is checked
by one probe in the sandbox. And deal memory that outlived the reclaim: pages a process
locked, read back by a later process of its bot through ``/proc/self/pagemap``
(``pagecache.py --channel pagemap``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import shown_in_one_of
from isolation_helpers import (
    World,
    games,
    hostile,
    learned,
    needs_sandbox,
    run_tournament,
    trusted,
)
from isolation_helpers import (
    world as world,
)
from test_isolation_pagecache import data_file

from arena.proc.cgroup import limit_mechanism

CARRIERS = ("mlock", "fork")


def talk_field(world: World, view: str, control: bool = False) -> list[dict[str, Any]]:
    def bot(role: str) -> str:
        return hostile(world, "counters.py", "--role", role, "--carrier", "all",
                       *(["--control"] if control and role == "send" else []))

    return [{"name": "send", "spec": bot("send"), "view": view},
            {"name": "recv", "spec": bot("recv"), "view": view},
            {"name": "heuristic", "spec": "heuristic"}]


def talk(world: World, name: str, field: list[dict[str, Any]], control: bool = False,
         **kw: Any) -> tuple[dict[str, Any], dict[str, dict[str, int]]]:
    """One tournament (Trumps, 3 seats, one deal: 3 games of 7 tricks): the errors of
    the sender's sends, and what the receiver read of each carrier."""
    run = run_tournament(world, name, field, move_ms=5000, **kw).check()
    assert run.games_done() == games(3, 1)
    assert run.faults() == []
    reports = learned(run, "counters")
    senders = [r for r in reports if r["role"] == "send"]
    receivers = [r for r in reports if r["role"] == "recv"]
    assert senders and receivers, reports
    assert sum(r["decisions"] for r in senders) > 0, senders
    assert (sum(r["sent"] for r in senders) > 0) == (not control), senders
    # summed over the receiver's processes, but ``values``: the most one process saw
    channels = {c: {k: (max if k == "values" else sum)(r["channels"][c][k] for r in receivers)
                    for k in receivers[0]["channels"][c]} for c in CARRIERS}
    errors: dict[str, str] = {}
    for r in senders:
        errors.update(r["send_errors"])
    return errors, channels


@needs_sandbox
@pytest.mark.timeout(180)
@pytest.mark.parametrize(("isolation", "view"), [("deal", "runtime"), ("deal", "system"),
                                                 ("game", "runtime"), ("game", "system")])
def test_two_sandboxed_bots_pass_nothing_through_a_counter(world: World, isolation: str,
                                                           view: str) -> None:
    errors, channels = talk(world, f"counters-{isolation}-{view}", talk_field(world, view),
                            isolation=isolation)
    assert errors.get("mlock") == "EPERM", errors
    for carrier in CARRIERS:
        seen = channels[carrier]
        assert seen["reads"] > 0, channels
        # not a frame, and no counter at all: the files are empty or hold a constant
        assert seen["frames"] == 0 and seen["frames_right"] == 0, channels
        assert seen["values"] <= 1 and seen["moved"] == 0, channels
    assert channels["mlock"]["unreadable"] == channels["mlock"]["reads"], channels


def talks(channels: dict[str, dict[str, int]]) -> bool:
    """The receiver read the sender's hands off the lock counter (exact), and saw the
    fork counter move by the sender's forks (a move is at least 24 forks; the machine's
    own forks add to it, and on a busy machine spoil the frames: those are not judged)."""
    seen = channels["mlock"]
    return (seen["frames_right"] >= 3 and seen["frames_right"] >= 2 * seen["frames_wrong"]
            and channels["fork"]["moved"] >= 3)


@pytest.mark.timeout(400)
def test_control_out_of_the_sandbox_the_same_bots_talk_through_both_counters(
        world: World) -> None:
    """Trusted bots (``sandbox = false``): the receiver reads the sender's frames (in
    one of three tournaments: another mlock on the machine would spoil a frame); an
    honest sender (``--control``) gives it nothing."""
    shown_in_one_of(
        3, lambda k: talk(world, f"counters-control-{k}",
                          trusted(talk_field(world, "runtime")))[1],
        talks, "frames through the counters")
    _, honest = talk(world, "counters-honest", trusted(talk_field(world, "runtime", True)),
                     control=True)
    # it read the counter all along, and found no frame in it
    assert honest["mlock"]["reads"] > 0 and honest["mlock"]["unreadable"] == 0, honest
    assert honest["mlock"]["frames"] == 0, honest


@needs_sandbox
@pytest.mark.timeout(180)
def test_control_in_the_sandbox_without_the_masking_forks_are_read(world: World) -> None:
    """``ARENA_NO_PROC_MASK``: the full procfs, as before. The receiver sees the fork
    counter move by the sender's forks again; ``mlock`` stays refused by the filter."""
    errors, channels = talk(world, "counters-unmasked", talk_field(world, "runtime"),
                            env={"ARENA_NO_PROC_MASK": "1"})
    assert channels["fork"]["moved"] >= 3, channels
    assert errors.get("mlock") == "EPERM", errors
    assert channels["mlock"]["unreadable"] == 0, channels  # /proc/vmstat is there again


# -- the rest of the class: one probe ---------------------------------------------------

PROBE = r"""
import ctypes, json, os
out = {}
for path in ("/proc/vmstat", "/proc/stat", "/proc/meminfo", "/proc/loadavg", "/proc/uptime",
             "/proc/sys/fs/file-nr", "/proc/sys/fs/dentry-state", "/proc/diskstats",
             "/proc/interrupts", "/proc/pressure/cpu", "/proc/sys/kernel/random/entropy_avail",
             "/proc/zoneinfo", "/proc/slabinfo", "/sys/kernel/mm/transparent_hugepage/enabled"):
    try:
        with open(path) as f:
            out[path] = f.read(1 << 16)
    except OSError as e:
        out[path] = "error " + (os.strerror(e.errno) if e.errno else str(e))
libc = ctypes.CDLL(None, use_errno=True)
info = ctypes.create_string_buffer(512)
ok = libc.sysinfo(info) == 0
out["sysinfo"] = "ok" if ok else os.strerror(ctypes.get_errno())
out["cpu_count"] = os.cpu_count()
tops = {}  # every entry at the top of /proc but the processes: what it holds
for entry in os.scandir("/proc"):
    if entry.name.isdigit() or entry.is_symlink():
        continue
    try:
        if entry.is_dir():
            tops[entry.name] = len(os.listdir(entry.path))
        else:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                tops[entry.name] = len(os.read(fd, 64))
            finally:
                os.close(fd)
    except OSError as e:
        tops[entry.name] = "error " + os.strerror(e.errno or 0)
out["tops"] = tops
print(json.dumps(out))
"""

MASKED = ("/proc/vmstat", "/proc/loadavg", "/proc/uptime", "/proc/sys/fs/file-nr",
          "/proc/sys/fs/dentry-state", "/proc/diskstats", "/proc/interrupts",
          "/proc/pressure/cpu", "/proc/sys/kernel/random/entropy_avail", "/proc/zoneinfo")


def probe(tmp_path: Path, masked: bool, filtered: bool = True) -> dict[str, Any]:
    """The probe's readings in the sandbox (``bwrap_args``: the runtime view of this
    Python, its /proc, a memory limit of 700 MiB), under the seccomp filter."""
    from arena.model.limits import Confinement, Limits
    from arena.proc import seccomp
    from arena.proc.bwrap import bwrap_args

    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    with pytest.MonkeyPatch.context() as patch:
        if masked:
            patch.delenv("ARENA_NO_PROC_MASK", raising=False)
        else:
            patch.setenv("ARENA_NO_PROC_MASK", "1")
        fd = seccomp.filter_fd() if filtered else None
        try:
            args = bwrap_args([sys.executable, str(script)], tmp_path,
                              Confinement(limits=Limits(memory_mb=700)),
                              {"PATH": "/usr/bin:/bin"}, seccomp=fd)
            done = subprocess.run(args, capture_output=True, text=True, timeout=60,
                                  check=False, pass_fds=(fd,) if fd is not None else ())
        finally:
            if fd is not None:
                os.close(fd)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@needs_sandbox
def test_the_sandbox_shows_no_counter_of_the_machine(tmp_path: Path) -> None:
    got = probe(tmp_path, masked=True)
    for path in MASKED:  # covered: an empty file or folder
        assert got[path] in ("", "error Is a directory") or got[path].startswith(
            "error No such file"), (path, got[path])
    assert got["/proc/slabinfo"] == "" or got["/proc/slabinfo"].startswith("error")
    assert got["/sys/kernel/mm/transparent_hugepage/enabled"].startswith("error No such")
    meminfo = dict(line.split(":", 1) for line in got["/proc/meminfo"].splitlines())
    assert meminfo["MemTotal"].split() == ["716800", "kB"], meminfo  # the bot's limit
    assert meminfo["MemAvailable"].split() == meminfo["MemTotal"].split()
    stat = got["/proc/stat"].splitlines()
    assert stat[0].split() == ["cpu"] + ["0"] * 10
    assert "processes 0" in stat and "ctxt 0" in stat
    assert got["cpu_count"] == sum(1 for line in stat if line.split()[0][3:].isdigit())
    assert got["sysinfo"] == os.strerror(1), got["sysinfo"]  # EPERM
    # an allowlist: every other entry of the kernel's, named here or not, is empty
    shown = {"meminfo", "stat", "cpuinfo", "sys"}
    assert shown <= set(got["tops"]), got["tops"]
    assert {k: v for k, v in got["tops"].items() if k not in shown and v != 0} == {}


@needs_sandbox
def test_control_without_the_masking_and_the_filter_the_counters_are_there(
        tmp_path: Path) -> None:
    got = probe(tmp_path, masked=False, filtered=False)
    assert "unevictable_pgs_mlocked" in got["/proc/vmstat"]
    assert len(got["/proc/sys/fs/file-nr"].split()) == 3
    assert len(got["/proc/loadavg"].split()) == 5
    assert any(line.startswith("processes ") and line != "processes 0"
               for line in got["/proc/stat"].splitlines())
    assert got["sysinfo"] == "ok"
    assert sum(1 for v in got["tops"].values() if v != 0) > 20, got["tops"]


# -- deal memory that outlives the reclaim ------------------------------------------------


def locked_field(world: World, data: Path) -> list[dict[str, Any]]:
    """``view = "system"``: the default view reads the bot's own folder into the page
    cache before it starts, which hides these bits on its own (tests/test_view.py). Two
    deals (6 games): a process that played a rotation of the first is kept for the
    second, frozen in the pool, while other processes play the first's other rotations
    (with one deal every process has seen all and is ended after its game)."""
    return [{"name": "pages", "view": "system",
             "spec": hostile(world, "pagecache.py", "--channel", "pagemap", "--data", data)},
            {"name": "heuristic", "spec": "heuristic"},
            {"name": "random", "spec": "random"}]


def remembered(world: World, name: str, field: list[dict[str, Any]],
               env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    run = run_tournament(world, name, field, env=env, deals=2).check()
    assert run.games_done() == games(3, 2)
    assert run.faults() == []
    return learned(run, "pagecache")


def recognised(reports: list[dict[str, Any]]) -> bool:
    return (sum(r["deal_recognised"] for r in reports) >= 1
            and sum(r["cards_right"] for r in reports) > 0)


@needs_sandbox
@pytest.mark.timeout(180)
def test_a_sandboxed_bot_keeps_no_deal_memory_past_the_reclaim(world: World) -> None:
    if not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: nothing to reclaim with")
    reports = remembered(world, "locked", locked_field(world, data_file(world)))
    assert all(r["deal_recognised"] == 0 and r["cards_right"] == 0 for r in reports), reports
    assert any(r["errors"].get("mlock") == "EPERM" for r in reports), reports


@pytest.mark.timeout(400)
def test_control_locked_pages_carry_the_deal_unless_their_process_is_ended(
        world: World) -> None:
    """Out of the sandbox (``mlock`` allowed): with the check after the reclaim off
    (``ARENA_NO_HELD_CHECK``), the process that played a rotation waits in the pool
    holding its locked pages, and a later one reads the deal through
    ``/proc/self/pagemap`` (in one of three tournaments, each on a fresh file). With the
    check on, the same bots lock the same pages and recognise nothing: the process
    holding them is ended, not kept."""
    if not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: nothing to reclaim with")
    shown_in_one_of(
        3, lambda k: remembered(world, f"locked-control-{k}",
                                trusted(locked_field(world, data_file(world))),
                                env={"ARENA_NO_HELD_CHECK": "1"}),
        recognised, "a later process reading locked pages through pagemap")
    checked = remembered(world, "locked-checked",
                         trusted(locked_field(world, data_file(world))))
    assert all(not r["errors"].get("mlock") for r in checked), checked  # it did lock
    assert sum(r["writes"] for r in checked) > 0, checked
    assert all(r["deal_recognised"] == 0 for r in checked), checked
