"""The built-in bots: always legal, deterministic, and the heuristic plays sensibly.

Constructed situations are Views built by hand (a bot sees nothing else), written with
the record's card names (``H7``, ``S13``, ``W``, ``J``); the seat to move is seat 0.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

import pytest

from arena.bots import Bot, RandomBot, UnknownBot, make_bot
from arena.bots.heuristic import HeuristicBot, choose_trump
from arena.rules import Decision, Game, Trick, View, new_game
from arena.rules.cards import JESTER, WIZARD, parse_card

C, D, H, S = 0, 1, 2, 3


def cards(text: str) -> tuple[int, ...]:
    return tuple(parse_card(t) for t in text.split())


def play_game(game: str, options: dict[str, Any], bots: list[Bot], seed: int) -> Game:
    """Play a whole game, checking that every action is among the view's legal ones."""
    g = new_game(game, options, seed)
    while not g.is_over:
        seat = g.to_move
        assert seat is not None
        view = g.view(seat)
        action = bots[seat].act(view)
        assert action in view.legal, (bots[seat].name, view, action)
        g.apply(action)
    return g


def constructed(game: str, hand: str, trick: str = "", *, trump: int | None = S,
                bid: int | None = 1, won: int = 0, legal: str | None = None,
                played: str = "") -> View:
    """Seat 0's view at its turn to play in a 4-player game, built from card names.

    ``trick`` is the trick so far (from its leader), ``legal`` defaults to the whole
    hand, ``played`` lists cards of earlier tricks (as one completed trick).
    """
    base = new_game(game, {"announce": bid is not None} if game == "trumps" else {}).view(0)
    hand_cards = cards(hand)
    trick_cards = cards(trick)
    earlier = (Trick(1, cards(played), 1),) if played else ()
    return replace(
        base, hand=hand_cards, trump=trump, trump_card=None,
        bids=(bid, 0, 0, 0), won=(won, 0, 0, 0), tricks=earlier,
        trick=Trick(-len(trick_cards) % 4, trick_cards), decision=Decision.PLAY,
        legal=cards(legal) if legal is not None else hand_cards)


def bid_view(hand: str, legal: range | tuple[int, ...], trump: int | None = S) -> View:
    """A 4-player Wizard view of round ``len(hand)`` at seat 0's bid."""
    base = new_game("wizard", {}).view(0)
    hand_cards = cards(hand)
    return replace(base, round=len(hand_cards), hand=hand_cards, trump=trump,
                   decision=Decision.BID, legal=tuple(legal))


# -- every game, every option: legal and deterministic ----------------------------------

WIZARD_OPTIONS = [{"players": n, "hook_rule": hook} for n in (3, 4, 5, 6) for hook in (False, True)]
TRUMPS_OPTIONS = [
    {"players": n, "trump": trump, "draw": draw, "announce": announce}
    for n in (2, 3, 4, 5, 6, 7) for trump in (None, "H") for draw in (True, False)
    for announce in (False, True)
]
ALL_OPTIONS = [("wizard", o) for o in WIZARD_OPTIONS] + [("trumps", o) for o in TRUMPS_OPTIONS]


@pytest.mark.parametrize(("game", "options"), ALL_OPTIONS,
                         ids=[f"{g}-{'-'.join(map(str, o.values()))}" for g, o in ALL_OPTIONS])
def test_bots_always_act_legally(game: str, options: dict[str, Any]) -> None:
    n = options["players"]
    for seed in range(3):
        # All heuristic, then heuristic and random bots alternating.
        bots: list[Bot] = [
            HeuristicBot() if seed == 0 or (seat + seed) % 2 else RandomBot(seed * 10 + seat)
            for seat in range(n)]
        g = play_game(game, options, bots, seed)
        assert g.is_over


@pytest.mark.parametrize(("game", "options"), [("wizard", {"players": 5, "hook_rule": True}),
                                               ("trumps", {"players": 3, "announce": True})])
def test_heuristic_is_deterministic(game: str, options: dict[str, Any]) -> None:
    n = options["players"]
    first = play_game(game, options, [HeuristicBot() for _ in range(n)], seed=7)
    again = play_game(game, options, [make_bot("heuristic", s) for s in range(n)], seed=7)
    assert first.log == again.log
    view = constructed("wizard", "C3 H9 S2 W J", "H7", bid=2)
    bot = HeuristicBot()
    assert len({bot.act(view) for _ in range(5)}) == 1


def test_make_bot_builds_the_builtin_bots() -> None:
    bot = make_bot("heuristic", seed=3)
    assert isinstance(bot, HeuristicBot) and bot.name == "heuristic"
    assert HeuristicBot("mine").name == "mine"
    assert isinstance(make_bot("random", 1), RandomBot)
    with pytest.raises(UnknownBot, match="heuristic"):
        make_bot("clever")


