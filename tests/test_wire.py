"""arena.wire: domain values <-> arena.v1 messages, malformed input, information hiding."""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import examples
from google.protobuf.message import DecodeError, Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.model import results
from arena.rules import Decision, Game, View, new_game, option_specs
from arena.rules.cards import JESTER, WIZARD, make_card, standard_deck, wizard_deck
from arena.v1 import bot_pb2, game_pb2
from arena.wire import serde as wire
from arena.wire.serde import WireError

GAMES: list[tuple[str, dict[str, Any], int]] = [
    ("wizard", {"players": 3}, 1),
    ("wizard", {"players": 4, "hook_rule": True}, 2),
    ("wizard", {"players": 6}, 3),
    ("trumps", {"players": 2}, 4),
    ("trumps", {"players": 3}, 5),
    ("trumps", {"players": 4, "announce": True}, 6),
    ("trumps", {"players": 5, "trump": "H"}, 7),
    ("trumps", {"players": 7, "draw": False, "announce": True}, 8),
]
GAME_IDS = [f"{g}-{'-'.join(f'{k}={v}' for k, v in o.items())}" for g, o, _ in GAMES]


def play(game: str, options: dict[str, Any], seed: int) -> Iterator[tuple[Game, View]]:
    """Every decision point of a game played with random legal actions: (game, view)."""
    g = new_game(game, options, seed)
    rng = random.Random(seed)
    while g.to_move is not None:
        yield g, g.view(g.to_move)
        g.apply(rng.choice(g.legal_actions()))


def finished(game: str, options: dict[str, Any], seed: int) -> Game:
    """A game played to its end with random legal actions."""
    g = new_game(game, options, seed)
    rng = random.Random(seed)
    while g.to_move is not None:
        g.apply(rng.choice(g.legal_actions()))
    return g


def over_wire(msg: Message) -> Any:
    """``msg`` serialized and parsed back, as the other end sees it."""
    return type(msg).FromString(msg.SerializeToString())


def request_at(game: str, options: dict[str, Any], seed: int,
               pred: Callable[[View], bool]) -> wire.DecisionRequest:
    for _, view in play(game, options, seed):
        if pred(view):
            return wire.decision_request(view, "g1", "t1", 1000, 5000)
    raise AssertionError("no such decision point")


# -- cards, suits, games, options -------------------------------------------------------


@pytest.mark.parametrize(("game", "deck"), [("wizard", wizard_deck()),
                                            ("trumps", standard_deck())])
def test_every_card_of_both_decks_round_trips(game: str, deck: list[int]) -> None:
    seen = set()
    for card in set(deck):
        msg = over_wire(wire.card_to_message(card))
        assert wire.card_from_message(msg, game) == card
        assert wire.card_from_message(msg) == card
        seen.add(msg.SerializeToString())
    assert len(seen) == len(set(deck))  # distinct cards have distinct messages


def test_card_messages_say_suit_rank_and_kind() -> None:
    assert wire.card_to_message(make_card(2, 7)) == game_pb2.Card(
        suit=game_pb2.SUIT_HEARTS, rank=7, kind=game_pb2.CARD_KIND_SUITED)
    assert wire.card_to_message(make_card(3, 14)) == game_pb2.Card(
        suit=game_pb2.SUIT_SPADES, rank=14, kind=game_pb2.CARD_KIND_SUITED)
    assert wire.card_to_message(WIZARD) == game_pb2.Card(kind=game_pb2.CARD_KIND_WIZARD)
    assert wire.card_to_message(JESTER) == game_pb2.Card(kind=game_pb2.CARD_KIND_JESTER)
    with pytest.raises(ValueError, match="not a card"):
        wire.card_to_message(make_card(1, 15))


