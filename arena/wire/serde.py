"""Conversions between the domain values of :mod:`arena.rules` and the arena.v1 protocol.

Referee side: :func:`hello_request` and :func:`bot_info_from_response`;
:func:`decision_request` builds the Bid/ChooseTrump/Play request for a view and
:func:`action_from_response` turns the answer into an action; :func:`round_result` and
:func:`game_result` say what a seat learns at the end of a round or game, and
:func:`round_ended_request` and :func:`game_ended_request` put that on the wire.
Bot side (the Python SDK), the reverse: :func:`view_from_request`,
:func:`action_to_response`, :func:`hello_response`, :func:`round_result_from_request`,
:func:`game_result_from_request`.

Everything that comes off the wire is checked: malformed input raises :class:`WireError`
with a one-line reason, never another exception. Whether an action is *legal* is the
rules' business, not this module's.

Building a request is the referee's largest own cost per call, so the card, bid, option
and completed-trick messages are built once and cached; the protobuf runtime copies them
into each request. Messages returned by the public functions are always fresh.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

from arena.model.names import NameError_, check_hello
from arena.model.results import BotInfo, GameResult, RoundResult
from arena.rules import Decision, OptionError, Trick, View, option_specs
from arena.rules.cards import JESTER, SUIT_LETTERS, WIZARD, Card, Suit
from arena.rules.options import resolve_options
from arena.v1 import bot_pb2, game_pb2

PROTOCOL_VERSION: Final[int] = bot_pb2.PROTOCOL_VERSION_1
"""The arena.v1 protocol revision this code speaks (``ProtocolVersion`` in bot.proto)."""


DecisionRequest: TypeAlias = bot_pb2.BidRequest | bot_pb2.ChooseTrumpRequest | bot_pb2.PlayRequest


DecisionResponse: TypeAlias = (
    bot_pb2.BidResponse | bot_pb2.ChooseTrumpResponse | bot_pb2.PlayResponse)


class WireError(ValueError):
    """Raised for a malformed protocol message: an unknown enum value, a card that is no
    real card, a missing or inconsistent field. The message is one line saying what."""


_SUITED = game_pb2.CARD_KIND_SUITED


_KIND_WIZARD = game_pb2.CARD_KIND_WIZARD


_KIND_JESTER = game_pb2.CARD_KIND_JESTER


_NO_SUIT = game_pb2.SUIT_UNSPECIFIED


_SUIT_ENUMS: Final[tuple[game_pb2.Suit.ValueType, ...]] = (
    game_pb2.SUIT_CLUBS, game_pb2.SUIT_DIAMONDS, game_pb2.SUIT_HEARTS, game_pb2.SUIT_SPADES)


_GAME_ENUMS: Final[dict[str, game_pb2.Game.ValueType]] = {
    "wizard": game_pb2.GAME_WIZARD, "trumps": game_pb2.GAME_TRUMPS}


_GAME_NAMES: Final[dict[int, str]] = {v: k for k, v in _GAME_ENUMS.items()}


_DECK_RANKS: Final[dict[str, range]] = {"wizard": range(1, 14), "trumps": range(2, 15)}
"""The ranks of each game's suited cards."""


def suit_to_enum(suit: Suit | None) -> game_pb2.Suit.ValueType:
    """The ``Suit`` enum value of a domain suit (0..3), SUIT_UNSPECIFIED for None."""
    return _NO_SUIT if suit is None else _SUIT_ENUMS[suit]


def suit_from_enum(value: int) -> Suit:
    """The domain suit (0..3) of a ``Suit`` enum value; raises :class:`WireError` for
    SUIT_UNSPECIFIED or an unknown value."""
    if 1 <= value <= 4:
        return value - 1
    if value == _NO_SUIT:
        raise WireError("no suit given (SUIT_UNSPECIFIED)")
    raise WireError(f"unknown suit {value}")


def _optional_suit(value: int) -> Suit | None:
    """Like :func:`suit_from_enum`, with SUIT_UNSPECIFIED meaning None."""
    return None if value == _NO_SUIT else suit_from_enum(value)


