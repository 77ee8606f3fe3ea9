"""The leaderboard for people and programs: the terminal table, Markdown, CSV and JSON
(the JSON schema is in ``docs/leaderboard.md``), and the files a tournament writes."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.files import atomic_writer
from arena.model.faults import FAULT_KINDS
from arena.model.names import clean, for_csv, for_markdown
from arena.report.board import (
    DEFAULT_ISOLATION,
    INSECURE,
    INSECURE_NOTE,
    ISOLATION_MODES,
    LEVEL,
    PROVISIONAL_GAMES,
    PROVISIONAL_HALF_WIDTH,
    UNSANDBOXED,
    UNSANDBOXED_NOTE,
)
from arena.report.format import faults_text, latency_text, number, options_text, percent

if TYPE_CHECKING:
    from rich.console import Console


FILES = ("leaderboard.md", "leaderboard.csv", "leaderboard.json")


CSV_COLUMNS = (
    "rank", "name", "version", "kind", "sandboxed", "insecure", "elo", "elo_low", "elo_high",
    "p_above_next",
    "elo_incremental", "games", "mean_score", "mean_score_se", "mean_place", "wins",
    "shared_wins", *(f"faults_{k}" for k in FAULT_KINDS), "forfeits", "latency_p50_ms",
    "latency_p95_ms", "latency_max_ms", "cpu_p50_ms", "cpu_p95_ms", "cpu_max_ms",
    "bid_accuracy", "bid_error", "bid_bias",
    "provisional",
)


def isolation_line(lb: Mapping[str, Any]) -> str | None:
    """The warning line printed under the ranking when bot processes are shared between
    games (``isolation: shared — ...``); None for the other modes."""
    isolation = lb.get("isolation") or DEFAULT_ISOLATION
    if isolation != "shared":
        return None
    return f"isolation: shared — {ISOLATION_MODES['shared']}"


def _bot_name(b: Mapping[str, Any]) -> str:
    """The bot's name with its marks: ``?`` if provisional, then ``(no sandbox)``, then
    ``(insecure)``."""
    return (str(b["name"]) + ("?" if b["provisional"] else "")
            + ("" if b.get("sandboxed", True) else f" {UNSANDBOXED}")
            + (f" {INSECURE}" if b.get("insecure") else "")
            + (f" {HOUSE}" if b.get("house") else "")
            + (f" {RETIRED}" if b.get("retired") else "")
            + (f" (after {b['previous_version']})" if b.get("previous_version") else ""))


HOUSE = "(house)"
"""The mark of a league's house bot: shown, not ranked (its rank is ``–``)."""
RETIRED = "(retired)"
"""The mark of a league's retired bot: it keeps its games and rating, plays no more."""


def _rank(b: Mapping[str, Any]) -> str:
    return "–" if b.get("rank") is None else str(b["rank"])


def _md(text: Any) -> str:
    """Text for a Markdown table cell (or heading), escaped
    (:func:`arena.model.names.for_markdown`)."""
    return for_markdown(str(text))


