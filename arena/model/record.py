"""Game records (``trick-arena.record/1``) and their independent re-check.

:func:`game_record` turns a finished :class:`~arena.rules.Game` into a JSON-ready dict;
:func:`verify_record` replays a record through the rules engine and raises
:class:`RecordError` at the first discrepancy, naming the round, trick and seat;
:func:`record_problem` checks only the shape its readers rely on (results, faults, bids),
for every record a store reads back; :func:`verify_record` checks that shape too (one
rule: what verifies, a store reads); :func:`record_timing` is a record's ``timing``, the
one home of a game's decision times. The
format is documented in ``docs/records.md``. This module does no I/O.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from arena.model.errors import nested_deeper_than, one_line
from arena.rules import Decision, Game, IllegalAction, OptionError, RoundLog, new_game
from arena.rules.base import places_from_totals
from arena.rules.cards import (
    CardError,
    format_card,
    format_cards,
    format_suit,
    parse_card,
    parse_suit,
    standard_deck,
    wizard_deck,
)

FORMAT = "trick-arena.record/1"


MAX_RECORD_BYTES = 16 << 20
"""The largest record (a JSON document, or one line of JSON lines) read: 16 MiB."""


MAX_DEPTH = 32
"""The deepest nesting of arrays and objects in a record (a record itself nests 6 deep)."""


MAX_NUMBER_CHARS = 40
"""The longest number in a record, in characters (a seed has at most 20 digits)."""


class RecordError(ValueError):
    """Raised by :func:`verify_record` at the first place a record disagrees with the rules,
    and by :func:`parse_record` for input that is not a record; the message is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


def _number(text: str) -> int | float:
    if len(text) > MAX_NUMBER_CHARS:
        raise RecordError(f"a number of {len(text)} characters; at most "
                          f"{MAX_NUMBER_CHARS} are allowed")
    return float(text) if any(c in text for c in ".eE") else int(text)


def _constant(text: str) -> Any:
    raise RecordError(f"not JSON: {text} is not a JSON number")


def parse_record(data: bytes | str) -> Any:
    """Parse one record's JSON text within the limits (:data:`MAX_RECORD_BYTES`,
    :data:`MAX_DEPTH`, :data:`MAX_NUMBER_CHARS`); raises :class:`RecordError`."""
    if len(data) > MAX_RECORD_BYTES:
        raise RecordError(f"longer than {MAX_RECORD_BYTES} bytes")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RecordError(f"not UTF-8 text: byte {e.start} is not valid UTF-8") from None
    try:
        value = json.loads(data, parse_int=_number, parse_float=_number,
                           parse_constant=_constant)
    except json.JSONDecodeError as e:
        at = f"line {e.lineno} column {e.colno}" if e.lineno > 1 else f"column {e.colno}"
        raise RecordError(f"not JSON: {e.msg} at {at}") from None
    except RecursionError:
        raise RecordError(f"nested more than {MAX_DEPTH} levels deep") from None
    if nested_deeper_than(value, MAX_DEPTH):
        raise RecordError(f"nested more than {MAX_DEPTH} levels deep")
    return value


def round_record(entry: RoundLog) -> dict[str, Any]:
    """One round of a record."""
    return {
        "number": entry.number,
        "dealer": entry.dealer,
        "hands": [format_cards(h) for h in entry.hands],
        "stock": format_cards(entry.stock),
        "trump_card": None if entry.trump_card is None else format_card(entry.trump_card),
        "trump": format_suit(entry.trump),
        "bids": None if entry.bids is None else list(entry.bids),
        "tricks": [{"leader": t.leader, "cards": format_cards(t.cards), "winner": t.winner}
                   for t in entry.tricks],
        "draws": None if entry.draws is None else [format_cards(d) for d in entry.draws],
        "won": list(entry.won),
        "points": None if entry.points is None else list(entry.points),
    }


def game_record(game: Game, seats: Sequence[str], faults: Sequence[Mapping[str, Any]] = (),
                **extra: Any) -> dict[str, Any]:
    """The record of ``game`` (normally finished) with bot names by seat and any faults.

    ``extra`` keys (e.g. ``game_id``, ``forfeited``) are added at the top level.
    """
    outcome = game.outcome()
    record: dict[str, Any] = {
        "format": FORMAT,
        "game": game.name,
        "options": dict(game.options),
        "seed": game.seed,
        "seats": list(seats),
        "rounds": [round_record(e) for e in game.log],
        "totals": list(outcome.totals),
        "places": list(outcome.places),
        "faults": [dict(f) for f in faults],
    }
    record.update(extra)
    return record


