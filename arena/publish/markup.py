"""Small HTML helpers for the site: escaping, the page frame, cards, numbers, slugs."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote

from arena import __version__
from arena.files import safe_name
from arena.rules.cards import card_symbol, parse_card

NAV = (("index.html", "Leaderboard"), ("games.html", "Games"),
       ("tournament.html", "Tournament"))


def esc(value: object) -> str:
    """Text or an attribute value, escaped (quotes included)."""
    return escape(str(value), quote=True)


def slug(name: str) -> str:
    """A file name for ``name``: characters other than ``[A-Za-z0-9._-]`` become ``_``."""
    return safe_name(name)


class Slugs:
    """Unique file names for bot names. A name keeps :func:`slug` of itself unless an
    earlier name (in sorted order) took it; then ``_2``, ``_3``, ... is appended."""

    def __init__(self, names: Iterable[str]) -> None:
        self._of: dict[str, str] = {}
        self._taken: set[str] = set()
        for name in sorted(set(names)):
            self.add(name)

    def add(self, name: str) -> str:
        if name in self._of:
            return self._of[name]
        base = candidate = slug(name)
        k = 1
        while candidate.lower() in self._taken:  # also safe on case-insensitive disks
            k += 1
            candidate = f"{base}_{k}"
        self._taken.add(candidate.lower())
        self._of[name] = candidate
        return candidate

    def __getitem__(self, name: str) -> str:
        return self.add(name)


def bot_href(root: str, slugs: Slugs, name: str) -> str:
    return f"{root}bots/{quote(slugs[name])}.html"


def bot_link(root: str, slugs: Slugs, name: str, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<a{klass} href="{esc(bot_href(root, slugs, name))}">{esc(name)}</a>'


DATA_FILE = "data/games.jsonl.gz"
"""Every record of the site, one JSON line each, gzip-compressed (``arena verify`` reads
it as it is)."""

DATA_LINKS = (("data/leaderboard.json", "leaderboard.json"), (DATA_FILE, "games.jsonl.gz"))
"""The data files an event's pages link in their footer."""

LIST_ROWS = 1000
"""Games per page of the games list: ``games.html`` holds the first, ``games/list/N.html``
the N-th."""


def game_path(game_id: str) -> str:
    """A game page's path in the site: ``games/XY/ID.html``, XY the first two hex digits of
    SHA-256 of the file name, so that no folder holds more than a few hundred pages at
    100,000 games (256 folders)."""
    name = slug(game_id)
    return f"games/{hashlib.sha256(name.encode()).hexdigest()[:2]}/{name}.html"


def game_href(root: str, game_id: str) -> str:
    return root + quote(game_path(game_id))


def list_path(page_no: int) -> str:
    """The path of page ``page_no`` (1, 2, ...) of the games list."""
    return "games.html" if page_no <= 1 else f"games/list/{page_no}.html"


def list_root(page_no: int) -> str:
    """The prefix from page ``page_no`` of the games list to the site's root."""
    return "" if page_no <= 1 else "../../"


def card_class(card: str) -> str:
    if card == "W":
        return "wizard"
    if card == "J":
        return "jester"
    return "red" if card[0] in "DH" else "black"


def card_html(card: str, cls: str = "card") -> str:
    """A card as a small card-like box: ``<span class="card red" data-card="H7">7♥</span>``."""
    return (f'<span class="{cls} {card_class(card)}" data-card="{esc(card)}">'
            f"{esc(card_symbol(parse_card(card)))}</span>")


