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
    open files; or it escaped the stop between its calls: it did not stop within its
    ``stop_ms`` after a call, or it got CPU time while stopped (both: its processes are
    killed at once and its seat is forfeited, whatever its count of faults).

A fault of a seat that another bot caused is recorded with ``excused_by``: a timeout in
a call during which a bot of another seat ran while stopped (on the core of the table)
names that bot (``excused_by``, a list of names, and the detail) and does not count
towards the seat's forfeit.
"""

from __future__ import annotations

__all__ = ["FAULT_KINDS"]


FAULT_KINDS = ("timeout", "illegal", "protocol", "crash", "resource")
"""Every fault kind, in the order reports list them."""


class Fault(Exception):
    """Raised by a player when its bot failed to answer properly.

    ``kind`` is one of :data:`FAULT_KINDS`; ``detail`` says what happened, on one line;
    ``forfeit``: the seat is forfeited at once, whatever its count of faults (its bot
    escaped the stop between calls, and its process was killed).
    """

    def __init__(self, kind: str, detail: str, forfeit: bool = False) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.forfeit = forfeit
