"""A test bot that breaks the rules: it bids one more trick than the round has and plays
a card it may not play (one that fails to follow suit, or else one it does not hold);
its trump choices are the SDK's default."""

from __future__ import annotations

import sys

import _common

from arena.rules import Decision
from arena.rules.cards import standard_deck, wizard_deck
from arena.sdk import Bot, View


def illegal_action(view: View) -> int:
    """The answer this bot gives: always against the rules."""
    if view.decision is Decision.BID:
        return len(view.hand) + 1
    unplayable = [c for c in view.hand if c not in view.legal]
    if unplayable:
        return min(unplayable)
    deck = wizard_deck() if view.game == "wizard" else standard_deck()
    return min(c for c in deck if c not in view.hand)


class Illegal(Bot):
    name = "illegal"

    def bid(self, view: View) -> int:
        return illegal_action(view)

    def play(self, view: View) -> int:
        return illegal_action(view)


if __name__ == "__main__":
    args, rest = _common.parser(__doc__ or "").parse_known_args(sys.argv[1:])
    _common.serve(Illegal(), args, rest)