@pytest.mark.parametrize(("card", "game", "reason"), [
    (game_pb2.Card(kind=game_pb2.CARD_KIND_WIZARD), "trumps", "the trumps deck has no Wizard"),
    (game_pb2.Card(kind=game_pb2.CARD_KIND_JESTER), "trumps", "the trumps deck has no Jester"),
    (game_pb2.Card(suit=1, rank=1, kind=1), "trumps", "rank 1 is not in the trumps deck"),
    (game_pb2.Card(suit=1, rank=14, kind=1), "wizard", "rank 14 is not in the wizard deck"),
    (game_pb2.Card(suit=4, rank=0, kind=1), None, "rank 0 is outside 1..14"),
    (game_pb2.Card(suit=4, rank=15, kind=1), None, "rank 15 is outside 1..14"),
    (game_pb2.Card(suit=0, rank=5, kind=1), None, "no suit"),
    (game_pb2.Card(suit=9, rank=5, kind=1), None, "unknown suit 9"),
    (game_pb2.Card(suit=2, kind=game_pb2.CARD_KIND_WIZARD), None, "Wizard card has no suit"),
    (game_pb2.Card(rank=3, kind=game_pb2.CARD_KIND_JESTER), None, "Jester card has no suit"),
    (game_pb2.Card(suit=1, rank=3), None, "card kind not given"),
    (game_pb2.Card(suit=1, rank=3, kind=7), None, "unknown card kind 7"),
])
def test_a_message_that_is_no_card_is_refused(card: game_pb2.Card, game: str | None,
                                              reason: str) -> None:
    with pytest.raises(WireError, match=reason) as info:
        wire.card_from_message(over_wire(card), game)
    assert "\n" not in str(info.value)


def test_suits_and_games_round_trip() -> None:
    for suit in range(4):
        assert wire.suit_from_enum(wire.suit_to_enum(suit)) == suit
    assert wire.suit_to_enum(None) == game_pb2.SUIT_UNSPECIFIED
    for bad, reason in [(0, "no suit given"), (5, "unknown suit 5"), (-1, "unknown suit -1")]:
        with pytest.raises(WireError, match=reason):
            wire.suit_from_enum(bad)
    for name in ("wizard", "trumps"):
        assert wire.game_from_enum(wire.game_to_enum(name)) == name
    with pytest.raises(WireError, match="no game given"):
        wire.game_from_enum(0)
    with pytest.raises(WireError, match="unknown game 3"):
        wire.game_from_enum(3)


def _all_options(game: str) -> Iterator[dict[str, Any]]:
    specs = option_specs(game)
    choices = []
    for spec in specs.values():
        if spec.kind == "bool":
            choices.append([False, True])
        elif spec.kind == "int":
            choices.append(list(range(spec.low, spec.high + 1)))
        else:
            choices.append([None, "C", "D", "H", "S"])
    for values in itertools.product(*choices):
        yield dict(zip(specs, values, strict=True))


@pytest.mark.parametrize("game", ["wizard", "trumps"])
def test_every_combination_of_options_round_trips(game: str) -> None:
    count = 0
    for options in _all_options(game):
        msg = over_wire(wire.options_to_message(game, options))
        assert wire.options_from_message(game, msg) == options
        count += 1
    assert count == (4 * 2 if game == "wizard" else 6 * 5 * 2 * 2)


def test_options_carry_their_values() -> None:
    msg = wire.options_to_message("trumps", new_game("trumps", {"trump": "D", "draw": False,
                                                                "players": 3}).options)
    assert (msg.players, msg.trump, msg.draw, msg.announce, msg.hook_rule) == (
        3, game_pb2.SUIT_DIAMONDS, False, False, False)


@pytest.mark.parametrize(("options", "reason"), [
    (game_pb2.Options(), "option players: 0 is not allowed"),
    (game_pb2.Options(players=8), "option players: 8 is not allowed; expected an integer 2..7"),
    (game_pb2.Options(players=4, trump=6), "option trump: unknown suit 6"),
])
def test_malformed_options_are_refused(options: game_pb2.Options, reason: str) -> None:
    with pytest.raises(WireError, match=reason):
        wire.options_from_message("trumps", options)


# -- views and decision requests --------------------------------------------------------