def game_to_enum(name: str) -> game_pb2.Game.ValueType:
    """The ``Game`` enum value of a game name (``wizard``, ``trumps``)."""
    try:
        return _GAME_ENUMS[name]
    except KeyError:
        raise ValueError(f"game {name!r} has no protocol value") from None


def game_from_enum(value: int) -> str:
    """The game name of a ``Game`` enum value; :class:`WireError` if there is none."""
    try:
        return _GAME_NAMES[value]
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
    return game_pb2.Card(suit=_SUIT_ENUMS[suit], rank=rank, kind=_SUITED)


_CARDS: Final[dict[Card, game_pb2.Card]] = {
    c: _new_card(c)
    for c in [s << 4 | r for s in range(4) for r in range(1, 15)] + [WIZARD, JESTER]}
"""Every card's message, shared: only ever copied into other messages, never handed out."""


def card_to_message(card: Card) -> game_pb2.Card:
    """A new ``Card`` message for a domain card; ValueError if ``card`` is none."""
    cached = _CARDS.get(card)
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


def _cards_from(msgs: Sequence[game_pb2.Card], game: str) -> tuple[Card, ...]:
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
                    else _SUIT_ENUMS[SUIT_LETTERS.index(value)])
        else:
            setattr(msg, name, value)
    return msg


def _options_message(game: str, options: Mapping[str, Any]) -> game_pb2.Options:
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
    msg.CopyFrom(_options_message(game, options))
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
                suit = _optional_suit(value)
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


_MAX_MS: Final = 2**32 - 1


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


def _bids_in_order(bids: Sequence[int | None], dealer: int) -> list[game_pb2.Bid]:
    """The shared ``Bid`` messages of the bids made, in bidding order (left of dealer)."""
    n = len(bids)
    out = []
    for k in range(1, n + 1):
        seat = (dealer + k) % n
        b = bids[seat]
        if b is not None:
            out.append(_bid_message(seat, b))
    return out


def _trick_message(trick: Trick) -> game_pb2.Trick:
    """The shared ``Trick`` message of a completed trick (cached: they repeat each call)."""
    msg = _TRICKS.get(trick)
    if msg is None:
        if len(_TRICKS) >= _TRICK_CACHE_SIZE:
            _TRICKS.clear()
        cards = _CARDS
        msg = _TRICKS[trick] = game_pb2.Trick(
            leader=trick.leader, cards=[cards[c] for c in trick.cards], winner=trick.winner)
    return msg


def _fill_view(msg: game_pb2.SeatView, view: View) -> None:
    """Write ``view`` (all but its decision and legal actions) into an empty SeatView."""
    cards = _CARDS
    msg.game = _GAME_ENUMS[view.game]
    msg.options.CopyFrom(_options_message(view.game, view.options))
    msg.seat = view.seat
    msg.players = view.players
    msg.round = view.round
    msg.rounds = view.rounds
    msg.dealer = view.dealer
    msg.hand.extend([cards[c] for c in view.hand])
    if view.trump_card is not None:
        msg.trump_card.CopyFrom(cards[view.trump_card])
    if view.trump is not None:
        msg.trump = _SUIT_ENUMS[view.trump]
    msg.bids.extend(_bids_in_order(view.bids, view.dealer))
    trick = msg.trick
    trick.leader = view.trick.leader
    trick.cards.extend([cards[c] for c in view.trick.cards])
    msg.tricks.extend([_trick_message(t) for t in view.tricks])
    msg.won.extend(view.won)
    msg.scores.extend(view.scores)
    msg.tricks_in_round = view.tricks_in_round
    msg.stock_size = view.stock_size


def view_to_message(view: View) -> game_pb2.SeatView:
    """A new ``SeatView`` of a domain view (its decision and legal actions left out: they
    travel in the request)."""
    msg = game_pb2.SeatView()
    _fill_view(msg, view)
    return msg


