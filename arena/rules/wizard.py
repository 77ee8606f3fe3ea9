"""Wizard: 60 cards, 3-6 players, round r deals r cards, bid exactly (docs/rules.md, Wizard)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

from arena.rules.base import Deal, Decision, Game, RoundLog, Trick, View, shuffle_key
from arena.rules.cards import JESTER, WIZARD, Card, wizard_deck
from arena.rules.options import OptionSpec, resolve_options

_PLAY, _BID, _TRUMP = Decision.PLAY, Decision.BID, Decision.TRUMP
_SUITS = [0, 1, 2, 3]
_DECK = wizard_deck()


def wizard_trick_winner(cards: list[Card] | tuple[Card, ...], trump: int | None) -> int:
    """The index in ``cards`` (play order) of the card that wins a Wizard trick.

    The first Wizard; else the highest trump; else the highest card of the led suit (the
    suit of the first suited card); if every card is a Jester, the first Jester.
    """
    if WIZARD in cards:
        return cards.index(WIZARD)
    best = 0
    best_key = -1
    led = -1
    for i, c in enumerate(cards):
        if c == JESTER:
            continue
        s = c >> 4
        if led < 0:
            led = s
        key = (c & 15) | (32 if s == trump else 16 if s == led else 0)
        if key > best_key:
            best_key = key
            best = i
    return best


def wizard_led_suit(cards: Sequence[Card]) -> int | None:
    """The led suit of a trick whose first cards are ``cards``: the suit of the first suited
    card, None while only Jesters were played, and None for good after a leading Wizard."""
    for c in cards:
        if c != JESTER:
            return None if c == WIZARD else c >> 4
    return None


def wizard_round_points(bid: int, won: int) -> int:
    """20 + 10 per trick for a bid made exactly, else -10 per trick of difference."""
    return 20 + 10 * won if bid == won else -10 * abs(won - bid)


class WizardGame(Game):
    """A game of Wizard. See docs/rules.md, Wizard."""

    name: ClassVar[str] = "wizard"
    OPTIONS: ClassVar[dict[str, OptionSpec]] = {
        "players": OptionSpec("players", "int", 4, "number of players", 3, 6),
        "hook_rule": OptionSpec(
            "hook_rule", "bool", False,
            "the dealer may not bid so that the bids sum to the number of tricks"),
    }

    def __init__(self, options: Mapping[str, Any] | None = None, seed: int = 0) -> None:
        self.options = resolve_options(self.name, self.OPTIONS, options or {})
        self._options_view = MappingProxyType(self.options)
        self.players = n = int(self.options["players"])
        self.hook_rule: bool = self.options["hook_rule"]
        self.seed = seed
        self.num_rounds: int = 60 // n
        self._last_round = False
        """Set by :meth:`from_view` for a search: the game ends with the current round."""
        self.totals = [0] * n
        self.log = []
        self._start_round(1)

    # -- the round -------------------------------------------------------------------

    def _start_round(self, r: int) -> None:
        n = self.players
        deck = _DECK[:]
        random.Random(shuffle_key(self.name, n, self.seed, r)).shuffle(deck)
        dealer = (r - 1) % n
        hands: list[list[Card]] = [[] for _ in range(n)]
        for k in range(n):
            hands[(dealer + 1 + k) % n] = sorted(deck[k : n * r : n])
        stock = deck[n * r :]
        trump_card = stock[0] if stock else None
        self.round = r
        self.dealer = dealer
        self.hands = hands
        self.won = [0] * n
        self.bids: list[int | None] = [None] * n
        self.trick_cards: list[Card] = []
        self.led = -1
        self._legal: list[int] | None = None
        entry = RoundLog(r, dealer, [h[:] for h in hands], stock, trump_card,
                         bids=self.bids, won=self.won)
        self.log.append(entry)
        self._entry = entry
        self.tricks = entry.tricks
        if trump_card is None or trump_card == JESTER:
            self.trump: int | None = None
        elif trump_card == WIZARD:
            self.trump = None
            self.to_move = dealer
            self.decision = _TRUMP
            return
        else:
            self.trump = trump_card >> 4
        entry.trump = self.trump
        self._begin_bidding()

    def _begin_bidding(self) -> None:
        self.to_move = (self.dealer + 1) % self.players
        self.decision = _BID
        self._bid_range = list(range(self.round + 1))

    def _end_round(self) -> None:
        points = [wizard_round_points(b or 0, w) for b, w in zip(self.bids, self.won, strict=True)]
        self._entry.points = points
        totals = self.totals
        for i, p in enumerate(points):
            totals[i] += p
        if self.round < self.num_rounds and not self._last_round:
            self._start_round(self.round + 1)
        else:
            self.to_move = None
            self.decision = None
            self._legal = []

    # -- the interface ---------------------------------------------------------------

    @property
    def rounds(self) -> int:
        return self.num_rounds

    def _legal_now(self) -> list[int]:
        d = self.decision
        seat = self.to_move
        if d is _PLAY:
            hand = self.hands[seat]  # type: ignore[index]
            led = self.led
            if 0 <= led < 4:
                legal = [c for c in hand if c >> 4 == led]
                if legal:
                    last = hand[-1]
                    if last == JESTER:
                        if WIZARD in hand:
                            legal.append(WIZARD)
                        legal.append(JESTER)
                    elif last == WIZARD:
                        legal.append(WIZARD)
                    return legal
            if len(hand) > 1 and hand[-2] >= WIZARD:
                legal = list(dict.fromkeys(hand))
            else:
                legal = hand[:]
        elif d is _BID:
            legal = self._bid_range
            if self.hook_rule and seat == self.dealer:
                forbidden = self.round - sum(b for b in self.bids if b is not None)
                legal = [b for b in legal if b != forbidden]
        elif d is _TRUMP:
            legal = _SUITS
        else:
            legal = []
        return legal

    def _take(self, action: int) -> None:
        seat: int = self.to_move  # type: ignore[assignment]
        n = self.players
        d = self.decision
        if d is _PLAY:
            self.hands[seat].remove(action)
            cards = self.trick_cards
            cards.append(action)
            if self.led < 0 and action != JESTER:
                self.led = 4 if action == WIZARD else action >> 4
            if len(cards) < n:
                self.to_move = seat + 1 if seat + 1 < n else 0
                return
            leader = seat + 1 if seat + 1 < n else 0
            winner = (leader + wizard_trick_winner(cards, self.trump)) % n
            self.won[winner] += 1
            self.tricks.append(Trick(leader, tuple(cards), winner))
            if self.hands[winner]:
                self.trick_cards = []
                self.led = -1
                self.to_move = winner
            else:
                self._end_round()
        elif d is _BID:
            self.bids[seat] = action
            if seat == self.dealer:
                self.to_move = (self.dealer + 1) % n
                self.decision = _PLAY
                self.trick_cards = []
                self.led = -1
            else:
                self.to_move = seat + 1 if seat + 1 < n else 0
        else:
            self.trump = action
            self._entry.trump = action
            self._begin_bidding()

    def _why_illegal(self, action: int) -> str:
        seat = self.to_move
        d = self.decision
        if d is _BID:
            if not 0 <= action <= self.round:
                return f"seat {seat}: bid {action} is outside 0..{self.round}"
            return (f"seat {seat}: the hook rule forbids the dealer bidding {action}: "
                    f"the bids would sum to {self.round}, the number of tricks")
        if d is _TRUMP:
            return f"seat {seat}: {action} is not a suit (0..3); the dealer must name a suit"
        return self._why_unplayable(self.hands[seat], action, self.led,  # type: ignore[index]
                                    " (a Wizard or a Jester is always allowed)")

    def view(self, seat: int) -> View:
        n = self.players
        cards = self.trick_cards if self.decision is _PLAY else []
        leader = (self.to_move - len(cards)) % n if self.to_move is not None else 0
        legal = tuple(self.legal_actions()) if seat == self.to_move else ()
        return View(
            game=self.name, seat=seat, players=n, options=self._options_view,
            round=self.round, rounds=self.num_rounds, dealer=self.dealer,
            hand=tuple(self.hands[seat]), trump_card=self._entry.trump_card, trump=self.trump,
            bids=tuple(self.bids), trick=Trick(leader, tuple(cards)),
            tricks=tuple(self.tricks), won=tuple(self.won),
            scores=tuple(self.totals),
            stock_size=len(self._entry.stock), tricks_in_round=self.round, decision=(
                self.decision if seat == self.to_move else None),
            legal=legal)

    # -- search support ----------------------------------------------------------------

    def deal(self) -> Deal:
        return Deal(tuple(tuple(h) for h in self.hands), tuple(self._entry.stock))

    @classmethod
    def from_view(cls, view: View, deal: Deal, seed: int = 0,
                  round_only: bool = False) -> WizardGame:
        g = cls.__new__(cls)
        g._last_round = round_only
        g.options = resolve_options(cls.name, cls.OPTIONS, view.options)
        g._options_view = MappingProxyType(g.options)
        g.players = n = int(g.options["players"])
        g.hook_rule = g.options["hook_rule"]
        g.seed = seed
        g.num_rounds = 60 // n
        g.totals = list(view.scores)
        r = g.round = view.round
        dealer = g.dealer = view.dealer
        g.hands = hands = [list(h) for h in deal.hands]
        g.won = list(view.won)
        g.bids = list(view.bids)
        g.trick_cards = []
        g.led = -1
        g._legal = None
        g._bid_range = list(range(r + 1))
        g.trump = view.trump
        # the log's hands: those of the deal, as far as the position shows them
        dealt = [h[:] for h in hands]
        for t in (*view.tricks, view.trick):
            for i, c in enumerate(t.cards):
                dealt[(t.leader + i) % n].append(c)
        entry = RoundLog(r, dealer, [sorted(h) for h in dealt], list(deal.stock),
                         view.trump_card, view.trump, bids=g.bids, won=g.won)
        entry.tricks.extend(view.tricks)
        g.log = [entry]
        g._entry = entry
        g.tricks = entry.tricks
        if r == view.rounds and len(view.tricks) == view.tricks_in_round:
            g.to_move = None
            g.decision = None
            g._legal = []
        elif view.trump is None and view.trump_card == WIZARD:
            g.to_move = dealer
            g.decision = _TRUMP
        elif None in g.bids:
            g.to_move = (dealer + 1 + sum(b is not None for b in g.bids)) % n
            g.decision = _BID
        else:
            g._resume_trick(hands, view.trick)
        return g
