"""Stopping ``arena play`` and ``arena check-bot`` on Ctrl-C or SIGTERM, cleanly: every bot
process ended, its socket folder removed, then ``arena: interrupted`` and exit 130
(tournaments, leagues and matches watch both signals in their runners)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar, TypeVarTuple

import trio

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


def run_interruptible(fn: Callable[[*Ts], Awaitable[T]], *args: *Ts) -> T:
    """``trio.run(fn, *args)``, stopped by SIGINT or SIGTERM as by Ctrl-C: the run is
    cancelled, its clean-up (every bot process ended) runs, then :class:`KeyboardInterrupt`
    is raised from here.

    The signals are watched by trio (:func:`trio.open_signal_receiver`), so they cancel
    the run at its next checkpoint. They never raise inside whatever code the main thread
    happens to be in: a :class:`KeyboardInterrupt` that trio raises there can break a
    library's state in the middle of an update. One raised inside grpcio, as a call began
    or ended, left a channel whose ``close()`` then waited forever for a call that would
    never finish; ``arena play`` hung with its bots still running.

    A signal that comes before ``fn`` has ended makes the run an interrupted one, even
    if ``fn`` then raises something else.

    Also for a process started as a shell's background job, which inherits SIGINT
    ignored: a handler is installed all the same, so ``kill -INT`` stops it as cleanly."""
    result: list[T] = []
    signalled = False

    async def main() -> None:
        with trio.CancelScope() as run:
            watching = trio.Event()

            async def watch() -> None:
                # open for the whole run, the clean-up included (a second Ctrl-C is taken
                # here too); trio cancels this system task, closing it, as the run ends
                nonlocal signalled
                with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    watching.set()
                    async for _ in signals:
                        signalled = True
                        run.cancel()

            # a system task, not a nursery's: what ``fn`` raises comes out as itself, not
            # inside an exception group
            trio.lowlevel.spawn_system_task(watch)
            await watching.wait()
            result.append(await fn(*args))

    with sigterm_as_ctrl_c():  # the moments before the watch starts and after it ends
        try:
            trio.run(main)
        except Exception:
            # what the run raised once a signal had come (the human seat's input ending
            # with the Ctrl-C, or a failure of the clean-up it began): interrupted all the
            # same, as the person asked
            if signalled:
                raise KeyboardInterrupt from None
            raise
    if not result:  # cancelled by a signal before ``fn`` returned
        raise KeyboardInterrupt
    return result[0]


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """Inside, SIGTERM stops the command as Ctrl-C does (:class:`KeyboardInterrupt`, so
    ``arena: interrupted`` and exit 130) instead of killing it outright. For code outside
    trio, or the moments around :func:`run_interruptible`'s watch.

    Started as a shell's background job, a process inherits SIGINT ignored, and Python
    then has no KeyboardInterrupt handler: SIGINT is handled here all the same, so that
    ``kill`` of a background ``arena play`` or ``check-bot`` stops it as cleanly as one
    in the foreground."""
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is not signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    previous = signal.signal(signal.SIGTERM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if previous_int is not signal.default_int_handler and previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