@pytest.mark.parametrize(("game", "options", "seed"), GAMES, ids=GAME_IDS)
def test_view_request_view_round_trip_at_every_decision(
        game: str, options: dict[str, Any], seed: int) -> None:
    kinds = {Decision.BID: bot_pb2.BidRequest, Decision.TRUMP: bot_pb2.ChooseTrumpRequest,
             Decision.PLAY: bot_pb2.PlayRequest}
    seen = set()
    for g, view in play(game, options, seed):
        req = wire.decision_request(view, "game-7", "table-2", 750, 12000)
        assert type(req) is kinds[view.decision]  # type: ignore[index]
        got = over_wire(req)
        assert (got.game_id, got.table_id, got.deadline_ms, got.bank_ms) == (
            "game-7", "table-2", 750, 12000)
        assert wire.view_from_request(got) == view
        # A seat that is not to move: its view (no decision, no legal actions) round-trips.
        other = g.view((view.seat + 1) % view.players)
        assert wire.view_from_message(over_wire(wire.view_to_message(other))) == other
        seen.add(view.decision)
    assert Decision.PLAY in seen
    assert (Decision.BID in seen) == (game == "wizard" or options.get("announce", False))


def test_a_turned_wizard_asks_the_dealer_for_a_suit() -> None:
    # Find a Wizard game whose turned card is a Wizard, and check the request.
    for seed in range(100):
        g = new_game("wizard", {"players": 3}, seed)
        if g.decision is Decision.TRUMP:
            break
    else:
        raise AssertionError("no Wizard turned in 100 deals")
    view = g.view(g.to_move)  # type: ignore[arg-type]
    req = wire.decision_request(view, "g", "t", 100, 0)
    assert isinstance(req, bot_pb2.ChooseTrumpRequest)
    assert list(req.legal_suits) == [1, 2, 3, 4]
    assert req.view.trump_card.kind == game_pb2.CARD_KIND_WIZARD
    assert req.view.trump == game_pb2.SUIT_UNSPECIFIED
    assert req.view.seat == req.view.dealer == 0
    assert wire.view_from_request(over_wire(req)) == view


def test_a_request_says_everything_a_seat_sees() -> None:
    req = request_at("wizard", {"players": 4}, 7, lambda v: v.round == 6 and len(v.tricks) == 3
                     and len(v.trick.cards) == 2)
    assert isinstance(req, bot_pb2.PlayRequest)
    v = req.view
    assert (v.game, v.options.players, v.players, v.round, v.rounds, v.tricks_in_round) == (
        game_pb2.GAME_WIZARD, 4, 4, 6, 15, 6)
    assert v.dealer == 1 and len(v.hand) == 3 and len(v.tricks) == 3 and len(v.trick.cards) == 2
    assert [b.seat for b in v.bids] == [2, 3, 0, 1]  # in bidding order, left of the dealer
    assert all(t.HasField("winner") for t in v.tricks) and not v.trick.HasField("winner")
    assert v.trick.leader == v.tricks[-1].winner
    assert sum(v.won) == 3 and len(v.scores) == 4 and v.stock_size == 60 - 24
    assert 1 <= len(req.legal_cards) <= 3


def test_bids_not_yet_made_are_absent() -> None:
    req = request_at("wizard", {"players": 5}, 3, lambda v: v.round == 2
                     and v.decision is Decision.BID and sum(b is not None for b in v.bids) == 2)
    assert isinstance(req, bot_pb2.BidRequest)
    assert req.view.dealer == 1
    assert [b.seat for b in req.view.bids] == [2, 3]  # left of the dealer first
    assert list(req.legal_bids) == [0, 1, 2]
    view = wire.view_from_request(req)
    assert view.bids == (None, None, req.view.bids[0].tricks, req.view.bids[1].tricks, None)


def test_decision_request_needs_a_decision() -> None:
    g = new_game("wizard", {}, 1)
    with pytest.raises(ValueError, match="no decision"):
        wire.decision_request(g.view((g.to_move + 1) % 4), "g", "t", 1, 1)  # type: ignore[operator]


def test_cached_messages_are_never_handed_out() -> None:
    card = make_card(0, 5)
    msg = wire.card_to_message(card)
    msg.rank = 9
    assert wire.card_to_message(card).rank == 5
    _, view = next(play("wizard", {"players": 3}, 4))
    req = wire.decision_request(view, "g", "t", 1, 1)
    before = req.SerializeToString()
    mutated = wire.decision_request(view, "g", "t", 1, 1)
    mutated.view.hand[0].rank = 13
    mutated.view.options.players = 6
    assert wire.decision_request(view, "g", "t", 1, 1).SerializeToString() == before


# -- information hiding -----------------------------------------------------------------


