"""Races between concurrent steps, each ordered with trio's tools (events,
``wait_all_tasks_blocked``) rather than with sleeps: a store write whose task is
cancelled while the writer thread runs it (arena/tournament/writer.py), and a game that
claims a spare process still starting (arena/play/pool.py ``BotPool._fresh``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import trio
import trio.testing

from arena.tournament.store import Store
from arena.tournament.writer import StoreWriter, store_writer


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
