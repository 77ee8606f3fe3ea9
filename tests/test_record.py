"""Game records: good records verify; every kind of damage raises RecordError saying where.

Records are built from real games (random legal play), passed through JSON, then changed
in one place.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import re
from typing import Any

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.model.record import (
    FORMAT,
    RecordError,
    game_record,
    record_problem,
    record_timing,
    verify_record,
)
from arena.rules import Decision, new_game

Record = dict[str, Any]


@functools.cache
def _record_text(game: str, options: tuple[tuple[str, Any], ...], seed: int) -> str:
    g = new_game(game, dict(options), seed)
    rng = random.Random(seed)
    while not g.is_over:
        g.apply(rng.choice(g.legal_actions()))
    seats = [f"bot-{i}" for i in range(g.players)]
    return json.dumps(game_record(g, seats, faults=[{
        "seat": 0, "round": 1, "trick": None, "kind": "timeout",
        "detail": "no answer within 1000 ms", "action": "bid 0"}]))


def fresh(game: str, seed: int = 7, **options: Any) -> Record:
    """A new copy of the record of a finished game, as read back from JSON."""
    rec: Record = json.loads(_record_text(game, tuple(sorted(options.items())), seed))
    return rec


def wizard_turned_seed() -> int:
    for seed in range(500):
        g = new_game("wizard", {"players": 3}, seed)
        if g.decision is Decision.TRUMP:
            return seed
    raise AssertionError("no seed turns a Wizard in round 1")


def rejects(rec: Any, pattern: str) -> None:
    with pytest.raises(RecordError, match=pattern):
        verify_record(rec)


GOOD = [
    ("wizard", {}),
    ("wizard", {"players": 3, "hook_rule": True}),
    ("wizard", {"players": 6}),
    ("trumps", {}),
    ("trumps", {"players": 2, "announce": True}),
    ("trumps", {"players": 3, "trump": "S"}),
    ("trumps", {"players": 7, "draw": False, "announce": True}),
]


@pytest.mark.parametrize(("game", "options"), GOOD)
def test_good_records_verify(game: str, options: dict[str, Any]) -> None:
    rec = fresh(game, **options)
    assert rec["format"] == FORMAT == "trick-arena.record/1"
    assert rec["game"] == game
    verify_record(rec)


def test_a_round_where_the_dealer_chose_trump_verifies() -> None:
    seed = wizard_turned_seed()
    rec = fresh("wizard", seed, players=3)
    first = rec["rounds"][0]
    assert first["trump_card"] == "W" and first["trump"] in ("C", "D", "H", "S")
    verify_record(rec)
    first["trump"] = None
    rejects(rec, r"round 1, seat 0: a Wizard was turned")
    first["trump"] = "X"
    rejects(rec, r"round 1, trump: not a suit")


def test_extra_top_level_keys_are_accepted() -> None:
    rec = fresh("wizard")
    rec["game_id"] = "final-3"
    rec["forfeited"] = [False, True, False, False]
    verify_record(rec)


# -- the shape a store reads back: what verifies, a store reads ----------------------------

def _fault(**change: Any) -> dict[str, Any]:
    fault = {"seat": 1, "round": 1, "trick": None, "kind": "illegal",
             "detail": "bid 9: bid 9 is outside 0..1", "action": "bid 0"}
    fault.update(change)
    return {k: v for k, v in fault.items() if v is not _GONE}


_GONE = object()


@pytest.mark.parametrize(("fault", "pattern"), [
    (_fault(seat=_GONE), r"record: faults\[1\] is not a fault of a seat 0\.\.3"),
    (_fault(seat=4), r"faults\[1\] is not a fault of a seat 0\.\.3"),
    (_fault(seat=-1), r"faults\[1\] is not a fault of a seat 0\.\.3"),
    (_fault(seat=True), r"faults\[1\] is not a fault of a seat"),
    (_fault(seat="1"), r"faults\[1\] is not a fault of a seat"),
    (_fault(kind=_GONE), r"faults\[1\] is not a fault of a seat"),
    (_fault(kind=3), r"faults\[1\] is not a fault of a seat"),
    ("timeout", r"faults\[1\] is not a fault of a seat"),
])
def test_a_fault_entry_a_store_would_refuse_does_not_verify(fault: Any, pattern: str) -> None:
    rec = fresh("wizard")
    rec["faults"].append(fault)
    rejects(rec, pattern)
    assert record_problem(rec, 4) is not None  # the store refuses it too


def test_a_fault_entry_with_a_seat_and_a_kind_verifies() -> None:
    rec = fresh("wizard")
    rec["faults"].append(_fault(detail=_GONE, action=_GONE, round=_GONE, trick=_GONE))
    verify_record(rec)
    assert record_problem(rec, 4) is None


@pytest.mark.parametrize(("key", "value", "pattern"), [
    ("forfeited", [], r"record: forfeited is not a list of 4 flags"),
    ("forfeited", "no", r"record: forfeited is not a list of 4 flags"),
    ("seats", ["a", "b", "c", 4], r"record: seats is not a list of 4 names"),
])
def test_top_level_shapes_a_store_would_refuse_do_not_verify(key: str, value: Any,
                                                              pattern: str) -> None:
    rec = fresh("wizard")
    rec[key] = value
    rejects(rec, pattern)
    assert record_problem(rec, 4) is not None


TIMING = {"wall_ms": [[1.5, 2.0], [0.25], [], [3]], "cpu_ms": [[0.5, None], [None], [], [1]]}


def test_a_records_timing_is_read_by_seat() -> None:
    rec = fresh("wizard")
    assert record_timing(rec, 4) is None  # a record from before the referee kept it
    rec["timing"] = TIMING
    verify_record(rec)
    assert record_problem(rec, 4) is None
    assert record_timing(rec, 4) == (TIMING["wall_ms"], TIMING["cpu_ms"])


@pytest.mark.parametrize(("timing", "pattern"), [
    (None, r"record: timing is not an object"),
    ([[1.0]] * 4, r"record: timing is not an object"),
    ({"wall_ms": TIMING["wall_ms"]}, r"timing\.cpu_ms is not a list of 4 lists of numbers"
                                     r" or nulls"),
    ({**TIMING, "wall_ms": TIMING["wall_ms"][:3]}, r"timing\.wall_ms is not a list of 4"),
    ({**TIMING, "wall_ms": [[1.0], [None], [], []]}, r"timing\.wall_ms is not a list of 4"
                                                     r" lists of numbers$"),
    ({**TIMING, "wall_ms": [["1"], [], [], []]}, r"timing\.wall_ms is not a list"),
    ({**TIMING, "cpu_ms": [[True], [], [], []]}, r"timing\.cpu_ms is not a list"),
])
def test_a_timing_a_store_would_refuse_does_not_verify(timing: Any, pattern: str) -> None:
    rec = fresh("wizard")
    rec["timing"] = timing
    rejects(rec, pattern)
    assert record_problem(rec, 4) is not None
    with pytest.raises(RecordError, match=pattern):
        record_timing(rec, 4)


# -- where the first discrepancy is -------------------------------------------------------


def test_a_card_not_held_names_round_trick_and_seat() -> None:
    rec = fresh("wizard")
    rd = rec["rounds"][1]
    trick = rd["tricks"][0]
    seat = (trick["leader"] + 1) % 4
    others = [c for s, h in enumerate(rd["hands"]) if s != seat for c in h
              if c not in ("W", "J") and c not in rd["hands"][seat]]
    trick["cards"][1] = others[0]
    rejects(rec, rf"^round 2, trick 1, seat {seat}: {others[0]}: illegal: .*does not hold")


def test_a_changed_winner_names_round_trick_and_seat() -> None:
    rec = fresh("wizard")
    trick = rec["rounds"][1]["tricks"][0]
    actual = trick["winner"]
    trick["winner"] = (actual + 1) % 4
    rejects(rec, rf"^round 2, trick 1, seat {(actual + 1) % 4}: winner should be seat {actual}")


def test_not_following_suit_names_round_trick_and_seat() -> None:
    rec = fresh("trumps", 3, players=4, draw=False)
    tricks = rec["rounds"][0]["tricks"]

    def seat_cards(seat: int, after: int) -> list[str]:
        return [t["cards"][(seat - t["leader"]) % 4] for t in tricks[after + 1:]]

    for t, trick in enumerate(tricks):
        led = trick["cards"][0][0]
        for k in range(1, 4):
            seat = (trick["leader"] + k) % 4
            if trick["cards"][k][0] != led:
                continue
            off_suit = [c for c in seat_cards(seat, t) if c[0] != led]
            if off_suit:
                trick["cards"][k] = off_suit[0]
                rejects(rec, rf"^round 1, trick {t + 1}, seat {seat}: {off_suit[0]}: "
                             r"illegal: .*must follow")
                return
    raise AssertionError("no trick to change in this deal")


def test_swapped_hand_cards_name_the_round_and_seat() -> None:
    rec = fresh("wizard")
    hands = rec["rounds"][2]["hands"]
    a = next(i for i, c in enumerate(hands[0]) if c not in hands[1])
    b = next(i for i, c in enumerate(hands[1]) if c not in hands[0])
    hands[0][a], hands[1][b] = hands[1][b], hands[0][a]
    rejects(rec, r"^round 3, seat 0: hand is not the deal of seed 7")


def test_a_card_from_outside_the_deck_is_named() -> None:
    rec = fresh("trumps")
    rec["rounds"][0]["hands"][2][0] = "C1"
    rejects(rec, r"round 1: the hands and stock are not one deck \(extra: \['C1'\]")


def test_a_bid_out_of_range_names_round_and_seat() -> None:
    rec = fresh("wizard")
    rec["rounds"][1]["bids"][3] = 3
    rejects(rec, r"^round 2, seat 3: bid 3: illegal: .*outside 0..2")


def test_a_dealer_bid_against_the_hook_rule_is_rejected() -> None:
    rec = fresh("wizard", 5, players=4, hook_rule=True)
    for rd in rec["rounds"]:
        dealer, bids, r = rd["dealer"], rd["bids"], rd["number"]
        forbidden = r - sum(b for s, b in enumerate(bids) if s != dealer)
        if 0 <= forbidden <= r:
            bids[dealer] = forbidden
            rejects(rec, rf"^round {r}, seat {dealer}: bid {forbidden}: illegal: .*hook")
            return
    raise AssertionError("no round where the hook rule forbids a bid")


def test_a_wrong_announcement_type_is_rejected() -> None:
    rec = fresh("trumps", players=2, announce=True)
    rec["rounds"][0]["bids"][1] = "3"
    rejects(rec, r"round 1, seat 1: bid '3': not a number")
    rec["rounds"][0]["bids"] = [1]
    rejects(rec, r"round 1: bids must list 2 numbers")


@pytest.mark.parametrize(("key", "pattern"), [
    ("points", r"^round 4, seat 2: points"),
    ("won", r"^round 4, seat 2: won"),
])
def test_changed_tallies_name_round_and_seat(key: str, pattern: str) -> None:
    rec = fresh("wizard")
    rec["rounds"][3][key][2] += 1
    rejects(rec, pattern)


def test_changed_totals_and_places_are_rejected() -> None:
    rec = fresh("wizard")
    rec["totals"][1] += 10
    rejects(rec, r"^record: totals")
    rec = fresh("wizard")
    rec["places"] = [1, 1, 1, 1] if rec["places"] != [1, 1, 1, 1] else [1, 2, 3, 4]
    rejects(rec, r"^record: places")


def test_a_changed_stock_is_rejected() -> None:
    rec = fresh("wizard")
    stock = rec["rounds"][0]["stock"]
    i = next(i for i in range(1, len(stock)) if stock[i] != stock[0])
    stock[0], stock[i] = stock[i], stock[0]
    rejects(rec, r"^round 1: stock is not the deal of seed 7")


def test_a_changed_trump_card_or_trump_is_rejected() -> None:
    rec = fresh("trumps")
    card = rec["rounds"][0]["trump_card"]
    rec["rounds"][0]["trump_card"] = "W" if card != "W" else "J"
    rejects(rec, r"^round 1: trump_card should be")
    rec = fresh("trumps")
    trump = rec["rounds"][0]["trump"]
    rec["rounds"][0]["trump"] = "C" if trump != "C" else "D"
    rejects(rec, r"^round 1: trump '[CD]' should be")


def test_changed_draws_are_rejected() -> None:
    rec = fresh("trumps", players=3)
    draws = rec["rounds"][0]["draws"]
    draws[0] = [draws[0][1], draws[0][0], draws[0][2]]
    rejects(rec, r"^round 1, trick 1: draws should be")
    rec = fresh("trumps", players=3)
    rec["rounds"][0]["draws"].pop()
    rejects(rec, r"round 1, trick 17: draws should be")
    rec = fresh("trumps", players=3, draw=False)
    rec["rounds"][0]["draws"] = []
    rejects(rec, r"round 1: draws should be null")


def test_a_changed_leader_is_rejected() -> None:
    rec = fresh("trumps")
    trick = rec["rounds"][0]["tricks"][1]
    trick["leader"] = (trick["leader"] + 1) % 4
    rejects(rec, r"^round 1, trick 2: leader \d should be seat \d")


def test_missing_and_extra_tricks_and_rounds_are_rejected() -> None:
    rec = fresh("wizard")
    rec["rounds"][4]["tricks"].pop()
    rejects(rec, r"^round 5: the round is not finished after 4 tricks")
    rec = fresh("wizard")
    rec["rounds"][0]["tricks"].append(rec["rounds"][0]["tricks"][0])
    rejects(rec, r"^round 1, trick 2: the round has only 1 tricks")
    rec = fresh("wizard")
    rec["rounds"].pop()
    rejects(rec, r"^record: the game is not finished after 14 rounds")
    rec = fresh("wizard")
    rec["rounds"].append(rec["rounds"][-1])
    rejects(rec, r"^round 16: the game has only 15 rounds")
    rec = fresh("trumps")
    rec["rounds"][0]["tricks"][0]["cards"].pop()
    rejects(rec, r"^round 1, trick 1: 3 cards for 4 players")


def test_header_errors_are_rejected() -> None:
    rec = fresh("trumps")
    rec["format"] = "trick-arena.record/2"
    rejects(rec, r"format 'trick-arena.record/2' is not 'trick-arena.record/1'")
    rec = fresh("trumps")
    rec["game"] = "bridge"
    rejects(rec, r"unknown game 'bridge'")
    rec = fresh("trumps")
    rec["options"]["players"] = 9
    rejects(rec, r"option players")
    rec = fresh("trumps")
    rec["options"]["hook_rule"] = True
    rejects(rec, r"unknown option 'hook_rule'")
    rec = fresh("trumps")
    rec["seats"].pop()
    rejects(rec, r"3 seats for 4 players")
    rec = fresh("trumps")
    rec["seed"] += 1
    rejects(rec, r"^round 1, seat \d: hand is not the deal of seed 8")


# -- missing keys and wrong types ---------------------------------------------------------

TOP_KEYS = ["format", "game", "options", "seed", "seats", "rounds", "totals", "places",
            "faults"]
ROUND_KEYS = ["number", "dealer", "hands", "stock", "trump_card", "trump", "bids", "tricks",
              "draws", "won", "points"]


@pytest.mark.parametrize("key", TOP_KEYS)
def test_a_missing_top_level_key_is_rejected(key: str) -> None:
    rec = fresh("trumps")
    del rec[key]
    rejects(rec, f"^record: missing key '{key}'$")


@pytest.mark.parametrize("key", ROUND_KEYS)
def test_a_missing_round_key_is_rejected(key: str) -> None:
    rec = fresh("trumps", players=3, announce=True)
    assert rec["rounds"][0][key] is not None
    del rec["rounds"][0][key]
    rejects(rec, f"^round 1: missing key '{key}'$")


@pytest.mark.parametrize("key", ["leader", "cards", "winner"])
def test_a_missing_trick_key_is_rejected(key: str) -> None:
    rec = fresh("wizard")
    del rec["rounds"][2]["tricks"][1][key]
    rejects(rec, rf"^round 3, trick 2: missing key '{key}'")


@pytest.mark.parametrize("value", [None, [], "record", 3, 2.5, True])
def test_a_record_that_is_not_an_object_is_rejected(value: Any) -> None:
    rejects(value, r"^record: expected an object")


def _set(rec: Record, path: tuple[Any, ...], value: Any) -> None:
    node: Any = rec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


BAD_TYPES: list[tuple[tuple[Any, ...], Any, str]] = [
    (("format",), 1, "record: 'format' has the wrong type (int)"),
    (("game",), None, "record: 'game' has the wrong type (NoneType)"),
    (("options",), [], "record: 'options' has the wrong type (list)"),
    (("options",), {"players": "4"},
     "record: option players: '4' is not allowed; expected an integer 3..6"),
    (("options",), {"players": 4.0},
     'record: option players: 4.0 is not allowed; expected an integer 3..6'),
    (("options",), {"players": True},
     'record: option players: True is not allowed; expected an integer 3..6'),
    (("seed",), "7", "record: 'seed' has the wrong type (str)"),
    (("seed",), 7.0, "record: 'seed' has the wrong type (float)"),
    (("seed",), True, "record: 'seed' has the wrong type (bool)"),
    (("seats",), "abcd", "record: 'seats' has the wrong type (str)"),
    (("rounds",), {}, "record: 'rounds' has the wrong type (dict)"),
    (("rounds", 0), [], 'round 1: expected an object'),
    (("rounds", 0, "number"), "1", "round 1: 'number' has the wrong type (str)"),
    (("rounds", 0, "number"), False, "round 1: 'number' has the wrong type (bool)"),
    (("rounds", 0, "dealer"), None, "round 1: 'dealer' has the wrong type (NoneType)"),
    (("rounds", 0, "hands"), "C2", "round 1: 'hands' has the wrong type (str)"),
    (("rounds", 0, "hands", 0), "C2 C3", 'round 1, seat 0, hand: expected a list of cards'),
    (("rounds", 0, "hands", 0, 0), 18,
     "round 1, seat 0, hand: not a card: '18' (expected e.g. H7, S14, W or J)"),
    (("rounds", 0, "hands", 0, 0), None,
     "round 1, seat 0, hand: not a card: 'None' (expected e.g. H7, S14, W or J)"),
    (("rounds", 0, "hands", 0, 0), ["C2"],
     'round 1, seat 0, hand: not a card: "[\'C2\']" (expected e.g. H7, S14, W or J)'),
    (("rounds", 0, "hands", 0, 0), "X2",
     "round 1, seat 0, hand: not a card: 'X2' (expected e.g. H7, S14, W or J)"),
    (("rounds", 0, "hands", 0, 0), "C02",
     "round 1, seat 0, hand: not a card: 'C02' (expected e.g. H7, S14, W or J)"),
    (("rounds", 0, "hands", 0, 0), "c2",
     "round 1, seat 0, hand: not a card: 'c2' (expected e.g. H7, S14, W or J)"),
    (("rounds", 0, "hands", 0, 0), "C²",
     "round 1, seat 0, hand: not a card: 'C²' (expected e.g. H7, S14, W or J)"),
    (("rounds", 0, "stock"), None, "round 1: 'stock' has the wrong type (NoneType)"),
    (("rounds", 0, "stock", 0), 1,
     "round 1, stock: not a card: '1' (expected e.g. H7, S14, W or J)"),
    (("rounds", 0, "trump_card"), 5,
     "round 1, trump_card: not a card: '5' (expected e.g. H7, S14, W or J)"),
    (("rounds", 0, "trump_card"), ["H2"],
     'round 1, trump_card: not a card: "[\'H2\']" (expected e.g. H7, S14, W or J)'),
    (("rounds", 0, "trump_card"), "H²",
     "round 1, trump_card: not a card: 'H²' (expected e.g. H7, S14, W or J)"),
    (("rounds", 0, "trump"), 2, "round 1: trump 2 should be 'H'"),
    (("rounds", 0, "bids"), "0000", 'round 1: bids must list 4 numbers'),
    (("rounds", 0, "bids", 1), 1.0, 'round 1, seat 1: bid 1.0: not a number'),
    (("rounds", 0, "bids", 1), None, 'round 1, seat 1: bid None: not a number'),
    (("rounds", 0, "bids", 1), True, 'round 1, seat 1: bid True: not a number'),
    (("rounds", 0, "tricks"), None, "round 1: 'tricks' has the wrong type (NoneType)"),
    (("rounds", 0, "tricks", 0), "trick", 'round 1, trick 1: expected an object'),
    (("rounds", 0, "tricks", 0, "leader"), "1",
     "round 1, trick 1: 'leader' has the wrong type (str)"),
    (("rounds", 0, "tricks", 0, "cards"), "W W W W",
     "round 1, trick 1: 'cards' has the wrong type (str)"),
    (("rounds", 0, "tricks", 0, "cards", 0), 64,
     "round 1, trick 1, cards: not a card: '64' (expected e.g. H7, S14, W or J)"),
    (("rounds", 0, "tricks", 0, "winner"), None,
     "round 1, trick 1: 'winner' has the wrong type (NoneType)"),
    (("rounds", 0, "tricks", 0, "winner"), 1.5,
     "round 1, trick 1: 'winner' has the wrong type (float)"),
    (("rounds", 0, "draws"), [], 'round 1: draws should be null (no drawing in this game)'),
    (("rounds", 0, "won"), None, "round 1: 'won' has the wrong type (NoneType)"),
    (("rounds", 0, "won"), "1", "round 1: 'won' has the wrong type (str)"),
    (("rounds", 0, "points"), {}, "round 1: 'points' has the wrong type (dict)"),
    (("totals",), None, "record: 'totals' has the wrong type (NoneType)"),
    (("places",), "1234", "record: 'places' has the wrong type (str)"),
    (("faults",), {}, "record: 'faults' has the wrong type (dict)"),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD_TYPES,
                         ids=["/".join(map(str, p)) + "=" + repr(v) for p, v, _ in BAD_TYPES])
def test_a_value_of_the_wrong_type_is_rejected(path: tuple[Any, ...], value: Any,
                                               message: str) -> None:
    rec = fresh("wizard")
    _set(rec, path, value)
    rejects(rec, f"^{re.escape(message)}$")


# -- any damage at all --------------------------------------------------------------------


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


JSON_LEAF = (st.none() | st.booleans() | st.integers(-3, 70) | st.floats(allow_nan=False)
             | st.sampled_from(["W", "J", "H7", "S14", "C", "X", "", "trick-arena.record/1"])
             | st.text(max_size=4))
# (st.deferred rather than st.recursive: the latter's check that ``extend`` uses its
# argument misfired now and then, a warning the suite treats as an error)
JSON: st.SearchStrategy[Any] = st.deferred(
    lambda: JSON_LEAF | st.lists(JSON, max_size=4)
    | st.dictionaries(st.sampled_from(["leader", "cards", "winner", "x"]), JSON, max_size=3))
SAMPLES = [("wizard", {"players": 3}), ("trumps", {"players": 3, "announce": True}),
           ("trumps", {"players": 5, "draw": False, "trump": "H"})]


@settings(max_examples=examples(60), deadline=None)
@given(sample=st.sampled_from(SAMPLES), data=st.data())
def test_any_damage_gives_record_error_or_a_valid_record(sample: tuple[str, dict[str, Any]],
                                                         data: st.DataObject) -> None:
    game, options = sample
    rec = fresh(game, **options)
    path = data.draw(st.sampled_from(_paths(rec)), label="path")
    if data.draw(st.booleans(), label="delete") and isinstance(path[-1], str):
        node: Any = rec
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    else:
        _set(rec, path, data.draw(JSON, label="value"))
    original = fresh(game, **options)
    try:
        verify_record(rec)
    except RecordError as e:
        assert str(e).startswith(("record", "round"))
        return
    # Accepted: then a store reads it too, and the change kept the game itself (only
    # free-form parts differ).
    assert record_problem(rec, len(original["seats"])) is None
    for key in ("game", "seed", "totals", "places"):
        assert rec[key] == original[key]
    assert new_game(game, rec["options"]).options == new_game(game, original["options"]).options
    assert [[t["cards"] for t in rd["tricks"]] for rd in rec["rounds"]] == [
        [t["cards"] for t in rd["tricks"]] for rd in original["rounds"]]


def test_records_are_deterministic() -> None:
    a = game_record(_played("wizard", 3), ["x"] * 4)
    b = game_record(_played("wizard", 3), ["x"] * 4)
    assert json.dumps(a) == json.dumps(b)
    assert copy.deepcopy(a) == json.loads(json.dumps(a))


def _played(game: str, seed: int) -> Any:
    g = new_game(game, {}, seed)
    rng = random.Random(0)
    while not g.is_over:
        g.apply(rng.choice(g.legal_actions()))
    return g