def _cards_in(msg: Message) -> list[int]:
    """Every Card message anywhere inside ``msg``, as domain cards."""
    found = []
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        for item in (value if field.is_repeated else [value]):
            if field.message_type.full_name == "arena.v1.Card":
                found.append(wire.card_from_message(item))
            else:
                found.extend(_cards_in(item))
    return found


def _leaks(req: Message, view: View) -> set[int]:
    """Cards in ``req`` that the seat may not see: neither its own nor public."""
    public = set(view.trick.cards) | {c for t in view.tricks for c in t.cards}
    if view.trump_card is not None:
        public.add(view.trump_card)
    return set(_cards_in(req)) - set(view.hand) - public


def _hidden(g: Game, seat: int) -> set[int]:
    """Cards held by other seats or still in the stock (the turned card excepted)."""
    entry = g.log[-1]
    drawn = sum(len(d) for d in entry.draws or [])
    stock = [c for c in entry.stock[drawn:] if c != entry.trump_card]
    return {c for s, hand in enumerate(g.hands) if s != seat for c in hand} | set(stock)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("game", "options", "seed"), GAMES, ids=GAME_IDS)
def test_a_request_holds_no_other_hand_and_no_stock(
        game: str, options: dict[str, Any], seed: int) -> None:
    checked = 0
    for g, view in play(game, options, seed):
        req = over_wire(wire.decision_request(view, "g", "t", 1000, 0))
        assert [wire.card_from_message(c) for c in req.view.hand] == list(view.hand)
        assert not _leaks(req, view)
        own_or_public = set(view.hand) | set(_cards_in(req.view.trick)) | {
            c for t in req.view.tricks for c in _cards_in(t)} | {view.trump_card}
        # Wizards and Jesters repeat: only a card the seat may see anyway may recur.
        assert not (set(_cards_in(req)) & (_hidden(g, view.seat) - own_or_public))
        checked += 1
    assert checked > 20


def test_the_leak_check_finds_a_leak() -> None:
    g, view = next((g, v) for g, v in play("trumps", {"players": 4}, 9) if len(v.tricks) == 2)
    req = wire.decision_request(view, "g", "t", 1, 1)
    other = g.hands[(view.seat + 1) % 4][0]  # type: ignore[attr-defined]
    req.view.trick.cards.append(wire.card_to_message(other))
    assert _leaks(req, view) == {other}
    assert other in _hidden(g, view.seat)


# -- malformed requests -----------------------------------------------------------------


def _mid_round_request() -> bot_pb2.PlayRequest:
    req = request_at("wizard", {"players": 3}, 11, lambda v: v.round == 5 and len(v.tricks) == 2
                     and len(v.trick.cards) == 1)
    assert isinstance(req, bot_pb2.PlayRequest)
    return req


def _set(path: str, value: Any) -> Callable[[Any], None]:
    def apply(req: Any) -> None:
        *parents, name = path.split(".")
        obj = req
        for p in parents:
            obj = obj[int(p)] if p.isdigit() else getattr(obj, p)
        setattr(obj, name, value)
    return apply


MALFORMED_REQUESTS: list[tuple[str, Callable[[Any], None], str]] = [
    ("no view", lambda r: r.ClearField("view"), "PlayRequest has no view"),
    ("no legal cards", lambda r: r.ClearField("legal_cards"), "has no legal actions"),
    ("no game", _set("view.game", 0), "no game given"),
    ("unknown game", _set("view.game", 12), "unknown game 12"),
    ("no options", lambda r: r.view.ClearField("options"), "the view has no options"),
    ("bad players", _set("view.options.players", 9), "option players: 9 is not allowed"),
    ("players mismatch", _set("view.players", 4), "4 players, its options 3"),
    ("seat", _set("view.seat", 3), "seat 3 is not a seat of 3 players"),
    ("dealer", _set("view.dealer", 5), "dealer 5 is not a seat"),
    ("round", _set("view.round", 0), "round 0 is outside 1..20"),
    ("unknown card kind", _set("view.hand.0.kind", 5), "unknown card kind 5"),
    ("rank out of deck", _set("view.hand.0.rank", 14), "rank 14 is not in the wizard deck"),
    ("unknown trump", _set("view.trump", 7), "unknown suit 7"),
    ("no trick", lambda r: r.view.ClearField("trick"), "no trick in progress"),
    ("winner in progress", _set("view.trick.winner", 1), "trick in progress has a winner"),
    ("no winner", lambda r: r.view.tricks[0].ClearField("winner"), "completed trick has no"),
    ("short trick", lambda r: r.view.tricks[1].cards.pop(), "completed trick has 2 cards"),
    ("leader", _set("view.trick.leader", 3), "trick leader 3 is not a seat"),
    ("won", lambda r: r.view.won.append(0), "won has 4 entries for 3 players"),
    ("scores", lambda r: r.view.scores.pop(), "scores has 2 entries"),
    ("bid seat", lambda r: r.view.bids.add(seat=3, tricks=1), "bid seat 3 is not a seat"),
    ("two bids", lambda r: r.view.bids.append(r.view.bids[0]), "has two bids"),
    ("no legal kind", _set("legal_cards.0.kind", 0), "card kind not given"),
    ("trump card", _set("view.trump_card.suit", 8), "unknown suit 8"),
]


