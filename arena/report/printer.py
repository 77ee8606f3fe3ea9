"""Printing a game so a person can follow it: hands, trump, bids, tricks, scores, places.

Works from the JSON record (so a game can be shown live, round by round, or later from a
file). Colour comes from ``rich``, which turns itself off when the output is not a
terminal or ``NO_COLOR`` is set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from arena.model.names import clean
from arena.report.format import option_value
from arena.rules.cards import (
    JESTER,
    SUIT_NAMES,
    SUIT_SYMBOLS,
    WIZARD,
    card_symbol,
    parse_card,
    parse_suit,
)

_SUIT_STYLE = ("green", "yellow", "red", "blue")


def card_text(card: str | int) -> Text:
    """One card as coloured text (``7♥`` in red, ``Wizard``, ``Jester``)."""
    c = parse_card(card) if isinstance(card, str) else card
    if c == WIZARD:
        return Text("Wizard", style="bold magenta")
    if c == JESTER:
        return Text("Jester", style="dim cyan")
    return Text(card_symbol(c), style=_SUIT_STYLE[c >> 4])


def cards_text(cards: Sequence[str | int]) -> Text:
    """Cards separated by spaces, or a dash for none."""
    if not cards:
        return Text("-", style="dim")
    return Text(" ").join(card_text(c) for c in cards)


def suit_text(letter: str | None) -> Text:
    if letter is None:
        return Text("no trump", style="bold")
    s = parse_suit(letter)
    return Text(f"{SUIT_SYMBOLS[s]} {SUIT_NAMES[s]}", style=f"bold {_SUIT_STYLE[s]}")


def trump_in_force(record: dict[str, Any]) -> str:
    """Trumps' trump for a header, from the dealt round of ``record``: the option's suit
    (``hearts (fixed)``) or the turned card's (``clubs (turned 4♣)``); the option's value
    alone (``none``: the turned card decides) before the deal."""
    rounds = record.get("rounds") or []
    fixed = record["options"].get("trump")
    if not rounds or rounds[0].get("trump") is None:
        return str(option_value(fixed)) if fixed is not None else "the turned card's suit"
    suit = SUIT_NAMES[parse_suit(rounds[0]["trump"])]
    turned = rounds[0].get("trump_card")
    if fixed is not None or not turned:
        return f"{suit} (fixed)"
    return f"{suit} (turned {card_symbol(parse_card(turned))})"


class GamePrinter:
    """Prints a game's record round by round to a console."""

    def __init__(self, record: dict[str, Any], console: Console | None = None) -> None:
        self.record = record
        self.console = console or Console(highlight=False)
        self.seats: list[str] = [clean(str(s)) for s in record["seats"]]
        """The seat names, with what a terminal would act on taken out (printed as Text,
        never read as rich markup)."""
        self.players = len(self.seats)
        self.running = [0] * self.players
        self.width = max(len(self._who(s)) for s in range(self.players))

    def _who(self, seat: int) -> str:
        return f"{seat}:{self.seats[seat]}"

    def _seat(self, seat: int) -> Text:
        return Text(self._who(seat).ljust(self.width), style="bold")

    def header(self) -> None:
        rec = self.record
        opts = ", ".join(f"{k}={trump_in_force(rec) if k == 'trump' else option_value(v)}"
                         for k, v in rec["options"].items())
        self.console.print(Text.assemble(
            (f"{rec['game'].capitalize()}", "bold underline"),
            f"  seed {rec['seed']}  ({opts})"))
        self.console.print(Text("Seats: " + ", ".join(self._who(s)
                                                      for s in range(self.players))))

    def round(self, rnd: dict[str, Any], rounds: int) -> None:
        """Print one finished round (a JSON round of the record)."""
        out = self.console
        n = self.players
        out.print()
        label = f"Round {rnd['number']} of {rounds}" if rounds > 1 else "The hand"
        title = Text(label, style="bold reverse")
        out.print(Text.assemble(title, f"  dealer {self._who(rnd['dealer'])}"))
        for seat, hand in enumerate(rnd["hands"]):
            out.print(Text.assemble("  ", self._seat(seat), "  ", cards_text(hand)))
        trump = Text.assemble("  trump card ", card_text(rnd["trump_card"])
                              if rnd["trump_card"] else Text("none", style="dim"),
                              "  trump ", suit_text(rnd["trump"]))
        if rnd["trump_card"] == "W":
            trump.append(f" (chosen by the dealer, {self._who(rnd['dealer'])})")
        out.print(trump)
        if rnd["bids"] is not None:
            order = [(rnd["dealer"] + 1 + k) % n for k in range(n)]
            word = "bids" if self.record["game"] == "wizard" else "announcements"
            out.print(Text(f"  {word}: " + ", ".join(
                f"{self._who(s)} {rnd['bids'][s]}" for s in order)))
        draws = rnd.get("draws") or []
        for t, trick in enumerate(rnd["tricks"]):
            line = Text(f"  trick {t + 1:>2}: ")
            for i, card in enumerate(trick["cards"]):
                seat = (trick["leader"] + i) % n
                if i:
                    line.append("  ")
                line.append(f"{seat}:")
                line.append_text(card_text(card))
            line.append("  → ")
            line.append(self._who(trick["winner"]), style="bold")
            if t < len(draws) and draws[t]:
                line.append("  draws ", style="dim")
                line.append_text(cards_text(draws[t]))
            out.print(line)
        if rnd["stock"] and self.record["game"] == "trumps" and rnd.get("draws") is not None:
            used = sum(len(d) for d in draws)
            left = rnd["stock"][used:]
            if left:
                out.print(Text.assemble("  stock left unplayed: ", cards_text(left)))
        for seat in range(n):
            self.running[seat] += rnd["points"][seat]
            bid = "" if rnd["bids"] is None else f"bid {rnd['bids'][seat]}, "
            pts = rnd["points"][seat]
            out.print(Text.assemble(
                "  ", self._seat(seat), f"  {bid}won {rnd['won'][seat]}  ",
                (f"{pts:+d}", "green" if pts > 0 else "red" if pts < 0 else ""),
                f"  total {self.running[seat]}"))

    def final(self) -> None:
        rec = self.record
        out = self.console
        out.print()
        out.print(Text("Final standings", style="bold reverse"))
        order = sorted(range(self.players), key=lambda s: (rec["places"][s], s))
        for seat in order:
            out.print(Text.assemble(f"  {rec['places'][seat]}. ", self._seat(seat),
                                    f"  {rec['totals'][seat]:>5}"))
        faults = rec.get("faults", [])
        if faults:
            out.print()
            out.print(Text(f"Faults ({len(faults)})", style="bold reverse"))
        for fault in faults:
            where = f"round {fault['round']}" + (
                f", trick {fault['trick']}" if fault.get("trick") else "")
            forfeit = "; forfeited" if fault.get("forfeited") else ""
            detail = clean(str(fault["detail"]))
            out.print(Text(f"  {self._who(fault['seat'])} {where}: {fault['kind']}: "
                           f"{detail} → the referee: {fault['action']}{forfeit}",
                           style="yellow"), soft_wrap=True)  # one line, however long

