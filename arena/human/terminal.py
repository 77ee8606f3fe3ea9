"""A seat played by a person: answers typed in the terminal (``arena play --bots human,...``).

The person sees what a bot sees, the seat's :class:`~arena.rules.View`, and answers in
words: a card by its short name as in records (``H7``, ``S12``, ``W``, ``J``; faces may
also be written ``HQ``, ``SK``, ``DJ``, and in Trumps ``CA``) or by its number in the hand
(Enter alone when one card is legal), a bid by
its number, a trump suit by its letter or name. An illegal answer is refused with the
reason the rules give (:func:`arena.rules.reasons.illegal_reason`) and asked again. The
browser seat (:mod:`arena.human.web`) takes the same answers. There is no time limit
unless one is given (``move_ms``); end of input abandons the game
(:class:`~arena.play.referee.Abandon`). See ``docs/playing.md``.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Sequence
from typing import TextIO

import trio
from rich.console import Console
from rich.text import Text

from arena.model.names import clean
from arena.model.results import GameResult, RoundResult
from arena.play.referee import Abandon
from arena.report.printer import card_text, suit_text
from arena.rules import Decision, View
from arena.rules.cards import (
    SPECIAL,
    SUIT_LETTERS,
    SUIT_NAMES,
    Card,
    CardError,
    card_symbol,
    format_card,
    parse_card,
    standard_deck,
    wizard_deck,
)
from arena.rules.reasons import illegal_reason
from arena.rules.trumps import trumps_trick_winner
from arena.rules.wizard import wizard_trick_winner

HUMAN = "human"
"""The ``--bots`` spec of a seat played by a person."""


_FACES = {"J": 11, "Q": 12, "K": 13, "A": 14}


class AnswerError(ValueError):
    """An answer refused: not understood, or illegal; the message says why, on one line."""


def parse_answer(view: View, text: str) -> int:
    """The action a person's answer ``text`` names for ``view``; raises :class:`AnswerError`
    saying why when it names none or an illegal one."""
    text = text.strip()
    decision = view.decision
    if decision is None:
        raise AnswerError("it is not your turn")
    if not text:
        only = forced(view)
        if only is None:
            raise AnswerError("type your answer (Enter alone takes an answer only when it "
                              "is the one allowed)")
        return only
    if decision is Decision.BID:
        word = "bid" if view.game == "wizard" else "announcement"
        if not (text.isascii() and text.isdigit() and len(text) <= 3):
            raise AnswerError(f"{clean(text)[:20]!r} is not a number: type your {word}, "
                              f"0..{view.tricks_in_round}")
        action = int(text)
    elif decision is Decision.TRUMP:
        upper = text.upper()
        names = [n.upper() for n in SUIT_NAMES]
        if len(upper) == 1 and upper in SUIT_LETTERS:
            action = SUIT_LETTERS.index(upper)
        elif upper in names:
            action = names.index(upper)
        else:
            raise AnswerError(f"{clean(text)[:20]!r} is not a suit: type C, D, H or S")
    else:
        action = _card_answer(view, text)
    reason = illegal_reason(view, action)
    if reason is not None:
        raise AnswerError(reason)
    return action


def _card_answer(view: View, text: str) -> Card:
    hand = view.hand
    if text.isascii() and text.isdigit() and len(text) <= 3:
        number = int(text)
        if not 1 <= number <= len(hand):
            raise AnswerError(f"there is no card {number}: the hand has cards 1..{len(hand)}")
        return hand[number - 1]
    upper = text.upper()
    if len(upper) == 2 and upper[0] in SUIT_LETTERS and upper[1] in _FACES:
        upper = f"{upper[0]}{_FACES[upper[1]]}"
    try:
        card = parse_card(upper)
    except CardError:
        raise AnswerError(f"{clean(text)[:20]!r} is not a card: type its name (e.g. H7, "
                          f"S12, W, J) or its number in the hand") from None
    if card not in _DECKS[view.game]:
        why = ("its deck is the standard 52 cards" if card >> 4 == SPECIAL
               else _RANKS[view.game])
        raise AnswerError(f"{view.game.capitalize()} has no {card_symbol(card)}: {why}")
    return card


_DECKS = {"wizard": frozenset(wizard_deck()), "trumps": frozenset(standard_deck())}
_RANKS = {"wizard": "its suits run 1..13, with J, Q, K for 11, 12, 13 (K highest), and "
                    "no ace",
          "trumps": "its suits run 2..14, with J, Q, K, A for 11..14 (A highest)"}
"""What the face letters mean in each game, for a card its deck does not have."""


def leading_index(game: str, cards: Sequence[Card], trump: int | None) -> int | None:
    """The index in ``cards`` (a trick so far, in play order) of the card now winning it,
    by the game's rule; None for no card."""
    if not cards:
        return None
    if game == "wizard":
        return wizard_trick_winner(tuple(cards), trump)
    assert trump is not None  # Trumps always has a trump
    return trumps_trick_winner(tuple(cards), trump)


