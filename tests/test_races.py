"""Races between concurrent steps, each ordered with trio's tools (events,
``wait_all_tasks_blocked``) rather than with sleeps: a store write whose task is
cancelled while the writer thread runs it (arena/runs/writer.py), and a game that
claims a spare process still starting (arena/play/pool.py ``BotPool._fresh``)."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from arena.model.limits import Confinement
from arena.model.results import BotInfo
from arena.model.spec import BotSpec
from arena.play.pool import BotPool
from arena.proc.connection import BotConnection
from arena.runs.store import Store
from arena.runs.writer import StoreWriter, store_writer


class Broken(Exception):
    """A write's own failure."""


class Gate:
    """A write held in the writer's thread until the test opens the gate."""

    def __init__(self, fails: bool) -> None:
        self.fails = fails
        self.entered = threading.Event()
        self.open = threading.Event()
        self.ran = threading.Event()

    def __call__(self, store: Store) -> str:
        self.entered.set()
        assert self.open.wait(30), "the test never opened the gate"
        self.ran.set()
        if self.fails:
            raise Broken("the write failed")
        return "written"


async def entered(gate: Gate) -> None:
    """Wait (off the trio thread) until the writer's thread runs ``gate``."""
    assert await trio.to_thread.run_sync(gate.entered.wait, 30)


@pytest.mark.parametrize("fails", [True, False])
def test_a_write_cancelled_while_the_thread_runs_it_still_runs_and_its_error_is_kept(
        tmp_path: Path, fails: bool) -> None:
    """Its task is cancelled while the thread is in the write: the write still runs to
    its end; its error, which no task is left to receive, is raised by the writer's
    close (once); a write that succeeds leaves nothing to raise."""
    gate = Gate(fails)

    async def main() -> None:
        with Store.open(tmp_path) as store:
            writer = StoreWriter(store)
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(writer.call, gate)
                    await entered(gate)
                    await trio.testing.wait_all_tasks_blocked()  # it awaits the write
                    scope.cancel()
            assert scope.cancelled_caught and not gate.ran.is_set()
            gate.open.set()
            if fails:
                with pytest.raises(Broken):
                    await writer.aclose()
            else:
                await writer.aclose()
            assert gate.ran.is_set()

    trio.run(main)