def decision_request(view: View, game_id: str, table_id: str, deadline_ms: int,
                     bank_ms: int) -> DecisionRequest:
    """The request for the decision ``view`` faces: a ``BidRequest``, a
    ``ChooseTrumpRequest`` or a ``PlayRequest``, with the view and its legal actions.

    ``view`` must be the view of the seat to move (``view.decision`` set); ValueError
    otherwise. The times are clamped to what the fields hold (0..2**32-1 ms).
    """
    decision = view.decision
    if not 0 <= deadline_ms <= _MAX_MS:
        deadline_ms = 0 if deadline_ms < 0 else _MAX_MS
    if not 0 <= bank_ms <= _MAX_MS:
        bank_ms = 0 if bank_ms < 0 else _MAX_MS
    req: DecisionRequest
    if decision is Decision.PLAY:
        req = bot_pb2.PlayRequest(
            game_id=game_id, table_id=table_id, deadline_ms=deadline_ms, bank_ms=bank_ms)
        cards = _CARDS
        req.legal_cards.extend([cards[c] for c in view.legal])
    elif decision is Decision.BID:
        req = bot_pb2.BidRequest(game_id=game_id, table_id=table_id, legal_bids=view.legal,
                                 deadline_ms=deadline_ms, bank_ms=bank_ms)
    elif decision is Decision.TRUMP:
        req = bot_pb2.ChooseTrumpRequest(
            game_id=game_id, table_id=table_id, deadline_ms=deadline_ms, bank_ms=bank_ms,
            legal_suits=[_SUIT_ENUMS[s] for s in view.legal])
    else:
        raise ValueError(f"seat {view.seat} has no decision to make in this view")
    _fill_view(req.view, view)
    return req


def _check_by_seat(name: str, values: Sequence[int], players: int) -> None:
    if len(values) != players:
        raise WireError(f"{name} has {len(values)} entries for {players} players")


def _check_seat(name: str, seat: int, players: int) -> None:
    if seat >= players:
        raise WireError(f"{name} {seat} is not a seat of {players} players")


def _trick_from(msg: game_pb2.Trick, game: str, players: int, complete: bool) -> Trick:
    _check_seat("trick leader", msg.leader, players)
    has_winner = msg.HasField("winner")
    if has_winner != complete:
        raise WireError("a completed trick has no winner" if complete
                        else "the trick in progress has a winner")
    cards = _cards_from(msg.cards, game)
    if len(cards) != players if complete else len(cards) >= players:
        raise WireError(f"a {'completed' if complete else 'unfinished'} trick has "
                        f"{len(cards)} cards for {players} players")
    if has_winner:
        _check_seat("trick winner", msg.winner, players)
        return Trick(msg.leader, cards, msg.winner)
    return Trick(msg.leader, cards)


def _bids_by_seat(msgs: Sequence[game_pb2.Bid], players: int) -> tuple[int | None, ...]:
    bids: list[int | None] = [None] * players
    for b in msgs:
        _check_seat("bid seat", b.seat, players)
        if bids[b.seat] is not None:
            raise WireError(f"seat {b.seat} has two bids")
        bids[b.seat] = b.tricks
    return tuple(bids)


_PARSED_TRICKS: dict[tuple[str, int, bytes], Trick] = {}


_PARSED_TRICKS_SIZE: Final = 4096


def _completed_tricks(msgs: Sequence[game_pb2.Trick], game: str,
                      players: int) -> tuple[Trick, ...]:
    """The completed tricks of a view; each request repeats the round's earlier tricks,
    so parsed ones are kept by their bytes (checked once, then looked up)."""
    out = []
    cache = _PARSED_TRICKS
    for t in msgs:
        key = (game, players, t.SerializeToString(deterministic=True))
        trick = cache.get(key)
        if trick is None:
            trick = _trick_from(t, game, players, complete=True)
            if len(cache) >= _PARSED_TRICKS_SIZE:
                cache.clear()
            cache[key] = trick
        out.append(trick)
    return tuple(out)


