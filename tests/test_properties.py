"""Property tests over random games of both games, every player count and option.

An independent model of each game (written here from docs/rules.md, sharing no code with the
engine but the card encoding) is driven with the same actions as the engine; at every
step the two must agree on who moves, what is legal, every view of every seat, and in
the end every trick winner, every score and the record. Records must round-trip through
JSON, verify, and be rejected after any single change of a card or a winner.
"""

from __future__ import annotations

import copy
import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.bots import make_bot
from arena.model.record import RecordError, game_record, verify_record
from arena.rules import Decision, Game, IllegalAction, View, new_game

W, J = 64, 65
DECKS = {
    "wizard": Counter([s * 16 + r for s in range(4) for r in range(1, 14)] + [W] * 4 + [J] * 4),
    "trumps": Counter(s * 16 + r for s in range(4) for r in range(2, 15)),
}
CARD_TEXT = {c: "W" if c == W else "J" if c == J else "CDHS"[c // 16] + str(c % 16)
             for deck in DECKS.values() for c in deck}
WIZARD_ROUNDS = {3: 20, 4: 15, 5: 12, 6: 10}
HONOUR_POINTS = {14: 5, 11: 4, 12: 3}
VIEW_FIELDS = {"game", "seat", "players", "options", "round", "rounds", "dealer", "hand",
               "trump_card", "trump", "bids", "trick", "tricks", "won", "scores",
               "stock_size", "tricks_in_round", "decision", "legal"}

WIZARD_CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("wizard", {"players": n, "hook_rule": hook}) for n in (3, 4, 5, 6) for hook in (False, True)
]
TRUMPS_CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("trumps", {"players": n, "trump": t, "draw": d, "announce": a})
    for n in (2, 3, 4, 5, 6, 7) for t in (None, "C", "D", "H", "S")
    for d in (True, False) for a in (False, True)
]
CONFIGS = WIZARD_CONFIGS + TRUMPS_CONFIGS
any_config = st.one_of(st.sampled_from(WIZARD_CONFIGS), st.sampled_from(TRUMPS_CONFIGS))
SETTINGS = settings(max_examples=examples(60), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

Chooser = Callable[[Game], int]


def suit(card: int) -> int:
    return card // 16


def rank(card: int) -> int:
    return card % 16


# -- the independent model ----------------------------------------------------------------


def wizard_winner(cards: list[int], trump: int | None) -> int:
    if W in cards:
        return cards.index(W)
    suited = [i for i, c in enumerate(cards) if c != J]
    if not suited:
        return 0
    pool = [i for i in suited if suit(cards[i]) == trump]
    if not pool:
        led = suit(cards[suited[0]])
        pool = [i for i in suited if suit(cards[i]) == led]
    return max(pool, key=lambda i: rank(cards[i]))


def trumps_winner(cards: list[int], trump: int) -> int:
    pool = [i for i, c in enumerate(cards) if suit(c) == trump]
    if not pool:
        pool = [i for i, c in enumerate(cards) if suit(c) == suit(cards[0])]
    return max(pool, key=lambda i: rank(cards[i]))


def wizard_led_suit(trick: list[int]) -> int | None:
    for c in trick:
        if c == W:
            return None
        if c != J:
            return suit(c)
    return None


def places(totals: list[int]) -> list[int]:
    ranked = sorted(totals, reverse=True)
    return [ranked.index(t) + 1 for t in totals]


class Model:
    """A referee written from docs/rules.md; it takes each deal from the engine's log."""

    def __init__(self, game: str, options: dict[str, Any]) -> None:
        self.game = game
        self.wizard = game == "wizard"
        self.options = options
        self.n = n = options["players"]
        self.rounds = WIZARD_ROUNDS[n] if self.wizard else 1
        self.totals = [0] * n
        self.round = 0
        self.need_deal = True
        self.points: list[list[int]] = []
        self.draws: list[list[int]] = []
        self.all_tricks: list[tuple[int, tuple[int, ...], int]] = []

    def deal(self, hands: list[list[int]], stock: list[int]) -> None:
        n = self.n
        self.round = r = self.round + 1
        self.need_deal = False
        assert Counter([c for h in hands for c in h] + stock) == DECKS[self.game]
        assert [len(h) for h in hands] == [r if self.wizard else 7] * n
        self.hands = [list(h) for h in hands]
        self.stock = list(stock)
        self.drawn = 0
        self.bids: list[int | None] = [None] * n
        self.won = [0] * n
        self.honours = [0] * n
        self.trick: list[int] = []
        self.tricks: list[tuple[int, tuple[int, ...], int]] = []
        if self.wizard:
            self.dealer = (r - 1) % n
            self.trump_card = stock[0] if stock else None
            self.trump = None if self.trump_card in (None, W, J) else suit(stock[0])
            self.tricks_in_round = r
        else:
            self.dealer = 0
            fixed = self.options["trump"]
            self.trump_card = None if fixed else stock[-1]
            self.trump = "CDHS".index(fixed) if fixed else suit(stock[-1])
            full_draws = len(stock) // n if self.options["draw"] else 0
            self.tricks_in_round = 7 + full_draws
        self.leader = (self.dealer + 1) % n
        if self.trump_card == W:
            self.to_move: int | None = self.dealer
            self.decision: Decision | None = Decision.TRUMP
        elif self.wizard or self.options["announce"]:
            self.to_move, self.decision = self.leader, Decision.BID
        else:
            self.to_move, self.decision = self.leader, Decision.PLAY

    def legal(self) -> set[int]:
        if self.decision is Decision.TRUMP:
            return {0, 1, 2, 3}
        if self.decision is Decision.BID:
            bids = set(range(self.tricks_in_round + 1))
            if self.wizard and self.options["hook_rule"] and self.to_move == self.dealer:
                bids.discard(self.round - sum(b for b in self.bids if b is not None))
            return bids
        assert self.to_move is not None
        hand = self.hands[self.to_move]
        if self.wizard:
            led = wizard_led_suit(self.trick)
        else:
            led = suit(self.trick[0]) if self.trick else None
        follow = {c for c in hand if suit(c) == led}
        if not follow:
            return set(hand)
        return follow | ({c for c in hand if c in (W, J)} if self.wizard else set())

    def apply(self, a: int) -> None:
        n = self.n
        seat = self.to_move
        assert seat is not None
        if self.decision is Decision.TRUMP:
            self.trump, self.decision, self.to_move = a, Decision.BID, self.leader
        elif self.decision is Decision.BID:
            self.bids[seat] = a
            if seat == self.dealer:
                self.decision, self.to_move = Decision.PLAY, self.leader
            else:
                self.to_move = (seat + 1) % n
        else:
            self.hands[seat].remove(a)
            self.trick.append(a)
            self.to_move = (seat + 1) % n
            if len(self.trick) == n:
                self._end_trick()

    def _end_trick(self) -> None:
        n = self.n
        if self.wizard:
            winner = (self.leader + wizard_winner(self.trick, self.trump)) % n
        else:
            assert self.trump is not None
            winner = (self.leader + trumps_winner(self.trick, self.trump)) % n
            for c in self.trick:
                if suit(c) == self.trump:
                    self.honours[winner] += HONOUR_POINTS.get(rank(c), 0)
            if self.options["draw"]:
                drawn = []
                if len(self.stock) - self.drawn >= n:
                    for k in range(n):
                        card = self.stock[self.drawn + k]
                        self.hands[(winner + k) % n].append(card)
                        drawn.append(card)
                    self.drawn += n
                self.draws.append(drawn)
        self.won[winner] += 1
        self.tricks.append((self.leader, tuple(self.trick), winner))
        self.all_tricks.append(self.tricks[-1])
        self.trick = []
        self.leader = self.to_move = winner
        if not self.hands[winner]:
            assert not any(self.hands)
            self._end_round()

    def _end_round(self) -> None:
        if self.wizard:
            points = [20 + 10 * w if b == w else -10 * abs(w - b)
                      for b, w in zip(self.bids, self.won, strict=True)]
        else:
            points = []
            for w, b, h in zip(self.won, self.bids, self.honours, strict=True):
                if not self.options["announce"]:
                    points.append(w + h)
                else:
                    assert b is not None
                    points.append((2 * w if w == b else -2 * abs(w - b)) + h)
        self.points.append(points)
        self.totals = [t + p for t, p in zip(self.totals, points, strict=True)]
        if self.round < self.rounds:
            self.need_deal = True
        else:
            self.to_move = self.decision = None


# -- driving the engine and the model together --------------------------------------------


def check_views(g: Game, m: Model) -> None:
    """Every seat's view shows its own hand and the public history, nothing else."""
    legal = m.legal() if m.to_move is not None else set()
    hands: Counter[int] = Counter()
    for seat in range(m.n):
        v = g.view(seat)
        assert {f.name for f in fields(View)} == VIEW_FIELDS
        assert (v.game, v.seat, v.players, v.round, v.rounds, v.dealer) == (
            m.game, seat, m.n, m.round, m.rounds, m.dealer)
        assert dict(v.options) == g.options
        assert sorted(v.hand) == sorted(m.hands[seat])
        assert (v.trump_card, v.trump) == (m.trump_card, m.trump)
        assert list(v.bids) == m.bids
        assert list(v.trick.cards) == m.trick and v.trick.winner is None
        if m.decision is Decision.PLAY:
            assert v.trick.leader == m.leader
        assert [(t.leader, t.cards, t.winner) for t in v.tricks] == m.tricks
        assert list(v.won) == m.won
        assert list(v.scores) == m.totals
        assert v.stock_size == len(m.stock) - m.drawn
        assert v.tricks_in_round == m.tricks_in_round
        if seat == m.to_move:
            assert v.decision is m.decision
            assert set(v.legal) == legal and len(v.legal) == len(legal)
        else:
            assert v.decision is None and v.legal == ()
        hands.update(v.hand)
    # Cards are conserved: hands, trick, this round's tricks and the stock are one deck.
    entry = g.log[-1]
    drawn = sum(len(d) for d in entry.draws or [])
    assert drawn == m.drawn
    played = Counter(c for t in g.view(0).tricks for c in t.cards)
    rest = Counter(entry.stock[drawn:])
    assert hands + Counter(g.view(0).trick.cards) + played + rest == DECKS[m.game]


def check_legal(g: Game, m: Model) -> None:
    assert g.to_move == m.to_move and g.decision is m.decision
    legal = g.legal_actions()
    expected = m.legal()
    assert legal, "no legal action while the game runs"
    assert len(legal) == len(set(legal)) and set(legal) == expected
    for a in expected:
        g.check(a)
    if m.decision is Decision.PLAY:
        assert m.to_move is not None
        hand = m.hands[m.to_move]
        wrong = sorted(set(hand) - expected)
        if wrong:
            with pytest.raises(IllegalAction, match="must follow"):
                g.check(wrong[0])
        absent = sorted(set(DECKS[m.game]) - set(hand))
        with pytest.raises(IllegalAction, match="does not hold"):
            g.check(absent[len(absent) // 2])
    elif m.decision is Decision.BID:
        with pytest.raises(IllegalAction, match="outside"):
            g.check(m.tricks_in_round + 1)
        hooked = set(range(m.tricks_in_round + 1)) - expected
        for b in hooked:
            with pytest.raises(IllegalAction, match="hook"):
                g.check(b)
    else:
        with pytest.raises(IllegalAction):
            g.check(4)


def play_with_model(game: str, options: dict[str, Any], seed: int, choose: Chooser) -> Game:
    g = new_game(game, options, seed)
    m = Model(game, g.options)
    while True:
        if m.need_deal:
            assert len(g.log) == m.round + 1, "the engine did not start the next round"
            e = g.log[-1]
            assert e.number == m.round + 1
            m.deal(e.hands, e.stock)
            assert e.dealer == m.dealer and e.trump_card == m.trump_card
        check_views(g, m)
        if m.to_move is None:
            break
        check_legal(g, m)
        a = choose(g)
        g.apply(a)
        m.apply(a)
    assert g.is_over and g.to_move is None and g.decision is None
    assert [e.points for e in g.log] == m.points
    assert list(g.outcome().totals) == m.totals == g.totals
    assert list(g.outcome().places) == places(m.totals)
    if game == "trumps" and options["draw"]:
        assert g.log[0].draws == m.draws
    check_record(g, m)
    return g


def check_record(g: Game, m: Model) -> None:
    seats = [f"bot{i}" for i in range(m.n)]
    rec = game_record(g, seats, game_id="g1")
    text = json.dumps(rec)
    back = json.loads(text)
    assert back == rec
    verify_record(back)
    assert back["game_id"] == "g1" and back["seats"] == seats
    assert back["totals"] == m.totals and back["places"] == places(m.totals)
    assert [rd["points"] for rd in back["rounds"]] == m.points
    tricks = [(t["leader"], t["cards"], t["winner"]) for rd in back["rounds"]
              for t in rd["tricks"]]
    assert tricks == [(lead, [CARD_TEXT[c] for c in cards], win)
                      for lead, cards, win in m.all_tricks]


def random_chooser(seed: int) -> Chooser:
    rng = random.Random(seed)
    return lambda g: rng.choice(g.legal_actions())


def bot_chooser(name: str, seed: int, players: int) -> Chooser:
    bots = [make_bot(name, seed + i) for i in range(players)]

    def choose(g: Game) -> int:
        seat = g.to_move
        assert seat is not None
        return bots[seat].act(g.view(seat))
    return choose


def run_fast(game: str, options: dict[str, Any], seed: int, choose: Chooser) -> Game:
    g = new_game(game, options, seed)
    while not g.is_over:
        g.apply(choose(g))
    return g


# -- the properties -----------------------------------------------------------------------


@pytest.mark.parametrize(("index", "game", "options"),
                         [(i, g, o) for i, (g, o) in enumerate(CONFIGS)],
                         ids=[f"{g}-{'-'.join(map(str, o.values()))}" for g, o in CONFIGS])
def test_every_configuration_agrees_with_the_model(index: int, game: str,
                                                   options: dict[str, Any]) -> None:
    play_with_model(game, options, seed=1000 + index, choose=random_chooser(index))


@SETTINGS
@given(config=any_config, seed=st.integers(0, 2**64),
       moves=st.integers(0, 2**32), heuristic=st.booleans())
def test_random_games_agree_with_the_model(config: tuple[str, dict[str, Any]], seed: int,
                                           moves: int, heuristic: bool) -> None:
    game, options = config
    choose = (bot_chooser("heuristic", moves, options["players"]) if heuristic
              else random_chooser(moves))
    play_with_model(game, options, seed, choose)


@settings(max_examples=examples(25), deadline=None)
@given(config=any_config, seed=st.integers(0, 2**32))
def test_deals_depend_only_on_game_options_and_seed(config: tuple[str, dict[str, Any]],
                                                    seed: int) -> None:
    game, options = config
    n = options["players"]
    seats = [f"s{i}" for i in range(n)]
    first = game_record(run_fast(game, options, seed, random_chooser(1)), seats)
    again = game_record(run_fast(game, dict(options), seed, random_chooser(1)), seats)
    assert json.dumps(first) == json.dumps(again)
    other_play = game_record(run_fast(game, options, seed, bot_chooser("heuristic", 0, n)), seats)
    deal = ("number", "dealer", "hands", "stock", "trump_card")
    assert len(other_play["rounds"]) == len(first["rounds"])
    for a, b in zip(first["rounds"], other_play["rounds"], strict=True):
        assert [a[k] for k in deal] == [b[k] for k in deal]
    other_seed = game_record(run_fast(game, options, seed + 1, random_chooser(1)), seats)
    assert [rd["hands"] for rd in other_seed["rounds"]] != [
        rd["hands"] for rd in first["rounds"]]


# -- tampered records ---------------------------------------------------------------------


def tamper(rec: dict[str, Any], data: st.DataObject) -> str:
    """Change one card or one winner in ``rec``; returns what was changed."""
    rounds = rec["rounds"]
    n = len(rec["seats"])
    deck = sorted(CARD_TEXT[c] for c in set(DECKS[rec["game"]]))
    swaps = [(ri, a, b) for ri, rd in enumerate(rounds) for a in range(n) for b in range(n)
             if a < b and set(rd["hands"][a]) != set(rd["hands"][b])]
    stocks = [ri for ri, rd in enumerate(rounds) if len(set(rd["stock"])) > 1]
    draws = [(ri, t) for ri, rd in enumerate(rounds) for t, d in enumerate(rd["draws"] or [])
             if d]
    kinds = ["played card", "winner"] + ["hands"] * bool(swaps) + ["stock"] * bool(stocks) + [
        "draw"] * bool(draws)
    kind = data.draw(st.sampled_from(kinds), label="kind")
    if kind == "hands":
        ri, a, b = data.draw(st.sampled_from(swaps), label="hands")
        ha, hb = rounds[ri]["hands"][a], rounds[ri]["hands"][b]
        i, j = data.draw(st.sampled_from([(i, j) for i in range(len(ha))
                                          for j in range(len(hb)) if ha[i] != hb[j]]))
        ha[i], hb[j] = hb[j], ha[i]
    elif kind == "stock":
        stock = rounds[data.draw(st.sampled_from(stocks), label="stock")]["stock"]
        i, j = data.draw(st.sampled_from([(i, j) for i in range(len(stock))
                                          for j in range(i) if stock[i] != stock[j]]))
        stock[i], stock[j] = stock[j], stock[i]
    elif kind == "draw":
        ri, t = data.draw(st.sampled_from(draws), label="draw")
        drawn = rounds[ri]["draws"][t]
        k = data.draw(st.integers(0, len(drawn) - 1))
        drawn[k] = data.draw(st.sampled_from([c for c in deck if c != drawn[k]]))
    else:
        ri = data.draw(st.integers(0, len(rounds) - 1), label="round")
        trick = data.draw(st.sampled_from(rounds[ri]["tricks"]), label="trick")
        if kind == "winner":
            trick["winner"] = (trick["winner"] + data.draw(st.integers(1, n - 1))) % n
        else:
            k = data.draw(st.integers(0, n - 1), label="card")
            trick["cards"][k] = data.draw(st.sampled_from(
                [c for c in deck if c != trick["cards"][k]]), label="new card")
    return kind


@settings(max_examples=examples(60), deadline=None)
@given(config=any_config, seed=st.integers(0, 2**32), data=st.data())
def test_a_record_with_one_changed_card_or_winner_is_rejected(
        config: tuple[str, dict[str, Any]], seed: int, data: st.DataObject) -> None:
    game, options = config
    g = run_fast(game, options, seed, random_chooser(seed))
    rec = json.loads(json.dumps(game_record(g, ["a"] * options["players"])))
    good = copy.deepcopy(rec)
    verify_record(good)
    kind = tamper(rec, data)
    assert rec != good
    with pytest.raises(RecordError, match="round 1" if game == "trumps" else "round"):
        verify_record(rec)
    if kind in ("winner", "played card"):
        with pytest.raises(RecordError, match=r"round \d+, trick \d+, seat \d"):
            verify_record(rec)


# -- views --------------------------------------------------------------------------------


@pytest.mark.parametrize("game", ["wizard", "trumps"])
def test_a_view_cannot_change_the_game(game: str) -> None:
    g = new_game(game, {"players": 4}, seed=0)
    v = g.view(1)
    before = dict(g.options)
    try:
        v.options["players"] = 3  # type: ignore[index]
    except TypeError:
        pass
    assert g.options == before
    assert isinstance(v.hand, tuple) and isinstance(v.legal, tuple)
