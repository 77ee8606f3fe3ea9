"""The rules core: cards, the game state machine, Wizard and Trumps. No I/O here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arena.rules.base import (
    Deal,
    DealError,
    Decision,
    Game,
    IllegalAction,
    Outcome,
    RoundLog,
    Trick,
    View,
    places_from_totals,
)
from arena.rules.options import OptionError, OptionSpec
from arena.rules.trumps import TrumpsGame
from arena.rules.wizard import WizardGame

GAMES: dict[str, type[Game]] = {"wizard": WizardGame, "trumps": TrumpsGame}
"""Every game by name."""


def game_class(name: str) -> type[Game]:
    """The game called ``name``; raises :class:`OptionError` naming the games there are."""
    try:
        return GAMES[name]
    except KeyError:
        raise OptionError(f"unknown game {name!r}; allowed: {', '.join(GAMES)}") from None


def option_specs(name: str) -> dict[str, OptionSpec]:
    """The options of the game called ``name``."""
    return game_class(name).OPTIONS  # type: ignore[attr-defined, no-any-return]


def new_game(name: str, options: Mapping[str, Any] | None = None, seed: int = 0) -> Game:
    """A new game of ``name`` with ``options`` (record-typed values) and ``seed``."""
    return game_class(name)(options, seed)  # type: ignore[call-arg]


__all__ = [
    "GAMES",
    "Deal",
    "DealError",
    "Decision",
    "Game",
    "IllegalAction",
    "OptionError",
    "OptionSpec",
    "Outcome",
    "RoundLog",
    "Trick",
    "TrumpsGame",
    "View",
    "WizardGame",
    "game_class",
    "new_game",
    "option_specs",
    "places_from_totals",
]
