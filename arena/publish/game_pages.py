"""The site's games: the games list, paged and filtered (:func:`games_page`), and a page
per game with its replay, withheld while its duplicate set is played
(:func:`game_page`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from arena.publish.markup import (
    DATA_FILE,
    LIST_ROWS,
    bot_link,
    esc,
    game_href,
    list_path,
    list_root,
    num,
    page,
    table,
)
from arena.publish.pages import (
    SiteContext,
    game_title,
    summary_line,
)
from arena.publish.replay import replay_section, script_json
from arena.report.format import options_text
from arena.runs.store import StoredGame


def list_pages(count: int) -> int:
    """How many pages the games list of ``count`` games has (at least one)."""
    return max(1, -(-count // LIST_ROWS))


def _list_pager(page_no: int, pages: int) -> str:
    """Links to the other pages of the games list (the first, the last, and up to four on
    each side of this one); the filters' query is kept by site.js."""
    if pages <= 1:
        return ""
    root = list_root(page_no)
    shown = sorted({1, pages, *range(max(1, page_no - 4), min(pages, page_no + 4) + 1)})
    parts: list[str] = []
    if page_no > 1:
        parts.append(f'<a rel="prev" data-keep-query href="{root}{list_path(page_no - 1)}">'
                     "← previous</a>")
    last = 0
    for n in shown:
        if n > last + 1:
            parts.append("…")
        parts.append(f'<span aria-current="page">{n}</span>' if n == page_no else
                     f'<a data-keep-query href="{root}{list_path(n)}">{n}</a>')
        last = n
    if page_no < pages:
        parts.append(f'<a rel="next" data-keep-query href="{root}{list_path(page_no + 1)}">'
                     "next →</a>")
    return f'<nav class="pager" aria-label="Pages of the games list">{" ".join(parts)}</nav>'


def games_page(lb: Mapping[str, Any], site: SiteContext, page_no: int = 1) -> str:
    """Page ``page_no`` of the games list: :data:`LIST_ROWS` games in schedule order."""
    ranked = [b["name"] for b in lb["bots"]]
    count = len(site.rows)
    pages = list_pages(count)
    root = list_root(page_no)
    first = (page_no - 1) * LIST_ROWS
    shown_rows = site.rows[first:first + LIST_ROWS]
    others = sorted({n for r in site.rows for n in r.bots} - set(ranked)) if page_no == 1 \
        else sorted({n for r in shown_rows for n in r.bots} - set(ranked))
    tables_ = sorted({r.table_no for r in shown_rows})
    deals = sorted({r.deal_no for r in shown_rows})
    rows = []
    for r in shown_rows:
        seats = []
        for seat, (name, total, place) in enumerate(zip(r.bots, r.totals, r.places,
                                                        strict=True)):
            cls = "first" if place == 1 else ""
            seats.append(f'<li class="{cls}" title="seat {seat}, place {place}">'
                         f'{bot_link(root, site.slugs, name)} <span class="score">{num(total)}'
                         "</span></li>")
        rows.append(
            f'<tr data-game-id="{esc(r.id)}" data-table="t{r.table_no}" '
            f'data-deal="{r.deal_no}" data-bots="{esc(",".join(r.bots))}">'
            f'<td class="num">{r.seq + 1}</td>'
            f'<td><a href="{esc(game_href(root, r.id))}">{esc(r.id)}</a></td>'
            f'<td>t{r.table_no}</td><td class="num">{r.deal_no}</td>'
            f'<td class="num">{r.rotation}</td><td><ol class="seatlist">{"".join(seats)}</ol></td>'
            f'<td class="num{" bad" if r.faults else ""}">{r.faults}</td></tr>')

    def select(sid: str, label: str, options: Iterable[tuple[str, str]], all_text: str) -> str:
        opts = "".join(f'<option value="{esc(v)}">{esc(t)}</option>' for v, t in options)
        return (f'<label for="{sid}">{label}</label><select id="{sid}">'
                f'<option value="">{all_text}</option>{opts}</select>')

    on_page = len(shown_rows)
    where = ("" if pages == 1 else
             f" This is page {page_no} of {pages}: games {first + 1} to {first + on_page} "
             f"of {count}, {LIST_ROWS} to a page; the filters apply to the page shown and "
             "are kept from page to page.")
    pager = _list_pager(page_no, pages)
    body = [
        "<h1>Games</h1>",
        f'<p class="lede">{summary_line(lb, count)}. Every game links to its replay; seats '
        f"are listed in seat order with final totals, the winners in bold.{where}</p>",
        pager,
        '<form class="filters" id="filters">',
        select("filter-bot", "Bot", ((n, n) for n in [*ranked, *others]), "All bots"),
        select("filter-table", "Table", ((f"t{t}", f"t{t}") for t in tables_), "All tables"),
        select("filter-deal", "Deal", ((str(d), str(d)) for d in deals), "All deals"),
        f'<output id="games-count" for="filter-bot filter-table filter-deal">{on_page} '
        f"game{'s' if on_page != 1 else ''}</output>",
        "</form>",
        '<div class="scroll">',
        table(["#", "Game", "Table", "Deal", "Rotation", "Seats and totals", "Faults"], rows,
              ' id="games" class="data"'),
        "</div>",
        pager,
    ]
    title = "Games" if pages == 1 else f"Games, page {page_no} of {pages}"
    return page(f"{title}: {site.name}", root, "\n".join(body), "games.html", site.name,
                description=f"The games of {site.name}", published=site.published, up=site.up)


