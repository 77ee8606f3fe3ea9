"""The site's pages: the index (leaderboard and charts), a page per bot, the games list,
a page per game (with its replay), and the tournament statement."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from arena import __version__
from arena.league.store import SeasonRow
from arena.model.faults import FAULT_KINDS
from arena.publish import charts
from arena.publish.figures import charts_section
from arena.publish.markup import (
    DATA_FILE,
    LIST_ROWS,
    Slugs,
    bot_link,
    data_value,
    esc,
    game_href,
    list_path,
    list_root,
    num,
    num_cell,
    page,
    pct,
    table,
    when,
    when_range,
)
from arena.publish.replay import replay_section, script_json
from arena.report.board import (
    DEFAULT_ISOLATION,
    INSECURE_NOTE,
    ISOLATION_MODES,
    UNSANDBOXED_NOTE,
    bot_kind,
)
from arena.report.format import ms, option_value, options_text, times_text
from arena.report.text import isolation_line
from arena.tournament.schedule import game_count
from arena.tournament.store import StoredGame


@dataclass(frozen=True, slots=True)
class LeagueFacts:
    """What a league's pages show besides a tournament's: its seasons, and each bot's
    author in the league (who submitted it; the organiser's for the file's and house
    bots) and standing in the field."""

    seasons: Sequence[SeasonRow]
    authors: Mapping[str, str]
    """Each bot (each version) -> the league author who submitted it."""
    status: Mapping[str, str]
    """Each bot -> ``house``, ``active`` or ``retired``."""


class SiteContext(Protocol):
    """What the pages need of the site being built (:class:`arena.publish.build.Site`)."""

    league: LeagueFacts | None
    """A league's own facts (None for a tournament or a match)."""
    meta: Mapping[str, str]
    slugs: Slugs
    total: int
    """The games the store holds."""
    name: str
    faults: dict[str, list[FaultRow]]
    published: float
    """When the site is published (Unix seconds)."""
    played: tuple[float, float] | None
    """When the first game started and the last ended (Unix seconds; None: no games)."""
    up: str | None
    """The index of all events from the site's root, for an event's site inside a site of
    several (None: a site of its own)."""

    @property
    def rows(self) -> Sequence[GameRow]:
        """The games list's rows, in schedule order (read-only)."""

PROVISIONAL_TITLE = ("provisional: fewer than 20 games, or a 95% interval wider than "
                     "±100 Elo")


UNSANDBOXED_TITLE = f"no sandbox: {UNSANDBOXED_NOTE}"


UNSANDBOXED_MARK = (f'<span class="unsandboxed" title="{esc(UNSANDBOXED_TITLE)}">'
                    "no sandbox</span>")
"""The mark after the name of a bot that ran without the sandbox."""


BUILTIN_SANDBOX = "built-in: the arena's own code, played inside the arena (no process of its own)"
"""What a built-in bot's page says where a bot process's says whether it was sandboxed."""


RETIRED_MARK = ('<span class="mark retired" title="retired: it plays no more games; its '
                'games and rating stay">retired</span>')
"""The mark after the name of a league's retired bot."""

HOUSE_MARK = ('<span class="mark house" title="a house bot: its rating is fixed, to anchor '
              'the scale; shown, not ranked">house</span>')
"""The mark after the name of a league's house bot."""

INSECURE_MARK = (f'<span class="insecure" title="{esc("insecure: " + INSECURE_NOTE)}">'
                 "insecure</span>")
"""The mark after the name of a bot reached by plain grpc:// over the network."""


@dataclass(frozen=True, slots=True)
class GameRow:
    """What the games list keeps of one game."""

    id: str
    seq: int
    table_no: int
    deal_no: int
    rotation: int
    bots: tuple[str, ...]
    totals: tuple[int, ...]
    places: tuple[int, ...]
    faults: int


@dataclass(frozen=True, slots=True)
class FaultRow:
    """One fault, for its bot's page."""

    game_id: str
    seat: int
    round: int | None
    trick: int | None
    kind: str
    detail: str
    action: str
    forfeited: bool