def view_from_message(msg: game_pb2.SeatView, decision: Decision | None = None,
                      legal: Sequence[int] = ()) -> View:
    """The domain view in a ``SeatView``, with ``decision`` and ``legal`` (which travel in
    the request); raises :class:`WireError` for a malformed view."""
    game = game_from_enum(msg.game)
    if not msg.HasField("options"):
        raise WireError("the view has no options")
    options = options_from_message(game, msg.options)
    players = msg.players
    if players != options["players"]:
        raise WireError(f"the view has {players} players, its options "
                        f"{options['players']}")
    _check_seat("seat", msg.seat, players)
    _check_seat("dealer", msg.dealer, players)
    if not 1 <= msg.round <= msg.rounds:
        raise WireError(f"round {msg.round} is outside 1..{msg.rounds}")
    _check_by_seat("won", msg.won, players)
    _check_by_seat("scores", msg.scores, players)
    if not msg.HasField("trick"):
        raise WireError("the view has no trick in progress")
    return View(
        game=game, seat=msg.seat, players=players, options=options, round=msg.round,
        rounds=msg.rounds, dealer=msg.dealer, hand=_cards_from(msg.hand, game),
        trump_card=(card_from_message(msg.trump_card, game) if msg.HasField("trump_card")
                    else None),
        trump=_optional_suit(msg.trump), bids=_bids_by_seat(msg.bids, players),
        trick=_trick_from(msg.trick, game, players, complete=False),
        tricks=_completed_tricks(msg.tricks, game, players),
        won=tuple(msg.won), scores=tuple(msg.scores), stock_size=msg.stock_size,
        tricks_in_round=msg.tricks_in_round, decision=decision, legal=tuple(legal))


def view_from_request(request: DecisionRequest) -> View:
    """The domain view of the seat a decision request asks, its decision and legal
    actions included; raises :class:`WireError` for a malformed request."""
    if not request.HasField("view"):
        raise WireError(f"{type(request).__name__} has no view")
    legal: tuple[int, ...]
    if isinstance(request, bot_pb2.PlayRequest):
        decision = Decision.PLAY
        game = game_from_enum(request.view.game)
        legal = _cards_from(request.legal_cards, game)
    elif isinstance(request, bot_pb2.BidRequest):
        decision = Decision.BID
        legal = tuple(request.legal_bids)
    elif isinstance(request, bot_pb2.ChooseTrumpRequest):
        decision = Decision.TRUMP
        legal = tuple(suit_from_enum(s) for s in request.legal_suits)
    else:
        raise TypeError(f"{type(request).__name__} is not a decision request")
    if not legal:
        raise WireError(f"{type(request).__name__} has no legal actions")
    return view_from_message(request.view, decision, legal)


def action_to_response(decision: Decision, action: int) -> DecisionResponse:
    """The answer carrying ``action`` for a ``decision``: ``BidResponse``,
    ``ChooseTrumpResponse`` or ``PlayResponse`` (ValueError for no card or suit)."""
    if decision is Decision.PLAY:
        cached = _CARDS.get(action)
        if cached is None:
            raise ValueError(f"{action!r} is not a card")
        return bot_pb2.PlayResponse(card=cached)
    if decision is Decision.BID:
        if action < 0:
            raise ValueError(f"bid {action} is negative")
        return bot_pb2.BidResponse(tricks=action)
    if not 0 <= action < 4:
        raise ValueError(f"{action!r} is not a suit (0..3)")
    return bot_pb2.ChooseTrumpResponse(suit=_SUIT_ENUMS[action])


def action_from_response(response: DecisionResponse, game: str | None = None) -> int:
    """The action in a bot's answer: a bid, a suit (0..3) or a card. Raises
    :class:`WireError` for a malformed answer (no card, an unknown suit, a card that is no
    card, or given ``game``, no card of its deck). Legality is left to the rules."""
    if isinstance(response, bot_pb2.PlayResponse):
        if not response.HasField("card"):
            raise WireError("PlayResponse has no card")
        return card_from_message(response.card, game)
    if isinstance(response, bot_pb2.BidResponse):
        return response.tricks
    if isinstance(response, bot_pb2.ChooseTrumpResponse):
        try:
            return suit_from_enum(response.suit)
        except WireError as exc:
            raise WireError(f"ChooseTrumpResponse: {exc}") from None
    raise TypeError(f"{type(response).__name__} is not a decision response")


def hello_request(referee_version: str) -> bot_pb2.HelloRequest:
    """The referee's Hello, offering :data:`PROTOCOL_VERSION`."""
    return bot_pb2.HelloRequest(protocol_version=PROTOCOL_VERSION,
                                referee_version=referee_version)