@pytest.mark.parametrize(("change", "reason"), [m[1:] for m in MALFORMED_REQUESTS],
                         ids=[m[0] for m in MALFORMED_REQUESTS])
def test_a_malformed_request_is_refused(change: Callable[[Any], None], reason: str) -> None:
    req = _mid_round_request()
    assert wire.view_from_request(req)  # valid before the change
    change(req)
    with pytest.raises(WireError, match=reason) as info:
        wire.view_from_request(over_wire(req))
    assert "\n" not in str(info.value)


def test_a_choose_trump_request_without_a_suit_is_refused() -> None:
    req = bot_pb2.ChooseTrumpRequest(legal_suits=[0], view=_mid_round_request().view)
    with pytest.raises(WireError, match="no suit given"):
        wire.view_from_request(req)


_MID_ROUND_BYTES = _mid_round_request().SerializeToString()
_FUZZ_PATHS = [
    "view.game", "view.seat", "view.players", "view.round", "view.rounds", "view.dealer",
    "view.trump", "view.options.players", "view.options.trump", "view.options.hook_rule",
    "view.hand.0.kind", "view.hand.0.suit", "view.hand.1.rank", "view.trump_card.kind",
    "view.trump_card.rank", "view.bids.0.seat", "view.bids.1.tricks", "view.trick.leader",
    "view.trick.cards.0.suit", "view.tricks.0.leader", "view.tricks.0.winner",
    "view.tricks.1.cards.2.kind", "view.tricks.1.cards.0.rank", "view.stock_size",
    "legal_cards.0.kind", "legal_cards.0.rank", "legal_cards.0.suit",
]


_MID_ROUND_VIEW = wire.view_from_request(bot_pb2.PlayRequest.FromString(_MID_ROUND_BYTES))
_VIEW_FIELDS = [f.name for f in dataclasses.fields(View)]


def _fields_set_by(path: str) -> set[str]:
    """The View fields an edit of the request field ``path`` may change."""
    if path.startswith("legal_cards."):
        return {"legal"}
    name = path.split(".")[1]
    if name in ("game", "options"):
        return set(_VIEW_FIELDS)  # the game and its options say how all else is read
    return {name}


def _check_accepted(view: View, edited: set[str]) -> None:
    """What a view decoded from an edited mid-round request must hold: the fields no edit
    touched as in the game, one decision with legal cards, seats within the table, and
    the same view again after a round trip through the wire."""
    for name in set(_VIEW_FIELDS) - edited:
        assert getattr(view, name) == getattr(_MID_ROUND_VIEW, name), name
    assert view.decision is Decision.PLAY and view.legal
    assert 0 <= view.seat < view.players and 0 <= view.dealer < view.players
    assert len(view.bids) == len(view.won) == len(view.scores) == view.players
    assert 1 <= view.round <= view.rounds
    again = wire.view_from_request(over_wire(wire.decision_request(view, "g", "t", 1000, 0)))
    assert again == view


def test_the_unedited_request_is_the_games_view() -> None:
    (view,) = [v for _, v in play("wizard", {"players": 3}, 11)
               if v.round == 5 and len(v.tricks) == 2 and len(v.trick.cards) == 1]
    assert view == _MID_ROUND_VIEW
    _check_accepted(_MID_ROUND_VIEW, set())


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_FUZZ_PATHS), st.integers(0, 70)), min_size=1,
                max_size=4))
