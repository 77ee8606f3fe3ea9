"""Game options: their types, defaults and allowed values, and parsing them.

Values are written as in the record: booleans ``true``/``false``, suits as a letter,
integers in decimal. A suit option may also be ``none`` (unset).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arena.rules.cards import SUIT_LETTERS, CardError, parse_suit


class OptionError(ValueError):
    """Raised for an unknown option or a value it does not allow; the message says why."""


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One option of a game."""

    name: str
    kind: str
    """``bool``, ``int`` or ``suit`` (a suit letter, or None)."""
    default: Any
    help: str
    low: int = 0
    high: int = 0

    def allowed(self) -> str:
        if self.kind == "bool":
            return "true or false"
        if self.kind == "int":
            return f"an integer {self.low}..{self.high}"
        return "one of " + ", ".join(SUIT_LETTERS) + " or none"

    def parse_text(self, text: str) -> Any:
        """Parse a value written on the command line."""
        if self.kind == "bool":
            if text in ("true", "false"):
                return text == "true"
        elif self.kind == "int":
            if text.strip().lstrip("-").isascii() and text.strip().lstrip("-").isdigit():
                return self.coerce(int(text))
        else:
            if text in ("none", "null", ""):
                return None
            try:
                parse_suit(text)
            except CardError:
                pass
            else:
                return text
        raise OptionError(f"option {self.name}: {text!r} is not allowed; expected {self.allowed()}")

    def coerce(self, value: Any) -> Any:
        """Check a value given as in the record (JSON/TOML types)."""
        ok = False
        if self.kind == "bool":
            ok = isinstance(value, bool)
        elif self.kind == "int":
            ok = isinstance(value, int) and not isinstance(value, bool)
            ok = ok and self.low <= value <= self.high
        else:
            ok = value is None or (isinstance(value, str) and len(value) == 1
                                   and value in SUIT_LETTERS)
        if not ok:
            raise OptionError(
                f"option {self.name}: {value!r} is not allowed; expected {self.allowed()}")
        return value


def resolve_options(game: str, specs: Mapping[str, OptionSpec],
                    given: Mapping[str, Any]) -> dict[str, Any]:
    """Every option in force: ``given`` (record-typed values) checked, defaults filled in."""
    for key in given:
        if key not in specs:
            raise OptionError(
                f"unknown option {key!r} for {game}; allowed: {', '.join(specs)}")
    return {name: spec.coerce(given[name]) if name in given else spec.default
            for name, spec in specs.items()}


def parse_option_texts(game: str, specs: Mapping[str, OptionSpec],
                       pairs: list[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings into record-typed values (not yet defaults-filled)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep:
            raise OptionError(f"option {pair!r}: expected KEY=VALUE")
        if key not in specs:
            raise OptionError(
                f"unknown option {key!r} for {game}; allowed: {', '.join(specs)}")
        out[key] = specs[key].parse_text(text)
    return out
