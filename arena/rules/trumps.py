"""Trumps: 52 cards, 2-7 players, seven-card hands, trump honours (docs/rules.md, Trumps)."""

from __future__ import annotations

import bisect
import random
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from arena.rules.base import Deal, Decision, Game, RoundLog, Trick, View, shuffle_key
from arena.rules.cards import Card, parse_suit, standard_deck
from arena.rules.options import OptionSpec, resolve_options

_PLAY, _BID = Decision.PLAY, Decision.BID
_DECK = standard_deck()
HAND_SIZE = 7
HONOURS = {14: 5, 11: 4, 12: 3}
"""Points for the trick winner that takes the ace, jack or queen of trumps."""


def trumps_trick_winner(cards: list[Card] | tuple[Card, ...], trump: int) -> int:
    """The index in ``cards`` of the winner: the highest trump, else the highest of the led suit."""
    led = cards[0] >> 4
    best = 0
    best_key = -1
    for i, c in enumerate(cards):
        s = c >> 4
        key = (c & 15) | (32 if s == trump else 16 if s == led else 0)
        if key > best_key:
            best_key = key
            best = i
    return best


def trumps_trick_honours(cards: list[Card] | tuple[Card, ...], trump: int) -> int:
    """The honour points a trick's winner takes with ``cards``."""
    return sum(HONOURS.get(c & 15, 0) for c in cards if c >> 4 == trump)


def trumps_trick_points(won: int, announced: int | None) -> int:
    """Trick points: 1 per trick; with an announcement 2 per trick if met, else -2 per miss."""
    if announced is None:
        return won
    return 2 * won if won == announced else -2 * abs(won - announced)


