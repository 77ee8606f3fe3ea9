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
into each request. Messages returned by the public functions are always fresh. The
cards, suits, options, bids and tricks, and their caches, are in
:mod:`arena.wire.serde_values`; their public conversions are importable from here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeAlias

from arena.model.names import NameError_, check_hello
from arena.model.results import BotInfo, GameResult, RoundResult
from arena.rules import Decision, Trick, View
from arena.v1 import bot_pb2, game_pb2
from arena.wire.serde_values import (
    CARDS,
    GAME_ENUMS,
    GAME_NAMES,
    MAX_MS,
    PROTOCOL_VERSION,
    SUIT_ENUMS,
    WireError,
    bids_in_order,
    card_from_message,
    card_to_message,
    cards_from,
    game_from_enum,
    game_to_enum,
    optional_suit,
    options_from_message,
    options_message,
    options_to_message,
    suit_from_enum,
    suit_to_enum,
    trick_message,
)

__all__ = ["PROTOCOL_VERSION", "DecisionRequest", "DecisionResponse", "WireError",
           "action_from_response", "action_to_response", "bot_info_from_response",
           "card_from_message", "card_to_message", "decision_request", "game_ended_request",
           "game_from_enum", "game_result_from_request", "game_to_enum", "hello_request",
           "hello_response", "options_from_message", "options_to_message",
           "round_ended_request", "round_result_from_request", "suit_from_enum",
           "suit_to_enum", "view_from_message", "view_from_request", "view_to_message"]

DecisionRequest: TypeAlias = bot_pb2.BidRequest | bot_pb2.ChooseTrumpRequest | bot_pb2.PlayRequest


DecisionResponse: TypeAlias = (
    bot_pb2.BidResponse | bot_pb2.ChooseTrumpResponse | bot_pb2.PlayResponse)


def _fill_view(msg: game_pb2.SeatView, view: View) -> None:
    """Write ``view`` (all but its decision and legal actions) into an empty SeatView."""
    cards = CARDS
    msg.game = GAME_ENUMS[view.game]
    msg.options.CopyFrom(options_message(view.game, view.options))
    msg.seat = view.seat
    msg.players = view.players
    msg.round = view.round
    msg.rounds = view.rounds
    msg.dealer = view.dealer
    msg.hand.extend([cards[c] for c in view.hand])
    if view.trump_card is not None:
        msg.trump_card.CopyFrom(cards[view.trump_card])
    if view.trump is not None:
        msg.trump = SUIT_ENUMS[view.trump]
    msg.bids.extend(bids_in_order(view.bids, view.dealer))
    trick = msg.trick
    trick.leader = view.trick.leader
    trick.cards.extend([cards[c] for c in view.trick.cards])
    msg.tricks.extend([trick_message(t) for t in view.tricks])
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
    if not 0 <= deadline_ms <= MAX_MS:
        deadline_ms = 0 if deadline_ms < 0 else MAX_MS
    if not 0 <= bank_ms <= MAX_MS:
        bank_ms = 0 if bank_ms < 0 else MAX_MS
    req: DecisionRequest
    if decision is Decision.PLAY:
        req = bot_pb2.PlayRequest(
            game_id=game_id, table_id=table_id, deadline_ms=deadline_ms, bank_ms=bank_ms)
        cards = CARDS
        req.legal_cards.extend([cards[c] for c in view.legal])
    elif decision is Decision.BID:
        req = bot_pb2.BidRequest(game_id=game_id, table_id=table_id, legal_bids=view.legal,
                                 deadline_ms=deadline_ms, bank_ms=bank_ms)
    elif decision is Decision.TRUMP:
        req = bot_pb2.ChooseTrumpRequest(
            game_id=game_id, table_id=table_id, deadline_ms=deadline_ms, bank_ms=bank_ms,
            legal_suits=[SUIT_ENUMS[s] for s in view.legal])
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
    cards = cards_from(msg.cards, game)
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
        rounds=msg.rounds, dealer=msg.dealer, hand=cards_from(msg.hand, game),
        trump_card=(card_from_message(msg.trump_card, game) if msg.HasField("trump_card")
                    else None),
        trump=optional_suit(msg.trump), bids=_bids_by_seat(msg.bids, players),
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
        legal = cards_from(request.legal_cards, game)
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
        cached = CARDS.get(action)
        if cached is None:
            raise ValueError(f"{action!r} is not a card")
        return bot_pb2.PlayResponse(card=cached)
    if decision is Decision.BID:
        if action < 0:
            raise ValueError(f"bid {action} is negative")
        return bot_pb2.BidResponse(tricks=action)
    if not 0 <= action < 4:
        raise ValueError(f"{action!r} is not a suit (0..3)")
    return bot_pb2.ChooseTrumpResponse(suit=SUIT_ENUMS[action])


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
    games = tuple(dict.fromkeys(GAME_NAMES[g] for g in response.games if g in GAME_NAMES))
    if not games:
        raise WireError("HelloResponse names no game this referee knows")
    return BotInfo(response.name, response.version, response.author,
                   response.protocol_version, games, response.skip_round_ended)


def round_ended_request(result: RoundResult) -> bot_pb2.RoundEndedRequest:
    """The RoundEnded notification telling ``result``."""
    msg = bot_pb2.RoundEndedRequest(
        game_id=result.game_id, table_id=result.table_id, game=GAME_ENUMS[result.game],
        seat=result.seat, players=result.players, round=result.round, rounds=result.rounds,
        dealer=result.dealer, trump=suit_to_enum(result.trump),
        bids=bids_in_order(result.bids, result.dealer),
        tricks=[trick_message(t) for t in result.tricks], won=result.won,
        points=result.points, totals=result.totals)
    if result.trump_card is not None:
        msg.trump_card.CopyFrom(CARDS[result.trump_card])
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
        trump=optional_suit(msg.trump), bids=_bids_by_seat(msg.bids, players),
        tricks=_completed_tricks(msg.tricks, game, players),
        won=tuple(msg.won), points=tuple(msg.points), totals=tuple(msg.totals))


def game_ended_request(result: GameResult) -> bot_pb2.GameEndedRequest:
    """The GameEnded notification telling ``result``."""
    return bot_pb2.GameEndedRequest(
        game_id=result.game_id, table_id=result.table_id, game=GAME_ENUMS[result.game],
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
