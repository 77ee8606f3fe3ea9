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
    exits 130) instead of killing the arena outright. Where SIGINT is ignored (a shell's
    background job), SIGTERM is left as it is."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
