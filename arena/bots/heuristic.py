"""A sensible, deterministic baseline strategy that sees only its seat's :class:`View`.

Wizard: name the suit it holds most of as trump; bid the tricks its hand is worth
(Wizards, trumps, side kings and queens); then play to make the bid exactly: win as
cheaply as possible while it needs tricks, duck (a Jester, or the highest card that
loses) once it has them. Trumps: announce the tricks its hand is worth; without an
announcement take every trick it can win cheaply, leading its sure winners; with one,
steer toward it like Wizard.

The bidding values were fitted to games of this bot against itself and a random bot.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from arena.rules import Decision, View
from arena.rules.cards import JESTER, WIZARD, Card
from arena.rules.trumps import trumps_trick_winner
from arena.rules.wizard import wizard_trick_winner

_SIDE_VALUE = {13: 1.0, 12: 0.65, 11: 0.45, 10: 0.3}
"""Wizard: a side card's trick value relative to a side king (rank 13)."""
_TRUMPS_TRUMP_VALUE = {14: 1.3, 13: 1.1, 12: 1.0, 11: 0.9}
"""Trumps: the trick value of the high trumps; lower trumps are worth 0.6 to 0.75."""


class HeuristicBot:
    """Bids from hand strength and plays to make its bid; never looks beyond the view."""

    def __init__(self, name: str = "heuristic") -> None:
        self.name = name

    def act(self, view: View) -> int:
        if view.decision is Decision.TRUMP:
            return choose_trump(view.hand)
        if view.decision is Decision.BID:
            wizard = view.game == "wizard"
            estimate = wizard_estimate(view) if wizard else trumps_estimate(view)
            # The nearest legal bid (the hook rule may forbid one), the lower on a tie.
            return min(view.legal, key=lambda b: (abs(b - estimate), b))
        return _play(view)


def choose_trump(hand: Iterable[Card]) -> int:
    """The suit held most often; ties go to the higher total rank, then the lower suit."""
    count = [0] * 4
    total = [0] * 4
    for c in hand:
        if c < WIZARD:
            count[c >> 4] += 1
            total[c >> 4] += c & 15
    return max(range(4), key=lambda s: (count[s], total[s], -s))


def wizard_estimate(view: View) -> float:
    """Expected tricks of a Wizard hand: Wizards are sure, trumps nearly, side honours partly.

    Cards win more often with fewer players, side honours more often in long hands (the
    other players are likelier to follow suit, and no trump means no ruffs); but a long
    hand holds more strength than it can turn into tricks, hence the starting deduction.
    """
    trump = view.trump
    fewer = 4 - view.players
    fill = len(view.hand) / view.rounds
    side = (0.3 + 0.5 * fill + 0.1 * fewer) * (1.25 if trump is None else 1.0)
    estimate = -max(0.0, fill - 0.4)
    for c in view.hand:
        if c == WIZARD:
            estimate += 1.0
        elif c != JESTER:
            rank = c & 15
            if c >> 4 == trump:
                estimate += 0.55 + 0.04 * (rank - 1) + 0.08 * fewer
            else:
                estimate += side * _SIDE_VALUE.get(rank, 0.0)
    return estimate


def trumps_estimate(view: View) -> float:
    """Expected tricks over a whole Trumps game, drawn cards included: a fair share of its
    tricks, adjusted by how far this hand's trumps and side honours beat an average hand."""
    trump = view.trump
    side = max(0.3, 1.1 - 0.1 * view.players)
    estimate = view.tricks_in_round / view.players - 1.7
    for c in view.hand:
        rank = c & 15
        if c >> 4 == trump:
            estimate += _TRUMPS_TRUMP_VALUE.get(rank, 0.75 if rank >= 9 else 0.6)
        else:
            estimate += side * _SIDE_VALUE.get(rank - 1, 0.0)
    return estimate


def _strength(card: Card, trump: int | None) -> int:
    """An order of strength for both games: Jester, side cards, trumps, Wizard."""
    if card == WIZARD:
        return 100
    if card == JESTER:
        return 0
    return (card & 15) + (40 if card >> 4 == trump else 0)


def _wins(view: View, cards: tuple[Card, ...]) -> bool:
    """Whether the last of ``cards`` wins the trick so far, by the game's own rule."""
    if view.game == "wizard":
        return wizard_trick_winner(cards, view.trump) == len(cards) - 1
    return trumps_trick_winner(cards, view.trump or 0) == len(cards) - 1


def _is_honour(view: View, card: Card) -> bool:
    """A Trumps honour that may be lost to a higher trump: the jack or queen of trumps."""
    return view.game == "trumps" and card >> 4 == view.trump and (card & 15) in (11, 12)


def _masters(view: View, cards: Iterable[Card]) -> list[Card]:
    """The suited ``cards`` that no card still unseen this round outranks in their suit."""
    seen = set(view.hand).union(view.trick.cards, *(t.cards for t in view.tricks))
    top = 13 if view.game == "wizard" else 14
    return [c for c in cards
            if c < WIZARD and all(h in seen for h in range(c + 1, c - (c & 15) + top + 1))]


def _play(view: View) -> int:
    """A card: chase tricks while the bid (or, in plain Trumps, any trick) wants them."""
    cards = view.trick.cards
    legal = sorted(view.legal, key=lambda c: _strength(c, view.trump))
    bid = view.bids[view.seat]
    ducking = bid is not None and view.won[view.seat] >= bid
    if not cards:
        return _lead(view, legal, ducking)
    beats = [c for c in legal if _wins(view, (*cards, c))]
    if ducking:
        # The bid is made (or already overshot): every further trick costs points.
        if JESTER in legal:
            return JESTER
        losers = [c for c in legal if c not in beats]
        if losers:
            keep = [c for c in losers if not _is_honour(view, c)]
            return (keep or losers)[-1]
        return legal[0]
    return beats[0] if beats else _dump(view, legal)


def _lead(view: View, legal: Sequence[Card], ducking: bool) -> int:
    """A lead: the weakest card when ducking, else a strong (Trumps: a sure) one."""
    if ducking:
        return JESTER if JESTER in legal else _dump(view, legal)
    if view.game == "wizard":
        return legal[-1]
    masters = _masters(view, legal)
    return masters[-1] if masters else _dump(view, legal)


def _dump(view: View, legal: Sequence[Card]) -> int:
    """The cheapest card to give away: the weakest, keeping Trumps honours back."""
    for c in legal:
        if not _is_honour(view, c):
            return c
    return legal[0]