def test_any_field_values_give_a_view_or_a_wire_error(edits: list[tuple[str, int]]) -> None:
    req = bot_pb2.PlayRequest.FromString(_MID_ROUND_BYTES)
    for path, value in edits:
        _set(path, bool(value) if path.endswith("hook_rule") else value)(req)
    try:
        view = wire.view_from_request(over_wire(req))
    except WireError as exc:
        assert "\n" not in str(exc)
    else:
        _check_accepted(view, set().union(*(_fields_set_by(path) for path, _ in edits)))


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1,
                max_size=4))
def test_corrupted_bytes_give_a_view_or_a_wire_error(edits: list[tuple[int, int]]) -> None:
    data = bytearray(_MID_ROUND_BYTES)
    for index, byte in edits:
        data[index % len(data)] = byte
    try:
        req = bot_pb2.PlayRequest.FromString(bytes(data))
    except DecodeError:
        return  # the gRPC layer refuses these before arena.wire sees them
    try:
        view = wire.view_from_request(req)
    except WireError as exc:
        assert "\n" not in str(exc)
    else:  # any field may have changed, but the rest must hold
        _check_accepted(view, set(_VIEW_FIELDS))


# -- answers ----------------------------------------------------------------------------


@pytest.mark.parametrize(("game", "options", "seed"), GAMES[:2] + GAMES[5:6],
                         ids=GAME_IDS[:2] + GAME_IDS[5:6])
def test_every_legal_action_round_trips_as_an_answer(
        game: str, options: dict[str, Any], seed: int) -> None:
    for _, view in play(game, options, seed):
        assert view.decision is not None
        for action in view.legal:
            resp = over_wire(wire.action_to_response(view.decision, action))
            assert wire.action_from_response(resp, game) == action


@pytest.mark.parametrize(("response", "game", "reason"), [
    (bot_pb2.PlayResponse(), None, "PlayResponse has no card"),
    (bot_pb2.PlayResponse(card=game_pb2.Card()), None, "card kind not given"),
    (bot_pb2.PlayResponse(card=game_pb2.Card(kind=1, rank=3)), None, "has no suit"),
    (bot_pb2.PlayResponse(card=game_pb2.Card(kind=1, suit=2, rank=20)), None, "rank 20"),
    (bot_pb2.PlayResponse(card=game_pb2.Card(kind=3)), "trumps", "trumps deck has no Jester"),
    (bot_pb2.ChooseTrumpResponse(), None, "ChooseTrumpResponse: no suit given"),
    (bot_pb2.ChooseTrumpResponse(suit=11), None, "ChooseTrumpResponse: unknown suit 11"),
])
def test_a_malformed_answer_is_refused(response: Any, game: str | None, reason: str) -> None:
    with pytest.raises(WireError, match=reason) as info:
        wire.action_from_response(over_wire(response), game)
    assert "\n" not in str(info.value)


@settings(max_examples=examples(200), deadline=None)
@given(st.binary(max_size=40), st.sampled_from([bot_pb2.PlayResponse, bot_pb2.BidResponse,
                                                 bot_pb2.ChooseTrumpResponse]))
def test_any_answer_gives_an_action_or_a_wire_error(data: bytes, kind: Any) -> None:
    try:
        resp = kind.FromString(data)
    except DecodeError:
        return
    try:
        action = wire.action_from_response(resp, "wizard")
    except WireError:
        return
    assert isinstance(action, int) and action >= 0


def test_action_to_response_refuses_what_is_no_action() -> None:
    with pytest.raises(ValueError, match="not a card"):
        wire.action_to_response(Decision.PLAY, 99)
    with pytest.raises(ValueError, match="not a suit"):
        wire.action_to_response(Decision.TRUMP, 4)
    with pytest.raises(ValueError, match="negative"):
        wire.action_to_response(Decision.BID, -1)


# -- hello and notifications ------------------------------------------------------------


def test_hello_round_trips() -> None:
    req = over_wire(wire.hello_request("0.1.0"))
    assert (req.protocol_version, req.referee_version) == (wire.PROTOCOL_VERSION, "0.1.0")
    assert wire.PROTOCOL_VERSION == 1
    info = results.BotInfo("ada", "2.1", "A. L.", 1, ("wizard", "trumps"))
    assert wire.bot_info_from_response(over_wire(wire.hello_response(info))) == info


