"""A process ended after its game has its cgroup reclaimed before the game lets go of
its deal (issue 35): the pages it brought into the page cache must be gone before any
later process of its bot can look for them. The reclaim used to run on a thread of its
own (``bot-cgroup-end``), which a loaded machine could hold up past the start of the
bot's next game of that deal; a later process then read the deal back through
``/proc/self/pagemap``. Real bot processes, each in a cgroup of its own."""

from __future__ import annotations

import threading

import pytest
import trio
from conftest import SAMPLE_BOTS, Sandbox, bot_cmd, run_trio

import arena.proc.supervise as supervise
from arena.model.job import GameJob, SeatJob
from arena.model.limits import Confinement, Limits
from arena.model.spec import BotSpec
from arena.play.pool import BotPool
from arena.play.worker import WorkerPools
from arena.proc.cgroup import Cgroup, limit_mechanism

RANDOM_PY = bot_cmd(SAMPLE_BOTS / "random_bot.py")


class Reclaims:
    """Every reclaim-and-remove of a bot's cgroup: the thread it ran on, once it is done."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.done: list[str] = []
        self.lock = threading.Lock()
        self.any = threading.Event()
        real = supervise._reclaim_and_remove

        def recorded(cgroup: Cgroup) -> None:
            real(cgroup)
            with self.lock:
                self.done.append(threading.current_thread().name)
            self.any.set()

        monkeypatch.setattr(supervise, "_reclaim_and_remove", recorded)

    def taken(self) -> list[str]:
        with self.lock:
            done, self.done = self.done, []
        return done


def needs_cgroups() -> None:
    if not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: nothing to reclaim with")


@pytest.mark.parametrize("isolation", ["game", "deal"])
def test_a_process_ended_at_its_release_is_reclaimed_before_the_release_returns(
        arena_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, isolation: str) -> None:
    """``game`` isolation ends each process after its game; ``deal`` (with one deal to
    play) ends one that has seen every deal. Either way its cgroup is reclaimed and
    removed when :meth:`BotPool.release` returns, not later on a thread of its own."""
    needs_cgroups()
    reclaims = Reclaims(monkeypatch)

    async def main() -> None:
        async with BotPool("a", BotSpec.parse(RANDOM_PY), arena_sandbox.tmp / "logs", 30.0,
                           Confinement(limits=Limits(memory_mb=512)), isolation,
                           deals=1) as pool:
            await pool.open("wizard")
            conn = await pool.lease(7)
            cgroup = conn._process._cgroup if conn._process is not None else None
            assert cgroup is not None, "the bot's process has no cgroup"
            folders = list(cgroup.dirs.values())
            assert all(f.is_dir() for f in folders)
            reclaims.taken()  # (any of the spare's start)
            reclaims.any.clear()
            await pool.release(conn)
            done = reclaims.taken()
            assert done and "bot-cgroup-end" not in done, done
            assert not any(f.exists() for f in folders), folders

    run_trio(main)


def test_a_node_s_processes_ended_after_a_game_are_reclaimed_before_it_returns(
        arena_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ray node's game host (:class:`WorkerPools`, the same pools) under ``game``
    isolation ends each process after its game, reclaimed before :meth:`play` returns:
    the host's next game may seat the same bot."""
    needs_cgroups()
    reclaims = Reclaims(monkeypatch)
    seat = SeatJob("a", "cmd", RANDOM_PY.removeprefix("cmd:"),
                   limits=(("memory_mb", 512),))
    job = GameJob("wizard", {"players": 3}, 7, "t0-d0-r0", "t0", ("a", "b"),
                  (seat, seat, seat), isolation="game", log_dir=str(arena_sandbox.tmp / "logs"))
    host = WorkerPools()
    try:
        host.play(job)
        done = reclaims.taken()
    finally:
        host.close()
    assert len(done) == 3 and "bot-cgroup-end" not in done, done


def test_control_a_background_end_reclaims_on_a_thread_of_its_own(
        arena_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the test above would see of a plain ``aclose()`` (an idle process the pools'
    bound ends, already reclaimed when it went idle): the reclaim on its own thread."""
    needs_cgroups()
    reclaims = Reclaims(monkeypatch)

    async def main() -> None:
        async with BotPool("a", BotSpec.parse(RANDOM_PY), arena_sandbox.tmp / "logs", 30.0,
                           Confinement(limits=Limits(memory_mb=512)), "game",
                           deals=1) as pool:
            await pool.open("wizard")
            conn = await pool.lease(7)
            await conn.aclose()
            assert await trio.to_thread.run_sync(reclaims.any.wait, 30)
            assert reclaims.taken() == ["bot-cgroup-end"]
            await pool.release(conn)

    run_trio(main)
