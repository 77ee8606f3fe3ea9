"""Search support: guess the cards a seat cannot see, and rebuild the game from a guess.

A seat's :class:`View` shows its own hand and the public history. A search bot (Perfect
Information Monte Carlo: see ``arena/bots/pimc.py``) needs two things more:

- :class:`Sampler` (or :func:`sample_deal`): a :class:`Deal` — every other hand and the
  stock — consistent with everything the view shows: the cards played, the turned card,
  the suits a seat has shown it lacks by not following (in Wizard a Wizard or a Jester
  shows nothing; in Trumps a seat may draw the suit again later, and only draws after
  its failure to follow can bring it back), and in Trumps who drew the turned card (the
  last card of the stock, drawn in the last full round of draws by the seat before the
  trick's winner) and how big the stock is. Bids are not used.
- :func:`game_from_view`: the :class:`Game` in the view's position with a deal's hidden
  cards, which continues exactly as the real game would if the deal were the real one
  (given the game's seed, even into the next rounds; with another seed the next rounds
  are dealt differently).

Everything here is the rules engine's own knowledge; nothing does I/O.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Sequence
from itertools import combinations

from arena.rules.base import Deal, DealError, Game, View
from arena.rules.cards import WIZARD, Card, standard_deck, wizard_deck
from arena.rules.trumps import HAND_SIZE, TrumpsGame
from arena.rules.wizard import WizardGame, wizard_led_suit

_GAMES: dict[str, type[Game]] = {"wizard": WizardGame, "trumps": TrumpsGame}
_SPECIAL = 4
"""The type of Wizards and Jesters (a "suit" no seat can lack)."""


def game_from_view(view: View, deal: Deal, seed: int = 0, check: bool = True,
                   round_only: bool = False) -> Game:
    """The game in the position ``view`` shows, with the hidden cards of ``deal``.

    Its next decision is the real game's; applying the same actions gives the same views
    until the round ends (and beyond when ``seed`` is the real game's seed). Only the
    current round is in its :attr:`Game.log`. ``check`` (default) first raises
    :class:`DealError` when ``deal`` does not fit the view (:func:`check_deal`); an
    impossible card in a trick in progress raises :class:`IllegalAction` either way.
    ``round_only`` ends the game with the current round, its points added to the totals
    (a search's horizon: no time spent dealing the next round).
    """
    if check:
        check_deal(view, deal)
    return _GAMES[view.game].from_view(view, deal, seed, round_only)


def deck_of(game: str) -> list[Card]:
    """The cards of ``game``'s deck."""
    return wizard_deck() if game == "wizard" else standard_deck()


def played_cards(view: View) -> list[Card]:
    """Every card played this round, completed tricks first, in play order."""
    return [c for t in (*view.tricks, view.trick) for c in t.cards]


def hand_sizes(view: View) -> tuple[int, ...]:
    """How many cards each seat holds now (public: the deal, draws and plays)."""
    n = view.players
    if view.game == "wizard":
        base = [view.round] * n
    else:
        base = [HAND_SIZE + _draw_rounds(view)] * n
    for t in (*view.tricks, view.trick):
        for i in range(len(t.cards)):
            base[(t.leader + i) % n] -= 1
    return tuple(base)


def _draw_rounds(view: View) -> int:
    """Trumps: the rounds of draws made so far (each seat drew that many cards)."""
    if not view.options.get("draw", True):
        return 0
    return (52 - HAND_SIZE * view.players - view.stock_size) // view.players


def turned_card_holder(view: View) -> int | None:
    """Trumps: the seat that drew the turned card (public: it is the stock's last card),
    or None while it is in the stock (or none was turned). Wizard: always None."""
    if view.game != "trumps" or view.trump_card is None:
        return None
    n = view.players
    d = _draw_rounds(view)
    if d == 0 or d * n != 52 - HAND_SIZE * n:
        return None
    last = view.tricks[d - 1].winner or 0
    return (last + n - 1) % n


def check_deal(view: View, deal: Deal) -> None:
    """Raise :class:`DealError` unless ``deal`` fits ``view``: the seat's own hand, every
    hand's size, the stock's size, the turned card's place and the deck's cards."""
    n = view.players
    if len(deal.hands) != n:
        raise DealError(f"the deal has {len(deal.hands)} hands for {n} seats")
    if sorted(deal.hands[view.seat]) != sorted(view.hand):
        raise DealError(f"seat {view.seat}'s hand in the deal is not the one in the view")
    for seat, (hand, size) in enumerate(zip(deal.hands, hand_sizes(view), strict=True)):
        if len(hand) != size:
            raise DealError(f"seat {seat} holds {len(hand)} cards in the deal; it has {size}")
    if len(deal.stock) != view.stock_size:
        raise DealError(f"the deal's stock has {len(deal.stock)} cards; the view's has "
                        f"{view.stock_size}")
    turned = view.trump_card
    if turned is not None:
        if view.game == "wizard" and deal.stock[:1] != (turned,):
            raise DealError("the turned card must be the first card of the stock")
        if view.game == "trumps":
            holder = turned_card_holder(view)
            if holder is None and deal.stock[-1:] != (turned,):
                raise DealError("the turned card must be the last card of the stock")
            if holder is not None and turned not in deal.hands[holder] \
                    and turned not in played_cards(view):
                raise DealError(f"seat {holder} drew the turned card and has not played it")
    cards = Counter(c for h in deal.hands for c in h)
    cards.update(deal.stock)
    cards.update(played_cards(view))
    if cards != Counter(deck_of(view.game)):
        extra = cards - Counter(deck_of(view.game))
        missing = Counter(deck_of(view.game)) - cards
        raise DealError(f"the deal and the played cards are not the deck: extra {sorted(extra)}"
                        f", missing {sorted(missing)}")


def sample_deal(view: View, rng: random.Random) -> Deal:
    """One deal consistent with ``view`` (see :class:`Sampler`; build one to draw many)."""
    return Sampler(view).sample(rng)


class Sampler:
    """Draws deals consistent with one view; the analysis of the view is done once.

    Every deal drawn fits the view (:func:`check_deal`) and every constraint the history
    shows (see the module docstring), so :func:`game_from_view` accepts it and the seats
    can play it out. Deals are drawn card by card, each card to a holder (a hidden hand or
    the stock) chosen at random in proportion to the room it has left, among those the
    constraints allow and that leave the remaining cards a place; this is near but not
    exactly uniform over the consistent deals.
    """

    def __init__(self, view: View) -> None:
        self.view = view
        n = self.players = view.players
        self.sizes = hand_sizes(view)
        wizard = view.game == "wizard"
        self._wizard = wizard
        # holders: the seats whose hands are hidden, then the stock (index n)
        self.pinned: list[list[Card]] = [[] for _ in range(n + 1)]
        pool = Counter(deck_of(view.game))
        pool.subtract(view.hand)
        pool.subtract(played_cards(view))
        turned = view.trump_card
        self._turned_last = False
        if turned is not None:
            holder = None if wizard else turned_card_holder(view)
            if holder is None:
                self.pinned[n].append(turned)
                pool[turned] -= 1
                self._turned_last = not wizard
            elif holder != view.seat and pool[turned] > 0:
                self.pinned[holder].append(turned)
                pool[turned] -= 1
        self.pool = sorted(pool.elements())
        """The cards to place: neither in the seat's hand, nor played, nor pinned."""
        self.room = [0 if s == view.seat else self.sizes[s] - len(self.pinned[s])
                     for s in range(n)]
        self.room.append(view.stock_size - len(self.pinned[n]))
        # Trumps: round k of draws follows trick k, so a seat that lacked a suit at trick t
        # holds it again only through rounds t..draws-1 (Wizard: no draws, never again)
        self._draws = 0 if wizard else _draw_rounds(view)
        self.voids: list[dict[int, int]] = [{} for _ in range(n)]
        """By seat: the suits it has shown it lacks, with the last trick it showed it."""
        self._void_tricks: list[dict[int, list[int]]] = [{} for _ in range(n)]
        """Trumps, by seat: every trick at which it showed it lacked each suit."""
        self._played: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        """Trumps, by seat: the cards it played with the trick each was played to."""
        for index, t in enumerate((*view.tricks, view.trick)):
            for i, c in enumerate(t.cards):
                seat = (t.leader + i) % n
                if seat == view.seat:
                    continue
                if wizard:
                    led = wizard_led_suit(t.cards[:i])
                    if led is not None and c < WIZARD and c >> 4 != led:
                        self.voids[seat][led] = index
                else:
                    self._played[seat].append((c, index))
                    led = t.cards[0] >> 4
                    if i > 0 and c >> 4 != led:
                        self.voids[seat][led] = index
                        self._void_tricks[seat].setdefault(led, []).append(index)
        # accept[h]: the bit mask of the types holder h may still take now
        self.accept: list[int] = []
        for s in range(n):
            mask = 0
            for suit in range(5):
                last = self.voids[s].get(suit)
                if last is None or (not wizard and last < self._draws):
                    mask |= 1 << suit
            self.accept.append(mask)
        self.accept.append(31)
        holders = [h for h in range(n + 1) if self.room[h] > 0]
        self.holders = holders
        # a type no hidden seat has shown it lacks goes anywhere, unchecked
        self._constrained = [t for t in range(4) if any(
            t in self.voids[h] for h in holders if h < n)]
        subsets: list[tuple[int, list[int]]] = []
        for k in range(1, len(self._constrained) + 1):
            for combo in combinations(self._constrained, k):
                mask = sum(1 << t for t in combo)
                subsets.append((mask, [h for h in holders if self.accept[h] & mask]))
        self._subsets = subsets

    def _type(self, card: Card) -> int:
        return _SPECIAL if card >= WIZARD else card >> 4

    def _hall(self, counts: list[int], room: list[int]) -> bool:
        """Whether the remaining cards (``counts`` by type) still fit the holders' room."""
        for mask, holders in self._subsets:
            need = 0
            for t in range(5):
                if mask >> t & 1:
                    need += counts[t]
            if need and need > sum(room[h] for h in holders):
                return False
        return True

    def _seat_fits(self, seat: int, hand: Sequence[Card]) -> bool:
        """Trumps: whether ``seat`` could have come by its played cards and ``hand`` (a
        part of its hand now) with its voids: each card of a suit it once lacked must have
        come in a draw after that, before it was played (one card per draw round)."""
        d = self._draws
        voids = self._void_tricks[seat]
        if not voids:
            return True
        spans: list[tuple[int, int]] = []
        for c, index in self._played[seat]:
            lo = max((t for t in voids.get(c >> 4, ()) if t < index), default=-1)
            spans.append((lo, min(index - 1, d - 1)))
        for c in hand:
            lo = max(voids.get(c >> 4, ()), default=-1)
            spans.append((lo, d - 1))
        turned = self.view.trump_card
        if turned is not None and turned_card_holder(self.view) == seat:
            for k, (c, _) in enumerate(self._played[seat]):
                if c == turned:
                    spans[k] = (d - 1, d - 1)
            for k, c in enumerate(hand):
                if c == turned:
                    spans[len(self._played[seat]) + k] = (d - 1, d - 1)
        # slots: -1 (the deal, HAND_SIZE of them) then one per draw round 0..d-1;
        # earliest deadline first matches intervals to points whenever any matching can
        spans.sort()
        waiting: list[int] = []
        i = 0
        for slot in range(-1, d):
            while i < len(spans) and spans[i][0] <= slot:
                heapq.heappush(waiting, spans[i][1])
                i += 1
            for _ in range(HAND_SIZE if slot < 0 else 1):
                if not waiting:
                    break
                if heapq.heappop(waiting) < slot:
                    return False
            if waiting and waiting[0] < slot:
                return False
        return i == len(spans) and not waiting

    def sample(self, rng: random.Random) -> Deal:
        """One consistent deal, drawn with ``rng``."""
        n = self.players
        view = self.view
        cards = self.pool[:]
        rng.shuffle(cards)
        constrained = set(self._constrained)
        first = [c for c in cards if self._type(c) in constrained]
        rest = [c for c in cards if self._type(c) not in constrained]
        placed = [p[:] for p in self.pinned]
        room = self.room[:]
        counts = [0] * 5
        for c in first:
            counts[self._type(c)] += 1
        if not self._place(first, 0, placed, room, counts, rng):
            raise DealError("no deal fits the view")  # only for a view no game can show
        k = 0
        for h in range(n + 1):
            take = room[h]
            placed[h].extend(rest[k:k + take])
            k += take
        hands = []
        for s in range(n):
            hands.append(tuple(sorted(view.hand if s == view.seat else placed[s])))
        stock = placed[n]
        if self._turned_last:
            turned = stock.pop(0)
            rng.shuffle(stock)
            stock.append(turned)
        elif view.game == "trumps":
            rng.shuffle(stock)
        else:
            head = stock[: len(self.pinned[n])]
            tail = stock[len(self.pinned[n]):]
            rng.shuffle(tail)
            stock = head + tail
        return Deal(tuple(hands), tuple(stock))

    def _place(self, cards: list[Card], i: int, placed: list[list[Card]], room: list[int],
               counts: list[int], rng: random.Random) -> bool:
        """Place ``cards[i:]`` (depth first: a dead end tries the next holder)."""
        if i == len(cards):
            return True
        c = cards[i]
        t = self._type(c)
        bit = 1 << t
        options = [h for h in self.holders if room[h] > 0 and self.accept[h] & bit]
        counts[t] -= 1
        while options:
            weights = [room[h] for h in options]
            h = rng.choices(options, weights)[0]
            options.remove(h)
            room[h] -= 1
            placed[h].append(c)
            ok = self._hall(counts, room)
            if ok and not self._wizard and h < self.players:
                ok = self._seat_fits(h, placed[h])
            if ok and self._place(cards, i + 1, placed, room, counts, rng):
                return True
            placed[h].pop()
            room[h] += 1
        counts[t] += 1
        return False
