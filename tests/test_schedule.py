"""The tournament schedule: balance, determinism, duplicate sets, the seed commitment."""

from __future__ import annotations

import hashlib
from collections import Counter
from itertools import combinations

import pytest

from arena.rules import new_game
from arena.runs.schedule import deal_seed, schedule, seed_commitment, tables

FIELD = ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize(("bots", "seats", "deals"), [(5, 4, 2), (4, 4, 3), (6, 3, 1),
                                                      (3, 2, 2)])
def test_round_robin_is_balanced(bots: int, seats: int, deals: int) -> None:
    field = [f"bot{i}" for i in range(bots)]
    games = schedule("round-robin", field, seats, deals, 42)
    assert len(games) == len(list(combinations(field, seats))) * deals * seats
    # every bot in every seat equally often
    by_seat = Counter((b, s) for g in games for s, b in enumerate(g.bots))
    assert len(set(by_seat.values())) == 1
    assert len(by_seat) == bots * seats
    # every table of `seats` distinct bots appears, each deal in every rotation
    per_table = Counter(frozenset(g.bots) for g in games)
    assert set(per_table) == {frozenset(c) for c in combinations(field, seats)}
    assert set(per_table.values()) == {deals * seats}
    units = Counter(g.unit for g in games)
    assert set(units.values()) == {seats}


def test_a_duplicate_set_gives_every_bot_every_seats_cards() -> None:
    games = schedule("round-robin", FIELD[:4], 4, 1, 7)
    hands_by_bot: dict[str, set[tuple[int, ...]]] = {b: set() for b in FIELD[:4]}
    for g in games:
        game = new_game("wizard", {"players": 4}, g.deal_seed)
        first_round = game.log[0].hands
        for seat, bot in enumerate(g.bots):
            hands_by_bot[bot].add(tuple(first_round[seat]))
    seat_hands = {tuple(h) for h in new_game("wizard", {"players": 4},
                                             games[0].deal_seed).log[0].hands}
    for bot, hands in hands_by_bot.items():
        assert hands == seat_hands, bot


def test_same_deal_seeds_at_every_table() -> None:
    games = schedule("round-robin", FIELD, 4, 3, 99)
    seeds_by_table: dict[int, list[int]] = {}
    for g in games:
        seeds_by_table.setdefault(g.table_no, []).append(g.deal_seed)
    assert len({tuple(v) for v in seeds_by_table.values()}) == 1
    assert len(set(next(iter(seeds_by_table.values())))) == 3


def test_schedule_is_deterministic_and_depends_on_the_seed() -> None:
    assert schedule("round-robin", FIELD, 4, 2, 5) == schedule("round-robin", FIELD, 4, 2, 5)
    assert schedule("round-robin", FIELD, 4, 2, 5) != schedule("round-robin", FIELD, 4, 2, 6)
    assert deal_seed(5, 0) != deal_seed(5, 1)
    assert 0 <= deal_seed(2**127, 3) < 2**63


def test_gauntlet_pits_each_candidate_against_the_rest() -> None:
    games = schedule("gauntlet", FIELD, 3, 2, 1, candidates=["a", "b"])
    assert tables("gauntlet", FIELD, 3, ["a", "b"]) == [
        ("a", "c", "d"), ("a", "c", "e"), ("a", "d", "e"),
        ("b", "c", "d"), ("b", "c", "e"), ("b", "d", "e")]
    assert len(games) == 6 * 2 * 3
    for g in games:
        assert len({"a", "b"} & set(g.bots)) == 1
    by_seat = Counter((b, s) for g in games for s, b in enumerate(g.bots) if b in "ab")
    # each candidate: 3 tables x 2 deals x 3 rotations = 18 games, 6 in each seat
    assert set(by_seat.values()) == {6}


def test_seed_commitment_is_sha256_of_the_decimal_seed() -> None:
    assert seed_commitment(12345) == hashlib.sha256(b"12345").hexdigest()
