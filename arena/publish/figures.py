"""The index page's charts (SVG from :mod:`.charts`), each with its data as a table:
ratings with intervals, the rating history, head to head, bid accuracy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arena.publish import charts
from arena.publish.markup import (
    data_value,
    esc,
    name_cell,
    num_cell,
    pct,
    table,
)


def _figure(svg: str, caption: str, data: str) -> str:
    """A chart (its wide and compact variants) with its caption, and its numbers in a
    table that scrolls in its own box where it is wider than the page."""
    return (f"<figure>{svg}<figcaption>{caption}</figcaption></figure>\n"
            f'<div class="scroll">{data}</div>')


def charts_section(lb: Mapping[str, Any]) -> str:
    bots = lb["bots"]
    parts = ['<section id="charts" aria-labelledby="charts-h"><h2 id="charts-h">Charts</h2>']
    if not bots:
        parts.append('<p class="note">No charts without games.</p></section>')
        return "\n".join(parts)
    parts.append(ratings_figure(bots))
    parts.append(history_figure(bots, lb.get("elo_history") or {}))
    parts.append(h2h_figure(bots, lb.get("head_to_head") or []))
    if lb.get("game") == "wizard":
        parts.append(bids_figure(bots))
    parts.append("</section>")
    return "\n".join(parts)


def ratings_figure(bots: Sequence[Mapping[str, Any]]) -> str:
    rows = [charts.Interval(b["name"], b["elo"], b["elo_low"], b["elo_high"], b["provisional"])
            for b in bots if b["elo"] is not None]
    words = ("Ratings with 95% intervals",
             "Each bot's Bradley-Terry rating (dot) and its 95% bootstrap interval (whisker), "
             "best first; the dashed line is the pool average, 1500. Hollow dots are "
             "provisional.")
    svg = (charts.ratings_chart(rows, "chart-ratings", *words)
           + charts.ratings_chart(rows, "chart-ratings-compact", *words, compact=True))
    data = table(["Bot", "Elo", "Low", "High", "Provisional"], (
        f'<tr>{name_cell(b["name"])}{num_cell(b["elo"])}{num_cell(b["elo_low"])}'
        f'{num_cell(b["elo_high"])}<td>{"yes" if b["provisional"] else "no"}</td></tr>'
        for b in bots), ' class="chart-data" data-chart="chart-ratings"',
        "The numbers of the ratings chart")
    return _figure(svg, "Ratings: Bradley-Terry Elo and 95% interval (dashed line: the pool "
                        "average, 1500; hollow dot: provisional).", data)


def history_figure(bots: Sequence[Mapping[str, Any]],
                   history: Mapping[str, Sequence[float]]) -> str:
    series = []
    for b in bots:
        values = history.get(b["name"], [])
        series.append(charts.Series(b["name"], [1500.0, *values], range(len(values) + 1)))
    words = ("Classic incremental Elo over the games",
             "Each bot's classic incremental Elo after each game it played, starting at 1500.",
             "games played by the bot", "classic Elo")
    svg = (charts.line_chart(series, "chart-history", *words, reference=1500.0)
           + charts.line_chart(series, "chart-history-compact", *words, reference=1500.0,
                               compact=True))
    rows = []
    for b in bots:
        seen = history.get(b["name"], [])
        rows.append(f'<tr>{name_cell(b["name"])}{num_cell(len(seen))}'
                    f'{num_cell(b["elo_incremental"])}'
                    f'{num_cell(min(seen) if seen else None)}'
                    f'{num_cell(max(seen) if seen else None)}</tr>')
    data = table(["Bot", "Games", "Final", "Lowest", "Highest"], rows,
                 ' class="chart-data" data-chart="chart-history"',
                 "The numbers of the history chart (classic Elo after each game)")
    return _figure(svg, "Classic incremental Elo after each game, in schedule order (K = 32 "
                        "shared over the pairs of a game). It depends on the order of the games "
                        "and lags; the ranking uses Bradley-Terry.", data)


def h2h_figure(bots: Sequence[Mapping[str, Any]],
               pairs: Sequence[Mapping[str, Any]]) -> str:
    names = [b["name"] for b in bots]
    score = {(p["a"], p["b"]): p for p in pairs}
    shares = {k: v["score"] for k, v in score.items()}
    words = ("Head to head",
             "The row bot's score against the column bot: wins plus half the draws over the "
             "games they shared, in percent. Blue: the row bot did better; red: worse.")
    svg = (charts.heat_map(names, shares, "chart-h2h", *words)
           + charts.heat_map(names, shares, "chart-h2h-compact", *words, compact=True))
    head = ["Bot"] + [f'<th scope="col" title="{esc(n)}">{i + 1}</th>'
                      for i, n in enumerate(names)]
    rows = []
    for a in names:
        cells = [name_cell(a)]
        for b in names:
            p = score.get((a, b))
            if a == b or p is None:
                cells.append('<td class="num na">–</td>')
                continue
            cells.append(
                f'<td class="num" data-a="{esc(a)}" data-b="{esc(b)}"{data_value(p["score"])} '
                f'title="{esc(a)} vs {esc(b)}: {p["games"]} games, {p["wins"]} won, '
                f'{p["losses"]} lost, {p["draws"]} drawn">{pct(p["score"], 1)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    data = table(head, rows, ' class="chart-data" data-chart="chart-h2h"',
                 "The numbers of the head-to-head chart: the row bot's score against the "
                 "column bot (columns by rank)")
    return _figure(svg, "Head to head: the row bot's score against each opponent over the "
                        "games they shared (wins + ½ draws), columns by rank.", data)


def bids_figure(bots: Sequence[Mapping[str, Any]]) -> str:
    by_hand = {b["name"]: b.get("bid_accuracy_by_hand") or {} for b in bots}
    hands = sorted({int(h) for acc in by_hand.values() for h in acc})
    series = [charts.Series(name, [None if acc.get(str(h)) is None else 100 * acc[str(h)]
                                   for h in hands], hands) for name, acc in by_hand.items()]
    words = ("Bid accuracy by hand size",
             "For each bot, the share of rounds in which its bid was exact, by the number of "
             "cards in hand (the round number).", "cards in hand", "exact bids")
    svg = (charts.line_chart(series, "chart-bids", *words, y_range=(0, 100), y_suffix="%",
                             markers=True)
           + charts.line_chart(series, "chart-bids-compact", *words, y_range=(0, 100),
                               y_suffix="%", markers=True, compact=True))
    rows = []
    for name, acc in by_hand.items():
        cells = "".join(num_cell(acc.get(str(h)), pct(acc.get(str(h)), 2)) for h in hands)
        rows.append(f"<tr>{name_cell(name)}{cells}</tr>")
    data = table(["Bot", *(str(h) for h in hands)], rows,
                 ' class="chart-data" data-chart="chart-bids"',
                 "The numbers of the bids chart: exact bids by cards in hand")
    return _figure(svg, "Bid accuracy by hand size (Wizard): exact bids by the number of cards "
                        "in hand.", data)
