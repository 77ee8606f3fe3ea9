"""A bot process's exit is an event the loop awaits (a pidfd, :mod:`arena.proc.exits`),
never a timer that looks: pinned with a clock that does not move (``MockClock`` at rate 0,
no autojump: a wait that slept to poll would never wake), by counting the waits' wake-ups,
and by the pidfds this process holds.

Real processes throughout; nothing is ordered by sleeping (a fifo says when a bot's
handler is installed; ``wait_all_tasks_blocked`` when the waiters wait)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio
import trio.testing
from conftest import run_trio

from arena.model.limits import Confinement
from arena.proc.exits import ExitWatch
from arena.proc.logs import LogPump
from arena.proc.process import BotProcess

GUARD_S = 30.0
"""Real seconds after which a wait that never woke is called a failure (a guard against a
hang, not a timing: the waits pinned here end in milliseconds)."""


def pidfds() -> int:
    """How many pidfds this process holds."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:[pidfd]":
                count += 1
        except OSError:  # (the listing's own descriptor, gone)
            pass
    return count


async def guarded(fn: object, what: str) -> None:
    """Run ``fn`` (an async callable); fail naming ``what`` if it has not returned after
    :data:`GUARD_S` real seconds (measured on a thread: the trio clock may be frozen)."""
    done = False
    async with trio.open_nursery() as nursery:

        async def guard() -> None:
            await trio.to_thread.run_sync(time.sleep, GUARD_S, abandon_on_cancel=True)
            nursery.cancel_scope.cancel()

        nursery.start_soon(guard)
        await fn()  # type: ignore[operator]
        done = True
        nursery.cancel_scope.cancel()
    assert done, f"{what}: not noticed within {GUARD_S:g} s of real time"


def cat() -> subprocess.Popen[bytes]:
    """A process that ends when its stdin closes."""
    return subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)


def test_an_exit_is_noticed_without_any_timer() -> None:
    """The clock never moves (rate 0, no autojump): a wait that polled on a timer would
    sleep for ever. The exit wakes the wait once, and no trio time has passed."""
    clock = trio.testing.MockClock()
    proc = cat()
    watch = ExitWatch(proc)
    assert watch.evented
    codes: list[int] = []

    async def main() -> None:
        async def wait() -> None:
            codes.append(await watch.wait())

        async def end_it() -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait)
                await trio.testing.wait_all_tasks_blocked()
                assert not codes  # it waits: the process runs
                assert proc.stdin is not None
                proc.stdin.close()  # cat ends

        start = trio.current_time()
        await guarded(end_it, "the end of cat")
        assert trio.current_time() == start

    try:
        run_trio(main, clock=clock)
    finally:
        watch.close()
        proc.kill()
        proc.wait()
    assert codes == [0]
    assert proc.returncode == 0  # reaped by the wait
    assert watch.wakeups == 1


def test_two_waiters_one_cancelled_the_other_still_sees_the_exit() -> None:
    """trio lets one task at a time wait for a descriptor: the watch hands the pidfd on
    when the waiter holding it gives up (its deadline), and every waiter sees the exit."""
    proc = cat()
    watch = ExitWatch(proc)
    seen: list[str] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            first = trio.CancelScope()

            async def waiter(name: str, scope: trio.CancelScope) -> None:
                with scope:
                    await watch.wait()
                    seen.append(name)

            nursery.start_soon(waiter, "first", first)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(waiter, "second", trio.CancelScope())
            nursery.start_soon(waiter, "third", trio.CancelScope())
            await trio.testing.wait_all_tasks_blocked()
            first.cancel()  # the holder of the pidfd gives up
            await trio.testing.wait_all_tasks_blocked()
            assert seen == []
            assert proc.stdin is not None
            proc.stdin.close()

    try:
        run_trio(main)
    finally:
        watch.close()
        proc.kill()
        proc.wait()
    assert sorted(seen) == ["second", "third"]


def test_without_pidfds_the_exit_is_polled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``pidfd_open`` fails, the watch falls back to looking every POLL_S."""

    def refuse(pid: int, flags: int = 0) -> int:
        raise OSError(errno.ENOSYS, "pidfd_open")

    monkeypatch.setattr(os, "pidfd_open", refuse)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    watch = ExitWatch(proc)
    assert not watch.evented

    async def main() -> int:
        with trio.fail_after(GUARD_S):
            return await watch.wait()

    try:
        assert run_trio(main) == 0
    finally:
        proc.kill()
        proc.wait()
    assert watch.wakeups >= 1


def test_the_log_pump_says_it_let_go_as_an_event(tmp_path: Path) -> None:
    """:meth:`LogPump.finished` wakes when the pump has let go (the writer closed its end),
    with everything written in the log, on a clock that never moves."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    log_fd = os.open(tmp_path / "p.log", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    pump = LogPump(read_end, log_fd, "test")

    async def main() -> None:
        async def close_it() -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pump.finished)
                await trio.testing.wait_all_tasks_blocked()
                os.write(write_end, b"last words\n")
                os.close(write_end)

        await guarded(close_it, "the pump's end")

    run_trio(main, clock=trio.testing.MockClock())
    assert not pump.is_alive()
    assert (tmp_path / "p.log").read_text() == "last words\n"


