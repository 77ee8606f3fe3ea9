"""The kinds of fault a bot can commit, shared by the referee and the reports.

Stdlib-only and import-free, so the leaderboard and the site generator can name the
fault kinds without pulling in the referee (and with it trio and grpc).

``timeout``
    The bot gave no answer by the deadline (its move time plus whatever bank it had).
``illegal``
    The bot answered with an action the rules forbid (a card it does not hold, a
    revoke, a bid out of range, ...).
``protocol``
    The bot's answer was malformed, or the call ended with an error status.
``crash``
    The bot process died, or its connection failed.
``resource``
    The bot process hit one of its limits: memory, processes, CPU time, file size or
    open files.
"""

from __future__ import annotations

__all__ = ["FAULT_KINDS"]


FAULT_KINDS = ("timeout", "illegal", "protocol", "crash", "resource")
"""Every fault kind, in the order reports list them."""


class Fault(Exception):
    """Raised by a player when its bot failed to answer properly.

    ``kind`` is one of :data:`FAULT_KINDS`; ``detail`` says what happened, on one line.
    """

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