def num(value: Any, digits: int = 0) -> str:
    """A number for people (minus sign, fixed decimals); a dash for null."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value).replace("-", "−")
    return f"{value:.{digits}f}".replace("-", "−")


def pct(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{100 * value:.{digits}f}%"


def data_value(value: Any) -> str:
    """A ``data-value`` attribute holding the raw number (for sorting and for tests)."""
    if value is None:
        return ' data-value=""'
    return f' data-value="{esc(value)}"'


def json_text(value: Any) -> str:
    """JSON for a number cell in a data table: the exact value as in leaderboard.json."""
    return "–" if value is None else str(value)


def when(timestamp: float, day: bool = True) -> str:
    """A moment (Unix seconds) for people, in UTC: ``<time datetime="2026-12-01T23:51:07Z">
    2026-12-01 23:51 UTC</time>`` (without ``day``: the time of day only)."""
    moment = datetime.fromtimestamp(timestamp, UTC)
    shown = moment.strftime("%Y-%m-%d %H:%M UTC" if day else "%H:%M UTC")
    return f'<time datetime="{moment.strftime("%Y-%m-%dT%H:%M:%SZ")}">{shown}</time>'


def when_range(first: float, last: float) -> str:
    """From ``first`` to ``last`` (Unix seconds), the date said once if it is one day."""
    same_day = (datetime.fromtimestamp(first, UTC).date()
                == datetime.fromtimestamp(last, UTC).date())
    if same_day:
        start = datetime.fromtimestamp(first, UTC)
        return (f'<time datetime="{start.strftime("%Y-%m-%dT%H:%M:%SZ")}">'
                f'{start.strftime("%Y-%m-%d %H:%M")}</time> to {when(last, day=False)}')
    return f"{when(first).replace(' UTC</time>', '</time>')} to {when(last)}"


def page(title: str, root: str, body: str, current: str = "", site_name: str = "",
         scripts: Sequence[str] = ("site.js",), description: str = "",
         published: float | None = None, *, up: str | None = None,
         links: Sequence[tuple[str, str]] = NAV,
         data: Sequence[tuple[str, str]] = DATA_LINKS) -> str:
    """A whole HTML page: head, the site header with its nav, ``body`` in ``<main>``, the
    footer (with the time of publication, if given) and the scripts (deferred, from
    ``assets/``). ``up``: the index of all events, from the site's root, for an event's
    site inside a site of several (:mod:`arena.publish.multi`); ``links`` and ``data``:
    the nav's and the footer's links (paths from the root, and their labels)."""
    here = ' aria-current="page"'
    nav = (f'<a href="{esc(root + up)}" rel="up">All events</a>' if up else "") + "".join(
        f'<a href="{root}{href}"{here if href == current else ""}>{label}</a>'
        for href, label in links)
    footer = " · ".join(f'<a href="{root}{href}">{label}</a>' for href, label in data)
    script_tags = "".join(f'<script src="{root}assets/{s}" defer></script>' for s in scripts)
    meta_desc = (f'<meta name="description" content="{esc(description)}">\n'
                 if description else "")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n{meta_desc}"
        f'<link rel="icon" href="{root}assets/favicon.svg" type="image/svg+xml">\n'
        f'<link rel="stylesheet" href="{root}assets/site.css">\n{script_tags}\n'
        "</head>\n<body>\n"
        f'<header class="site"><div class="wrap"><a class="brand" href="{root}index.html">'
        f'<img src="{root}assets/favicon.svg" alt="" width="22" height="22">'
        f"{esc(site_name or 'trick-arena')}</a>"
        f'<nav aria-label="Site">{nav}</nav></div></header>\n'
        f'<main class="wrap">\n{body}\n</main>\n'
        f'<footer class="wrap">Published by trick-arena {esc(__version__)}'
        + (f" on {when(published)}" if published is not None else "") + " · "
        f"{footer}</footer>\n"
        "</body>\n</html>\n")


def table(head: Sequence[str], rows: Iterable[str], attrs: str = "",
          caption: str = "") -> str:
    """A ``<table>`` from header cells (already HTML, each becomes a ``<th scope=col>``
    unless it starts with ``<th``) and rows (each a whole ``<tr>...</tr>``)."""
    ths = "".join(h if h.startswith("<th") else f'<th scope="col">{h}</th>' for h in head)
    cap = f"<caption>{caption}</caption>" if caption else ""
    return (f"<table{attrs}>{cap}<thead><tr>{ths}</tr></thead>\n<tbody>\n"
            + "\n".join(rows) + "\n</tbody></table>")


def num_cell(value: Any, text: str | None = None, extra: str = "") -> str:
    """A table cell holding a number: shown as ``text`` (default: the value as JSON), sorted
    by the value."""
    shown = json_text(value) if text is None else text
    return f'<td class="num"{data_value(value)}{extra}>{shown}</td>'


def name_cell(name: str) -> str:
    """A row's header cell naming a bot (escaped)."""
    return f'<th scope="row" data-bot="{esc(name)}">{esc(name)}</th>'