def winning_now(view: View) -> tuple[int, int, Card] | None:
    """The card now winning the trick in progress: (its index in the trick, the seat that
    played it, the card), or None for an empty trick."""
    cards = view.trick.cards
    index = leading_index(view.game, cards, view.trump)
    if index is None:
        return None
    return index, (view.trick.leader + index) % view.players, cards[index]


def _trump_text(view: View) -> Text:
    turned = (Text.assemble(" (turned: ", card_text(view.trump_card), ")")
              if view.trump_card is not None else Text(""))
    if view.trump is not None:
        return Text.assemble("trump ", suit_text(SUIT_LETTERS[view.trump]), turned)
    if view.decision is Decision.TRUMP:
        return Text.assemble("a Wizard was turned: you, the dealer, choose the trump", turned)
    return Text.assemble("no trump", turned)


ALWAYS = ("trick", "hand")
"""The parts of the state shown before every decision; the others only when they changed
since the person last saw them (:meth:`TerminalPlayer.decide`)."""


def view_lines(view: View, names: Sequence[str]) -> list[tuple[str, Text]]:
    """What a person at ``view.seat`` may be shown before a decision, part by part (a key
    and its line, coloured as the game printer colours cards): the round, the dealer and
    the trump (``head``); the scores; the bids (announcements) so far; the last trick,
    with the tricks won; the trick in progress with the card now winning it; the hand."""
    n = view.players

    def who(seat: int) -> str:
        return f"{seat}:{clean(names[seat]) if seat < len(names) else '?'}" + (
            " (you)" if seat == view.seat else "")

    def per_seat(values: Sequence[object]) -> str:
        return ", ".join(f"{who(s)} {'-' if v is None else v}" for s, v in enumerate(values))

    def trick_text(leader: int, cards: Sequence[Card], mark: int | None = None) -> Text:
        parts: list[Text] = []
        for i, card in enumerate(cards):
            part = Text.assemble(f"{who((leader + i) % n)} ", card_text(card))
            if i == mark:
                part.append(" ◀ winning", style="bold")
            parts.append(part)
        return Text(", ").join(parts)

    head = (f"Round {view.round} of {view.rounds}" if view.rounds > 1 else "The hand")
    lines = [("head", Text.assemble((f"== {head}", "bold"), f" · dealer {who(view.dealer)} · ",
                                    _trump_text(view))),
             ("scores", Text(f"   scores: {per_seat(view.scores)}"))]
    if any(b is not None for b in view.bids) or view.decision is Decision.BID:
        word = "bids" if view.game == "wizard" else "announced"
        lines.append(("bids", Text(f"   {word}: {per_seat(view.bids)}")))
    if view.tricks:
        last = view.tricks[-1]
        winner = last.winner if last.winner is not None else 0
        lines.append(("last", Text.assemble(
            "   last trick: ", trick_text(last.leader, last.cards), f" → {who(winner)}",
            f" · tricks won: {per_seat(view.won)}")))
    if view.decision is Decision.PLAY:
        count = f"   trick {len(view.tricks) + 1} of {view.tricks_in_round}"
        stock = (f" (stock: {view.stock_size})" if view.game == "trumps"
                 and view.options.get("draw") else "")
        if view.trick.cards:
            leading = winning_now(view)
            lines.append(("trick", Text.assemble(
                f"{count}{stock}: ", trick_text(view.trick.leader, view.trick.cards,
                                                 leading[0] if leading else None))))
        else:
            lines.append(("trick", Text(f"{count}{stock}: you lead")))
    hand = Text("  ").join(Text.assemble(f"{i}) ", card_text(c), f" {format_card(c)}")
                           for i, c in enumerate(view.hand, 1))
    lines.append(("hand", Text.assemble("   your hand: ", hand if view.hand else "-")))
    return lines


