"""The site's pages: the index (leaderboard and charts) and a page per bot, and what
every page shares (:class:`SiteContext`, the rows, the marks). The games list and the
game pages are in :mod:`arena.publish.game_pages`, the tournament statement in
:mod:`arena.publish.statement`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from arena.league.store import SeasonRow
from arena.model.faults import FAULT_KINDS
from arena.publish import charts
from arena.publish.figures import charts_section
from arena.publish.markup import (
    Slugs,
    bot_link,
    data_value,
    esc,
    game_href,
    num,
    num_cell,
    page,
    pct,
    table,
    when,
    when_range,
)
from arena.report.board import (
    DEFAULT_ISOLATION,
    INSECURE_NOTE,
    UNSANDBOXED_NOTE,
)
from arena.report.format import ms, options_text, times_text
from arena.report.text import isolation_line


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






def isolation_of(lb: Mapping[str, Any]) -> str:
    return str(lb.get("isolation") or DEFAULT_ISOLATION)


def _isolation_note(lb: Mapping[str, Any]) -> str:
    """The warning paragraph under the ranking when bot processes are shared, else ""."""
    line = isolation_line(lb)
    if not line or not lb["bots"]:
        return ""
    return (f'<p class="note warning" id="isolation-warning">{esc(line)}. See '
            '<a href="tournament.html#isolation">the tournament page</a>.</p>')


def game_title(game: str | None) -> str:
    return {"wizard": "Wizard", "trumps": "Trumps"}.get(game or "", game or "?")






def summary_line(lb: Mapping[str, Any], games: int) -> str:
    schedule = lb.get("schedule") or {}
    parts = [game_title(lb.get("game"))]
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
        f'<p class="lede">{summary_line(lb, lb["games"])}</p>',
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
        ("Isolation", f'<a href="{root}tournament.html#isolation">{esc(isolation_of(lb))}</a>'),
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
