"""The arena.v1 protocol's small values: suits, games, cards, options, bids and
tricks as messages and back, built once and cached (the referee's largest own cost per
call), and :class:`WireError` for what comes off the wire malformed.
:mod:`arena.wire.serde` builds the requests and answers from them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from arena.rules import OptionError, Trick, option_specs
from arena.rules.cards import JESTER, SUIT_LETTERS, WIZARD, Card, Suit
from arena.rules.options import resolve_options
from arena.v1 import bot_pb2, game_pb2

PROTOCOL_VERSION: Final[int] = bot_pb2.PROTOCOL_VERSION_1
"""The arena.v1 protocol revision this code speaks (``ProtocolVersion`` in bot.proto)."""


class WireError(ValueError):
    """Raised for a malformed protocol message: an unknown enum value, a card that is no
    real card, a missing or inconsistent field. The message is one line saying what."""


_SUITED = game_pb2.CARD_KIND_SUITED


_KIND_WIZARD = game_pb2.CARD_KIND_WIZARD


_KIND_JESTER = game_pb2.CARD_KIND_JESTER


_NO_SUIT = game_pb2.SUIT_UNSPECIFIED


SUIT_ENUMS: Final[tuple[game_pb2.Suit.ValueType, ...]] = (
    game_pb2.SUIT_CLUBS, game_pb2.SUIT_DIAMONDS, game_pb2.SUIT_HEARTS, game_pb2.SUIT_SPADES)


GAME_ENUMS: Final[dict[str, game_pb2.Game.ValueType]] = {
    "wizard": game_pb2.GAME_WIZARD, "trumps": game_pb2.GAME_TRUMPS}


GAME_NAMES: Final[dict[int, str]] = {v: k for k, v in GAME_ENUMS.items()}


_DECK_RANKS: Final[dict[str, range]] = {"wizard": range(1, 14), "trumps": range(2, 15)}
"""The ranks of each game's suited cards."""


def suit_to_enum(suit: Suit | None) -> game_pb2.Suit.ValueType:
    """The ``Suit`` enum value of a domain suit (0..3), SUIT_UNSPECIFIED for None."""
    return _NO_SUIT if suit is None else SUIT_ENUMS[suit]


def suit_from_enum(value: int) -> Suit:
    """The domain suit (0..3) of a ``Suit`` enum value; raises :class:`WireError` for
    SUIT_UNSPECIFIED or an unknown value."""
    if 1 <= value <= 4:
        return value - 1
    if value == _NO_SUIT:
        raise WireError("no suit given (SUIT_UNSPECIFIED)")
    raise WireError(f"unknown suit {value}")


def optional_suit(value: int) -> Suit | None:
    """Like :func:`suit_from_enum`, with SUIT_UNSPECIFIED meaning None."""
    return None if value == _NO_SUIT else suit_from_enum(value)


def game_to_enum(name: str) -> game_pb2.Game.ValueType:
    """The ``Game`` enum value of a game name (``wizard``, ``trumps``)."""
    try:
        return GAME_ENUMS[name]
    except KeyError:
        raise ValueError(f"game {name!r} has no protocol value") from None


def game_from_enum(value: int) -> str:
    """The game name of a ``Game`` enum value; :class:`WireError` if there is none."""
    try:
        return GAME_NAMES[value]
    except KeyError:
        if value == game_pb2.GAME_UNSPECIFIED:
            raise WireError("no game given (GAME_UNSPECIFIED)") from None
        raise WireError(f"unknown game {value}") from None


def _new_card(card: Card) -> game_pb2.Card:
    if card == WIZARD:
        return game_pb2.Card(kind=_KIND_WIZARD)
    if card == JESTER:
        return game_pb2.Card(kind=_KIND_JESTER)
    suit, rank = card >> 4, card & 15
    if not (0 <= suit < 4 and 1 <= rank <= 14):
        raise ValueError(f"{card!r} is not a card")
    return game_pb2.Card(suit=SUIT_ENUMS[suit], rank=rank, kind=_SUITED)


CARDS: Final[dict[Card, game_pb2.Card]] = {
    c: _new_card(c)
    for c in [s << 4 | r for s in range(4) for r in range(1, 15)] + [WIZARD, JESTER]}
"""Every card's message, shared: only ever copied into other messages, never handed out."""


def card_to_message(card: Card) -> game_pb2.Card:
    """A new ``Card`` message for a domain card; ValueError if ``card`` is none."""
    cached = CARDS.get(card)
    if cached is None:
        raise ValueError(f"{card!r} is not a card")
    msg = game_pb2.Card()
    msg.CopyFrom(cached)
    return msg


def card_from_message(msg: game_pb2.Card, game: str | None = None) -> Card:
    """The domain card of a ``Card`` message; raises :class:`WireError` if it is no card
    (or, given ``game``, no card of that game's deck)."""
    kind = msg.kind
    if kind == _SUITED:
        suit, rank = msg.suit, msg.rank
        if not 1 <= suit <= 4:
            raise WireError("a suited card has no suit (SUIT_UNSPECIFIED)" if suit == _NO_SUIT
                            else f"card has unknown suit {suit}")
        if game is None:
            if not 1 <= rank <= 14:
                raise WireError(f"card rank {rank} is outside 1..14")
        elif rank not in _DECK_RANKS[game]:
            ranks = _DECK_RANKS[game]
            raise WireError(
                f"card rank {rank} is not in the {game} deck ({ranks[0]}..{ranks[-1]})")
        return (suit - 1) << 4 | rank
    if kind in (_KIND_WIZARD, _KIND_JESTER):
        name = "Wizard" if kind == _KIND_WIZARD else "Jester"
        if msg.suit != _NO_SUIT or msg.rank != 0:
            raise WireError(f"a {name} card has no suit and no rank")
        if game is not None and game != "wizard":
            raise WireError(f"the {game} deck has no {name}")
        return WIZARD if kind == _KIND_WIZARD else JESTER
    if kind == game_pb2.CARD_KIND_UNSPECIFIED:
        raise WireError("card kind not given (CARD_KIND_UNSPECIFIED)")
    raise WireError(f"unknown card kind {kind}")