def _get(obj: Any, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(obj, dict):
        raise RecordError(f"{where}: expected an object")
    if key not in obj:
        raise RecordError(f"{where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise RecordError(f"{where}: {key!r} has the wrong type ({type(value).__name__})")
    return value


def _key(obj: dict[str, Any], key: str, where: str) -> Any:
    """A key that must be present, though its value may be null."""
    if key not in obj:
        raise RecordError(f"{where}: missing key {key!r}")
    return obj[key]


def _cards(values: Any, where: str) -> list[int]:
    if not isinstance(values, list):
        raise RecordError(f"{where}: expected a list of cards")
    try:
        return [parse_card(v if isinstance(v, str) else repr(v)) for v in values]
    except CardError as e:
        raise RecordError(f"{where}: {e}") from None


def _card_or_none(value: Any, where: str) -> int | None:
    if value is None:
        return None
    return _cards([value], where)[0]


def verify_record(record: Any) -> None:
    """Re-check a record with the rules engine; raise :class:`RecordError` if anything differs.

    Checks the deal (the multiset of cards, and that it is the deal the seed gives), every
    bid and play for legality, every trick's leader and winner, the draws, the tricks won,
    every score, the totals and the places; then the shape :func:`record_problem` checks
    for a store (each fault names a seat of the game and a kind, ``seats`` are names,
    ``forfeited`` has a flag per seat, ``timing`` if present has a list of times per
    seat), so that what verifies, a store reads.
    """
    fmt = _get(record, "format", "record", str)
    if fmt != FORMAT:
        raise RecordError(f"record: format {fmt!r} is not {FORMAT!r}")
    name = _get(record, "game", "record", str)
    options = _get(record, "options", "record", dict)
    seed = _get(record, "seed", "record", int)
    seats = _get(record, "seats", "record", list)
    rounds = _get(record, "rounds", "record", list)
    try:
        game = new_game(name, options, seed)
    except OptionError as e:
        raise RecordError(f"record: {e}") from None
    n = game.players
    if len(seats) != n:
        raise RecordError(f"record: {len(seats)} seats for {n} players")
    full_deck = Counter(wizard_deck() if name == "wizard" else standard_deck())
    for index, rec_round in enumerate(rounds):
        where = f"round {index + 1}"
        if game.is_over:
            raise RecordError(f"{where}: the game has only {index} rounds")
        _verify_round(game, rec_round, where, full_deck)
    if not game.is_over:
        raise RecordError(f"record: the game is not finished after {len(rounds)} rounds")
    totals = _get(record, "totals", "record", list)
    places = _get(record, "places", "record", list)
    outcome = game.outcome()
    if totals != list(outcome.totals):
        raise RecordError(f"record: totals {totals} should be {list(outcome.totals)}")
    if places != list(places_from_totals(outcome.totals)):
        raise RecordError(f"record: places {places} should be {list(outcome.places)}")
    _get(record, "faults", "record", list)
    # the shape a store insists on reading back: a record it would refuse never verifies
    problem = record_problem(record, n)
    if problem is not None:
        raise RecordError(f"record: {problem}")


def record_problem(record: Any, n: int) -> str | None:
    """What is wrong with a record for ``n`` seats as the leaderboard and the site read
    it (the results, faults, bids and timing), or None: the shape alone, cheap enough for every
    record a store reads back. :func:`verify_record` checks the rest against the rules
    (``arena verify``)."""
    if not isinstance(record, dict):
        return "not a JSON object"
    for key in ("totals", "places"):
        value = record.get(key)
        if not isinstance(value, list) or len(value) != n or not all(map(_is_int, value)):
            return f"{key} is not a list of {n} integers"
    if not all(1 <= p <= n for p in record["places"]):
        return f"places are not 1..{n}"
    seats = record.get("seats")
    if seats is not None and (not isinstance(seats, list) or len(seats) != n
                              or not all(isinstance(x, str) for x in seats)):
        return f"seats is not a list of {n} names"
    forfeited = record.get("forfeited")
    if forfeited is not None and (not isinstance(forfeited, list) or len(forfeited) != n):
        return f"forfeited is not a list of {n} flags"
    faults = record.get("faults", [])
    if not isinstance(faults, list):
        return "faults is not a list"
    for i, fault in enumerate(faults):
        if (not isinstance(fault, dict) or not _is_int(fault.get("seat"))
                or not 0 <= fault["seat"] < n or not isinstance(fault.get("kind"), str)):
            return f"faults[{i}] is not a fault of a seat 0..{n - 1}"
    rounds = record.get("rounds", [])
    if not isinstance(rounds, list):
        return "rounds is not a list"
    for i, rnd in enumerate(rounds):
        problem = _round_problem(rnd, n)
        if problem:
            return f"rounds[{i}]: {problem}"
    if "timing" in record:
        return _timing_problem(record["timing"], n)
    return None


Timing = tuple[list[list[float]], list[list[float | None]]]
"""A record's ``timing`` by seat: each decision's answer time, and the bot's CPU time for
it (None where it was not measured), in milliseconds."""


def record_timing(record: Mapping[str, Any], n: int) -> Timing | None:
    """The ``timing`` of a record for ``n`` seats (checked: :class:`RecordError` if it is
    not the shape the referee writes), or None for a record without one (one written
    before the referee kept it, or not by the referee). The record is where a game's
    timings live: a store keeps no other copy of them (docs/records.md)."""
    if "timing" not in record:
        return None
    timing = record["timing"]
    problem = _timing_problem(timing, n)
    if problem is not None:
        raise RecordError(f"record: {problem}")
    return timing["wall_ms"], timing["cpu_ms"]


def _timing_problem(timing: Any, n: int) -> str | None:
    if not isinstance(timing, dict):
        return "timing is not an object"
    for key, nulls in (("wall_ms", False), ("cpu_ms", True)):
        by_seat = timing.get(key)
        if (not isinstance(by_seat, list) or len(by_seat) != n
                or not all(_times(seat, nulls) for seat in by_seat)):
            return (f"timing.{key} is not a list of {n} lists of "
                    f"{'numbers or nulls' if nulls else 'numbers'}")
    return None


def _times(value: Any, nulls: bool) -> bool:
    return isinstance(value, list) and all(
        (isinstance(x, int | float) and not isinstance(x, bool)) or (nulls and x is None)
        for x in value)


def _round_problem(rnd: Any, n: int) -> str | None:
    if not isinstance(rnd, dict) or not _is_int(rnd.get("number")):
        return "not an object with a round number"
    hands = rnd.get("hands")
    if not isinstance(hands, list) or len(hands) != n:
        return f"hands is not a list of {n} hands"
    for hand in hands:
        if not isinstance(hand, list) or not all(isinstance(c, str) for c in hand):
            return "a hand is not a list of cards"
        try:
            for card in hand:
                parse_card(card)
        except CardError as e:
            return str(e)
    bids, won = rnd.get("bids"), rnd.get("won")
    if not isinstance(won, list) or len(won) != n or not all(map(_is_int, won)):
        return f"won is not a list of {n} integers"
    if bids is not None and (not isinstance(bids, list) or len(bids) != n
                             or not all(map(_is_int, bids))):
        return f"bids is not null or a list of {n} integers"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _verify_round(game: Game, rec: Any, where: str, full_deck: Counter[int]) -> None:
    n = game.players
    entry = game.log[-1]
    number = _get(rec, "number", where, int)
    if number != entry.number:
        raise RecordError(f"{where}: number {number} should be {entry.number}")
    dealer = _get(rec, "dealer", where, int)
    if dealer != entry.dealer:
        raise RecordError(f"{where}: dealer {dealer} should be seat {entry.dealer}")
    hands = _get(rec, "hands", where, list)
    if len(hands) != n:
        raise RecordError(f"{where}: {len(hands)} hands for {n} players")
    hand_cards = [_cards(h, f"{where}, seat {s}, hand") for s, h in enumerate(hands)]
    stock = _cards(_get(rec, "stock", where, list), f"{where}, stock")
    dealt = Counter(c for h in hand_cards for c in h) + Counter(stock)
    if dealt != full_deck:
        extra = sorted(format_card(c) for c in (dealt - full_deck).elements())
        missing = sorted(format_card(c) for c in (full_deck - dealt).elements())
        raise RecordError(f"{where}: the hands and stock are not one deck "
                          f"(extra: {extra or 'none'}; missing: {missing or 'none'})")
    for seat, h in enumerate(hand_cards):
        if len(h) != len(entry.hands[seat]):
            raise RecordError(f"{where}, seat {seat}: hand of {len(h)} cards, "
                              f"should be {len(entry.hands[seat])}")
        if sorted(h) != sorted(entry.hands[seat]):
            raise RecordError(f"{where}, seat {seat}: hand is not the deal of seed "
                              f"{game.seed}")
    if stock != entry.stock:
        raise RecordError(f"{where}: stock is not the deal of seed {game.seed}")
    trump_card = _card_or_none(_key(rec, "trump_card", where), f"{where}, trump_card")
    if trump_card != entry.trump_card:
        raise RecordError(f"{where}: trump_card should be "
                          f"{None if entry.trump_card is None else format_card(entry.trump_card)}")
    trump_text = _key(rec, "trump", where)
    if game.decision is Decision.TRUMP:
        if not isinstance(trump_text, str):
            raise RecordError(f"{where}, seat {game.to_move}: a Wizard was turned, "
                              f"trump must name the dealer's suit")
        try:
            _apply(game, parse_suit(trump_text), f"{where}, seat {game.to_move}: trump")
        except CardError as e:
            raise RecordError(f"{where}, trump: {e}") from None
    elif trump_text != format_suit(entry.trump):
        raise RecordError(f"{where}: trump {trump_text!r} should be {format_suit(entry.trump)!r}")
    bids = _key(rec, "bids", where)
    if game.decision is Decision.BID:
        if not isinstance(bids, list) or len(bids) != n:
            raise RecordError(f"{where}: bids must list {n} numbers")
        while game.decision is Decision.BID and game.to_move is not None:
            bidder = game.to_move
            bid = bids[bidder]
            _apply(game, bid, f"{where}, seat {bidder}: bid {bid!r}")
    elif bids is not None:
        raise RecordError(f"{where}: bids should be null (no bidding in this game)")
    _verify_tricks(game, rec, entry, where)


def _verify_tricks(game: Game, rec: Any, entry: RoundLog, where: str) -> None:
    n = game.players
    tricks = _get(rec, "tricks", where, list)
    draws = _key(rec, "draws", where)
    if entry.draws is not None and not isinstance(draws, list):
        raise RecordError(f"{where}: draws must be a list")
    if entry.draws is None and draws is not None:
        raise RecordError(f"{where}: draws should be null (no drawing in this game)")
    for t, trick in enumerate(tricks):
        at = f"{where}, trick {t + 1}"
        if game.is_over or game.log[-1] is not entry:
            raise RecordError(f"{at}: the round has only {t} tricks")
        leader = _get(trick, "leader", at, int)
        if leader != game.to_move:
            raise RecordError(f"{at}: leader {leader} should be seat {game.to_move}")
        cards = _cards(_get(trick, "cards", at, list), f"{at}, cards")
        if len(cards) != n:
            raise RecordError(f"{at}: {len(cards)} cards for {n} players")
        for i, card in enumerate(cards):
            _apply(game, card, f"{at}, seat {(leader + i) % n}: {format_card(card)}")
        winner = _get(trick, "winner", at, int)
        actual = entry.tricks[t].winner
        if winner != actual:
            raise RecordError(f"{at}, seat {winner}: winner should be seat {actual}")
        if entry.draws is not None:
            assert isinstance(draws, list)
            got = _cards(draws[t], f"{at}, draws") if t < len(draws) else None
            if got != entry.draws[t]:
                raise RecordError(f"{at}: draws should be {format_cards(entry.draws[t])}")
    if game.log[-1] is entry and not game.is_over:
        raise RecordError(f"{where}: the round is not finished after {len(tricks)} tricks")
    if entry.draws is not None and isinstance(draws, list) and len(draws) != len(entry.draws):
        raise RecordError(f"{where}: {len(draws)} draws for {len(entry.draws)} tricks")
    won = _get(rec, "won", where, list)
    if won != entry.won:
        seat = _first_diff(won, entry.won)
        raise RecordError(f"{where}, seat {seat}: won {won} should be {entry.won}")
    points = _get(rec, "points", where, list)
    if points != entry.points:
        seat = _first_diff(points, entry.points or [])
        raise RecordError(f"{where}, seat {seat}: points {points} should be {entry.points}")


def _first_diff(a: Sequence[Any], b: Sequence[Any]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def _apply(game: Game, action: Any, where: str) -> None:
    if not isinstance(action, int) or isinstance(action, bool):
        raise RecordError(f"{where}: not a number")
    try:
        game.apply(action)
    except IllegalAction as e:
        raise RecordError(f"{where}: illegal: {e}") from None
