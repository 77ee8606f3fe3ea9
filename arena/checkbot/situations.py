"""The scripted rule situations of ``arena check-bot``: positions found by searching
seeded deals (a led Jester, a forced follow-suit, the hook rule, ...), each replayable
from its seed and actions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena.rules import Decision, Game, new_game
from arena.rules.cards import JESTER, WIZARD, format_card

SEARCH_SEEDS = 2000
"""How many seeds a situation's search tries before giving up (a bug if it ever does)."""


@dataclass(frozen=True, slots=True)
class Position:
    """A decision in a real game: ``actions`` played from the deal of (game, options, seed)."""

    game: str
    options: Mapping[str, Any]
    seed: int
    actions: tuple[int, ...]
    note: str
    """What the seat to move faces, for the report."""

    def replay(self) -> Game:
        g = new_game(self.game, dict(self.options), self.seed)
        for action in self.actions:
            g.apply(action)
        if g.to_move is None:
            raise RuntimeError(f"position {self.note!r} is past the end of the game")
        return g


@dataclass(frozen=True, slots=True)
class Situation:
    """A scripted check: the positions it asks the bot about, built on demand."""

    game: str
    title: str
    build: Callable[[], list[Position]]


class _Script:
    """A game being driven to a position, remembering the actions for the replay."""

    def __init__(self, game: str, options: Mapping[str, Any], seed: int) -> None:
        self.options = dict(options)
        self.seed = seed
        self.g = new_game(game, self.options, seed)
        self.actions: list[int] = []

    def apply(self, action: int) -> None:
        self.g.apply(action)
        self.actions.append(action)

    def to_round(self, r: int) -> None:
        """Play the smallest legal actions until round ``r`` is dealt."""
        while self.g.log[-1].number < r:
            self.apply(self.g.legal_actions()[0])

    def to_first_trick(self, bids: Sequence[int] = ()) -> int:
        """Choose clubs if asked, bid ``bids`` then the smallest legal; return the leader."""
        k = 0
        while self.g.decision is not Decision.PLAY:
            if self.g.decision is Decision.TRUMP:
                self.apply(0)
            else:
                self.apply(bids[k] if k < len(bids) else self.g.legal_actions()[0])
                k += 1
        assert self.g.to_move is not None
        return self.g.to_move

    def hand(self, seat: int) -> tuple[int, ...]:
        return self.g.view(seat % self.g.players).hand

    def position(self, note: str) -> Position:
        return Position(self.g.name, self.options, self.seed, tuple(self.actions), note)


def _search(what: str, attempt: Callable[[int], list[Position] | None]) -> list[Position]:
    for seed in range(SEARCH_SEEDS):
        found = attempt(seed)
        if found:
            return found
    raise RuntimeError(f"check-bot: no deal found for the situation {what!r}")


def _suited(hand: Sequence[int]) -> list[int]:
    return [c for c in hand if c < WIZARD]


def _suits(hand: Sequence[int]) -> set[int]:
    return {c >> 4 for c in _suited(hand)}


def _count(hand: Sequence[int], suit: int) -> int:
    return sum(1 for c in _suited(hand) if c >> 4 == suit)


def _lead_fits(second: Sequence[int], suit: int, follow: bool) -> bool:
    """Whether the seat after the leader (``second``) suits a lead of ``suit``: with
    ``follow``, two cards or more of it and another suit (a real choice, and a card the
    rules forbid); else none of it and two other suits."""
    others = len(_suits(second) - {suit})
    if follow:
        return _count(second, suit) >= 2 and others >= 1
    return _count(second, suit) == 0 and others >= 2


def cards_text(cards: Sequence[int]) -> str:
    return " ".join(format_card(c) for c in cards)


_WIZARD_ROUNDS = range(3, 7)
"""The 4-player Wizard rounds the play situations are looked for in."""


def _wizard_led_jester() -> list[Position]:
    def attempt(seed: int) -> list[Position] | None:
        for r in _WIZARD_ROUNDS:
            s = _Script("wizard", {}, seed)
            s.to_round(r)
            leader = s.to_first_trick()
            second, third = s.hand(leader + 1), s.hand(leader + 2)
            if JESTER not in s.hand(leader) or len(_suits(second)) < 2:
                continue
            for card in _suited(second):
                suit = card >> 4
                if _count(third, suit) >= 2 and _suits(third) - {suit}:
                    s.apply(JESTER)
                    first = s.position("after a led Jester (no led suit yet)")
                    s.apply(card)
                    return [first, s.position(f"after J {format_card(card)} (the "
                                              f"{format_card(card)} sets the led suit)")]
        return None

    return _search("led Jester", attempt)


