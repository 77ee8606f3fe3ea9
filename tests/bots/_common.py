"""Shared by the misbehaving test bots: a call trace, and raw answers past the SDK.

Each bot is an ordinary :mod:`arena.sdk` bot. ``--trace FILE`` appends one JSON line per
call the bot receives (written when the call arrives, before any answer): the call, the
process id, the round and trick, and the request's ``deadline_ms`` and ``bank_ms``. An
``answer`` hook may replace the SDK's answer with a raw (malformed) one.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from arena import sdk
from arena.rules import Decision

Answer = Callable[[Decision, Any, Any], Any]
_lock = threading.Lock()


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--trace", help="append a JSON line per call to this file")
    return p


def trace(path: str | None, **entry: Any) -> None:
    if not path:
        return
    line = json.dumps({"pid": os.getpid(), **entry}) + "\n"
    with _lock, open(path, "a") as f:
        f.write(line)
        f.flush()


def serve(bot: sdk.Bot, args: argparse.Namespace, rest: Sequence[str],
          answer: Answer | None = None, hello: Callable[[Any, Any], Any] | None = None,
          workers: int = 8) -> None:
    """Serve ``bot`` with the SDK, tracing every call; ``answer`` (decision, request,
    context) may return a raw response to send instead of the bot's, ``hello`` likewise
    for the hand-shake."""

    class Servicer(sdk._Servicer):
        def Hello(self, request: Any, context: Any) -> Any:
            trace(args.trace, call="hello")
            if hello is not None:
                return hello(request, context)
            return super().Hello(request, context)

        def _decide(self, request: Any, context: Any, decision: Decision) -> Any:
            view = request.view
            trace(args.trace, call=decision.name.lower(), round=view.round,
                  trick=len(view.tricks) + 1 if decision is Decision.PLAY else None,
                  deadline_ms=request.deadline_ms, bank_ms=request.bank_ms,
                  game_id=request.game_id)
            if answer is not None:
                raw = answer(decision, request, context)
                if raw is not None:
                    return raw
            return super()._decide(request, context, decision)

        def RoundEnded(self, request: Any, context: Any) -> Any:
            trace(args.trace, call="round_ended", round=request.round)
            return super().RoundEnded(request, context)

        def GameEnded(self, request: Any, context: Any) -> Any:
            trace(args.trace, call="game_ended", forfeited=request.forfeited,
                  forfeit_reason=request.forfeit_reason)
            return super().GameEnded(request, context)

    sdk._Servicer = Servicer  # type: ignore[misc]
    sdk.serve(bot, list(rest), workers=workers)