_CARD_OF: Final[dict[str, dict[tuple[int, int, int], Card]]] = {"wizard": {}, "trumps": {}}
"""The cards already seen by (kind, suit, rank), per game: the bot side's fast path."""


def cards_from(msgs: Sequence[game_pb2.Card], game: str) -> tuple[Card, ...]:
    known = _CARD_OF.get(game)
    if known is None:
        return tuple(card_from_message(m, game) for m in msgs)
    out = []
    for m in msgs:
        key = (m.kind, m.suit, m.rank)
        card = known.get(key)
        if card is None:
            card = known[key] = card_from_message(m, game)  # checked once per card
        out.append(card)
    return tuple(out)


_OPTION_FIELDS: Final = frozenset(game_pb2.Options.DESCRIPTOR.fields_by_name)


_OPTIONS_CACHE: dict[tuple[Any, ...], game_pb2.Options] = {}


def _new_options(game: str, options: Mapping[str, Any]) -> game_pb2.Options:
    msg = game_pb2.Options()
    for name, spec in option_specs(game).items():
        if name not in _OPTION_FIELDS:
            raise ValueError(f"option {name!r} of {game} has no field in arena.v1.Options")
        value = options[name]
        if spec.kind == "suit":
            setattr(msg, name, _NO_SUIT if value is None
                    else SUIT_ENUMS[SUIT_LETTERS.index(value)])
        else:
            setattr(msg, name, value)
    return msg


def options_message(game: str, options: Mapping[str, Any]) -> game_pb2.Options:
    """The shared, cached ``Options`` message of a game's options (all of them)."""
    key = (game, *options.items())
    msg = _OPTIONS_CACHE.get(key)
    if msg is None:
        if len(_OPTIONS_CACHE) >= 256:
            _OPTIONS_CACHE.clear()
        msg = _OPTIONS_CACHE[key] = _new_options(game, options)
    return msg


def options_to_message(game: str, options: Mapping[str, Any]) -> game_pb2.Options:
    """A new ``Options`` message of ``game``'s options; ``options`` holds every option of
    the game, as ``Game.options`` and ``View.options`` do (KeyError otherwise)."""
    msg = game_pb2.Options()
    msg.CopyFrom(options_message(game, options))
    return msg


_PARSED_OPTIONS: dict[tuple[str, bytes], dict[str, Any]] = {}


def options_from_message(game: str, msg: game_pb2.Options) -> dict[str, Any]:
    """Every option of ``game`` from an ``Options`` message, checked by the rules;
    :class:`WireError` says which value is not allowed."""
    key = (game, msg.SerializeToString(deterministic=True))
    cached = _PARSED_OPTIONS.get(key)
    if cached is not None:
        return dict(cached)
    options = _options_from_message(game, msg)
    if len(_PARSED_OPTIONS) < 256:
        _PARSED_OPTIONS[key] = dict(options)
    return options


def _options_from_message(game: str, msg: game_pb2.Options) -> dict[str, Any]:
    given: dict[str, Any] = {}
    for name, spec in option_specs(game).items():
        value = getattr(msg, name)
        if spec.kind == "suit":
            try:
                suit = optional_suit(value)
            except WireError as exc:
                raise WireError(f"option {name}: {exc}") from None
            given[name] = None if suit is None else SUIT_LETTERS[suit]
        else:
            given[name] = value
    try:
        return resolve_options(game, option_specs(game), given)
    except OptionError as exc:
        raise WireError(str(exc)) from None


_BIDS: Final[list[list[game_pb2.Bid]]] = []


_TRICKS: dict[Trick, game_pb2.Trick] = {}


_TRICK_CACHE_SIZE: Final = 8192


MAX_MS: Final = 2**32 - 1


def _bid_message(seat: int, tricks: int) -> game_pb2.Bid:
    """The shared ``Bid`` message of (seat, tricks)."""
    try:
        return _BIDS[seat][tricks]
    except IndexError:
        while len(_BIDS) <= seat:
            _BIDS.append([])
        row = _BIDS[seat]
        row.extend(game_pb2.Bid(seat=seat, tricks=t) for t in range(len(row), tricks + 1))
        return row[tricks]


def bids_in_order(bids: Sequence[int | None], dealer: int) -> list[game_pb2.Bid]:
    """The shared ``Bid`` messages of the bids made, in bidding order (left of dealer)."""
    n = len(bids)
    out = []
    for k in range(1, n + 1):
        seat = (dealer + k) % n
        b = bids[seat]
        if b is not None:
            out.append(_bid_message(seat, b))
    return out


def trick_message(trick: Trick) -> game_pb2.Trick:
    """The shared ``Trick`` message of a completed trick (cached: they repeat each call)."""
    msg = _TRICKS.get(trick)
    if msg is None:
        if len(_TRICKS) >= _TRICK_CACHE_SIZE:
            _TRICKS.clear()
        cards = CARDS
        msg = _TRICKS[trick] = game_pb2.Trick(
            leader=trick.leader, cards=[cards[c] for c in trick.cards], winner=trick.winner)
    return msg