def _wizard_led_wizard() -> list[Position]:
    def attempt(seed: int) -> list[Position] | None:
        for r in _WIZARD_ROUNDS:
            s = _Script("wizard", {}, seed)
            s.to_round(r)
            leader = s.to_first_trick()
            if WIZARD in s.hand(leader) and len(_suits(s.hand(leader + 1))) >= 2:
                s.apply(WIZARD)
                return [s.position("after a led Wizard (no led suit)")]
        return None

    return _search("led Wizard", attempt)


def _wizard_lead_then(follow: bool) -> list[Position]:
    def attempt(seed: int) -> list[Position] | None:
        for r in _WIZARD_ROUNDS:
            s = _Script("wizard", {}, seed)
            s.to_round(r)
            leader = s.to_first_trick()
            second = s.hand(leader + 1)
            for card in _suited(s.hand(leader)):
                if _lead_fits(second, card >> 4, follow):
                    s.apply(card)
                    return [s.position(f"after {format_card(card)} led")]
        return None

    return _search("follow suit" if follow else "void hand", attempt)


def _wizard_hook() -> list[Position]:
    s = _Script("wizard", {"hook_rule": True}, 0)
    s.to_round(3)
    if s.g.decision is Decision.TRUMP:
        s.apply(0)
    bids = (1, 0, 0)
    for bid in bids:
        s.apply(bid)
    return [s.position(f"the dealer's bid in round 3 after bids {' '.join(map(str, bids))} "
                       f"({3 - sum(bids)} is forbidden)")]


def _wizard_turned() -> list[Position]:
    def attempt(seed: int) -> list[Position] | None:
        for r in range(1, 9):
            s = _Script("wizard", {}, seed)
            s.to_round(r)
            if s.g.decision is Decision.TRUMP:
                return [s.position(f"round {r}, a Wizard turned: the dealer names trump")]
        return None

    return _search("Wizard turned", attempt)


def _wizard_last_round() -> list[Position]:
    s = _Script("wizard", {"players": 3}, 0)
    s.to_round(20)
    first = s.position("3 players, round 20, no trump card: the first bid")
    s.to_first_trick()
    return [first, s.position("round 20, no trump: the lead with 20 cards")]


def _trumps_announce() -> list[Position]:
    s = _Script("trumps", {"announce": True}, 0)
    tricks = s.g.view(0).tricks_in_round
    first = s.position(f"the first announcement (0..{tricks} tricks)")
    for _ in range(s.g.players - 1):
        s.apply(s.g.legal_actions()[0])
    return [first, s.position("the dealer's announcement, after the others'")]


def _trumps_lead_then(follow: bool) -> list[Position]:
    def attempt(seed: int) -> list[Position] | None:
        s = _Script("trumps", {}, seed)
        leader = s.to_first_trick()
        second = s.hand(leader + 1)
        for card in s.hand(leader):
            if _lead_fits(second, card >> 4, follow):
                s.apply(card)
                return [s.position(f"after {format_card(card)} led")]
        return None

    return _search("trumps follow suit" if follow else "trumps void hand", attempt)


SITUATIONS: tuple[Situation, ...] = (
    Situation("wizard", "led Jester", _wizard_led_jester),
    Situation("wizard", "led Wizard", _wizard_led_wizard),
    Situation("wizard", "follow suit", lambda: _wizard_lead_then(follow=True)),
    Situation("wizard", "void in the led suit", lambda: _wizard_lead_then(follow=False)),
    Situation("wizard", "hook rule", _wizard_hook),
    Situation("wizard", "Wizard turned", _wizard_turned),
    Situation("wizard", "last round, no trump", _wizard_last_round),
    Situation("trumps", "announce", _trumps_announce),
    Situation("trumps", "follow suit", lambda: _trumps_lead_then(follow=True)),
    Situation("trumps", "void in the led suit", lambda: _trumps_lead_then(follow=False)),
)
"""Every scripted situation, in the order they are checked."""


GAME_OPTIONS: dict[str, tuple[dict[str, Any], ...]] = {
    "wizard": ({}, {"players": 5, "hook_rule": True}, {"players": 3},
               {"players": 6, "hook_rule": True}),
    "trumps": ({}, {"players": 3, "announce": True}, {"players": 2, "draw": False, "trump": "S"},
               {"players": 7, "announce": True}),
}
"""The options of the complete games, in turn (game i uses entry i mod 4)."""