def test_a_write_that_failed_before_its_task_saw_it_is_kept_when_the_task_is_cancelled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other order: the thread has finished the write (with its error) and handed
    the wake-up to trio, but the task is cancelled before it runs again. The task's side
    keeps the error then (the thread's side no longer can): raised once, at close."""
    gate = Gate(True)
    woken = threading.Event()
    wake = StoreWriter._wake

    def spied(token: trio.lowlevel.TrioToken, fn: object) -> None:
        wake(token, fn)  # type: ignore[arg-type]
        woken.set()

    monkeypatch.setattr(StoreWriter, "_wake", staticmethod(spied))

    async def main() -> None:
        with Store.open(tmp_path) as store:
            writer = StoreWriter(store)
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(writer.call, gate)
                    await entered(gate)
                    await trio.testing.wait_all_tasks_blocked()
                    gate.open.set()
                    # the trio thread held (no checkpoint) until the thread is done with
                    # the job: its wake-up is queued, not yet run, when the cancel lands
                    assert woken.wait(30)
                    scope.cancel()
            assert scope.cancelled_caught
            with pytest.raises(Broken):
                await writer.aclose()

    trio.run(main)


def test_store_writer_closes_with_the_error_of_a_cancelled_write_first(
        tmp_path: Path) -> None:
    """:func:`store_writer` cancelled (Ctrl-C) while a write fails: the write's error is
    raised at the close, before the cancellation (a failed write is worth more)."""
    gate = Gate(True)
    raised: list[BaseException] = []

    async def main() -> None:
        with Store.open(tmp_path) as store:
            async with trio.open_nursery() as nursery:

                async def run() -> None:
                    try:
                        async with store_writer(store) as writer:
                            await writer.call(gate)
                    except BaseException as e:
                        raised.append(e)

                nursery.start_soon(run)
                await entered(gate)
                await trio.testing.wait_all_tasks_blocked()
                nursery.cancel_scope.cancel()
                gate.open.set()

    trio.run(main)
    assert [type(e) for e in raised] == [Broken]


# -- a game claims a spare still starting (BotPool._fresh) -----------------------------


class HeldConnection(BotConnection):
    """A bot connection whose start (:meth:`open`) the test holds until it lets it end,
    and whose end it records: the pool's bookkeeping around real connections, with no
    process (the processes' own start is tested with real bots in test_sandbox.py)."""

    made: list[HeldConnection]

    def __init__(self, name: str, gate: trio.Event | None) -> None:
        super().__init__(name, BotSpec.parse("cmd:true"), Path("/nonexistent"))
        self.gate = gate
        self.opened = False
        self.closed = False
        self.on_opened: Callable[[], None] = lambda: None

    @property
    def usable(self) -> bool:
        return self.opened and not self.closed

    async def open(self, game: str | None = None) -> BotInfo:
        if self.gate is not None:
            await self.gate.wait()
        self.opened = True
        self.on_opened()  # (what else happens in the same step as its start's end)
        return INFO

    async def aclose(self, background: bool = True) -> None:
        self.closed = True


def held_pool(tmp_path: Path, gates: list[trio.Event]) -> tuple[BotPool, list[HeldConnection]]:
    """A ``deal`` pool with one spare at most, whose first process starts at once and
    each later one when the next of ``gates`` is set (past them: never); and every
    connection it made."""
    pool = BotPool("held", BotSpec.parse("cmd:true"), tmp_path, 10.0, Confinement(), "deal",
                   deals=3, spares=1)
    made: list[HeldConnection] = []

    def make(idle: bool) -> BotConnection:
        later = len(made) - 1  # (one past the gates: a start that never ends)
        gate = None if not made else gates[later] if later < len(gates) else trio.Event()
        conn = HeldConnection(f"held-{len(made)}", gate)
        made.append(conn)
        return conn

    pool._make = make
    return pool, made


INFO = BotInfo("held", "1", "tests", 1, ("wizard",))


def bounded(main: Callable[[], Awaitable[None]]) -> None:
    """``trio.run(main)``, failed after 30 s: a pool that loses a spare leaves a game
    waiting for ever (a test must fail, not hang)."""
    async def run() -> None:
        with trio.fail_after(30):
            await main()

    trio.run(run)


def test_a_game_takes_the_spare_still_starting_and_a_second_game_starts_its_own(
        tmp_path: Path) -> None:
    """No spare ready, one on its way: the first game to need one claims it and waits
    for it (no second process for that game); a second game at the same moment does not
    claim it too, but starts a process of its own."""
    gates = [trio.Event(), trio.Event(), trio.Event()]
    pool, made = held_pool(tmp_path, gates)
    got: dict[str, BotConnection] = {}

    async def lease(name: str) -> None:
        got[name] = await pool.lease(1)

    async def main() -> None:
        async with pool:
            await pool.open("wizard")
            pool.prepare([1, 1])  # two games of deal 1 now: one spare on its way
            first = await pool.lease(1)  # the idle first process
            await trio.testing.wait_all_tasks_blocked()
            assert [c.opened for c in made] == [True, False]
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lease, "claims")
                await trio.testing.wait_all_tasks_blocked()
                assert len(made) == 2  # it waits for the spare: nothing new started
                nursery.start_soon(lease, "own")
                await trio.testing.wait_all_tasks_blocked()
                assert len(made) == 3  # the spare is claimed: it started its own
                gates[1].set()  # its own process is ready first
                await trio.testing.wait_all_tasks_blocked()
                assert got == {"own": made[2]}
                gates[0].set()
            assert got == {"own": made[2], "claims": made[1]}
            assert first is made[0] and pool.started == len(made) == 4
            # the claimed spare went to its game alone: the next game gets the spare
            # started since (the claimed one did not count as one)
            gates[2].set()
            third = await pool.lease(2)
            assert third is made[3]
            for conn in (first, third, *got.values()):
                await pool.release(conn)
        assert all(c.closed for c in made)

    bounded(main)


def test_a_game_called_off_while_it_waits_for_a_spare_leaves_it_a_spare(
        tmp_path: Path) -> None:
    """The game that claimed a spare still starting is called off before the spare is
    ready: the spare, once started, is kept for the next game (which starts nothing)."""
    gates = [trio.Event()]
    pool, made = held_pool(tmp_path, gates)

    async def main() -> None:
        async with pool:
            await pool.open("wizard")
            pool.prepare([1, 1])
            first = await pool.lease(1)
            with trio.CancelScope() as claim:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(pool.lease, 1)
                    await trio.testing.wait_all_tasks_blocked()  # it waits for the spare
                    claim.cancel()
            assert claim.cancelled_caught and len(made) == 2
            gates[0].set()
            await trio.testing.wait_all_tasks_blocked()  # the spare is ready
            second = await pool.lease(1)
            assert second is made[1] and len(made) == 2
            for conn in (first, second):
                await pool.release(conn)
        assert all(c.closed for c in made)

    bounded(main)


def test_a_spare_whose_claim_is_cancelled_as_it_starts_is_kept_or_ended(
        tmp_path: Path) -> None:
    """The game that claimed a spare still starting is called off in the very step in
    which the spare's start ends (both in one batch of trio's scheduler, the spare's
    task first). The spare must then be kept for the next game, or ended: never
    forgotten, its process running on with no one to end it."""
    gates = [trio.Event()]
    pool, made = held_pool(tmp_path, gates)

    async def main() -> None:
        async with pool:
            await pool.open("wizard")
            pool.prepare([1, 1])
            first = await pool.lease(1)
            await trio.testing.wait_all_tasks_blocked()
            with trio.CancelScope() as claim:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(pool.lease, 1)
                    await trio.testing.wait_all_tasks_blocked()  # it waits for the spare
                    made[1].on_opened = claim.cancel
                    gates[0].set()
            assert claim.cancelled_caught
            await pool.release(first)
        assert [c.closed for c in made] == [True] * len(made), "a spare left running"

    bounded(main)