def hello_response(info: BotInfo) -> bot_pb2.HelloResponse:
    """A bot's answer to Hello."""
    return bot_pb2.HelloResponse(
        name=info.name, version=info.version, author=info.author,
        protocol_version=info.protocol_version,
        games=[game_to_enum(g) for g in info.games], skip_round_ended=info.skip_round_ended)


def bot_info_from_response(response: bot_pb2.HelloResponse) -> BotInfo:
    """The :class:`BotInfo` in a bot's Hello answer; :class:`WireError` when it has no
    name, a name, version or author against :mod:`arena.model.names`' rule, no protocol
    version, or no game this code knows."""
    if not response.name.strip():
        raise WireError("HelloResponse has no name")
    try:
        check_hello(response.name, response.version, response.author)
    except NameError_ as e:
        raise WireError(str(e)) from None
    if response.protocol_version == 0:
        raise WireError("HelloResponse has no protocol_version")
    games = tuple(dict.fromkeys(_GAME_NAMES[g] for g in response.games if g in _GAME_NAMES))
    if not games:
        raise WireError("HelloResponse names no game this referee knows")
    return BotInfo(response.name, response.version, response.author,
                   response.protocol_version, games, response.skip_round_ended)


def round_ended_request(result: RoundResult) -> bot_pb2.RoundEndedRequest:
    """The RoundEnded notification telling ``result``."""
    msg = bot_pb2.RoundEndedRequest(
        game_id=result.game_id, table_id=result.table_id, game=_GAME_ENUMS[result.game],
        seat=result.seat, players=result.players, round=result.round, rounds=result.rounds,
        dealer=result.dealer, trump=suit_to_enum(result.trump),
        bids=_bids_in_order(result.bids, result.dealer),
        tricks=[_trick_message(t) for t in result.tricks], won=result.won,
        points=result.points, totals=result.totals)
    if result.trump_card is not None:
        msg.trump_card.CopyFrom(_CARDS[result.trump_card])
    return msg


def round_result_from_request(msg: bot_pb2.RoundEndedRequest) -> RoundResult:
    """The :class:`RoundResult` in a RoundEnded notification; :class:`WireError` if it is
    malformed."""
    game = game_from_enum(msg.game)
    players = msg.players
    if players == 0:
        raise WireError("RoundEndedRequest has no players")
    _check_seat("seat", msg.seat, players)
    _check_seat("dealer", msg.dealer, players)
    for name in ("won", "points", "totals"):
        _check_by_seat(name, getattr(msg, name), players)
    return RoundResult(
        game_id=msg.game_id, table_id=msg.table_id, game=game, seat=msg.seat,
        players=players, round=msg.round, rounds=msg.rounds, dealer=msg.dealer,
        trump_card=(card_from_message(msg.trump_card, game) if msg.HasField("trump_card")
                    else None),
        trump=_optional_suit(msg.trump), bids=_bids_by_seat(msg.bids, players),
        tricks=_completed_tricks(msg.tricks, game, players),
        won=tuple(msg.won), points=tuple(msg.points), totals=tuple(msg.totals))


def game_ended_request(result: GameResult) -> bot_pb2.GameEndedRequest:
    """The GameEnded notification telling ``result``."""
    return bot_pb2.GameEndedRequest(
        game_id=result.game_id, table_id=result.table_id, game=_GAME_ENUMS[result.game],
        seat=result.seat, players=result.players, totals=result.totals,
        places=result.places, forfeited=result.forfeited,
        forfeit_reason=result.forfeit_reason)


def game_result_from_request(msg: bot_pb2.GameEndedRequest) -> GameResult:
    """The :class:`GameResult` in a GameEnded notification; :class:`WireError` if it is
    malformed."""
    game = game_from_enum(msg.game)
    players = msg.players
    if players == 0:
        raise WireError("GameEndedRequest has no players")
    _check_seat("seat", msg.seat, players)
    _check_by_seat("totals", msg.totals, players)
    _check_by_seat("places", msg.places, players)
    return GameResult(msg.game_id, msg.table_id, game, msg.seat, players, tuple(msg.totals),
                      tuple(msg.places), msg.forfeited, msg.forfeit_reason)