def trumps_tricks_in_game(players: int, draw: bool) -> int:
    """7 tricks, plus one per full round of draws the stock can serve."""
    return HAND_SIZE + ((52 - HAND_SIZE * players) // players if draw else 0)


class TrumpsGame(Game):
    """A game of Trumps. See docs/rules.md, Trumps."""

    name: ClassVar[str] = "trumps"
    OPTIONS: ClassVar[dict[str, OptionSpec]] = {
        "players": OptionSpec("players", "int", 4, "number of players", 2, 7),
        "trump": OptionSpec("trump", "suit", None,
                            "a fixed trump suit instead of turning the top card of the stock"),
        "draw": OptionSpec("draw", "bool", True,
                           "after each trick every player draws from the stock"),
        "announce": OptionSpec("announce", "bool", False,
                               "each player announces the tricks they will win"),
    }

    def __init__(self, options: Mapping[str, Any] | None = None, seed: int = 0) -> None:
        self.options = resolve_options(self.name, self.OPTIONS, options or {})
        self._options_view = MappingProxyType(self.options)
        self.players = n = self.options["players"]
        self.draw: bool = self.options["draw"]
        self.announce: bool = self.options["announce"]
        self.seed = seed
        deck = _DECK[:]
        random.Random(shuffle_key(self.name, n, seed, 1)).shuffle(deck)
        hands: list[list[Card]] = [[] for _ in range(n)]
        for k in range(n):
            hands[(1 + k) % n] = sorted(deck[k : HAND_SIZE * n : n])
        rest = deck[HAND_SIZE * n :]
        fixed = self.options["trump"]
        if fixed is not None:
            trump_card = None
            self.trump: int = parse_suit(fixed)
            stock = rest
        else:
            trump_card = rest[0]
            self.trump = trump_card >> 4
            stock = rest[1:] + rest[:1]
        self.hands = hands
        self.stock = stock
        self._stock_pos = 0
        self.dealer = 0
        self.round = 1
        self.tricks_in_game = trumps_tricks_in_game(n, self.draw)
        self.won = [0] * n
        self.honours = [0] * n
        self.totals = [0] * n
        self.bids: list[int | None] = [None] * n
        self.trick_cards: list[Card] = []
        self.led = -1
        self._legal: list[int] | None = None
        entry = RoundLog(1, 0, [h[:] for h in hands], stock, trump_card, self.trump,
                         bids=self.bids if self.announce else None, won=self.won,
                         draws=[] if self.draw else None)
        self.log = [entry]
        self._entry = entry
        self.tricks = entry.tricks
        self.to_move = 1 % n
        self.decision = _BID if self.announce else _PLAY
        self._bid_range = list(range(self.tricks_in_game + 1))

    def _legal_now(self) -> list[int]:
        d = self.decision
        if d is _PLAY:
            hand = self.hands[self.to_move]  # type: ignore[index]
            led = self.led
            legal = [c for c in hand if c >> 4 == led] if led >= 0 else None
            if not legal:
                legal = hand[:]
        elif d is _BID:
            legal = self._bid_range
        else:
            legal = []
        return legal

    def _take(self, action: int) -> None:
        seat: int = self.to_move  # type: ignore[assignment]
        n = self.players
        if self.decision is _BID:
            self.bids[seat] = action
            self.to_move = seat + 1 if seat + 1 < n else 0
            if seat == self.dealer:
                self.decision = _PLAY
            return
        self.hands[seat].remove(action)
        cards = self.trick_cards
        cards.append(action)
        if len(cards) == 1:
            self.led = action >> 4
        if len(cards) < n:
            self.to_move = seat + 1 if seat + 1 < n else 0
            return
        leader = seat + 1 if seat + 1 < n else 0
        winner = (leader + trumps_trick_winner(cards, self.trump)) % n
        self.won[winner] += 1
        self.honours[winner] += trumps_trick_honours(cards, self.trump)
        self.tricks.append(Trick(leader, tuple(cards), winner))
        draws = self._entry.draws
        if draws is not None:
            pos = self._stock_pos
            drawn: list[Card] = []
            if pos + n <= len(self.stock):
                for k in range(n):
                    c = self.stock[pos + k]
                    bisect.insort(self.hands[(winner + k) % n], c)
                    drawn.append(c)
                self._stock_pos = pos + n
            draws.append(drawn)
        self.trick_cards = []
        self.led = -1
        if self.hands[winner]:
            self.to_move = winner
        else:
            self._end_game()

    def _end_game(self) -> None:
        bids = self.bids if self.announce else [None] * self.players
        points = [trumps_trick_points(w, b) + h
                  for w, b, h in zip(self.won, bids, self.honours, strict=True)]
        self._entry.points = points
        self.totals = points[:]
        self.to_move = None
        self.decision = None
        self._legal = []

    def _why_illegal(self, action: int) -> str:
        seat = self.to_move
        if self.decision is _BID:
            return f"seat {seat}: announcement {action} is outside 0..{self.tricks_in_game}"
        return self._why_unplayable(self.hands[seat], action, self.led)  # type: ignore[index]

    def view(self, seat: int) -> View:
        n = self.players
        cards = self.trick_cards
        leader = (self.to_move - len(cards)) % n if self.to_move is not None else 0
        legal = tuple(self.legal_actions()) if seat == self.to_move else ()
        return View(
            game=self.name, seat=seat, players=n, options=self._options_view,
            round=1, rounds=1, dealer=self.dealer, hand=tuple(self.hands[seat]),
            trump_card=self._entry.trump_card, trump=self.trump, bids=tuple(self.bids),
            trick=Trick(leader, tuple(cards)), tricks=tuple(self.tricks), won=tuple(self.won),
            scores=tuple(self.totals), stock_size=len(self.stock) - self._stock_pos,
            tricks_in_round=self.tricks_in_game,
            decision=self.decision if seat == self.to_move else None, legal=legal)

    # -- search support ----------------------------------------------------------------

    def deal(self) -> Deal:
        return Deal(tuple(tuple(h) for h in self.hands), tuple(self.stock[self._stock_pos:]))

    @classmethod
    def from_view(cls, view: View, deal: Deal, seed: int = 0,
                  round_only: bool = False) -> TrumpsGame:
        g = cls.__new__(cls)
        g.options = resolve_options(cls.name, cls.OPTIONS, view.options)
        g._options_view = MappingProxyType(g.options)
        g.players = n = g.options["players"]
        g.draw = g.options["draw"]
        g.announce = g.options["announce"]
        g.seed = seed
        g.hands = hands = [list(h) for h in deal.hands]
        g.stock = list(deal.stock)
        g._stock_pos = 0
        g.dealer = 0
        g.round = 1
        g.tricks_in_game = trumps_tricks_in_game(n, g.draw)
        g.trump = trump = view.trump if view.trump is not None else 0
        g.won = list(view.won)
        g.honours = [0] * n
        for t in view.tricks:
            g.honours[t.winner or 0] += trumps_trick_honours(t.cards, trump)
        g.totals = list(view.scores)
        g.bids = list(view.bids)
        g.trick_cards = []
        g.led = -1
        g._legal = None
        g._bid_range = list(range(g.tricks_in_game + 1))
        # the log: the hands at this position (earlier draws are not known)
        entry = RoundLog(1, 0, [h[:] for h in hands], g.stock, view.trump_card, trump,
                         bids=g.bids if g.announce else None, won=g.won,
                         draws=[[] for _ in view.tricks] if g.draw else None)
        entry.tricks.extend(view.tricks)
        g.log = [entry]
        g._entry = entry
        g.tricks = entry.tricks
        if len(view.tricks) == g.tricks_in_game:
            g.to_move = None
            g.decision = None
            g._legal = []
        elif g.announce and None in g.bids:
            g.to_move = (1 + sum(b is not None for b in g.bids)) % n
            g.decision = _BID
        else:
            g._resume_trick(hands, view.trick)
        return g

