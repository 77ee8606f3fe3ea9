"""One-line error messages: what every command prints about bad input.

A message names the file, key, position or bot at fault and what is wrong, on one line
of at most :data:`MAX_MESSAGE` characters, however long or odd the input it quotes.
"""

from __future__ import annotations

from typing import Any

MAX_MESSAGE = 300
"""The longest error line a command prints (longer ones are cut, ending in ``…``)."""


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line (characters that are not printable shown escaped), cut to at
    most ``limit`` characters."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                       for c in text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def show(value: Any, limit: int = 60) -> str:
    """A short ``repr`` of a value quoted in an error message."""
    if isinstance(value, int) and value.bit_length() > 256:
        return f"a {value.bit_length()}-bit integer"
    return one_line(repr(value), limit)


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether the lists and dicts in ``value`` nest more than ``limit`` levels deep
    (walked without recursion, so any depth can be checked)."""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((v, depth + 1) for v in children if isinstance(v, dict | list))
    return False


class SandboxError(RuntimeError):
    """The sandbox cannot be set up here; the message says why and what to do."""


class BotStartError(RuntimeError):
    """Raised when a bot cannot be started or reached; the message names the bot."""
