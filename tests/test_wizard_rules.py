"""Wizard (docs/rules.md): one hand-written scenario per rule, each with a fixed deal.

A scenario either searches seeds for a deal with the wanted property, or plays to the
start of a round's play and then overwrites the hands (and the trump) with a fixed deal.
Hands are written in play order from the trick's leader.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from arena.rules import Decision, Game, IllegalAction, OptionError, new_game, option_specs
from arena.rules.cards import JESTER, WIZARD, parse_card, suit_of, wizard_deck
from arena.rules.options import parse_option_texts

C, D, H, S = 0, 1, 2, 3
ROUNDS = {3: 20, 4: 15, 5: 12, 6: 10}


def cards(text: str) -> list[int]:
    return [parse_card(t) for t in text.split()]


def first_legal(g: Game) -> None:
    g.apply(g.legal_actions()[0])


def advance_to_round(g: Game, r: int) -> None:
    """Play first legal actions until round ``r`` has been dealt."""
    while g.log[-1].number < r:
        first_legal(g)


def wizard_at_play(hands: Sequence[str], trump: int | None,
                   bids: Sequence[int] | None = None) -> tuple[Game, int]:
    """A Wizard game at the first trick of round ``len(hand)`` with these hands.

    ``hands`` and ``bids`` are in play order from the leader (the dealer's left, who also
    bids first). Returns the game and the leader's seat.
    """
    n = len(hands)
    r = len(hands[0].split())
    g = new_game("wizard", {"players": n}, seed=0)
    advance_to_round(g, r)
    if g.decision is Decision.TRUMP:
        g.apply(0)
    for i in range(n):
        assert g.decision is Decision.BID
        g.apply(0 if bids is None else bids[i])
    assert g.decision is Decision.PLAY
    leader = g.to_move
    assert leader is not None
    for i, text in enumerate(hands):
        g.hands[(leader + i) % n][:] = sorted(cards(text))  # type: ignore[attr-defined]
    g.trump = trump  # type: ignore[attr-defined]
    g._legal = None  # type: ignore[attr-defined]
    return g, leader


def play(g: Game, text: str) -> None:
    for card in cards(text):
        g.apply(card)


def last_trick_winner(g: Game, r: int) -> int:
    winner = g.log[r - 1].tricks[-1].winner
    assert winner is not None
    return winner


def find_seed(options: dict[str, object], r: int, wanted: Callable[[Game], bool]) -> Game:
    """The first game (seeds 0, 1, ...) whose round ``r`` deal satisfies ``wanted``."""
    for seed in range(2000):
        g = new_game("wizard", options, seed)
        advance_to_round(g, r)
        if wanted(g):
            return g
    raise AssertionError("no seed gives the wanted deal")


# -- the deal, rounds and dealers ---------------------------------------------------------


@pytest.mark.parametrize(("players", "rounds"), sorted(ROUNDS.items()))
def test_rounds_per_player_count_and_cards_per_round(players: int, rounds: int) -> None:
    g = new_game("wizard", {"players": players}, seed=3)
    assert g.rounds == rounds
    while not g.is_over:
        first_legal(g)
    assert [e.number for e in g.log] == list(range(1, rounds + 1))
    for e in g.log:
        assert [len(h) for h in e.hands] == [e.number] * players
        assert sorted([c for h in e.hands for c in h] + e.stock) == sorted(wizard_deck())
        assert len(e.tricks) == e.number


@pytest.mark.parametrize("players", [3, 4, 5, 6])
def test_dealer_rotates_and_the_dealers_left_bids_first_and_leads(players: int) -> None:
    g = new_game("wizard", {"players": players}, seed=11)
    bid_order: dict[int, list[int]] = {}
    while not g.is_over:
        if g.decision is Decision.BID:
            bid_order.setdefault(g.log[-1].number, []).append(g.to_move)  # type: ignore[arg-type]
        first_legal(g)
    for e in g.log:
        dealer = (e.number - 1) % players
        assert e.dealer == dealer
        assert bid_order[e.number] == [(dealer + 1 + k) % players for k in range(players)]
        assert e.tricks[0].leader == (dealer + 1) % players
        for before, after in zip(e.tricks, e.tricks[1:], strict=False):
            assert after.leader == before.winner


def test_bids_range_over_zero_to_the_round_number() -> None:
    g = new_game("wizard", {"players": 3}, seed=1)
    advance_to_round(g, 5)
    if g.decision is Decision.TRUMP:
        g.apply(H)
    assert g.legal_actions() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(IllegalAction, match=r"outside 0\.\.5"):
        g.check(6)
    with pytest.raises(IllegalAction, match="outside"):
        g.check(-1)


def test_bids_are_public() -> None:
    g = new_game("wizard", {"players": 4}, seed=2)
    advance_to_round(g, 3)
    if g.decision is Decision.TRUMP:
        g.apply(C)
    first = g.to_move
    g.apply(2)
    for seat in range(4):
        assert g.view(seat).bids[first] == 2  # type: ignore[index]


# -- the trump ----------------------------------------------------------------------------


def test_suited_card_turned_sets_trump() -> None:
    g = find_seed({"players": 4}, 2,
                  lambda g: g.log[-1].trump_card not in (WIZARD, JESTER))
    card = g.log[1].trump_card
    assert card is not None
    assert g.log[1].stock[0] == card
    assert g.view(0).trump == suit_of(card) == g.log[1].trump
    assert g.decision is Decision.BID


def test_jester_turned_means_no_trump() -> None:
    g = find_seed({"players": 4}, 1, lambda g: g.log[-1].trump_card == JESTER)
    assert g.decision is Decision.BID
    assert g.view(1).trump is None
    assert g.log[0].trump is None
    assert g.view(1).trump_card == JESTER


@pytest.mark.parametrize("r", [1, 3])
def test_wizard_turned_the_dealer_chooses_a_suit(r: int) -> None:
    g = find_seed({"players": 4}, r, lambda g: g.log[-1].trump_card == WIZARD)
    dealer = (r - 1) % 4
    assert g.log[-1].dealer == dealer
    assert g.to_move == dealer
    assert g.decision is Decision.TRUMP
    assert sorted(g.legal_actions()) == [C, D, H, S]
    for no_trump in (-1, 4, 5):
        with pytest.raises(IllegalAction, match="suit"):
            g.check(no_trump)
    mine = g.view(dealer)
    assert mine.decision is Decision.TRUMP and len(mine.hand) == r
    assert mine.trump is None
    other = g.view((dealer + 1) % 4)
    assert other.decision is None and other.legal == ()
    g.apply(S)
    assert g.view(0).trump == S
    assert g.log[-1].trump == S
    assert g.decision is Decision.BID
    assert g.to_move == (dealer + 1) % 4


@pytest.mark.parametrize(("players", "rounds"), sorted(ROUNDS.items()))
def test_last_round_has_no_trump_card_and_no_trump(players: int, rounds: int) -> None:
    g = new_game("wizard", {"players": players}, seed=4)
    advance_to_round(g, rounds)
    e = g.log[-1]
    assert e.stock == [] and e.trump_card is None and e.trump is None
    assert g.decision is Decision.BID
    assert g.view(0).trump is None and g.view(0).trump_card is None
    assert g.view(0).stock_size == 0


# -- the hook rule ------------------------------------------------------------------------


def at_round_3_bidding(hook_rule: bool) -> Game:
    g = new_game("wizard", {"players": 4, "hook_rule": hook_rule}, seed=5)
    advance_to_round(g, 3)
    if g.decision is Decision.TRUMP:
        g.apply(D)
    assert g.decision is Decision.BID and g.to_move == 3  # round 3: dealer 2
    return g


@pytest.mark.parametrize(("earlier", "forbidden"),
                         [((1, 1, 0), 1), ((1, 1, 1), 0), ((0, 0, 0), 3), ((2, 0, 1), 0)])
def test_hook_rule_forbids_exactly_one_dealer_bid(earlier: tuple[int, ...],
                                                  forbidden: int) -> None:
    g = at_round_3_bidding(hook_rule=True)
    for b in earlier:
        assert g.to_move != 2
        assert g.legal_actions() == [0, 1, 2, 3]  # not the dealer: no restriction
        g.apply(b)
    assert g.to_move == 2
    assert sorted(g.legal_actions()) == [b for b in range(4) if b != forbidden]
    with pytest.raises(IllegalAction, match="hook"):
        g.check(forbidden)
    with pytest.raises(IllegalAction):
        g.apply(forbidden)
    assert g.to_move == 2 and g.decision is Decision.BID
    g.apply((forbidden + 1) % 4)
    assert g.decision is Decision.PLAY


@pytest.mark.parametrize("earlier", [(2, 2, 0), (3, 3, 3), (1, 2, 1)])
def test_hook_rule_forbids_nothing_when_the_value_is_out_of_range(
        earlier: tuple[int, ...]) -> None:
    g = at_round_3_bidding(hook_rule=True)
    for b in earlier:
        g.apply(b)
    assert g.legal_actions() == [0, 1, 2, 3]


def test_hook_rule_off_by_default_lets_the_dealer_make_the_sum() -> None:
    g = at_round_3_bidding(hook_rule=False)
    assert g.options["hook_rule"] is False
    for b in (1, 1, 0):
        g.apply(b)
    assert g.legal_actions() == [0, 1, 2, 3]
    g.check(1)


def test_hook_rule_in_round_one() -> None:
    g = new_game("wizard", {"players": 3, "hook_rule": True}, seed=0)
    if g.decision is Decision.TRUMP:
        g.apply(C)
    g.apply(0)
    g.apply(0)
    assert g.to_move == 0
    assert g.legal_actions() == [0]


# -- following suit -----------------------------------------------------------------------


def test_must_follow_the_led_suit() -> None:
    g, leader = wizard_at_play(["H2 C1 C3", "H9 S4 S5", "S6 S7 D7"], trump=C)
    play(g, "H2")
    assert g.legal_actions() == cards("H9")
    with pytest.raises(IllegalAction, match="must follow hearts"):
        g.check(parse_card("S4"))
    with pytest.raises(IllegalAction, match="must follow"):
        g.apply(parse_card("S5"))
    play(g, "H9")
    assert sorted(g.legal_actions()) == sorted(cards("S6 S7 D7"))  # no heart: any card
    play(g, "D7")
    assert last_trick_winner(g, 3) == (leader + 1) % 3


def test_wizard_and_jester_are_always_playable() -> None:
    g, _ = wizard_at_play(["H2 C1 C3", "H9 W J", "H5 W S4"], trump=C)
    play(g, "H2")
    assert sorted(g.legal_actions()) == sorted(cards("H9 W J"))
    play(g, "J")
    assert sorted(g.legal_actions()) == sorted(cards("H5 W"))
    with pytest.raises(IllegalAction, match="must follow hearts"):
        g.check(parse_card("S4"))


def test_leader_may_play_any_card() -> None:
    g, _ = wizard_at_play(["H2 C1 W", "H9 D1 J", "H5 S3 S4"], trump=C)
    assert sorted(g.legal_actions()) == sorted(cards("H2 C1 W"))


def test_jester_led_then_a_suited_card_sets_the_led_suit() -> None:
    g, leader = wizard_at_play(["J C1", "S5 C2", "S2 H9", "D4 D5"], trump=H)
    play(g, "J")
    assert sorted(g.legal_actions()) == sorted(cards("S5 C2"))  # a Jester sets no suit
    play(g, "S5")
    assert g.legal_actions() == cards("S2")
    with pytest.raises(IllegalAction, match="must follow spades"):
        g.check(parse_card("H9"))
    play(g, "S2")
    assert sorted(g.legal_actions()) == sorted(cards("D4 D5"))
    play(g, "D4")
    assert last_trick_winner(g, 2) == (leader + 1) % 4


def test_jester_led_then_a_wizard_no_led_suit_and_the_wizard_wins() -> None:
    g, leader = wizard_at_play(["J C1", "W C2", "H3 S7", "H5 D4"], trump=S)
    play(g, "J W")
    assert sorted(g.legal_actions()) == sorted(cards("H3 S7"))
    play(g, "H3")
    assert sorted(g.legal_actions()) == sorted(cards("H5 D4"))  # H3 set no led suit
    play(g, "D4")
    assert last_trick_winner(g, 2) == (leader + 1) % 4


def test_wizard_led_frees_everyone_and_wins() -> None:
    g, leader = wizard_at_play(["W C1", "H3 S13", "H9 C5", "S1 H13"], trump=S)
    play(g, "W")
    assert sorted(g.legal_actions()) == sorted(cards("H3 S13"))
    play(g, "H3")
    assert sorted(g.legal_actions()) == sorted(cards("H9 C5"))
    play(g, "C5 S1")
    assert last_trick_winner(g, 2) == leader


# -- the trick winner ---------------------------------------------------------------------


@pytest.mark.parametrize(("trick", "trump", "winner"), [
    ("H13 C2 C5 H12", C, 2),     # highest trump wins
    ("D3 S13 D9 D1", None, 2),   # no trump: highest of the led suit
    ("D3 S13 D9 D1", H, 2),      # trump not played: highest of the led suit
    ("C3 C9 H13 W", C, 3),       # a Wizard beats trumps
    ("H13 W W C1", C, 1),        # the first Wizard wins
    ("J J J J", H, 0),           # every card a Jester: the first Jester
    ("J J H2 J", C, 2),          # one suited card among Jesters
    ("J H2 S1 H3", S, 2),        # a low trump beats the led suit
    ("J C1 C2 J", None, 2),      # led suit after a Jester, no trump
    ("S1 H13 J D13", None, 0),   # off-suit high cards do not win
])
def test_trick_winner(trick: str, trump: int | None, winner: int) -> None:
    played = trick.split()
    n = len(played)
    g, leader = wizard_at_play(played, trump=trump)
    play(g, trick)
    assert last_trick_winner(g, 1) == (leader + winner) % n
    assert g.log[0].won[(leader + winner) % n] == 1


def test_trick_winner_leads_the_next_trick() -> None:
    g, leader = wizard_at_play(["H2 C1", "H9 C2", "H5 C3"], trump=None)
    play(g, "H2 H9 H5")
    assert g.to_move == (leader + 1) % 3
    assert g.view(0).trick.cards == ()


# -- scoring ------------------------------------------------------------------------------


def test_scoring_exact_bid_and_misses() -> None:
    # Round 2, 4 players: dealer 1, the leader is seat 2.
    g, leader = wizard_at_play(["W H13", "H1 H2", "H3 H4", "J C1"], trump=C,
                               bids=[2, 1, 0, 0])
    play(g, "W H1 H3 J")     # leader wins
    play(g, "H13 H2 H4 C1")  # C1 trumps: the last player wins
    points = [0] * 4
    # leader: bid 2 won 1 -> -10; next: bid 1 won 0 -> -10; next: bid 0 won 0 -> 20;
    # last: bid 0 won 1 -> -10.
    for i, p in enumerate([-10, -10, 20, -10]):
        points[(leader + i) % 4] = p
    won = [0] * 4
    won[leader] = won[(leader + 3) % 4] = 1
    assert g.log[1].points == points
    assert g.log[1].won == won


def test_scoring_adds_ten_per_trick_and_subtracts_ten_per_trick_of_difference() -> None:
    g, leader = wizard_at_play(["W W", "J J", "H3 H4"], trump=None, bids=[2, 2, 0])
    before = list(g.totals)
    play(g, "W J H3 W J H4")
    points = [0] * 3
    for i, p in enumerate([40, -20, 20]):
        points[(leader + i) % 3] = p
    assert g.log[1].points == points
    assert g.totals == [b + p for b, p in zip(before, points, strict=True)]
    assert g.view(0).scores == tuple(g.totals)


def test_ties_share_a_place() -> None:
    g = new_game("wizard", {"players": 3}, seed=0)
    while not g.is_over:
        first_legal(g)
    g.totals[:] = [30, 10, 30]  # type: ignore[index]
    assert g.outcome().places == (1, 3, 1)
    g.totals[:] = [10, 10, 10]  # type: ignore[index]
    assert g.outcome().places == (1, 1, 1)


# -- checks and options -------------------------------------------------------------------


def test_playing_a_card_not_held_is_refused_and_changes_nothing() -> None:
    g, leader = wizard_at_play(["H2 C1", "H9 C2", "H5 C3"], trump=None)
    with pytest.raises(IllegalAction, match="does not hold"):
        g.apply(parse_card("S7"))
    assert g.to_move == leader
    assert sorted(g.view(leader).hand) == sorted(cards("H2 C1"))


def test_actions_after_the_end_are_refused() -> None:
    g = new_game("wizard", {"players": 6}, seed=0)
    while not g.is_over:
        first_legal(g)
    assert g.legal_actions() == [] and g.decision is None
    with pytest.raises(IllegalAction, match="over"):
        g.check(0)


@pytest.mark.parametrize("action", [True, 1.0])
def test_non_int_actions_are_refused(action: object) -> None:
    g = new_game("wizard", {"players": 3}, seed=0)
    if g.decision is Decision.TRUMP:
        g.apply(C)
    assert 1 in g.legal_actions()
    with pytest.raises(IllegalAction, match="not an action"):
        g.check(action)  # type: ignore[arg-type]


def test_float_card_is_refused_without_changing_the_game() -> None:
    g, leader = wizard_at_play(["H2 C1", "H9 C2", "H5 C3"], trump=None)
    with pytest.raises(IllegalAction):
        g.apply(float(parse_card("H2")))  # type: ignore[arg-type]
    assert sorted(g.view(leader).hand) == sorted(cards("H2 C1"))
    assert g.view(leader).trick.cards == ()


def test_options_defaults_and_errors() -> None:
    assert new_game("wizard").options == {"players": 4, "hook_rule": False}
    for bad in ({"players": 2}, {"players": 7}, {"hook_rule": 1}, {"colour": True}):
        with pytest.raises(OptionError):
            new_game("wizard", bad)


def test_option_texts_parse_or_raise_option_error() -> None:
    specs = option_specs("wizard")
    assert parse_option_texts("wizard", specs, ["players=5", "hook_rule=true"]) == {
        "players": 5, "hook_rule": True}
    for bad in ("players=x", "players=9", "players=²", "hook_rule=1", "colour=red", "players"):
        with pytest.raises(OptionError):
            parse_option_texts("wizard", specs, [bad])