# -- Wizard: trump, bid, play ------------------------------------------------------------

def test_chooses_the_suit_it_holds_most_of() -> None:
    assert choose_trump(cards("C1 D12 D13 H3 H4 H5 W J")) == H
    assert choose_trump(cards("C2 C3 S4 S5")) == S  # a tie: the higher total rank
    assert choose_trump(cards("C5 D5")) == C  # a full tie: the lower suit
    assert choose_trump(cards("W J")) == C
    view = replace(bid_view("S1 D2 D3 D9 C13 W", range(7)), trump=None,
                   decision=Decision.TRUMP, legal=(C, D, H, S))
    assert HeuristicBot().act(view) == D


def test_trump_choices_in_real_games_are_the_longest_suit() -> None:
    chosen = 0
    for seed in range(60):
        g = new_game("wizard", {"players": 6}, seed)
        bot = HeuristicBot()
        while not g.is_over:
            view = g.view(g.to_move)  # type: ignore[arg-type]
            action = bot.act(view)
            if view.decision is Decision.TRUMP:
                counts = [sum(1 for c in view.hand if c < WIZARD and c >> 4 == s)
                          for s in range(4)]
                assert counts[action] == max(counts)
                chosen += 1
            g.apply(action)
    assert chosen >= 5


def test_bids_from_hand_strength_and_respects_the_hook_rule() -> None:
    bot = HeuristicBot()
    assert bot.act(bid_view("W W", range(3))) == 2
    assert bot.act(bid_view("W W", (0, 1))) == 1  # the hook rule forbids 2: nearest legal
    assert bot.act(bid_view("C2 D3 J", range(4))) == 0
    assert bot.act(bid_view("W S13 S12 H2", range(5))) == 3
    # Five high trumps against five low side cards.
    strong, weak = bid_view("S9 S10 S11 S12 S13", range(6)), bid_view("D1 D2 C3 C4 H5", range(6))
    assert bot.act(strong) >= 4 > 0 == bot.act(weak)


def test_ducks_with_a_jester_or_the_highest_loser_once_the_bid_is_made() -> None:
    bot = HeuristicBot()
    assert bot.act(constructed("wizard", "H2 H12 W J", "H7", bid=1, won=1)) == JESTER
    # Highest card that does not beat H7: H5, not H2, and not H12 that would win.
    assert bot.act(constructed("wizard", "H2 H5 H12 W", "H7", bid=1, won=1,
                               legal="H2 H5 H12 W")) == parse_card("H5")
    # A Wizard already won the trick: dump our own Wizard, the riskiest card.
    assert bot.act(constructed("wizard", "C13 W", "W H7", bid=0, won=0)) == WIZARD
    # Every card beats a lone Jester: the weakest is the least likely to hold.
    assert bot.act(constructed("wizard", "C3 S11", "J", bid=0)) == parse_card("C3")
    # Leading with the bid made: a Jester if any, else the weakest card.
    assert bot.act(constructed("wizard", "S13 W J", bid=2, won=2)) == JESTER
    assert bot.act(constructed("wizard", "C2 S13 W", bid=2, won=3)) == parse_card("C2")


def test_wins_as_cheaply_as_it_can_while_it_needs_tricks() -> None:
    bot = HeuristicBot()
    # Follow suit with the lowest heart that beats H7, not H12 or the Wizard.
    assert bot.act(constructed("wizard", "H2 H9 H12 W", "H7", bid=1,
                               legal="H2 H9 H12 W")) == parse_card("H9")
    # Void in hearts: the lowest trump beats any heart.
    assert bot.act(constructed("wizard", "C13 S2 S10 W", "H7 H13", bid=1)) == parse_card("S2")
    # A higher trump is out: only the Wizard wins.
    assert bot.act(constructed("wizard", "C13 S2 W", "H7 S10", bid=1)) == WIZARD
    # A led Jester passes the led suit on: H7 leads, so S2 (trump) wins cheaply; C13 doesn't.
    assert bot.act(constructed("wizard", "C13 S2 W", "J H7", bid=1)) == parse_card("S2")
    # No trump this round: C13 cannot beat a led H7; H8 can.
    assert bot.act(constructed("wizard", "C13 H8 H9", "H7", trump=None, bid=1,
                               legal="H8 H9")) == parse_card("H8")
    # Nothing beats a leading Wizard: give the weakest card away.
    assert bot.act(constructed("wizard", "C13 S2 J", "W H7", bid=2)) == JESTER
    # Leading while tricks are needed: the strongest card.
    assert bot.act(constructed("wizard", "C2 S12 W", bid=1)) == WIZARD


