"""SIGTERM as Ctrl-C, for the commands that run bots in one trio run without a signal
watch of their own (``arena play``, ``arena check-bot``; tournaments and matches watch
both signals themselves)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """Inside, SIGTERM stops the run as Ctrl-C does (trio's KeyboardInterrupt: every bot
    process ended, its socket folder removed; the command says ``arena: interrupted`` and
    exits 130) instead of killing the arena outright.

    Started as a shell's background job, a process inherits SIGINT ignored, and Python
    then has no KeyboardInterrupt handler: SIGINT is handled here all the same, as the
    commands that watch both signals themselves do (``arena tournament``, ``league``,
    ``match``, ``serve``), so that ``kill`` of a background ``arena play`` or
    ``check-bot`` stops it as cleanly as one in the foreground."""
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
