"""``arena.cli.interrupt.run_interruptible``: how ``arena play`` and ``check-bot`` stop on
Ctrl-C or SIGTERM. A signal cancels the run at its next checkpoint, never in the middle of
the code between two (where trio's own KeyboardInterrupt can strike, and once left a
grpcio channel that hung ``arena play`` as it closed); the run's clean-up finishes first,
then KeyboardInterrupt; what the run returns or raises comes out as itself."""

from __future__ import annotations

import os
import signal

import pytest
import trio

from arena.cli.interrupt import run_interruptible


@pytest.mark.parametrize("signo", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_waits_for_the_next_checkpoint(signo: int) -> None:
    steps: list[int] = []
    after: list[str] = []

    async def run() -> None:
        os.kill(os.getpid(), signo)
        # plain code, many bytecodes long: a signal raised in here would cut it short
        for i in range(200_000):
            steps.append(i)
        after.append("loop done")
        await trio.sleep(30)  # the checkpoint where the run is cancelled
        after.append("slept")

    with pytest.raises(KeyboardInterrupt):
        run_interruptible(run)
    assert len(steps) == 200_000
    assert after == ["loop done"]


def test_the_clean_up_finishes_before_the_interrupt() -> None:
    ended: list[str] = []

    async def run() -> None:
        try:
            trio.lowlevel.current_trio_token().run_sync_soon(os.kill, os.getpid(), signal.SIGINT)
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await trio.sleep(0.05)  # ending the bot processes takes checkpoints
                ended.append("bots ended")

    with pytest.raises(KeyboardInterrupt):
        run_interruptible(run)
    assert ended == ["bots ended"]


def test_what_the_run_returns_or_raises_comes_out_as_itself() -> None:
    async def answer(a: int, b: int) -> int:
        await trio.sleep(0)
        return a + b

    async def fails() -> None:
        await trio.sleep(0)
        raise LookupError("no such bot")

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert run_interruptible(answer, 2, 3) == 5
    with pytest.raises(LookupError, match="no such bot"):  # not inside an exception group
        run_interruptible(fails)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_what_the_run_raises_after_a_signal_is_an_interruption() -> None:
    """Ctrl-C, then the human seat's input ends before the run is cancelled (the end
    of input wins the race to the run's task): interrupted, as the person asked."""

    async def run() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        with trio.CancelScope(shield=True):
            await trio.sleep(0.05)  # the watch sees the signal meanwhile
        raise EOFError("the human seat's input ended")  # before any checkpoint

    with pytest.raises(KeyboardInterrupt):
        run_interruptible(run)