# -- Trumps ------------------------------------------------------------------------------

def test_trumps_takes_tricks_cheaply_and_keeps_its_honours() -> None:
    bot = HeuristicBot()
    assert bot.act(constructed("trumps", "C9 C12 H2", "C5", trump=H, bid=None,
                               legal="C9 C12")) == parse_card("C9")
    assert bot.act(constructed("trumps", "D3 H2 H14", "C5", trump=H, bid=None)) == parse_card("H2")
    # Cannot beat the ace of trumps: dump the lowest card, not the queen of trumps.
    assert bot.act(constructed("trumps", "H12 D14 D3", "C5 H14", trump=H,
                               bid=None)) == parse_card("D3")
    # A jack of trumps given away scores 4 for the taker: give the king instead.
    assert bot.act(constructed("trumps", "H11 H13", "C5 H14", trump=H,
                               bid=None)) == parse_card("H13")
    # Leading: a sure winner (the ace of trumps; once it is gone, the king).
    assert bot.act(constructed("trumps", "C2 D14 H13 H14", trump=H, bid=None)) == parse_card("H14")
    assert bot.act(constructed("trumps", "C2 H13", trump=H, bid=None,
                               played="H14 C3 C4 C5")) == parse_card("H13")
    assert bot.act(constructed("trumps", "C2 H13", trump=H, bid=None)) == parse_card("C2")


def test_trumps_announcement_steers_like_wizard() -> None:
    bot = HeuristicBot()
    # Announcement made: duck under the C9 with the highest club that loses.
    assert bot.act(constructed("trumps", "C5 C8 C10", "C9", trump=H, bid=2,
                               won=2)) == parse_card("C8")
    # Still short: win cheaply.
    assert bot.act(constructed("trumps", "C5 C8 C10 C13", "C9", trump=H,
                               bid=3, won=2)) == parse_card("C10")
    g = new_game("trumps", {"players": 4, "announce": True}, seed=1)
    view = g.view(g.to_move)  # type: ignore[arg-type]
    assert view.decision is Decision.BID
    assert HeuristicBot().act(view) in view.legal


# -- against random ----------------------------------------------------------------------

def mixed_games(game: str, options: dict[str, Any], games: int) -> tuple[list[Game], list[str]]:
    """Games of 4 seats, 2 heuristic and 2 random, the pattern HHRR rotated by game."""
    played = []
    kinds = []
    for k in range(games):
        pattern = ["h" if (seat - k) % 4 < 2 else "r" for seat in range(4)]
        bots = [make_bot("heuristic" if p == "h" else "random", 100 * k + seat)
                for seat, p in enumerate(pattern)]
        played.append(play_game(game, {"players": 4, **options}, bots, seed=1000 + k))
        kinds.append("".join(pattern))
    return played, kinds


def by_kind(games: list[Game], kinds: list[str], value: Any) -> dict[str, list[float]]:
    """``value(game, seat)`` for every seat, grouped by the kind of bot in it."""
    out: dict[str, list[float]] = {"h": [], "r": []}
    for g, pattern in zip(games, kinds, strict=True):
        for seat, kind in enumerate(pattern):
            out[kind].append(value(g, seat))
    return out


def test_heuristic_clearly_beats_random_at_wizard() -> None:
    games, kinds = mixed_games("wizard", {}, 60)
    score = by_kind(games, kinds, lambda g, seat: g.totals[seat])
    made = by_kind(games, kinds, lambda g, seat: statistics.mean(
        r.bids[seat] == r.won[seat] for r in g.log))
    h, r = statistics.mean(score["h"]), statistics.mean(score["r"])
    # Measured (other seeds alike): about +200 against -380 a game; bids made in 52% of
    # rounds against 16%. Playing the first legal card after bidding well: +110, 42%.
    assert h > 150 and h - r > 450, (h, r)
    accuracy_h, accuracy_r = statistics.mean(made["h"]), statistics.mean(made["r"])
    assert accuracy_h > 0.47 and accuracy_h > accuracy_r + 0.3, (accuracy_h, accuracy_r)


@pytest.mark.parametrize("announce", [False, True])
def test_heuristic_beats_random_at_trumps(announce: bool) -> None:
    games, kinds = mixed_games("trumps", {"announce": announce}, 80)
    score = by_kind(games, kinds, lambda g, seat: g.totals[seat])
    h, r = statistics.mean(score["h"]), statistics.mean(score["r"])
    # Measured over other seeds: 7.1..7.9 against 4.6..5.4 points a game (first legal card
    # instead: no margin); with announcements 4.1..4.5 against -5.6..-6.7.
    assert h > r + (8 if announce else 1), (h, r)