_COLUMNS = (
    # data-col, header, first sort direction, title
    ("rank", "#", "asc", "Rank by rating"),
    ("bot", "Bot", "asc", ""),
    ("elo", "Elo", "desc", "Bradley-Terry rating on the Elo scale with its 95% interval"),
    ("p_above_next", "P(&gt;next)", "desc",
     "Share of bootstrap resamples in which the bot rates above the next one"),
    ("games", "Games", "desc", ""),
    ("wins", "Wins", "desc", "Games finished first (shared first places included)"),
    ("mean_score", "Mean score", "desc", "Mean final total ± its standard error"),
    ("mean_place", "Place", "asc", "Mean final place, 1 best"),
    ("bid_accuracy", "Bids", "desc", "Share of rounds in which the bid was exact"),
    ("faults", "Faults", "desc", "Faults (forfeited games in brackets)"),
    ("latency", "Answer ms", "asc",
     "Answer times in milliseconds: median / 95th percentile"),
    ("cpu", "CPU ms", "asc",
     "The bot process's CPU time per decision in milliseconds: median / 95th percentile "
     "(– where it was not measured)"),
)


def _header(key: str, label: str, direction: str, title: str, current: bool = False) -> str:
    t = f' title="{title}"' if title else ""
    sort = ' aria-sort="ascending"' if current else ""
    return (f'<th scope="col" data-sort="{key}" data-dir="{direction}"{sort}{t}>'
            f'<button type="button">{label}</button></th>')


