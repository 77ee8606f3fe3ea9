"""Number and text formats shared by the leaderboard's renderings and the site, so that
both say the same thing the same way."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from arena.model.names import clean

if TYPE_CHECKING:
    pass


def _num(value: Any, digits: int = 0) -> str:
    """A number for people; a dash for null."""
    if value is None:
        return "–"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _faults_text(faults: Mapping[str, int]) -> str:
    total = sum(faults.values())
    if not total:
        return "0"
    parts = ", ".join(f"{k} {v}" for k, v in faults.items() if v)
    return f"{total} ({parts})"


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.0f}"


def _latency_text(latency: Mapping[str, float] | None, sep: str = " / ") -> str:
    if latency is None:
        return "–"
    return f"{_ms(latency['p50'])}{sep}{_ms(latency['p95'])}"


def _options_text(options: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in options.items())


def for_terminal(text: str) -> str:
    """``text`` for a string that rich reads as markup: :func:`clean`, then every
    ``[...]`` that would be a tag escaped (``rich.markup.escape``)."""
    return escape(clean(text))
