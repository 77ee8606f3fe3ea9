"""Number and text formats shared by the leaderboard's renderings, the site, the game
printer and ``arena check-bot``, so that they say the same thing the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.markup import escape

from arena.model.names import clean

DASH = "–"
"""What a missing figure shows as."""


def number(value: Any, digits: int = 0) -> str:
    """A number for people; a dash for null."""
    if value is None:
        return DASH
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def percent(value: float | None) -> str:
    """A share as a whole percentage; a dash for null."""
    return DASH if value is None else f"{100 * value:.0f}%"


def faults_text(faults: Mapping[str, int]) -> str:
    """Faults by kind: ``3 (timeout 2, crash 1)``, or ``0``."""
    total = sum(faults.values())
    if not total:
        return "0"
    parts = ", ".join(f"{k} {v}" for k, v in faults.items() if v)
    return f"{total} ({parts})"


def ms(value: float) -> str:
    """Milliseconds: two decimals under 10, none above."""
    return f"{value:.2f}" if value < 10 else f"{value:.0f}"


def latency_text(latency: Mapping[str, float] | None, sep: str = " / ") -> str:
    """``p50 / p95`` of a time entry (milliseconds); a dash for none."""
    if latency is None:
        return DASH
    return f"{ms(latency['p50'])}{sep}{ms(latency['p95'])}"


def times_text(times: Mapping[str, float] | None, missing: str) -> str:
    """``p50 … ms, p95 … ms, max … ms`` of a time entry, else ``missing``."""
    if not times:
        return missing
    return f"p50 {ms(times['p50'])} ms, p95 {ms(times['p95'])} ms, max {ms(times['max'])} ms"


def option_value(value: Any) -> str:
    """A game option's value as a tournament file or ``--option`` writes it: ``true``,
    ``false``, ``none``, ``H``, ``3``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "none" if value is None else str(value)


def options_text(options: Mapping[str, Any], skip: tuple[str, ...] = ("players",)) -> str:
    """A game's options, ``hook_rule=true, trump=H`` (the number of players, shown
    apart, left out)."""
    return ", ".join(f"{k}={option_value(v)}" for k, v in options.items() if k not in skip)


def for_terminal(text: str) -> str:
    """``text`` for a string that rich reads as markup: :func:`clean`, then every
    ``[...]`` that would be a tag escaped (``rich.markup.escape``)."""
    return escape(clean(text))