def forced(view: View) -> int | None:
    """The one action the rules allow, when there is just one (Enter takes it)."""
    legal = set(view.legal)
    return next(iter(legal)) if len(legal) == 1 else None


def prompt(view: View) -> str:
    """The question for the decision ``view`` faces."""
    only = forced(view)
    if view.decision is Decision.BID:
        word = "bid" if view.game == "wizard" else "announcement"
        enter = f"; Enter: {only}, the only one allowed" if only is not None else ""
        return f"Your {word} (0..{view.tricks_in_round}{enter}): "
    if view.decision is Decision.TRUMP:
        return "Trump suit (C, D, H or S): "
    if only is not None:
        return f"Your card (Enter: {format_card(only)}, the only one you may play): "
    playable = " ".join(format_card(c) for c in dict.fromkeys(view.legal))
    return f"Your card (name or number; playable: {playable}): "


class LineReader:
    """Lines of a file descriptor (standard input) read by a daemon thread, for trio.

    The thread reads the descriptor itself (``os.read``), not ``sys.stdin``, so that a
    read still blocked when the program ends holds no lock of the interpreter's.
    """

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._receive: trio.MemoryReceiveChannel[str | None] | None = None

    async def readline(self) -> str | None:
        """The next line without its line break, or None at end of input."""
        if self._receive is None:
            send, self._receive = trio.open_memory_channel[str | None](math.inf)
            token = trio.lowlevel.current_trio_token()
            threading.Thread(target=self._pump, args=(send, token), daemon=True,
                             name="human-input").start()
        return await self._receive.receive()

    def _pump(self, send: trio.MemorySendChannel[str | None],
              token: trio.lowlevel.TrioToken) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self._fd, 4096)
            except OSError:
                chunk = b""
            pending += chunk
            lines = pending.split(b"\n")
            pending = lines.pop()
            out: list[str | None] = [ln.decode("utf-8", "replace").rstrip("\r") for ln in lines]
            if not chunk:
                if pending:
                    out.append(pending.decode("utf-8", "replace"))
                out.append(None)
            try:
                for line in out:
                    trio.from_thread.run_sync(send.send_nowait, line, trio_token=token)
            except (trio.RunFinishedError, trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not chunk:
                return


class TerminalPlayer:
    """A seat played by a person at the terminal: the state on ``out``, answers from
    ``lines``. ``move_ms`` is the time per decision (None: no limit).

    Before each decision it shows the trick in progress (the card now winning it marked)
    and the hand, and of the rest (the round, the trump, the scores, the bids, the last
    trick) only what changed since the person last saw it: the whole state at a round's
    first decision, two or three lines within it. Cards are coloured as the game printer
    colours them, where the output is a terminal (``NO_COLOR`` turns it off)."""

    def __init__(self, name: str = HUMAN, move_ms: int | None = None,
                 lines: LineReader | None = None, out: TextIO | None = None) -> None:
        self.name = name
        self.move_ms = move_ms
        self.last_cpu_ms: float | None = None
        self.names: list[str] = []
        """The seats' names, for the display (set once every seat is filled)."""
        self._lines = lines or LineReader()
        self._console = Console(file=out or sys.stdout, highlight=False, soft_wrap=True,
                                emoji=False)
        self._shown: dict[str, str] = {}
        """What the person last saw of each part of the state (:func:`view_lines`)."""

    def set_names(self, names: Sequence[str]) -> None:
        self.names = list(names)

    def _say(self, text: str | Text, end: str = "\n") -> None:
        self._console.print(text, end=end, markup=False)

    def _show(self, view: View) -> None:
        for key, line in view_lines(view, self.names or [self.name] * view.players):
            if key in ALWAYS or self._shown.get(key) != line.plain:
                if key == "head":
                    self._say("")
                self._say(line)
                self._shown[key] = line.plain

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        self._show(view)
        if deadline_ms:
            self._say(f"   (you have {deadline_ms / 1000:g} s)")
        try:
            while True:
                self._say(prompt(view), end="")
                text = await self._lines.readline()
                if text is None:
                    self._say("")
                    raise Abandon("the human seat's input ended")
                try:
                    return parse_answer(view, text)
                except AnswerError as e:
                    self._say(Text(f"refused: {e}", style="red"))
        except trio.Cancelled:
            self._say("\ntime is up: the referee plays for you")
            raise

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None:
        return None

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None:
        return None
