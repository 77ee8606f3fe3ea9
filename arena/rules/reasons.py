"""Why an action is illegal, from what the seat sees: for a person at the table.

:meth:`Game.check <arena.rules.base.Game.check>` explains an illegal action from the
whole game; a seat played by a person holds only its :class:`~arena.rules.base.View`,
so :func:`illegal_reason` explains from the view alone, in the same words (without the
``seat N:`` the engine puts first). Pure: no I/O.
"""

from __future__ import annotations

from arena.rules.base import Decision, View
from arena.rules.cards import JESTER, SPECIAL, SUIT_NAMES, card_symbol


def led_suit(view: View) -> int | None:
    """The suit to follow in the trick in progress, or None (nothing to follow: an empty
    trick, Jesters only, or a Wizard led)."""
    for card in view.trick.cards:
        if view.game == "wizard" and card == JESTER:
            continue
        suit = card >> 4
        return None if suit == SPECIAL else suit
    return None


def illegal_reason(view: View, action: int) -> str | None:
    """Why ``action`` is not allowed for the seat of ``view`` now, or None if it is.

    The seat must be the one to move (``view.decision`` set); otherwise every action is
    refused with "it is not your turn".
    """
    if view.decision is None:
        return "it is not your turn"
    if action in view.legal:
        return None
    if view.decision is Decision.BID:
        word = "bid" if view.game == "wizard" else "announcement"
        top = view.tricks_in_round
        if not 0 <= action <= top or view.game != "wizard":
            return f"{word} {action} is outside 0..{top}"
        return (f"the hook rule forbids the dealer bidding {action}: the bids would sum "
                f"to {top}, the number of tricks")
    if view.decision is Decision.TRUMP:
        return f"{action} is not a suit (0..3); the dealer must name a suit"
    try:
        shown = card_symbol(action)
    except IndexError:
        shown = repr(action)
    if action not in view.hand:
        return f"does not hold {shown}"
    led = led_suit(view)
    allowed = " (a Wizard or a Jester is always allowed)" if view.game == "wizard" else ""
    if led is None:  # cannot happen with the engine's legal actions; said plainly anyway
        return f"{shown} is not allowed now"
    return f"must follow {SUIT_NAMES[led]} with {shown}{allowed}"


__all__ = ["illegal_reason", "led_suit"]