def _elo_bounds(bots: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    lows = [b["elo_low"] for b in bots if b["elo_low"] is not None]
    highs = [b["elo_high"] for b in bots if b["elo_high"] is not None]
    if not lows or not highs:
        return 1400.0, 1600.0
    lo, hi = min(lows), max(highs)
    pad = max(5.0, (hi - lo) * 0.05)
    return lo - pad, hi + pad


def _leaderboard_row(b: Mapping[str, Any], lo: float, hi: float, slugs: Slugs) -> str:
    faults = sum(b["faults"].values())
    fault_title = ", ".join(f"{k} {v}" for k, v in b["faults"].items() if v) or "none"
    latency = b["latency_ms"]
    cpu = b.get("cpu_ms")
    forfeits = f" ({b['forfeits']})" if b["forfeits"] else ""
    half = (None if b["elo_high"] is None or b["elo_low"] is None
            else (b["elo_high"] - b["elo_low"]) / 2)
    sandboxed = b.get("sandboxed", True)
    insecure = bool(b.get("insecure"))
    prov = (f' <span class="provisional" title="{PROVISIONAL_TITLE}">?</span>'
            if b["provisional"] else "") + ("" if sandboxed else f" {UNSANDBOXED_MARK}") + (
        f" {INSECURE_MARK}" if insecure else "") + (
        f" {HOUSE_MARK}" if b.get("house") else "") + (
        f" {RETIRED_MARK}" if b.get("retired") else "")
    cells = [
        f'<td data-col="rank" class="num"{data_value(b["rank"])}>{rank_text(b)}</td>',
        f'<td data-col="bot"{data_value(b["name"])}>'
        f'{bot_link("", slugs, b["name"])}{prov}</td>',
        f'<td data-col="elo" class="num elo"{data_value(b["elo"])} '
        f'title="95% interval {num(b["elo_low"], 1)} to {num(b["elo_high"], 1)}">'
        f'<span class="value">{num(b["elo"])}</span>'
        f'<span class="pm">±{num(half)}</span>'
        f'{charts.error_bar(b["elo"], b["elo_low"], b["elo_high"], lo, hi, width=64)}</td>',
        f'<td data-col="p_above_next" class="num"{data_value(b["p_above_next"])}>'
        f'{pct(b["p_above_next"])}</td>',
        f'<td data-col="games" class="num"{data_value(b["games"])}>{b["games"]}</td>',
        f'<td data-col="wins" class="num"{data_value(b["wins"])}>{b["wins"]}</td>',
        f'<td data-col="mean_score" class="num"{data_value(b["mean_score"])}>'
        f'{num(b["mean_score"], 1)}<span class="pm">±{num(b["mean_score_se"], 1)}</span></td>',
        f'<td data-col="mean_place" class="num"{data_value(b["mean_place"])}>'
        f'{num(b["mean_place"], 2)}</td>',
        f'<td data-col="bid_accuracy" class="num"{data_value(b["bid_accuracy"])}>'
        f'{pct(b["bid_accuracy"])}</td>',
        f'<td data-col="faults" class="num{" bad" if faults else ""}"{data_value(faults)} '
        f'title="{esc(fault_title)}">{faults}{forfeits}</td>',
        f'<td data-col="latency" class="num"'
        f'{data_value(latency["p50"] if latency else None)}>'
        f'{ms(latency["p50"]) + " / " + ms(latency["p95"]) if latency else "–"}</td>',
        f'<td data-col="cpu" class="num"{data_value(cpu["p50"] if cpu else None)}>'
        f'{ms(cpu["p50"]) + " / " + ms(cpu["p95"]) if cpu else "–"}</td>',
    ]
    classes = " ".join(c for c, on in (("is-provisional", b["provisional"]),
                                        ("is-unsandboxed", not sandboxed),
                                        ("is-insecure", insecure),
                                        ("is-house", bool(b.get("house"))),
                                        ("is-retired", bool(b.get("retired")))) if on)
    cls = f' class="{classes}"' if classes else ""
    return (f'<tr data-bot="{esc(b["name"])}" data-rank="{b["rank"] or ""}" '
            f'data-kind="{esc(b.get("kind") or "")}" '
            f'data-sandboxed="{"true" if sandboxed else "false"}" '
            f'data-insecure="{"true" if insecure else "false"}"{cls}>'
            + "".join(cells) + "</tr>")






def _isolation(lb: Mapping[str, Any]) -> str:
    return str(lb.get("isolation") or DEFAULT_ISOLATION)


def _isolation_note(lb: Mapping[str, Any]) -> str:
    """The warning paragraph under the ranking when bot processes are shared, else ""."""
    line = isolation_line(lb)
    if not line or not lb["bots"]:
        return ""
    return (f'<p class="note warning" id="isolation-warning">{esc(line)}. See '
            '<a href="tournament.html#isolation">the tournament page</a>.</p>')


def _game_title(game: str | None) -> str:
    return {"wizard": "Wizard", "trumps": "Trumps"}.get(game or "", game or "?")






def _summary_line(lb: Mapping[str, Any], games: int) -> str:
    schedule = lb.get("schedule") or {}
    parts = [_game_title(lb.get("game"))]
    if schedule.get("seats"):
        parts.append(f"{schedule['seats']} seats")
    options = options_text(lb.get("options") or {})
    if options:
        parts.append(options)
    parts.append(f"{games} game{'s' if games != 1 else ''}")
    parts.append(f"{len(lb['bots'])} bot{'s' if len(lb['bots']) != 1 else ''}")
    if schedule.get("format"):
        deals = schedule.get("deals")
        parts.append(f"{schedule['format']}"
                     + (f", {deals} deal{'s' if deals != 1 else ''} per table" if deals else ""))
    return " · ".join(esc(p) for p in parts)


def _dates(site: SiteContext) -> str:
    """When the games were played (the first started, the last ended) and when the site
    was published, in UTC."""
    played = (f"Games played {when_range(*site.played)}" if site.played is not None
              else "No games played yet")
    return f"{played} · published {when(site.published)}"


def index_page(lb: Mapping[str, Any], site: SiteContext) -> str:
    bots = lb["bots"]
    lo, hi = _elo_bounds(bots)
    head = [_header(k, label, d, t, current=(k == "rank")) for k, label, d, t in _COLUMNS]
    rows = [_leaderboard_row(b, lo, hi, site.slugs) for b in bots]
    rating = lb.get("rating") or {}
    level = round(100 * float(rating.get("level", 0.95)))
    body = [
        f"<h1>{esc(site.name)}</h1>",
        f'<p class="lede">{_summary_line(lb, lb["games"])}</p>',
        f'<p class="lede" id="dates">{_dates(site)}</p>',
        '<section aria-labelledby="ranking-h"><h2 id="ranking-h">Ranking</h2>',
        '<div class="scroll" id="leaderboard-box">',
        table(head, rows, ' id="leaderboard" class="data sortable"'),
        "</div>",
        '<p class="scroll-hint" id="leaderboard-more" hidden>More columns to the right: '
        "scroll the table sideways →</p>",
        f'<p class="note">Elo: the Bradley-Terry rating on the Elo scale (the pool averages '
        f"1500); the bar and ± show its {level}% bootstrap interval over duplicate sets "
        f'({esc(rating.get("resamples", ""))} resamples). '
        f'<span class="provisional" title="{PROVISIONAL_TITLE}">?</span> provisional: fewer '
        "than 20 games or an interval wider than ±100. P(&gt;next): how often the bot rates "
        "above the next one when the games are resampled. CPU: the bot process's own CPU "
        "time per decision (– where it was not measured). Click a column heading to sort. "
        'How the ratings are made: <a href="tournament.html#ratings">the tournament page</a>.'
        "</p>" if bots else '<p class="note">No finished games yet.</p>',
        (f'<p class="note"><span class="unsandboxed">no sandbox</span>: '
         f"{esc(UNSANDBOXED_NOTE)}.</p>"
         if not all(b.get("sandboxed", True) for b in bots) else ""),
        (f'<p class="note"><span class="insecure">insecure</span>: {esc(INSECURE_NOTE)}.</p>'
         if any(b.get("insecure") for b in bots) else ""),
        _isolation_note(lb),
        "</section>",
        charts_section(lb),
    ]
    return page(f"{site.name}: leaderboard", "", "\n".join(body), "index.html", site.name,
                description=f"Leaderboard of {site.name}", published=site.published, up=site.up)


def rank_text(b: Mapping[str, Any]) -> str:
    """A bot's rank as a page shows it: its number, or "–" for a league's house bot
    (shown, not ranked)."""
    return "–" if b.get("rank") is None else str(b["rank"])


def standing_text(b: Mapping[str, Any], lb: Mapping[str, Any]) -> str:
    """``Rank 3 of 12``; a house bot's fixed rating instead; a retired bot said so."""
    ranked = sum(1 for e in lb["bots"] if e.get("rank") is not None)
    if b.get("rank") is None:
        fixed = b.get("fixed_elo")
        text = ("a house bot, not ranked: its rating is fixed"
                + (f" at {num(fixed, 0)}" if fixed is not None else "")
                + " to anchor the scale")
    else:
        text = f"Rank {b['rank']} of {ranked}"
    return text + (" · retired" if b.get("retired") else "")


def bot_page(b: Mapping[str, Any], lb: Mapping[str, Any], site: SiteContext, author: str) -> str:
    name = b["name"]
    root = "../"
    slugs = site.slugs
    half = (None if b["elo_high"] is None or b["elo_low"] is None
            else (b["elo_high"] - b["elo_low"]) / 2)
    latency = b["latency_ms"]
    sandboxed = b.get("sandboxed", True)
    faults_text = ", ".join(f"{k} {b['faults'].get(k, 0)}" for k in FAULT_KINDS)
    stats = [
        ("Rank", standing_text(b, lb)),
        ("Elo (Bradley-Terry)", f"{num(b['elo'], 1)} ± {num(half, 1)} "
                                f"<span class=\"muted\">(95% interval {num(b['elo_low'], 1)} "
                                f"to {num(b['elo_high'], 1)})</span>"),
        ("P(above the next bot)", pct(b["p_above_next"], 1)),
        ("Classic incremental Elo", num(b["elo_incremental"], 1)),
        ("Games", str(b["games"])),
        ("Wins", f"{b['wins']}" + (f" ({b['shared_wins']} shared)" if b["shared_wins"] else "")),
        ("Mean score", f"{num(b['mean_score'], 2)} ± {num(b['mean_score_se'], 2)}"),
        ("Mean place", num(b["mean_place"], 2)),
        ("Bid accuracy", pct(b["bid_accuracy"], 1)),
        ("Mean bid error", num(b["bid_error"], 3)),
        ("Bid bias (bid − won)", num(b["bid_bias"], 3)),
        ("Faults", f"{sum(b['faults'].values())} ({faults_text})"),
        ("Forfeited games", str(b["forfeits"])),
        ("Answer time", times_text(latency, "–")),
        ("CPU time per decision", times_text(b.get("cpu_ms"), "not measured")),
        ("Sandbox", f"{UNSANDBOXED_MARK} {esc(UNSANDBOXED_NOTE)}" if not sandboxed else
         BUILTIN_SANDBOX if b.get("kind") == "builtin" else "yes"),
        *([("Connection", f"{INSECURE_MARK} {esc(INSECURE_NOTE)}")] if b.get("insecure")
          else []),
        ("Isolation", f'<a href="{root}tournament.html#isolation">{esc(_isolation(lb))}</a>'),
    ]
    if b.get("version"):
        stats.insert(1, ("Version", esc(b["version"])))
    if author:
        stats.insert(2, ("Author", esc(author)))
    stat_rows = "".join(f'<tr><th scope="row">{k}</th><td>{v}</td></tr>' for k, v in stats)
    prov = (f' <span class="provisional" title="{PROVISIONAL_TITLE}">?</span>'
            if b["provisional"] else "") + ("" if sandboxed else f" {UNSANDBOXED_MARK}") + (
        f" {INSECURE_MARK}" if b.get("insecure") else "") + (
        f" {HOUSE_MARK}" if b.get("house") else "") + (
        f" {RETIRED_MARK}" if b.get("retired") else "")
    ranks = {e["name"]: rank_text(e) for e in lb["bots"]}
    vs_rows = []
    for p in lb.get("head_to_head") or []:
        if p["a"] != name:
            continue
        width = round(100 * p["score"])
        vs_rows.append(
            f'<tr data-bot="{esc(p["b"])}"><td class="num">{ranks.get(p["b"], "")}</td>'
            f'<td>{bot_link(root, slugs, p["b"])}</td>'
            f'<td class="num">{p["games"]}</td><td class="num">{p["wins"]}</td>'
            f'<td class="num">{p["losses"]}</td><td class="num">{p["draws"]}</td>'
            f'<td class="num"{data_value(p["score"])}>{pct(p["score"], 1)}</td>'
            f'<td class="meter-cell"><span class="meter" aria-hidden="true">'
            f'<span style="width:{width}%"></span></span></td></tr>')
    faults = site.faults.get(name, [])
    fault_rows = [
        f'<tr data-game-id="{esc(f.game_id)}"><td><a href="{esc(game_href(root, f.game_id))}">'
        f"{esc(f.game_id)}</a></td><td class=\"num\">{f.seat}</td>"
        f'<td class="num">{num(f.round)}</td><td class="num">{num(f.trick)}</td>'
        f"<td>{esc(f.kind)}</td><td>{esc(f.detail)}</td><td>{esc(f.action)}</td>"
        f"<td>{'forfeited' if f.forfeited else ''}</td></tr>" for f in faults]
    history = (lb.get("elo_history") or {}).get(name, [])
    line = [charts.Series(name, [1500.0, *history], range(len(history) + 1))]
    words = (f"Classic Elo of {name}",
             f"The classic incremental Elo of {name} after each of its games.",
             "games played", "classic Elo")
    svg = (charts.line_chart(line, "chart-bot-history", *words, reference=1500.0,
                             legend=False, width=560)
           + charts.line_chart(line, "chart-bot-history-compact", *words, reference=1500.0,
                               legend=False, compact=True))
    by_hand = b.get("bid_accuracy_by_hand") or {}
    body = [
        f"<h1>{esc(name)}{prov}</h1>",
        f'<p class="lede">{standing_text(b, lb)} in '
        f'<a href="{root}index.html">{esc(site.name)}</a> · {b["games"]} games · '
        f'<a href="{root}games.html?bot={quote(name)}">its games</a></p>',
        '<div class="two-col"><section aria-labelledby="stats-h"><h2 id="stats-h">Statistics'
        f'</h2><table class="data stats" id="stats"><tbody>{stat_rows}</tbody></table>'
        "</section>",
        f'<section aria-labelledby="hist-h"><h2 id="hist-h">Rating history</h2><figure>{svg}'
        f"<figcaption>Classic incremental Elo after each game of {esc(name)} (the ranking "
        "uses Bradley-Terry).</figcaption></figure></section></div>",
    ]
    if by_hand:
        hands = list(by_hand)
        body.append(
            '<section aria-labelledby="bids-h"><h2 id="bids-h">Exact bids by cards in hand</h2>'
            '<div class="scroll">'
            + table(["Cards", *hands], [
                '<tr><th scope="row">Exact</th>'
                + "".join(num_cell(by_hand[h], pct(by_hand[h])) for h in hands) + "</tr>"],
                ' class="data compact" id="bids-by-hand"') + "</div></section>")
    body += [
        '<section aria-labelledby="vs-h"><h2 id="vs-h">Against each opponent</h2>',
        '<div class="scroll">'
        + table(["Rank", "Opponent", "Games", "Won", "Lost", "Drawn", "Score", ""],
                vs_rows, ' id="vs" class="data"',
                f"{esc(name)}'s results against each bot it shared a game with: a game is "
                "won against an opponent when it ends with the higher total") + "</div>",
        "</section>",
        '<section aria-labelledby="faults-h"><h2 id="faults-h">Faults</h2>',
        '<div class="scroll">'
        + table(["Game", "Seat", "Round", "Trick", "Kind", "What happened", "Applied instead",
                 ""], fault_rows, ' id="faults" class="data"',
                f"{len(faults)} fault{'s' if len(faults) != 1 else ''} in {b['games']} games")
        + "</div>",
        "" if faults else f'<p class="note">{esc(name)} made no faults.</p>',
        "</section>",
    ]
    return page(f"{name}: {site.name}", root, "\n".join(body), "", site.name,
                description=f"{name} in {site.name}", published=site.published, up=site.up)


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
        f'<p class="lede">{_summary_line(lb, count)}. Every game links to its replay; seats '
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
        f'<p class="lede">{_game_title(game_name)}, {n} players'
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


def league_seeds(league: LeagueFacts) -> list[str]:
    """A league's seeds section: each season's commitment, its master seed once it closed
    (and what that seed fixes: that season's deals, no other), when it ran and its games."""
    rows = []
    for s in league.seasons:
        ended = when(s.closed_at) if s.closed_at is not None else "under way"
        seed = (f"<code>{esc(s.seed)}</code>" if s.seed is not None
                else "sealed until the season ends")
        rows.append(f'<tr data-season="{s.season}"><td class="num">{s.season}</td>'
                    f"<td>{when(s.started_at)}</td><td>{ended}</td>"
                    f'<td class="num">{s.games}</td>'
                    f"<td><code>{esc(s.commitment)}</code></td><td>{seed}</td></tr>")
    closed = [s for s in league.seasons if s.seed is not None]
    example = closed[0] if closed else None
    check = ("" if example is None else
             f"python3 -c \"import hashlib; print(hashlib.sha256(b'{example.seed}')"
             f".hexdigest())\"")
    first_set = ("" if example is None else
                 "python3 -c \"import hashlib; print(int.from_bytes(hashlib.sha256("
                 f"b'trick-arena/deal/{example.seed}/{example.first_set}').digest()[:8], "
                 "'big') >> 1)\"")
    return [
        '<section aria-labelledby="seed-h"><h2 id="seed-h">The seeds</h2>',
        table(["Season", "Started", "Ended", "Games", "Master seed commitment (SHA-256)",
               "Master seed"], rows, ' id="seasons" class="data compact"'),
        "<p>Every season has a master seed of its own. Before its games the organiser "
        "published its commitment, the SHA-256 digest of the seed's decimal digits; the seed "
        "is revealed when the season ends, and it fixes that season's deals, and no other "
        "season's, so nobody could choose the cards after seeing the bots. A season under "
        "way keeps its seed sealed: its deals are still being played.</p>",
        *([f"<p>Check a revealed seed against its commitment (season {example.season}):</p>",
           f"<pre><code>{esc(check)}</code></pre>",
           "<p>Set <i>n</i> of the league (its sets are numbered 0, 1, … over all its "
           "seasons, in the order it decided them) is dealt from the deal seed made of the "
           "first 63 bits of SHA-256 of <code>trick-arena/deal/SEED/n</code>, SEED its "
           "season's master seed; each record holds its deal seed (<code>seed</code>). For "
           f"season {example.season}'s first set, set {example.first_set}:</p>",
           f"<pre><code>{esc(first_set)}</code></pre>"] if example is not None else []),
    ]


def scheduled_games(meta: Mapping[str, str]) -> int | None:
    """How many games the schedule has (None if the store does not say)."""
    try:
        per_bot = meta.get("tables_per_bot")
        return game_count(meta["format"], len(json.loads(meta["bots"])), int(meta["seats"]),
                          int(meta["deals"]), len(json.loads(meta.get("candidates") or "[]")),
                          tables_per_bot=int(per_bot) if per_bot is not None else None)
    except (KeyError, ValueError, TypeError):
        return None


def tournament_page(lb: Mapping[str, Any], site: SiteContext,
                    registered: Sequence[Mapping[str, Any]]) -> str:
    meta = site.meta
    schedule = lb.get("schedule") or {}
    clock = lb.get("time_control") or {}
    rating = lb.get("rating") or {}
    options = dict(lb.get("options") or {})
    played = {b["name"]: b for b in lb["bots"]}
    anchored = ", ".join(f"{b['name']} {num(b['fixed_elo'], 0)}" for b in lb["bots"]
                         if b.get("house") and b.get("fixed_elo") is not None)
    scheduled = scheduled_games(meta)
    n_tables = len({r.table_no for r in site.rows})
    seed = lb.get("seed")
    commitment = lb.get("seed_commitment")
    isolation = _isolation(lb)
    unsandboxed = [str(b["name"]) for b in registered
                   if b.get("sandboxed") is not None and not b.get("sandboxed")]

    def dl(items: Iterable[tuple[str, str]]) -> str:
        return ('<dl class="facts">'
                + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items) + "</dl>")

    league = site.league
    games_text = f"{lb['games']} finished"
    if league is not None:
        games_text += (f" in {len(league.seasons)} season"
                       f"{'s' if len(league.seasons) != 1 else ''} (a league plays on: the "
                       f"ratings are the games' so far)")
    elif scheduled is not None:
        games_text += f" of {scheduled} scheduled"
        if lb["games"] < scheduled:
            games_text += " (the tournament is not finished: the results are provisional)"
    candidates = json.loads(meta.get("candidates") or "[]") if meta.get("candidates") else []
    bot_rows = []
    retired_class = ' class="is-retired"'
    for b in registered:
        name = str(b["name"])
        entry = played.get(name)
        link = bot_link("", site.slugs, name) if entry else esc(name)
        sandboxed = b.get("sandboxed") is None or bool(b.get("sandboxed"))
        confined = (UNSANDBOXED_MARK if not sandboxed else
                    "built-in" if bot_kind(b.get("spec")) == "builtin" else "yes")
        said = str(b.get("author") or "")
        if league is not None:  # the league's author; the bot's own word beside it
            author = esc(league.authors.get(name, "the organiser"))
            if said and said != league.authors.get(name):
                author += f' <span class="muted">(it says: {esc(said)})</span>'
            status = league.status.get(name, "active")
        else:
            author, status = esc(said or "–"), ""
        bot_rows.append(
            f'<tr data-bot="{esc(name)}"{retired_class if status == "retired" else ""}>'
            f"<td>{link}</td>"
            f"<td>{esc(b.get('version') or '–')}</td>"
            f"<td>{author}</td>"
            + (f"<td>{esc(status)}</td>" if league is not None else "")
            + f"<td>{confined}"
            f"{' ' + INSECURE_MARK if b.get('insecure') else ''}</td>"
            f'<td class="num">{entry["games"] if entry else 0}</td>'
            f'<td class="num">{rank_text(entry) if entry else "–"}</td></tr>')
    skipped = json.loads(meta.get("skipped") or "[]") if meta.get("skipped") else []
    seed_text = esc(seed) if seed is not None else "not recorded"
    check = (f"python3 -c \"import hashlib; print(hashlib.sha256(b'{seed}').hexdigest())\""
             if seed is not None else "")
    deal_check = ("python3 -c \"import hashlib; print(int.from_bytes(hashlib.sha256("
                  f"b'trick-arena/deal/{seed}/0').digest()[:8], 'big') >> 1)\""
                  if seed is not None else "")
    body = [
        f"<h1>{esc(site.name)}: the tournament</h1>",
        f'<p class="lede">{_summary_line(lb, lb["games"])}</p>',
        '<section aria-labelledby="game-h"><h2 id="game-h">The game</h2>',
        dl([("Game", esc(_game_title(lb.get("game")))),
            ("Options", esc(", ".join(f"{k} = {option_value(v)}" for k, v in options.items()))
             or "the defaults"),
            ("Rules", "as enforced by the referee; see the rules in the trick-arena "
                      "documentation (<code>docs/rules.md</code>)")]),
        "</section>",
        '<section aria-labelledby="schedule-h"><h2 id="schedule-h">Schedule</h2>',
        dl([("Format", esc(schedule.get("format") or "?")
             + (f" (candidates: {esc(', '.join(candidates))})" if candidates else "")),
            ("Seats per table", esc(num(schedule.get("seats")))),
            ("Tables", str(n_tables)),
            ("Deals per table", esc(num(schedule.get("deals")))
             + " (each deal played in every rotation of the table's bots: a duplicate set)"),
            ("Games", esc(games_text)),
            ("Played", when_range(*site.played) if site.played is not None else "–"),
            ("Published", when(site.published))]),
        "</section>",
        '<section aria-labelledby="time-h"><h2 id="time-h">Time control</h2>',
        dl([("Time per decision", f"{esc(num(clock.get('move_ms')))} ms"),
            ("Time bank per game", f"{esc(num(clock.get('bank_ms')))} ms"),
            ("Faults before a seat is forfeited", esc(num(clock.get("max_faults"))))]),
        '<p class="note">A late, illegal or malformed answer is a fault: the referee plays a '
        "default action for the seat and the game goes on. After the allowed number of "
        "faults the default actions play the seat for the rest of the game.</p></section>",
        '<section aria-labelledby="isolation"><h2 id="isolation">Isolation</h2>',
        dl([("Bot processes", f'<span id="isolation-mode">{esc(isolation)}</span>: '
                              f"{esc(ISOLATION_MODES.get(isolation, 'not described'))}"),
            ("Sandbox", "no bot ran without it" if not unsandboxed else
             f"{esc(', '.join(unsandboxed))}: not confined in it (untrusted mode off, or "
             "a bot served from elsewhere); the others ran in it")]),
        '<p class="note">A bot process the arena starts runs in a sandbox, with limits on its '
        "memory, processes, CPU time, file size and open files; hitting a limit is a "
        "<i>resource</i> fault. Only a bot the tournament file trusts runs without it (and a "
        "bot served from elsewhere is out of the arena's reach). The "
        "isolation mode says how bot processes are shared between games. The bots' CPU time "
        "per decision (on the leaderboard and the bot pages) is the bot process's own CPU "
        "time while it decided, where the machine could measure it.</p></section>",
        '<section aria-labelledby="bots-h"><h2 id="bots-h">Bots</h2>',
        table(["Bot", "Version", "Author", *(["Status"] if league is not None else []),
               "Sandbox", "Games", "Rank"], bot_rows, ' id="bots" class="data compact"'),
        (f'<p class="note">Left out: {esc(", ".join(f"{n} ({why})" for n, why in skipped))}.'
         "</p>" if skipped else ""),
        "</section>",
        *(league_seeds(league) if league is not None else [
            '<section aria-labelledby="seed-h"><h2 id="seed-h">The seed</h2>',
            dl([("Seed commitment", f"<code>{esc(commitment or 'not recorded')}</code>"),
                ("Seed (revealed)", f"<code>{seed_text}</code>")]),
            "<p>Before the games the organiser published the commitment: the SHA-256 digest "
            "of the seed's decimal digits. The seed is revealed now; it fixes every deal, so "
            "nobody could choose the cards after seeing the bots. Check that the seed matches "
            "the commitment:</p>",
            f"<pre><code>{esc(check)}</code></pre>" if check else "",
            "<p>Deal <i>d</i> (0, 1, …) of every table uses the deal seed made of the first 63 "
            "bits of SHA-256 of <code>trick-arena/deal/SEED/d</code>; each record holds its "
            "deal seed (<code>seed</code>). For deal 0:</p>",
            f"<pre><code>{esc(deal_check)}</code></pre>" if deal_check else ""]),
        dl([("Results chain head", f'<code id="chain-head">'
                                   f"{esc(lb.get('chain_head') or 'not recorded')}</code>")]),
        "<p>Every finished game's record is chained to the ones before it by SHA-256, "
        "starting from the seed commitment; the head fixes every record, their number and "
        "their order. Check it against the organiser's export with <code>arena verify "
        "games.jsonl.gz --head HEAD</code>, or the few lines of Python in the trick-arena "
        "documentation (<code>docs/records.md</code>).</p>",
        "</section>",
        '<section aria-labelledby="verify-h"><h2 id="verify-h">Checking the games</h2>',
        f'<p>Every game\'s complete record is in <a href="{DATA_FILE}">{DATA_FILE}</a> '
        "(one JSON object per line, gzip-compressed, format <code>trick-arena.record/1</code>): "
        "the deal, the "
        "trump, every bid and card, every trick and score. Anyone can re-play them through "
        "the rules engine of trick-arena (the version above, or a later one that reads this "
        "format):</p>",
        "<pre><code>arena verify games.jsonl.gz</code></pre>",
        "<p>It prints <code>games.jsonl.gz: ok (N records), no chain</code>, or the first "
        "record, round, trick and seat that does not hold. The leaderboard's numbers are in "
        '<a href="data/leaderboard.json">data/leaderboard.json</a>.</p>',
        dl([("Played with", f"trick-arena {esc(lb.get('arena_version') or '?')}"),
            ("Published with", f"trick-arena {esc(__version__)}"),
            ("Tournament file SHA-256", f"<code>{esc(lb.get('tournament_hash') or '–')}</code>")]),
        "</section>",
        '<section aria-labelledby="ratings"><h2 id="ratings">How the ratings are made</h2>',
        ("<p>In every whole duplicate set (one deal in every rotation of the seats) the "
         "bots that held the same seat's cards are compared, as duplicate bridge scores a "
         "board: the higher final total with those cards wins, equal totals draw, and the "
         "luck of the deal cancels; a set still being played is not counted. The ratings "
         if rating.get("compare") == "cards" else
         "<p>Every game of <i>k</i> seats counts as <i>k</i>(<i>k</i> − 1)/2 comparisons, one "
         "per pair of seats: the higher final total wins it, equal totals draw. The ratings ")
        + "are the Bradley-Terry strengths that best explain all comparisons, on the Elo scale "
        + "(400 points = odds of 10 to 1) "
        + (f"set by the house bots' fixed ratings ({esc(anchored)}), with " if anchored else
           "and centred so that the pool averages 1500, with ")
        + f"{esc(num(rating.get('prior_draws', 1), 1)).removesuffix('.0')} virtual draw(s) per "
        "bot against the pool average. "
        f"The {round(100 * float(rating.get('level', 0.95)))}% intervals come from a "
        f"bootstrap over duplicate sets ({esc(rating.get('resamples', '?'))} resamples, "
        f"seed {esc(rating.get('seed', 0))}): the games of one deal at one table share their "
        "cards, so whole sets are resampled. A rating is provisional while the bot has fewer "
        "than 20 games or its interval is wider than ±100.</p>",
        "</section>",
    ]
    return page(f"The tournament: {site.name}", "", "\n".join(body), "tournament.html",
                site.name, description=f"How {site.name} was run", published=site.published,
                up=site.up)
