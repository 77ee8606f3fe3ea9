"""Hostile bots against the sandbox (the tournaments and what they leave:
tests/isolation_helpers.py): ptrace and user namespaces (the seccomp filter), a fork
chain while stopped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import shown_in_one_of
from isolation_helpers import (
    PY_HEURISTIC,
    World,
    games,
    hostile,
    learned,
    needs_sandbox,
    run_tournament,
)
from isolation_helpers import (
    world as world,
)

from arena.proc.cgroup import limit_mechanism


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
def test_a_fork_chain_does_no_work_while_stopped(cgroup_mode: str, world: World) -> None:
    """The cgroup freezer stops the whole cgroup at once, new processes included: v1's,
    and v2's beside it (``ARENA_CGROUP=unified``)."""
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
def test_control_a_fork_chain_outruns_a_sigstop_sweep(world: World) -> None:
    """Without the freezer (a SIGSTOP sweep, repeated until the list is stable and every
    thread has stopped): the chain's links run while the bot's main process is stopped
    (the bot's own count), and no honest bot is faulted for it. The escape is a race that
    a loaded machine can lose (a link stopped between its fork and its exit stops the
    chain): it must show in one of three tournaments, in the bot's count or in the
    arena's fault (a process killed for its escape never reports its count).

    Whether the arena faults the chain is not asked here: most links run while the sweep
    is still taking hold, before the bot counts as stopped, and one that outlives a
    sweep that took hold is rare (in some runs, none in three tournaments). This control
    once asserted ``all(...)`` over the chain's faults, which held over none, and so let a
    thaw that no longer counted the CPU time used while stopped pass (mutation M9); that
    the arena sees, faults and kills a bot that ran while stopped is asserted where the
    escape is certain: ``test_stop.py`` (bubblewrap's init out of the freezer)."""
    if not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: bots are not stopped between calls")

    def escaped(detail: str) -> bool:
        return "used CPU while stopped" in detail or detail.startswith("did not stop within")

    run = shown_in_one_of(
        3, lambda k: run_tournament(world, f"chain-control-{k}", forkchain_field(world),
                                    move_ms=3000, env={"ARENA_NO_FREEZER": "1"}).check(),
        lambda run: sum(r["stopped_links"] for r in learned(run, "forkchain")) > 0
        or any(escaped(detail) for _, _, detail in run.faults()),
        "the chain running while stopped under the sweep",
        report=lambda run: (learned(run, "forkchain"), run.faults()))
    assert sum(r["links"] for r in learned(run, "forkchain")) > 0  # the chain ran
    assert run.faults_of_others("chain") == [], run.faults()
    assert [(bot, kind) for bot, kind, detail in run.faults() if not escaped(detail)
            and kind != "timeout"] == [], run.faults()
