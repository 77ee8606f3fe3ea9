"""Cards as small integers.

A card is an ``int``: ``suit << 4 | rank`` for a suited card (suits 0..3 are clubs,
diamonds, hearts, spades; ranks 1..13 in Wizard, 2..14 in Trumps, so a card's rank
compares directly), and :data:`WIZARD` (64) or :data:`JESTER` (65) for the specials,
whose "suit" ``card >> 4`` is 4. Ints keep the rules engine fast; the helpers here
convert them to the record's strings (``H7``, ``S14``, ``W``, ``J``) and to symbols
for people (``7♥``, ``Wizard``).
"""

from __future__ import annotations

from collections.abc import Iterable

Card = int
"""A card, encoded as described in the module docstring."""
Suit = int
"""A suit: 0 clubs, 1 diamonds, 2 hearts, 3 spades."""

CLUBS, DIAMONDS, HEARTS, SPADES = 0, 1, 2, 3
SUITS: tuple[Suit, ...] = (CLUBS, DIAMONDS, HEARTS, SPADES)
SUIT_LETTERS = "CDHS"
SUIT_SYMBOLS = "♣♦♥♠"
SUIT_NAMES = ("clubs", "diamonds", "hearts", "spades")
SPECIAL = 4
"""The pseudo-suit of Wizards and Jesters (``WIZARD >> 4 == JESTER >> 4 == 4``)."""

WIZARD: Card = 64
JESTER: Card = 65

_FACE = {11: "J", 12: "Q", 13: "K", 14: "A"}


class CardError(ValueError):
    """Raised when a string does not name a card or a suit."""


def make_card(suit: Suit, rank: int) -> Card:
    """The card of ``suit`` and ``rank``."""
    return suit << 4 | rank


def suit_of(card: Card) -> int:
    """The card's suit, or :data:`SPECIAL` for a Wizard or Jester."""
    return card >> 4


def rank_of(card: Card) -> int:
    """The card's rank (0 for a Wizard, 1 for a Jester: compare specials by identity)."""
    return card & 15


def format_card(card: Card) -> str:
    """The record form of a card: ``H7``, ``S14``, ``W`` or ``J``."""
    if card == WIZARD:
        return "W"
    if card == JESTER:
        return "J"
    return f"{SUIT_LETTERS[card >> 4]}{card & 15}"


def parse_card(text: str) -> Card:
    """Parse the record form of a card; raises :class:`CardError` when it is not one."""
    if text == "W":
        return WIZARD
    if text == "J":
        return JESTER
    if len(text) >= 2 and text[0] in SUIT_LETTERS and text[1:].isascii() and text[1:].isdigit():
        rank = int(text[1:])
        if 1 <= rank <= 14 and text[1] != "0":
            return make_card(SUIT_LETTERS.index(text[0]), rank)
    raise CardError(f"not a card: {text!r} (expected e.g. H7, S14, W or J)")


def format_suit(suit: Suit | None) -> str | None:
    """A suit's letter, or None."""
    return None if suit is None else SUIT_LETTERS[suit]


def parse_suit(text: str) -> Suit:
    """Parse a suit letter C, D, H or S; raises :class:`CardError` otherwise."""
    if len(text) == 1 and text in SUIT_LETTERS:
        return SUIT_LETTERS.index(text)
    raise CardError(f"not a suit: {text!r} (expected one of C, D, H, S)")


def card_symbol(card: Card) -> str:
    """A card for people: ``7♥``, ``A♠``, ``Wizard``, ``Jester``."""
    if card == WIZARD:
        return "Wizard"
    if card == JESTER:
        return "Jester"
    rank = card & 15
    return f"{_FACE.get(rank, str(rank))}{SUIT_SYMBOLS[card >> 4]}"


def format_cards(cards: Iterable[Card]) -> list[str]:
    """The record form of several cards."""
    return [format_card(c) for c in cards]


def most_held_suit(hand: Iterable[Card], suits: Iterable[Suit] = SUITS) -> Suit:
    """The suit among ``suits`` that ``hand`` holds most cards of; ties go to the first in
    C, D, H, S order."""
    counts = [0, 0, 0, 0, 0]
    for c in hand:
        counts[c >> 4] += 1
    return max(suits, key=lambda s: (counts[s], -s))


def wizard_deck() -> list[Card]:
    """The 60 Wizard cards in a fixed order: suits ranks 1..13, then 4 Wizards, 4 Jesters."""
    return [make_card(s, r) for s in SUITS for r in range(1, 14)] + [WIZARD] * 4 + [JESTER] * 4


def standard_deck() -> list[Card]:
    """The 52 standard cards in a fixed order (ranks 2..14, ace high)."""
    return [make_card(s, r) for s in SUITS for r in range(2, 15)]