def render_markdown(lb: Mapping[str, Any]) -> str:
    """The leaderboard as a Markdown page: summary, ranking table, head-to-head matrix."""
    title = lb.get("tournament") or "Tournament"
    lines = [f"# {_md(title)}: leaderboard", ""]
    summary = [f"Game: {lb.get('game') or '?'}"]
    if lb.get("options"):
        summary[0] += f" ({options_text(lb['options'])})"
    schedule = lb.get("schedule") or {}
    if schedule.get("format"):
        summary.append(f"{schedule['format']}, {number(schedule.get('deals'))} deals, "
                       f"{number(schedule.get('seats'))} seats")
    summary.append(f"{lb['games']} games")
    if lb.get("seed_commitment"):
        summary.append(f"seed commitment `{lb['seed_commitment']}`")
    if lb.get("seed") is not None:
        summary.append(f"seed {lb['seed']}")
    if lb.get("chain_head"):
        summary.append(f"results chain head `{lb['chain_head']}`")
    summary.append(f"isolation: {lb.get('isolation') or DEFAULT_ISOLATION}")
    lines += ["; ".join(summary) + ".", ""]
    bots = lb["bots"]
    if not bots:
        return "\n".join([*lines, "No finished games yet.", ""])
    level = round(100 * (lb.get("rating") or {}).get("level", LEVEL))
    lines += [
        f"| # | Bot | Version | Elo | {level}% interval | P(> next) | Classic Elo | Games "
        "| Mean score | Mean place | Wins | Bid acc. | Faults | Forfeits | p50 / p95 ms "
        "| CPU p50/p95 ms |",
        "|--:|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|",
    ]
    for b in bots:
        wins = str(b["wins"]) + (f" ({b['shared_wins']} shared)" if b["shared_wins"] else "")
        lines.append(
            f"| {_rank(b)} | {_md(_bot_name(b))} | {_md(b['version'] or '')} "
            f"| {number(b['elo'])} | {number(b['elo_low'])}–{number(b['elo_high'])} "
            f"| {percent(b['p_above_next'])} | {number(b['elo_incremental'])} | {b['games']} "
            f"| {number(b['mean_score'], 2)} ± {number(b['mean_score_se'], 2)} "
            f"| {number(b['mean_place'], 2)} | {wins} | {percent(b['bid_accuracy'])} "
            f"| {faults_text(b['faults'])} | {b['forfeits']} "
            f"| {latency_text(b['latency_ms'])} | {latency_text(b.get('cpu_ms'))} |")
    warning = isolation_line(lb)
    if warning:
        lines += ["", warning]
    if any(b["provisional"] for b in bots):
        lines += ["", f"? provisional: fewer than {PROVISIONAL_GAMES} games, or an Elo "
                  f"interval wider than ±{PROVISIONAL_HALF_WIDTH:.0f}."]
    if not all(b.get("sandboxed", True) for b in bots):
        lines += ["", f"{UNSANDBOXED}: {UNSANDBOXED_NOTE}."]
    if any(b.get("insecure") for b in bots):
        lines += ["", f"{INSECURE}: {INSECURE_NOTE}."]
    if any(b.get("house") for b in bots):
        lines += ["", f"{HOUSE}: a house bot of the league, shown but not ranked (a fixed "
                  f"rating anchors the scale)."]
    if any(b.get("retired") or b.get("previous_version") for b in bots):
        lines += ["", f"{RETIRED}: plays no more, keeps its games and rating; (after X): "
                  f"a new version of X, rated apart from it."]
    lines += ["", f"Elo: Bradley-Terry fit of the pairwise results, {level}% interval "
              "from a bootstrap over duplicate sets; P(> next): the share of resamples in "
              "which the bot rates above the next one; Classic Elo: incremental, in "
              "schedule order; p50 / p95 ms: answer times; CPU p50/p95 ms: the bot "
              "process's CPU time per decision, where it was measured."]
    scores = {(h["a"], h["b"]): h for h in lb["head_to_head"]}
    if scores:
        names = [b["name"] for b in bots]
        lines += ["", "## Head to head", "",
                  "Row bot's score against the column bot over their shared games "
                  "(a win 1, a tie ½).", "",
                  "| | " + " | ".join(_md(n) for n in names) + " |",
                  "|---|" + "--:|" * len(names)]
        for a in names:
            cells = ["—" if (a, b) not in scores else percent(scores[a, b]["score"])
                     for b in names]
            lines.append(f"| {_md(a)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def csv_row(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One bot's flat CSV row (nulls become empty cells)."""
    latency = entry["latency_ms"] or {}
    cpu = entry.get("cpu_ms") or {}
    row: dict[str, Any] = {k: entry.get(k) for k in CSV_COLUMNS if k in entry}
    for kind in FAULT_KINDS:
        row[f"faults_{kind}"] = entry["faults"].get(kind, 0)
    for key in ("p50", "p95", "max"):
        row[f"latency_{key}_ms"] = latency.get(key)
        row[f"cpu_{key}_ms"] = cpu.get(key)
    for key in ("name", "version"):  # for a spreadsheet: no formula comes of a name
        if isinstance(row.get(key), str):
            row[key] = for_csv(row[key])
    row["sandboxed"] = "true" if entry.get("sandboxed", True) else "false"
    row["insecure"] = "true" if entry.get("insecure") else "false"
    row["provisional"] = "true" if entry["provisional"] else "false"
    return {k: "" if row.get(k) is None else row[k] for k in CSV_COLUMNS}


def render_csv(lb: Mapping[str, Any]) -> str:
    """One row per bot in rating order, with a header row."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for entry in lb["bots"]:
        writer.writerow(csv_row(entry))
    return out.getvalue()


def render_json(lb: Mapping[str, Any]) -> str:
    """The leaderboard as indented JSON, keys in the documented order."""
    return json.dumps(lb, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


_DROP_WHEN_NARROW = ("CPU p50/p95 ms", "Classic", "ms p50/p95", "Place", "P>next")
"""Terminal columns left out, in this order, until the table fits the console."""


def print_table(lb: Mapping[str, Any], console: Console | None = None) -> None:
    """Print the ranking as a table on the terminal (provisional bots dimmed, marked ?;
    bots that ran without the sandbox marked ``(no sandbox)``), and under it the isolation
    warning when bot processes are shared (:func:`isolation_line`).

    On a narrow console the least needed columns are left out (:data:`_DROP_WHEN_NARROW`).
    """
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console()
    columns: dict[str, list[str]] = {h: [] for h in (
        "#", "Bot", "Elo", "P>next", "Classic", "Games", "Score", "Place", "Bid", "Faults",
        "ms p50/p95", "CPU p50/p95 ms")}
    for b in lb["bots"]:
        half = (None if b["elo_high"] is None or b["elo_low"] is None
                else (b["elo_high"] - b["elo_low"]) / 2)
        faults = sum(b["faults"].values())
        for header, cell in zip(columns, (
                _rank(b), clean(_bot_name(b)),
                f"{number(b['elo'])}±{number(half)}", percent(b["p_above_next"]),
                number(b["elo_incremental"]), str(b["games"]),
                f"{number(b['mean_score'], 1)}±{number(b['mean_score_se'], 1)}",
                number(b["mean_place"], 2), percent(b["bid_accuracy"]),
                str(faults) + (f" ({b['forfeits']})" if b["forfeits"] else ""),
                latency_text(b["latency_ms"], "/"),
                latency_text(b.get("cpu_ms"), "/")), strict=True):
            columns[header].append(cell)
    widths = {h: max(len(h), *(len(c) for c in cells)) + 3 for h, cells in columns.items()}
    for header in _DROP_WHEN_NARROW:
        if sum(widths.values()) <= console.width:
            break
        del columns[header], widths[header]
    level = round(100 * (lb.get("rating") or {}).get("level", LEVEL))
    table = Table(title=Text(f"{clean(str(lb.get('tournament') or 'Tournament'))}: "
                             f"{lb.get('game') or '?'}, {lb['games']} games", style="table.title"),
                  box=box.SIMPLE_HEAD, pad_edge=False,
                  caption=f"Elo ± half its {level}% interval; ? provisional; "
                  "faults (forfeits)"
                  + (f"; {UNSANDBOXED} untrusted mode off"
                     if not all(b.get("sandboxed", True) for b in lb["bots"]) else "")
                  + (f"; {INSECURE} plain grpc:// over the network"
                     if any(b.get("insecure") for b in lb["bots"]) else ""))
    for header in columns:
        bot = header == "Bot"
        table.add_column(header, justify="left" if bot else "right", no_wrap=not bot,
                         overflow="fold" if bot else "ellipsis", min_width=6 if bot else None)
    for row, b in enumerate(lb["bots"]):
        # names are Text, never read as rich markup
        table.add_row(*(Text(cells[row]) if header == "Bot" else cells[row]
                        for header, cells in columns.items()),
                      style="dim" if b["provisional"] else None)
    console.print(table)
    warning = isolation_line(lb)
    if warning and lb["bots"]:
        console.print(warning, style="yellow", markup=False, highlight=False)


def write_leaderboard(folder: Path, lb: Mapping[str, Any]) -> list[Path]:
    """Write leaderboard.md, .csv and .json into ``folder``, each atomically; the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / name for name in FILES]
    for path, text in zip(paths, (render_markdown(lb), render_csv(lb), render_json(lb)),
                          strict=True):
        with atomic_writer(path) as out:
            out.write(text)
    return paths
