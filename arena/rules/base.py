"""The state-machine interface every game implements, and the values it hands out.

A :class:`Game` is created from (options, seed); the deals depend on nothing else. The
caller then loops: :attr:`Game.to_move` says whose turn it is, :attr:`Game.decision` what
kind of decision (:class:`Decision`), :meth:`Game.legal_actions` the actions allowed
(never empty), :meth:`Game.check` why an action is not, :meth:`Game.apply` takes one.
:meth:`Game.view` is what one seat may see. An action is an ``int``: a bid, a suit
(:data:`Decision.TRUMP`) or a card (:data:`Decision.PLAY`).
"""

from __future__ import annotations

import bisect
import enum
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from arena.rules.cards import SUIT_NAMES, Card, Suit, card_symbol


class Decision(enum.Enum):
    """The kind of decision the player to move faces."""

    BID = "bid"
    """Bid (Wizard) or announce (Trumps with ``announce``) a number of tricks."""
    TRUMP = "trump"
    """Choose the trump suit (Wizard: the dealer, when a Wizard is turned)."""
    PLAY = "play"
    """Play a card to the current trick."""


class IllegalAction(ValueError):
    """Raised by :meth:`Game.check` and :meth:`Game.apply` for an action the rules forbid.

    The message says which seat, which action and why.
    """


@dataclass(frozen=True, slots=True)
class Trick:
    """A trick: its leader, the cards in play order from the leader, and its winner.

    The trick in progress has ``winner`` None.
    """

    leader: int
    cards: tuple[Card, ...]
    winner: int | None = None

    def seat_of(self, index: int, players: int) -> int:
        """The seat that played ``cards[index]``."""
        return (self.leader + index) % players


@dataclass(frozen=True, slots=True)
class View:
    """What one seat may see: its own hand and the public history, nothing else."""

    game: str
    seat: int
    players: int
    options: Mapping[str, Any]
    round: int
    """The round number, 1-based (Trumps has one round)."""
    rounds: int
    """How many rounds the game has."""
    dealer: int
    hand: tuple[Card, ...]
    trump_card: Card | None
    """The turned card, public; None when none was turned."""
    trump: Suit | None
    """The trump suit in force, or None (no trump, or a Wizard turned and not yet chosen)."""
    bids: tuple[int | None, ...]
    """Bids (Trumps: announcements) by seat; None where not made (yet, or not at all)."""
    trick: Trick
    """The trick in progress (possibly empty)."""
    tricks: tuple[Trick, ...]
    """The completed tricks of this round, in order."""
    won: tuple[int, ...]
    """Tricks won this round, by seat."""
    scores: tuple[int, ...]
    """Total points of earlier rounds, by seat."""
    stock_size: int
    """Cards left in the stock (Trumps); its order is never shown."""
    tricks_in_round: int
    """How many tricks this round has in all."""
    decision: Decision | None
    legal: tuple[int, ...]
    """The legal actions when this seat is to move, else empty."""


@dataclass(frozen=True, slots=True)
class Deal:
    """Where every card not yet played is now: each seat's hand and the stock.

    A seat's :class:`View` shows its own hand; a search fills in the rest with a guess
    (:func:`arena.rules.search.sample_deal`) and rebuilds the game from both
    (:func:`arena.rules.search.game_from_view`).
    """

    hands: tuple[tuple[Card, ...], ...]
    """Every seat's hand, by seat, sorted."""
    stock: tuple[Card, ...]
    """The cards in no hand and not played, in the order the game would draw them.
    Wizard: the undealt cards, the turned card (if any) first. Trumps: the stock still to
    be drawn, the turned card last while it is undrawn."""


class DealError(ValueError):
    """Raised when a :class:`Deal` does not fit a :class:`View`; the message says why."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of a finished game: totals and 1-based places (ties share a place)."""

    totals: tuple[int, ...]
    places: tuple[int, ...]


def shuffle_key(game: str, players: int, seed: int, round_number: int) -> str:
    """The string that seeds one deal's shuffle: it names nothing but the deal."""
    return f"trick-arena/{game}/{players}/{seed}/{round_number}"


def places_from_totals(totals: Sequence[int]) -> tuple[int, ...]:
    """Competition ranking: a seat's place is 1 + the number of seats with a higher total."""
    return tuple(1 + sum(1 for u in totals if u > t) for t in totals)


