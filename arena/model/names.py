"""Names are data: the rule for bot names, versions and authors, and escaping for display.

A name comes from a tournament file (``[[bots]] name``) or from a bot's Hello answer
(``name``, ``version``, ``author``). The rule (documented in ``docs/tournaments.md`` and
``docs/protocol.md``): printable text (Python's :meth:`str.isprintable`: no control or
format characters, no bidi overrides, no line breaks, no space other than U+0020), a
bounded length, and a name neither empty nor starting or ending with a space. Checks
raise :class:`NameError_` with one line naming the field and showing a short, safe
``repr`` of the value.

Wherever a name is shown it is escaped for the medium: :func:`for_terminal` (rich
markup), :func:`for_markdown`, :func:`for_csv`; :func:`clean` strips what a terminal
would act on. HTML is escaped by the site's own templates (:mod:`arena.publish`); JSON
encoding needs nothing more.
"""

from __future__ import annotations

import re
import unicodedata

TOURNAMENT_NAME_MAX = 40
"""The longest bot name a tournament file may give."""


HELLO_MAX = {"name": 64, "version": 64, "author": 128}
"""The longest value of each Hello field, in characters."""


SHOWN = 40
"""How many characters of a refused value an error message shows."""


class NameError_(ValueError):
    """A name, version or author that breaks the rule; the message is one line."""


def shown(value: str) -> str:
    """A refused value for an error message: its ``repr`` (so control characters show as
    escapes), cut to about :data:`SHOWN` characters."""
    kept = ""
    for ch in value:
        if len(repr(kept + ch)) > SHOWN:
            return repr(kept) + "..."
        kept += ch
    return repr(kept)


_KINDS = {"Cc": "a control character", "Cf": "a format character", "Cs": "a surrogate",
          "Co": "a private-use character", "Cn": "an unassigned character",
          "Zl": "a line separator", "Zp": "a paragraph separator", "Zs": "a space"}


def _problem(value: str, longest: int, required: bool) -> str | None:
    """What is wrong with ``value`` under the rule, or None."""
    if not value:
        return "is empty" if required else None
    if len(value) > longest:
        return f"is {len(value)} characters long"
    for i, ch in enumerate(value):
        if not ch.isprintable() and ch != " ":
            kind = _KINDS.get(unicodedata.category(ch), "unprintable")
            return f"has U+{ord(ch):04X}, {kind}, at position {i + 1}"
    if value != value.strip(" "):
        return "starts or ends with a space" if value.strip(" ") else "is blank"
    return None


def check_name(value: str, field: str, longest: int = TOURNAMENT_NAME_MAX,
               what: str = "a bot name") -> str:
    """``value`` if it is valid under the rule: 1..``longest`` printable characters, no
    leading or trailing space; else :class:`NameError_` naming ``field`` and saying what
    ``what`` (a bot name, an author name, a version) may be."""
    problem = _problem(value, longest, required=True)
    if problem is not None:
        raise NameError_(f"{field}: {shown(value)} {problem}; {what} is 1-{longest} "
                         f"printable characters, not starting or ending with a space")
    return value


def check_hello(name: str, version: str, author: str) -> None:
    """The Hello fields against the rule (name required; version and author may be
    empty); :class:`NameError_` naming the first bad field (``HelloResponse.FIELD``)."""
    for key, value, required in (("name", name, True), ("version", version, False),
                                 ("author", author, False)):
        longest = HELLO_MAX[key]
        problem = _problem(value, longest, required)
        if problem is not None:
            raise NameError_(f"HelloResponse.{key}: {shown(value)} {problem}; expected at "
                             f"most {longest} printable characters")


_DROP = {"Cc", "Cf", "Cs", "Zl", "Zp"}


_LINE_BREAKS = {"\t", "\n", "\v", "\f", "\r", "\x1c", "\x1d", "\x1e", "\x85", "\u2028",
                "\u2029"}


def clean(text: str) -> str:
    """``text`` without what a terminal would act on: control, format (bidi overrides
    among them) and surrogate characters are dropped, line breaks and tabs become spaces."""
    if text.isprintable():
        return text
    return "".join(" " if ch in _LINE_BREAKS else ch for ch in text
                   if ch in _LINE_BREAKS or unicodedata.category(ch) not in _DROP)


_MARKDOWN = re.compile(r"([\\`*_\[\]<>!|~&$])")


_MARKDOWN_LEAD = ("#", "-", "+")


def for_markdown(text: str) -> str:
    """``text`` for Markdown (a table cell, a heading): :func:`clean`, then a backslash
    before every character that means something inside a line (``\\`` ``|`` ``*`` ``_``
    backticks ``<`` ``>`` ``[`` ``]`` ``!`` ``~`` ``&`` ``$``) and before a leading ``#``,
    ``-`` or ``+``, so the text shows as written and no tag, link or entity comes of it."""
    text = _MARKDOWN.sub(r"\\\1", clean(text))
    return "\\" + text if text.startswith(_MARKDOWN_LEAD) else text


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def for_csv(text: str) -> str:
    """``text`` for a CSV cell that a spreadsheet may open: one that would start a
    formula (``=`` ``+`` ``-`` ``@``, tab, carriage return) gets a leading ``'``. The
    csv module does the quoting."""
    return "'" + text if text.startswith(_FORMULA) else text