def test_aclose_kills_a_bot_that_ignores_sigterm_at_the_grace_and_closes_its_pidfd(
        tmp_path: Path) -> None:
    """SIGTERM is ignored: the grace passes (the wait for the exit ends by its deadline,
    no wake-up), SIGKILL ends it, and that exit wakes the wait once. Its pidfd is closed
    after; nothing is left."""
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    stubborn = tmp_path / "stubborn.py"
    stubborn.write_text("import signal, sys, time\n"
                        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                        "open(sys.argv[1], 'w').close()\n"  # the handler is installed
                        "time.sleep(600)\n")
    grace_s = 0.5
    before = pidfds()

    async def main() -> float:
        process = BotProcess("stubborn", f"python {stubborn} {fifo}", tmp_path / "s.log",
                             confinement=Confinement(sandbox=False))
        process.spawn()
        watch = process._exit
        assert watch is not None and watch.evented
        assert pidfds() == before + 1
        # the fifo opens once the bot opened it: its SIGTERM handler is in place
        await trio.to_thread.run_sync(lambda: open(fifo).close())
        started = time.monotonic()
        await process.aclose(grace_s=grace_s)
        elapsed = time.monotonic() - started
        assert process.returncode == -signal.SIGKILL
        assert process.killed
        # the grace ran out without a wake-up; the SIGKILL's exit wakes the wait once,
        # or not at all where the process was dead before the wait began (its first look
        # reaps it: the kill may land before the task gets there, as on a loaded machine)
        assert watch.wakeups <= 1
        assert watch.fd is None
        return elapsed

    # a lower bound only (load makes it longer, never shorter): SIGKILL came at the grace
    assert run_trio(main) >= grace_s
    assert pidfds() == before


def test_a_bot_that_exits_while_starting_is_reported_at_once(tmp_path: Path) -> None:
    """A bot that ends before it serves ends the start at its exit (the exit wakes the
    start, which says how it ended with its log), long before the start-up limit."""
    quitter = tmp_path / "quitter.py"
    quitter.write_text("import sys\nprint('no luck', file=sys.stderr)\nsys.exit(3)\n")
    before = pidfds()

    async def main() -> str:
        process = BotProcess("quitter", f"python {quitter}", tmp_path / "q.log",
                             startup_s=600, confinement=Confinement(sandbox=False))
        with trio.fail_after(GUARD_S):  # (a guard: the start-up limit is 600 s)
            try:
                await process.start()
            except Exception as e:
                return str(e)
        raise AssertionError("it served")

    text = run_trio(main)
    assert "exited with code 3 before serving" in text, text
    assert "no luck" in text, text
    assert pidfds() == before


def test_terminate_returns_at_the_exit(tmp_path: Path) -> None:
    """A bot that ends on SIGTERM: terminate's wait ends at its exit, woken once."""
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    polite = tmp_path / "polite.py"
    polite.write_text("import sys, time\nopen(sys.argv[1], 'w').close()\ntime.sleep(600)\n")

    async def main() -> None:
        process = BotProcess("polite", f"python {polite} {fifo}", tmp_path / "p.log",
                             confinement=Confinement(sandbox=False))
        process.spawn()
        await trio.to_thread.run_sync(lambda: open(fifo).close())
        watch = process._exit
        assert watch is not None
        took = await process.terminate(wait_s=GUARD_S)
        assert took is not None
        assert process.returncode == -signal.SIGTERM
        assert watch.wakeups <= 1  # once, or none if it was dead before the wait began
        await process.aclose()

    run_trio(main)


def test_a_start_cancelled_by_its_caller_ends_the_process(tmp_path: Path) -> None:
    """The caller's deadline ends a start that waits for a socket (the start's own task
    and its exit watch both cancelled): the process is ended, its pidfd closed, and the
    cancellation is the caller's scope's alone (nothing escapes ``move_on_after``)."""
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    silent = tmp_path / "silent.py"
    silent.write_text("import sys, time\nopen(sys.argv[1], 'w').close()\ntime.sleep(600)\n")
    before = pidfds()

    async def main() -> BotProcess:
        process = BotProcess("silent", f"python {silent} {fifo}", tmp_path / "s.log",
                             startup_s=600, confinement=Confinement(sandbox=False))
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(process.ready)
                process.spawn()
                await trio.to_thread.run_sync(lambda: open(fifo).close())  # it runs
                await trio.testing.wait_all_tasks_blocked()
                scope.cancel()
        assert scope.cancelled_caught
        return process

    process = run_trio(main)
    assert process.pid is None and process.returncode is not None
    assert pidfds() == before