@dataclass(slots=True)
class RoundLog:
    """Everything that happened in one round, for the game record (cards as ints)."""

    number: int
    dealer: int
    hands: list[list[Card]]
    stock: list[Card]
    trump_card: Card | None
    trump: Suit | None = None
    bids: list[int | None] | None = None
    tricks: list[Trick] = field(default_factory=list)
    draws: list[list[Card]] | None = None
    won: list[int] = field(default_factory=list)
    points: list[int] | None = None


class Game(ABC):
    """A game in progress. Subclasses implement one game's rules; the caller drives it."""

    name: ClassVar[str]
    """The game's name as in records and tournament files (``wizard``, ``trumps``)."""

    players: int
    options: dict[str, Any]
    """Every option in force, defaults included (``players`` among them)."""
    seed: int
    to_move: int | None
    """The seat to act, or None when the game is over."""
    decision: Decision | None
    """The kind of decision ``to_move`` faces, or None when the game is over."""
    totals: list[int]
    log: list[RoundLog]
    """One entry per round started so far; the last one is the round in progress."""

    @property
    def is_over(self) -> bool:
        return self.to_move is None

    _legal: list[int] | None
    """:meth:`legal_actions`' list, until the next :meth:`apply` (None: not made yet)."""

    def legal_actions(self) -> list[int]:
        """The actions the player to move may take, never empty while the game runs.

        The list is shared with the game until the next :meth:`apply`: do not modify it.
        """
        legal = self._legal
        if legal is None:
            legal = self._legal = self._legal_now()
        return legal

    @abstractmethod
    def _legal_now(self) -> list[int]:
        """The legal actions of the position, made afresh (:meth:`legal_actions` keeps
        them until the next :meth:`apply`)."""

    def check(self, action: int) -> None:
        """Raise :class:`IllegalAction` saying why ``action`` is not allowed now."""
        if self.to_move is None:
            raise IllegalAction("the game is over")
        if type(action) is not int:
            raise IllegalAction(f"seat {self.to_move}: {action!r} is not an action")
        if action not in self.legal_actions():
            raise IllegalAction(self._why_illegal(action))

    def _why_unplayable(self, hand: Sequence[Card], action: int, led: int,
                        allowed: str = "") -> str:
        """Why a card outside the legal ones may not be played: not held, or not the
        led suit (``allowed`` names what may always be played instead)."""
        seat = self.to_move
        try:
            shown = card_symbol(action)
        except IndexError:
            shown = repr(action)
        if action not in hand:
            return f"seat {seat}: does not hold {shown}"
        return f"seat {seat}: must follow {SUIT_NAMES[led]} with {shown}{allowed}"

    def _resume_trick(self, hands: list[list[Card]], trick: Trick) -> None:
        """Search support (:meth:`from_view`): play on from ``trick``'s leader, its cards
        put back in ``hands`` (the game's own) and replayed, so the rules check them."""
        self.to_move = trick.leader
        self.decision = Decision.PLAY
        for c in trick.cards:
            bisect.insort(hands[self.to_move], c)
            self.apply(c)

    @abstractmethod
    def _why_illegal(self, action: int) -> str:
        """The reason an action outside :meth:`legal_actions` is illegal."""

    def apply(self, action: int) -> None:
        """Take ``action`` for the player to move; raises :class:`IllegalAction`."""
        legal = self._legal
        if legal is None:
            legal = self.legal_actions()
        if type(action) is not int or action not in legal:
            self.check(action)
        self._legal = None
        self._take(action)

    @abstractmethod
    def _take(self, action: int) -> None:
        """Take ``action``, a legal one (:meth:`apply` checked it)."""

    @abstractmethod
    def view(self, seat: int) -> View:
        """What ``seat`` may see now."""

    @abstractmethod
    def deal(self) -> Deal:
        """Where the cards not yet played are now (hidden information: for tests and for
        checking a search, never for a player)."""

    @classmethod
    @abstractmethod
    def from_view(cls, view: View, deal: Deal, seed: int = 0,
                  round_only: bool = False) -> Game:
        """The game in the position ``view`` shows, with the hidden cards of ``deal``;
        with ``round_only`` it ends with the current round (no next deal).

        Use :func:`arena.rules.search.game_from_view`, which checks ``deal`` first.
        """

    def outcome(self) -> Outcome:
        """Totals and places (totals so far while the game runs)."""
        totals = tuple(self.totals)
        return Outcome(totals, places_from_totals(totals))

    @property
    def rounds(self) -> int:
        """How many rounds the game has."""
        return 1