@pytest.mark.parametrize(("response", "reason"), [
    (bot_pb2.HelloResponse(protocol_version=1, games=[1]), "has no name"),
    (bot_pb2.HelloResponse(name="x", games=[1]), "has no protocol_version"),
    (bot_pb2.HelloResponse(name="x", protocol_version=1), "names no game"),
    (bot_pb2.HelloResponse(name="x", protocol_version=1, games=[0, 9]), "names no game"),
])
def test_a_malformed_hello_is_refused(response: bot_pb2.HelloResponse, reason: str) -> None:
    with pytest.raises(WireError, match=reason):
        wire.bot_info_from_response(response)


def test_hello_leaves_out_games_from_the_future() -> None:
    resp = bot_pb2.HelloResponse(name="x", protocol_version=1, games=[9, 2, 2])
    assert wire.bot_info_from_response(over_wire(resp)).games == ("trumps",)


@pytest.mark.parametrize(("game", "options", "seed"), [GAMES[0], GAMES[3], GAMES[5]],
                         ids=[GAME_IDS[0], GAME_IDS[3], GAME_IDS[5]])
def test_round_and_game_ended_tell_every_result(
        game: str, options: dict[str, Any], seed: int) -> None:
    g = finished(game, options, seed)
    totals = [0] * g.players
    for entry in g.log:
        assert entry.points is not None
        totals = [t + p for t, p in zip(totals, entry.points, strict=True)]
        for seat in range(g.players):
            result = results.round_result(g, entry.number, seat, "g9", "t3")
            res = wire.round_result_from_request(over_wire(wire.round_ended_request(result)))
            assert res == result
            assert (res.game_id, res.table_id, res.game, res.seat, res.players) == (
                "g9", "t3", game, seat, g.players)
            assert (res.round, res.rounds, res.dealer) == (entry.number, g.rounds, entry.dealer)
            assert (res.trump_card, res.trump) == (entry.trump_card, entry.trump)
            assert res.bids == tuple(entry.bids or [None] * g.players)
            assert res.tricks == tuple(entry.tricks) and res.tricks[-1].winner is not None
            assert res.won == tuple(entry.won) and res.points == tuple(entry.points)
            assert res.totals == tuple(totals)
    assert totals == list(g.totals)
    outcome = g.outcome()
    result = results.game_result(g, 1, "g9", "t3", forfeited=True, forfeit_reason="timed out")
    res = wire.game_result_from_request(over_wire(wire.game_ended_request(result)))
    assert res == result
    assert (res.game, res.players, res.totals, res.places) == (
        game, g.players, outcome.totals, outcome.places)
    assert (res.seat, res.forfeited, res.forfeit_reason) == (1, True, "timed out")
    plain = wire.game_ended_request(results.game_result(g, 0, "g", "t"))
    assert not wire.game_result_from_request(plain).forfeited


def test_round_ended_needs_a_finished_round() -> None:
    g = new_game("wizard", {}, 1)
    with pytest.raises(ValueError, match="round 1 of this game is not finished"):
        results.round_result(g, 1, 0, "g", "t")


def test_malformed_notifications_are_refused() -> None:
    g = finished("wizard", {"players": 3}, 2)
    req = wire.round_ended_request(results.round_result(g, 3, 0, "g", "t"))
    req.won.append(1)
    with pytest.raises(WireError, match="won has 4 entries for 3 players"):
        wire.round_result_from_request(req)
    end = wire.game_ended_request(results.game_result(g, 0, "g", "t"))
    end.seat = 3
    with pytest.raises(WireError, match="seat 3 is not a seat"):
        wire.game_result_from_request(end)
    with pytest.raises(WireError, match="no game given"):
        wire.game_result_from_request(bot_pb2.GameEndedRequest(players=3))


def test_times_are_clamped_to_the_fields() -> None:
    _, view = next(play("trumps", {}, 1))
    req = wire.decision_request(view, "g", "t", -5, 2**40)
    assert (req.deadline_ms, req.bank_ms) == (0, 2**32 - 1)
