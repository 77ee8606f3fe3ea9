"""Trumps (docs/rules.md): one hand-written scenario per rule and option, fixed deals.

A trick scenario plays without drawing (``draw=false``) from hands overwritten at the
start of play; hands are written in play order from the leader (seat 1, left of the
dealer). Draw scenarios use the seeded deal itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from arena.rules import Decision, Game, IllegalAction, OptionError, new_game
from arena.rules.cards import parse_card, standard_deck, suit_of

C, D, H, S = 0, 1, 2, 3
# players -> (tricks in the game, stock cards never played), with drawing on
TRICKS = {2: (26, 0), 3: (17, 1), 4: (13, 0), 5: (10, 2), 6: (8, 4), 7: (7, 3)}


def cards(text: str) -> list[int]:
    return [parse_card(t) for t in text.split()]


def first_legal(g: Game) -> None:
    g.apply(g.legal_actions()[0])


def trumps_at_play(hands: Sequence[str], trump: str = "H",
                   announce: Sequence[int] | None = None) -> tuple[Game, int]:
    """A Trumps game (no drawing, fixed trump) at its first trick, with these hands.

    ``hands`` and ``announce`` are in play order from the leader, who also announces
    first. Returns the game and the leader's seat.
    """
    n = len(hands)
    g = new_game("trumps", {"players": n, "draw": False, "trump": trump,
                            "announce": announce is not None}, seed=0)
    for a in announce or ():
        assert g.decision is Decision.BID
        g.apply(a)
    assert g.decision is Decision.PLAY
    leader = g.to_move
    assert leader == 1 % n
    for i, text in enumerate(hands):
        g.hands[(leader + i) % n][:] = sorted(cards(text))  # type: ignore[attr-defined]
    g._legal = None  # type: ignore[attr-defined]
    return g, leader


def play(g: Game, text: str) -> None:
    for card in cards(text):
        g.apply(card)


def by_seat(leader: int, in_play_order: Sequence[int]) -> list[int]:
    n = len(in_play_order)
    out = [0] * n
    for i, v in enumerate(in_play_order):
        out[(leader + i) % n] = v
    return out


def play_out(options: dict[str, Any], seed: int = 0) -> Game:
    g = new_game("trumps", options, seed)
    while not g.is_over:
        first_legal(g)
    return g


# -- deal, dealer, leader -----------------------------------------------------------------


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6, 7])
def test_dealer_is_seat_0_and_the_left_of_the_dealer_leads(players: int) -> None:
    g = new_game("trumps", {"players": players}, seed=9)
    assert g.log[0].dealer == 0 and g.view(0).dealer == 0
    assert g.decision is Decision.PLAY
    assert g.to_move == 1 and g.view(1).decision is Decision.PLAY
    assert [len(h) for h in g.log[0].hands] == [7] * players
    e = g.log[0]
    assert Counter([c for h in e.hands for c in h] + e.stock) == Counter(standard_deck())


def test_turned_card_is_public_and_the_last_card_of_the_stock() -> None:
    g = new_game("trumps", {"players": 4}, seed=21)
    e = g.log[0]
    assert e.trump_card is not None
    assert e.stock[-1] == e.trump_card
    assert len(e.stock) == 52 - 28
    assert e.trump == suit_of(e.trump_card)
    for seat in range(4):
        v = g.view(seat)
        assert v.trump_card == e.trump_card and v.trump == e.trump
        assert e.trump_card not in v.hand
    while not g.is_over:
        first_legal(g)
    # With 4 players the stock is drawn to the end: the turned card is the last drawn,
    # by the fourth seat from the winner of trick 6.
    assert e.draws is not None
    assert e.draws[5][-1] == e.trump_card
    assert e.draws[6:] == [[]] * 7


@pytest.mark.parametrize("trump", ["C", "D", "H", "S"])
def test_fixed_trump_option_turns_no_card(trump: str) -> None:
    g = new_game("trumps", {"players": 3, "trump": trump}, seed=21)
    e = g.log[0]
    assert e.trump_card is None and g.view(2).trump_card is None
    assert e.trump == "CDHS".index(trump) == g.view(0).trump
    assert len(e.stock) == 52 - 21
    assert Counter([c for h in e.hands for c in h] + e.stock) == Counter(standard_deck())


# -- playing ------------------------------------------------------------------------------


def test_must_follow_the_led_suit_else_any_card() -> None:
    g, leader = trumps_at_play(["H5 C2", "H9 S3", "S4 D5", "C7 C8"], trump="S")
    assert sorted(g.legal_actions()) == sorted(cards("H5 C2"))  # the leader: any card
    play(g, "H5")
    assert g.legal_actions() == cards("H9")
    with pytest.raises(IllegalAction, match="must follow hearts"):
        g.check(parse_card("S3"))
    with pytest.raises(IllegalAction, match="does not hold"):
        g.check(parse_card("H14"))
    play(g, "H9")
    assert sorted(g.legal_actions()) == sorted(cards("S4 D5"))  # trump allowed when void
    play(g, "D5")
    assert sorted(g.legal_actions()) == sorted(cards("C7 C8"))
    play(g, "C7")
    assert g.log[0].tricks[0].winner == (leader + 1) % 4
    assert g.to_move == (leader + 1) % 4  # the winner leads


@pytest.mark.parametrize(("trick", "winner"), [
    ("H14 S2 H13 D5", 1),    # a trump beats the led suit
    ("H5 H9 D14 C14", 1),    # no trump: the highest of the led suit
    ("H5 S3 S10 H14", 2),    # the highest trump
    ("S2 H14 S3 D14", 2),    # trump led: the highest trump
    ("D2 D3 D4 D14", 3),
])
def test_trick_winner(trick: str, winner: int) -> None:
    g, leader = trumps_at_play(trick.split(), trump="S")
    play(g, trick)
    assert g.log[0].tricks[0].winner == (leader + winner) % 4


# -- scoring ------------------------------------------------------------------------------


@pytest.mark.parametrize(("trick", "points"), [
    ("H14 H11 H12 H2", [13, 0, 0, 0]),   # ace 5, jack 4, queen 3 and the trick
    ("H12 H13 C2 C3", [0, 4, 0, 0]),     # the queen goes to the trick's winner
    ("C14 C11 C12 H2", [0, 0, 0, 1]),    # non-trump honours count nothing
    ("H13 H10 C12 C14", [1, 0, 0, 0]),   # king and ten of trumps count nothing
    ("C2 H11 C14 D3", [0, 5, 0, 0]),     # a jack trumps in
])
def test_trick_points_and_honours(trick: str, points: list[int]) -> None:
    g, leader = trumps_at_play(trick.split(), trump="H")
    play(g, trick)
    assert g.is_over
    assert g.log[0].points == by_seat(leader, points)
    assert list(g.outcome().totals) == by_seat(leader, points)


def test_ties_share_a_place() -> None:
    g, leader = trumps_at_play(["C2", "C3", "C9", "C4"], trump="H")
    play(g, "C2 C3 C9 C4")
    assert g.outcome().places == tuple(by_seat(leader, [2, 2, 1, 2]))


@pytest.mark.parametrize(("trick", "announced", "points"), [
    # exact -> 2 per trick (+ honours); otherwise -2 per trick of difference (+ honours)
    ("H14 C2 C3 C4", [1, 0, 0, 0], [2 + 5, 0, 0, 0]),
    ("H14 C2 C3 C4", [0, 0, 0, 0], [-2 + 5, 0, 0, 0]),
    ("H14 C2 C3 C4", [3, 2, 0, 7], [-4 + 5, -4, 0, -14]),
    ("C2 C3 C9 H11", [0, 1, 1, 1], [0, -2, -2, 2 + 4]),
])
def test_announce_scoring(trick: str, announced: list[int], points: list[int]) -> None:
    g, leader = trumps_at_play(trick.split(), trump="H", announce=announced)
    assert g.log[0].bids == by_seat(leader, announced)
    play(g, trick)
    assert g.log[0].points == by_seat(leader, points)


@pytest.mark.parametrize(("players", "draw"),
                         [(2, True), (3, True), (4, True), (7, True), (3, False), (5, False)])
def test_announce_range_and_order(players: int, draw: bool) -> None:
    tricks = TRICKS[players][0] if draw else 7
    g = new_game("trumps", {"players": players, "draw": draw, "announce": True}, seed=1)
    order = []
    while g.decision is Decision.BID:
        assert g.legal_actions() == list(range(tricks + 1))
        assert g.view(g.to_move).tricks_in_round == tricks  # type: ignore[arg-type]
        with pytest.raises(IllegalAction, match="outside"):
            g.check(tricks + 1)
        with pytest.raises(IllegalAction, match="outside"):
            g.check(-1)
        order.append(g.to_move)
        g.apply(tricks)
    assert order == [(1 + k) % players for k in range(players)]
    assert g.decision is Decision.PLAY and g.to_move == 1 % players


def test_no_announcing_without_the_option() -> None:
    g = new_game("trumps", {"players": 4}, seed=1)
    assert g.decision is Decision.PLAY
    assert g.log[0].bids is None
    assert g.view(1).bids == (None,) * 4


# -- drawing ------------------------------------------------------------------------------


def test_after_a_trick_everyone_draws_from_the_winner_clockwise() -> None:
    g = new_game("trumps", {"players": 3}, seed=8)
    e = g.log[0]
    before = [list(g.view(s).hand) for s in range(3)]
    played = {}
    for _ in range(3):
        played[g.to_move] = g.legal_actions()[0]
        first_legal(g)
    winner = e.tricks[0].winner
    assert winner is not None
    assert e.draws == [e.stock[:3]]
    for k in range(3):
        seat = (winner + k) % 3
        expected = sorted([c for c in before[seat] if c != played[seat]] + [e.stock[k]])
        assert list(g.view(seat).hand) == expected
    assert g.view(0).stock_size == len(e.stock) - 3


@pytest.mark.parametrize(("players", "tricks", "left"),
                         [(n, t, left) for n, (t, left) in sorted(TRICKS.items())])
def test_tricks_in_game_and_the_leftover_stock(players: int, tricks: int, left: int) -> None:
    g = play_out({"players": players}, seed=players)
    e = g.log[0]
    assert g.view(0).tricks_in_round == tricks
    assert len(e.tricks) == tricks
    assert e.draws is not None and len(e.draws) == tricks
    drawn = [c for d in e.draws for c in d]
    assert drawn == e.stock[: len(drawn)]
    assert all(len(d) in (0, players) for d in e.draws)
    assert len(e.stock) - len(drawn) == left == g.view(0).stock_size
    played = Counter(c for t in e.tricks for c in t.cards)
    assert played + Counter(e.stock[len(drawn):]) == Counter(standard_deck())
    if players == 3:
        assert e.stock[len(drawn):] == [e.trump_card]  # the turned card is never played


@pytest.mark.parametrize("players", [2, 4, 7])
def test_draw_off_plays_one_hand_of_seven_tricks(players: int) -> None:
    g = play_out({"players": players, "draw": False}, seed=3)
    e = g.log[0]
    assert len(e.tricks) == 7 and e.draws is None
    assert g.view(0).stock_size == len(e.stock) == 52 - 7 * players
    assert Counter(c for t in e.tricks for c in t.cards) == Counter(
        c for h in e.hands for c in h)


# -- checks and options -------------------------------------------------------------------


@pytest.mark.parametrize("action", [True, 1.0])
def test_non_int_actions_are_refused(action: object) -> None:
    g = new_game("trumps", {"announce": True}, seed=0)
    with pytest.raises(IllegalAction, match="not an action"):
        g.check(action)  # type: ignore[arg-type]


def test_float_card_is_refused_without_changing_the_game() -> None:
    g, leader = trumps_at_play(["H5 C2", "H9 S3", "S4 D5", "C7 C8"])
    with pytest.raises(IllegalAction):
        g.apply(float(parse_card("H5")))  # type: ignore[arg-type]
    assert sorted(g.view(leader).hand) == sorted(cards("H5 C2"))
    assert g.view(leader).trick.cards == ()


def test_options_defaults_and_errors() -> None:
    assert new_game("trumps").options == {
        "players": 4, "trump": None, "draw": True, "announce": False}
    for bad in ({"players": 1}, {"players": 8}, {"trump": "X"}, {"trump": 2},
                {"draw": "yes"}, {"hook_rule": True}):
        with pytest.raises(OptionError):
            new_game("trumps", bad)
