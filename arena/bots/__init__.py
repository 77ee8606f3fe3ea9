"""Built-in bots: in-process Python players that see only a seat's view.

A bot is anything with a ``name`` and ``act(view) -> action``; :func:`make_bot` builds
the built-in ones by name.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Protocol

from arena.model.spec import BUILTIN_BOTS, BotSpecError, builtin_settings
from arena.rules import View


class Bot(Protocol):
    """A player: given the view of the seat to move, return one of ``view.legal``."""

    name: str

    def act(self, view: View) -> int: ...


class RandomBot:
    """Takes a uniformly random legal action, from its own seeded generator."""

    def __init__(self, seed: int | str = 0, name: str = "random") -> None:
        self.name = name
        self._rng = random.Random(seed)

    def act(self, view: View) -> int:
        return self._rng.choice(view.legal)


def _heuristic(seed: int | str, name: str) -> Bot:
    from arena.bots.heuristic import HeuristicBot

    return HeuristicBot(name=name)


def _pimc(seed: int | str, name: str, ms: int | None = None) -> Bot:
    from arena.bots.pimc import PimcBot

    return PimcBot(seed, name, ms=ms)


FACTORIES: dict[str, Callable[..., Bot]] = {
    "random": lambda seed, name: RandomBot(seed, name),
    "heuristic": _heuristic,
    "pimc": _pimc,
}
"""Factories of the built-in bots by name (:data:`arena.model.spec.BUILTIN_BOTS`, in that
order): ``factory(seed, name, **settings) -> Bot`` (the settings of
:data:`arena.model.spec.BUILTIN_SETTINGS`)."""


class UnknownBot(ValueError):
    """Raised by :func:`make_bot` for a name that is not a built-in bot."""


def make_bot(name: str, seed: int | str = 0) -> Bot:
    """The built-in bot ``name`` (a spec such as ``pimc:ms=200``: its settings after the
    colon), seeded with ``seed``."""
    try:
        found = builtin_settings(name)
    except BotSpecError as e:
        raise UnknownBot(str(e)) from None
    if found is None:
        raise UnknownBot(
            f"unknown bot {name!r}; allowed: {', '.join(BUILTIN_BOTS)}") from None
    base, settings = found
    return FACTORIES[base](seed, name, **settings)