WITHHELD = ("The replay of this game (every hand, and the deal's seed) is withheld until "
            "its deal's set is complete: another rotation of the same deal is still to be "
            "played, by bots that must not know its hands. It is published with the set's "
            "last game.")


def game_page(game: StoredGame, site: SiteContext, previous: str | None, following: str | None,
              number: int, withheld: bool = False) -> str:
    """A game's page: its result, faults and replay (``withheld``: the result and faults
    only, and why: its set is still being played)."""
    record = game.record
    root = "../../"  # games/XY/ID.html
    seats = list(record.get("seats") or game.bots)
    n = len(seats)
    game_name = str(record.get("game"))
    faults = record.get("faults") or []
    places = record["places"]
    totals = record["totals"]
    forfeited = record.get("forfeited") or [False] * n
    fault_count = [0] * n
    for f in faults:
        fault_count[int(f["seat"])] += 1

    result_rows = []
    for seat in sorted(range(n), key=lambda s: (places[s], s)):
        result_rows.append(
            f'<tr data-seat="{seat}"><td class="num">{places[seat]}</td>'
            f'<td class="num">{seat}</td><td>{bot_link(root, site.slugs, seats[seat])}</td>'
            f'<td class="num">{num(totals[seat])}</td><td class="num">{fault_count[seat]}'
            f'{" (forfeited)" if forfeited[seat] else ""}</td></tr>')
    fault_html = ""
    if faults:
        fault_rows = [
            f'<tr><td class="num">{int(f["seat"])}</td><td>{esc(seats[int(f["seat"])])}</td>'
            f'<td class="num">{num(f.get("round"))}</td><td class="num">{num(f.get("trick"))}'
            f'</td><td>{esc(f.get("kind"))}</td><td>{esc(f.get("detail", ""))}</td>'
            f'<td>{esc(f.get("action", ""))}</td>'
            f'<td>{"forfeited" if f.get("forfeited") else ""}</td></tr>' for f in faults]
        fault_html = ('<section aria-labelledby="gfaults-h"><h2 id="gfaults-h">Faults</h2>'
                      '<div class="scroll">'
                      + table(["Seat", "Bot", "Round", "Trick", "Kind", "What happened",
                               "Applied instead", ""], fault_rows,
                              ' id="game-faults" class="data"') + "</div></section>")
    pager = []
    if previous:
        pager.append(f'<a rel="prev" href="{esc(game_href(root, previous))}">← {esc(previous)}</a>')
    listed = list_path((number - 1) // LIST_ROWS + 1)
    pager.append(f'<a href="{root}{listed}">all games</a>')
    if following:
        pager.append(f'<a rel="next" href="{esc(game_href(root, following))}">'
                     f"{esc(following)} →</a>")
    options = options_text(record.get("options") or {})
    body = [
        f'<nav class="pager" aria-label="Games">{" · ".join(pager)}</nav>',
        f"<h1>Game {esc(game.id)}</h1>",
        f'<p class="lede">{game_title(game_name)}, {n} players'
        f'{" (" + esc(options) + ")" if options else ""} · table t{game.table_no}, deal '
        f"{game.deal_no}, rotation {game.rotation} · game {number} of {site.total}"
        + ("" if withheld else f' · deal seed <code>{esc(record.get("seed"))}</code>')
        + "</p>",
        '<section aria-labelledby="result-h"><h2 id="result-h">Result</h2>',
        table(["Place", "Seat", "Bot", "Total", "Faults"], result_rows,
              ' id="result" class="data compact"'),
        "</section>",
        f'<p class="note" id="withheld">{esc(WITHHELD)}</p>' if withheld else
        replay_section(record, seats, lambda name: bot_link(root, site.slugs, name),
                       f'<a href="{root}{DATA_FILE}">games.jsonl.gz</a>'),
        fault_html,
        "" if withheld else
        f'<script type="application/json" id="record">{script_json(record)}</script>',
    ]
    return page(f"Game {game.id}: {site.name}", root, "\n".join(body), "", site.name,
                scripts=("site.js", "replay.js"), published=site.published, up=site.up)
