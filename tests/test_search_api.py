"""The public search API (arena/rules/search.py): rebuilding a game from a view and a deal,
and sampling deals consistent with a view. Property tests over random games."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from typing import Any

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.rules import Deal, DealError, Game, IllegalAction, Trick, View, new_game
from arena.rules.cards import JESTER, WIZARD
from arena.rules.search import (
    Sampler,
    check_deal,
    game_from_view,
    hand_sizes,
    played_cards,
    sample_deal,
    turned_card_holder,
)
from arena.rules.wizard import wizard_led_suit

SETTINGS = settings(max_examples=examples(40), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

games = st.one_of(
    st.tuples(st.just("wizard"), st.fixed_dictionaries({
        "players": st.integers(3, 6), "hook_rule": st.booleans()})),
    st.tuples(st.just("trumps"), st.fixed_dictionaries({
        "players": st.integers(2, 7), "draw": st.booleans(), "announce": st.booleans(),
        "trump": st.sampled_from([None, None, "H"])})),
)


def _advance(game: Game, rng: random.Random, steps: int) -> None:
    """Up to ``steps`` random legal actions (stopping at the game's end)."""
    for _ in range(steps):
        if game.is_over:
            return
        game.apply(rng.choice(game.legal_actions()))


def _position(kind: tuple[str, dict[str, Any]], seed: int, steps: int) -> Game:
    name, options = kind
    game = new_game(name, options, seed)
    _advance(game, random.Random(seed), steps)
    return game


@SETTINGS
@given(games, st.integers(0, 2**32), st.integers(0, 400), st.data())
def test_the_real_deal_rebuilds_a_game_that_continues_identically(
        kind: tuple[str, dict[str, Any]], seed: int, steps: int, data: st.DataObject) -> None:
    game = _position(kind, seed, steps)
    seat = data.draw(st.integers(0, game.players - 1))
    view = game.view(seat)
    rebuilt = game_from_view(view, game.deal(), game.seed)
    rng = random.Random(seed + 1)
    while True:
        assert rebuilt.to_move == game.to_move and rebuilt.decision == game.decision
        for s in range(game.players):
            assert rebuilt.view(s) == game.view(s)
        assert rebuilt.deal() == game.deal()
        if game.is_over:
            break
        assert rebuilt.legal_actions() == game.legal_actions()
        action = rng.choice(game.legal_actions())
        game.apply(action)
        rebuilt.apply(action)
    assert rebuilt.outcome() == game.outcome()


def _wizard_start(view: View, deal: Deal) -> tuple[Game, list[int]]:
    """A Wizard game at the first trick of the view's round, dealt the hands the sample
    implies (its hands plus the cards each seat has played), and the cards played since."""
    n = view.players
    hands = [list(h) for h in deal.hands]
    for t in (*view.tricks, view.trick):
        for i, c in enumerate(t.cards):
            hands[t.seat_of(i, n)].append(c)
    start = dataclasses.replace(
        view, hand=tuple(sorted(hands[view.seat])), trick=Trick((view.dealer + 1) % n, ()),
        tricks=(), won=(0,) * n)
    game = game_from_view(start, Deal(tuple(tuple(sorted(h)) for h in hands), deal.stock))
    return game, played_cards(view)


def _trumps_voids_hold(view: View, deal: Deal) -> None:
    """Trumps: a seat that failed to follow suit S at trick t holds (now) or has played
    (after t) no more cards of S than it has drawn since t."""
    n = view.players
    # rounds of draws so far: what seat 0 holds and has played, beyond its seven
    draws = hand_sizes(view)[0] - 7 + sum(
        1 for t in (*view.tricks, view.trick) for i in range(len(t.cards))
        if t.seat_of(i, n) == 0)
    for index, t in enumerate((*view.tricks, view.trick)):
        for i, c in enumerate(t.cards):
            seat = t.seat_of(i, n)
            led = t.cards[0] >> 4
            if i == 0 or c >> 4 == led or seat == view.seat:
                continue
            later = sum(1 for j, u in enumerate((*view.tricks, view.trick)) if j > index
                        for k, x in enumerate(u.cards) if u.seat_of(k, n) == seat
                        and x >> 4 == led)
            held = sum(1 for x in deal.hands[seat] if x >> 4 == led)
            drawn_since = max(0, draws - index)
            assert held + later <= drawn_since, (seat, led, index)


@SETTINGS
@given(games, st.integers(0, 2**32), st.integers(0, 400), st.data())
def test_every_sampled_deal_is_consistent_with_the_view(
        kind: tuple[str, dict[str, Any]], seed: int, steps: int, data: st.DataObject) -> None:
    game = _position(kind, seed, steps)
    seat = data.draw(st.integers(0, game.players - 1))
    view = game.view(seat)
    sampler = Sampler(view)
    rng = random.Random(seed)
    for _ in range(5):
        deal = sampler.sample(rng)
        check_deal(view, deal)
        assert deal.hands[seat] == tuple(sorted(view.hand))
        assert all(list(h) == sorted(h) for h in deal.hands)
        if view.game == "wizard":
            # the whole round replays legally from the hands the sample implies
            start, plays = _wizard_start(view, deal)
            for c in plays:
                start.apply(c)
            for s in range(view.players):
                assert start.view(s).hand == deal.hands[s]
        else:
            _trumps_voids_hold(view, deal)
            holder = turned_card_holder(view)
            if holder is not None and view.trump_card not in played_cards(view):
                assert view.trump_card in deal.hands[holder]
        if game.is_over:
            continue
        rebuilt = game_from_view(view, deal)
        assert rebuilt.view(seat) == view
        # the seats can play the sample out to the end of the round
        number = rebuilt.log[-1].number
        while not rebuilt.is_over and rebuilt.log[-1].number == number:
            rebuilt.apply(rng.choice(rebuilt.legal_actions()))


@SETTINGS
@given(st.integers(0, 2**32), st.integers(3, 6))
def test_wizard_samples_never_give_a_seat_a_suit_it_failed_to_follow(seed: int,
                                                                      players: int) -> None:
    game = new_game("wizard", {"players": players}, seed)
    rng = random.Random(seed)
    # late rounds, where seats show voids and the stock is small
    while not game.is_over and game.log[-1].number < 60 // players - 1:
        game.apply(rng.choice(game.legal_actions()))
    while not game.is_over:
        game.apply(rng.choice(game.legal_actions()))
        if game.is_over:
            break
        view = game.view(game.to_move or 0)
        lacking: dict[int, set[int]] = {s: set() for s in range(players)}
        for t in (*view.tricks, view.trick):
            for i, c in enumerate(t.cards):
                led = wizard_led_suit(t.cards[:i])
                if led is not None and c not in (WIZARD, JESTER) and c >> 4 != led:
                    lacking[t.seat_of(i, players)].add(led)
        deal = sample_deal(view, rng)
        for s, suits in lacking.items():
            if s != view.seat:
                assert not any(c < WIZARD and c >> 4 in suits for c in deal.hands[s])


def test_sampling_is_deterministic_given_the_generator() -> None:
    game = new_game("wizard", {}, 7)
    _advance(game, random.Random(7), 120)
    view = game.view(game.to_move or 0)
    first = [sample_deal(view, random.Random(3)) for _ in range(2)]
    assert first[0] == first[1]
    spread = {sample_deal(view, random.Random(k)) for k in range(20)}
    assert len(spread) > 1  # the generator matters


def test_a_fully_known_position_has_exactly_one_deal() -> None:
    # two-player Trumps at the last trick: the stock is gone, the other card is what is left
    game = new_game("trumps", {"players": 2}, 5)
    while len(game.view(0).tricks) < 25:
        game.apply(game.legal_actions()[0])
    view = game.view(0)
    deals = {sample_deal(view, random.Random(k)).hands for k in range(10)}
    assert deals == {game.deal().hands}


def test_bad_deals_are_refused_with_the_reason() -> None:
    game = new_game("wizard", {}, 3)
    _advance(game, random.Random(3), 30)
    view = game.view(1)
    real = game.deal()
    others = [list(h) for h in real.hands]
    with pytest.raises(DealError, match="seat 1's hand"):
        check_deal(view, Deal(tuple(tuple(h) for h in others[::-1]), real.stock))
    short = [tuple(h) for h in others]
    short[2] = short[2][1:]
    with pytest.raises(DealError, match="seat 2 holds"):
        check_deal(view, Deal(tuple(short), real.stock))
    swapped = [list(h) for h in others]
    swapped[2][0] = played_cards(view)[0] if played_cards(view) else swapped[2][0]
    if played_cards(view):
        with pytest.raises(DealError, match="not the deck"):
            game_from_view(view, Deal(tuple(tuple(sorted(h)) for h in swapped), real.stock))
    stock = real.stock[1:] + real.stock[:1]
    if len(set(real.stock)) > 1:
        with pytest.raises(DealError, match="turned card"):
            check_deal(view, Deal(real.hands, stock))


def test_an_impossible_card_in_the_trick_in_progress_is_illegal() -> None:
    # a deal that gives a seat that played into the trick a card of the led suit it did
    # not follow is refused by the rules themselves when the trick is replayed
    for seed in range(200):
        game = new_game("trumps", {"players": 3, "draw": False}, seed)
        rng = random.Random(seed)
        while not game.is_over:
            view = game.view(0)
            t = view.trick
            if len(t.cards) == 2 and t.cards[1] >> 4 != t.cards[0] >> 4 and t.leader == 1:
                real = game.deal()
                hands = [list(h) for h in real.hands]
                led = t.cards[0] >> 4
                spare = [c for c in hands[0] if c >> 4 == led]
                if spare:
                    hands[0].remove(spare[0])
                    give = hands[2].pop(0)  # seat 2 played cards[1], not following
                    hands[2].append(spare[0])
                    hands[0].append(give)
                    view0 = dataclasses.replace(view, hand=tuple(sorted(hands[0])))
                    bad = Deal(tuple(tuple(sorted(h)) for h in hands), real.stock)
                    with pytest.raises(IllegalAction, match="must follow"):
                        game_from_view(view0, bad, check=False)
                    return
            game.apply(rng.choice(game.legal_actions()))
    pytest.fail("no position found")


def test_hand_sizes_match_the_real_game() -> None:
    for name, options in (("wizard", {"players": 5}), ("trumps", {"players": 3})):
        game = new_game(name, options, 11)
        rng = random.Random(11)
        while not game.is_over:
            view = game.view(0)
            assert hand_sizes(view) == tuple(len(h) for h in game.deal().hands)
            assert Counter(c for h in game.deal().hands for c in h) + Counter(
                game.deal().stock) + Counter(played_cards(view)) == Counter(
                c for h in game.log[-1].hands for c in h) + Counter(game.log[-1].stock)
            game.apply(rng.choice(game.legal_actions()))


@SETTINGS
@given(games, st.integers(0, 2**32), st.integers(0, 300))
def test_round_only_ends_the_game_with_the_round(kind: tuple[str, dict[str, Any]], seed: int,
                                                 steps: int) -> None:
    game = _position(kind, seed, steps)
    if game.is_over:
        return
    view = game.view(0)
    short = game_from_view(view, game.deal(), game.seed, round_only=True)
    number = game.log[-1].number
    rng = random.Random(seed)
    while game.log[-1].number == number and not game.is_over:
        action = rng.choice(game.legal_actions())
        game.apply(action)
        short.apply(action)
    assert short.is_over and short.decision is None
    assert short.log[-1].points == next(e for e in game.log if e.number == number).points
    points = [e.points or [0] * game.players for e in game.log if e.number <= number]
    assert short.totals == [sum(p[s] for p in points) for s in range(game.players)]
