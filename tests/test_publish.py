"""``arena publish`` and ``arena serve`` without a browser.

Two small real tournaments are run and published once per module: Wizard with five
built-in bots (one with a name full of HTML's special characters), and Trumps with a bot
that breaks the rules (tests/bots/illegal.py), so that there are faults to list. The
pages are parsed with the standard library and compared with the store, the records
and ``data/leaderboard.json``. The browser side is in test_site_browser.py.
"""

from __future__ import annotations

import cProfile
import gzip
import itertools
import json
import math
import os
import pstats
import random
import re
import shlex
import signal
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit
from urllib.request import urlopen

import pytest
from conftest import REPO, listening_on, start_server, stop_server

from arena.cli import main
from arena.publish import serve as serve_module
from arena.publish.charts import nice_ticks
from arena.publish.markup import LIST_ROWS, Slugs, game_path, slug
from arena.publish.pages import BUILTIN_SANDBOX
from arena.runs.schedule import ScheduledGame
from arena.runs.store import Store

ODD = 'odd </script> & "co" <b>'
WIZARD = f"""
name = "publish-wizard"
game = "wizard"
seats = 4
seed = 4242
concurrency = 2
[schedule]
deals = 1
[[bots]]
name = "heuristic"
spec = "heuristic"
[[bots]]
name = "random"
spec = "random"
[[bots]]
name = "heuristic-b"
spec = "heuristic"
[[bots]]
name = "random-b"
spec = "random"
[[bots]]
name = {json.dumps(ODD)}
spec = "random"
"""
ILLEGAL = "cmd:" + shlex.join(["python", str(REPO / "tests" / "bots" / "illegal.py")])
TRUMPS = f"""
name = "publish-trumps"
game = "trumps"
seats = 4
seed = 77
isolation = "shared"  # the pages are the subject: a process per bot, not per game
[options]
announce = true
[schedule]
deals = 1
[[bots]]
name = "heuristic"
spec = "heuristic"
[[bots]]
name = "random"
spec = "random"
[[bots]]
name = "heuristic-b"
spec = "heuristic"
[[bots]]
name = "random-b"
spec = "random"
[[bots]]
name = "illegal"
spec = {json.dumps(ILLEGAL)}
"""


# -- a small HTML tree, built with the standard library's parser -------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def find_all(self, tag: str, **attrs: str) -> list[Node]:
        return [n for n in self.iter() if n.tag == tag
                and all(n.attrs.get(k.rstrip("_").replace("_", "-")) == v
                        for k, v in attrs.items())]

    def find(self, tag: str, **attrs: str) -> Node:
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag} {attrs}>"
        return found[0]

    def by_id(self, ident: str) -> Node:
        found = [n for n in self.iter() if n.attrs.get("id") == ident]
        assert len(found) == 1, f"{len(found)} elements with id {ident!r}"
        return found[0]

    def rows(self) -> list[Node]:
        """The <tr> of a table's <tbody>."""
        return [n for body in self.find_all("tbody") for n in body.children
                if isinstance(n, Node) and n.tag == "tr"]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        assert tag not in VOID, f"end tag </{tag}>"
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(path: Path) -> Node:
    builder = _Builder()
    builder.feed(path.read_text(encoding="utf-8"))
    builder.close()
    assert builder.stack == [builder.root], f"{path}: unclosed {builder.stack[-1].tag}"
    return builder.root


# -- the sites ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    folder: Path
    site: Path
    board: dict[str, Any]
    records: dict[str, dict[str, Any]]
    """The stored records by game id, read from the store."""
    pages: dict[Path, Node]


def build(tmp: Path, text: str) -> Built:
    config = tmp / "t.toml"
    config.write_text(text)
    folder, site = tmp / "out", tmp / "site"
    assert main(["tournament", str(config), "--out", str(folder), "--resamples", "50"]) == 0
    assert main(["publish", str(folder), "--out", str(site), "--resamples", "50"]) == 0
    with Store.open(folder) as store:
        records = {g.id: g.record for g in store.iter_games()}
    board = json.loads((site / "data" / "leaderboard.json").read_text(encoding="utf-8"))
    return Built(folder, site, board, records,
                 {p: parse(p) for p in sorted(site.rglob("*.html"))})


@pytest.fixture(scope="module")
def wizard(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build(tmp_path_factory.mktemp("publish-wizard"), WIZARD)


@pytest.fixture(scope="module")
def trumps(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build(tmp_path_factory.mktemp("publish-trumps"), TRUMPS)


@pytest.fixture(params=["wizard", "trumps"])
def built(request: pytest.FixtureRequest) -> Built:
    value: Built = request.getfixturevalue(request.param)
    return value


# -- pages and records --------------------------------------------------------------------


def test_every_bot_and_every_game_has_a_page(built: Built) -> None:
    site = built.site
    for rel in ("index.html", "games.html", "tournament.html", "data/leaderboard.json",
                "data/games.jsonl.gz", "assets/site.css", "assets/site.js", "assets/replay.js",
                "assets/favicon.svg"):
        assert (site / rel).is_file(), rel
    names = [b["name"] for b in built.board["bots"]]
    assert len(names) == 5
    assert sorted(p.name for p in (site / "bots").iterdir()) == sorted(
        f"{slug(n)}.html" for n in names)
    assert sorted(p.stem for p in (site / "games").glob("*/*.html")) == sorted(built.records)
    assert all((site / game_path(g)).is_file() for g in built.records)
    assert len(built.records) == 20
    assert len(built.pages) == 3 + 5 + 20


def test_the_embedded_record_is_the_stored_record(built: Built) -> None:
    with gzip.open(built.site / "data" / "games.jsonl.gz", "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert [json.loads(line) for line in lines] == list(built.records.values())
    for game_id, record in built.records.items():
        page = built.pages[built.site / game_path(game_id)]
        script = page.by_id("record")
        assert script.tag == "script" and script.attrs["type"] == "application/json"
        assert json.loads(script.text()) == record, game_id
        replay = page.by_id("replay")
        assert (replay.attrs["data-round"], replay.attrs["data-trick"],
                replay.attrs["data-step"]) == ("1", "0", "0")
        # the first deal is drawn as built: one card box per card, in seat order
        for seat, hand in enumerate(record["rounds"][0]["hands"]):
            box = page.find("div", class_="hand", data_seat=str(seat))
            assert [c.attrs["data-card"] for c in box.find_all("span")] == hand
    odd = built.site / "games"
    if ODD in {n for r in built.records.values() for n in r["seats"]}:
        text = "".join(p.read_text(encoding="utf-8") for p in odd.glob("*/*.html"))
        assert "</script> &" not in text  # the name is escaped inside the JSON


def link_problems(root: Path, pages: dict[Path, Node]) -> list[str]:
    """Every link and id problem of the ``pages`` of the site at ``root``: duplicate ids,
    links that are not relative or lead to no file (or no id) of the site, other hosts."""
    site = root.resolve()
    problems: list[str] = []
    for path, page in pages.items():
        rel = path.relative_to(root)
        ids = [n.attrs["id"] for n in page.iter() if "id" in n.attrs]
        if len(ids) != len(set(ids)):
            problems.append(f"{rel}: duplicate ids")
        for node in page.iter():
            for key in ("href", "src"):
                url = node.attrs.get(key)
                if url is None:
                    continue
                parts = urlsplit(url)
                if parts.scheme or parts.netloc or url.startswith("/"):
                    problems.append(f"{rel}: {key}={url!r} is not a relative link")
                    continue
                target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
                if not target.is_relative_to(site) or not target.is_file():
                    problems.append(f"{rel}: {key}={url!r}: no such file in the site")
                if parts.fragment and target.suffix == ".html":
                    other = pages[target]
                    if not any(n.attrs.get("id") == parts.fragment for n in other.iter()):
                        problems.append(f"{rel}: {key}={url!r}: no such id")
        if re.search(r"(https?:)?//[a-z0-9]", path.read_text(encoding="utf-8"), re.I):
            problems.append(f"{rel}: names another host")
    return problems


def test_links_resolve_inside_the_site_and_ids_are_unique(built: Built) -> None:
    problems = link_problems(built.site, built.pages)
    for asset in ("site.css", "site.js", "replay.js"):
        if re.search(r"https?://", (built.site / "assets" / asset).read_text(encoding="utf-8")):
            problems.append(f"assets/{asset}: names another host")
    assert not problems, "\n".join(problems)


def test_a_long_games_list_is_paged_and_every_game_links_to_its_page(
        wizard: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With 7 games to a page, the Wizard tournament's games list is 3 pages: each game on
    exactly one, in schedule order, the pagers linking them all, each game page's "all
    games" leading to the page that lists it; every link resolves."""
    monkeypatch.setattr("arena.publish.game_pages.LIST_ROWS", 7)
    site = tmp_path / "site"
    assert main(["publish", str(wizard.folder), "--out", str(site), "--resamples", "10"]) == 0
    ids = list(wizard.records)
    pages_of = ["games.html", *(f"games/list/{n}.html" for n in range(2, -(-len(ids) // 7) + 1))]
    assert len(pages_of) == 3 and not (site / "games" / "list" / "4.html").exists()
    listed = []
    for n, rel in enumerate(pages_of, 1):
        page = parse(site / rel)
        rows = [r.attrs["data-game-id"] for r in page.by_id("games").rows()]
        assert rows == ids[(n - 1) * 7:n * 7], rel
        listed += rows
        pager = {a.text().strip() for nav in page.find_all("nav", class_="pager")
                 for a in nav.find_all("a")}
        assert {str(k) for k in range(1, 4) if k != n} <= pager, (rel, pager)
        assert f"page {n} of 3" in page.find("p", class_="lede").text()
    assert listed == ids
    for k, game_id in enumerate(ids):
        page = parse(site / game_path(game_id))
        all_games = next(a for nav in page.find_all("nav", class_="pager")
                         for a in nav.find_all("a") if a.text() == "all games")
        target = (site / game_path(game_id)).parent / all_games.attrs["href"]
        assert target.resolve() == (site / pages_of[k // 7]).resolve(), game_id
    every = {p: parse(p) for p in site.rglob("*.html")}
    assert not link_problems(site, every)
    assert LIST_ROWS == 1000  # the setting outside this test


def test_every_page_has_the_frame(built: Built) -> None:
    for path, page in built.pages.items():
        text = path.read_text(encoding="utf-8")
        assert text.startswith("<!DOCTYPE html>\n<html lang=\"en\">"), path
        assert page.find("meta", charset="utf-8")
        assert page.find("meta", name="viewport")
        assert page.find("title").text().strip()
        hrefs = {a.attrs.get("href", "").rsplit("/", 1)[-1]
                 for nav in page.find_all("nav") for a in nav.find_all("a")}
        assert {"index.html", "games.html", "tournament.html"} <= hrefs, path
        assert not [k for n in page.iter() for k in n.attrs if k.startswith("on")], path


# -- the leaderboard ------------------------------------------------------------------


def test_leaderboard_rows_are_in_rating_order(built: Built) -> None:
    page = built.pages[built.site / "index.html"]
    rows = page.by_id("leaderboard").rows()
    bots = built.board["bots"]
    assert [r.attrs["data-bot"] for r in rows] == [b["name"] for b in bots]
    assert [r.attrs["data-rank"] for r in rows] == [str(i) for i in range(1, len(bots) + 1)]
    assert [b["elo"] for b in bots] == sorted((b["elo"] for b in bots), reverse=True)
    for row, b in zip(rows, bots, strict=True):
        cells = {td.attrs["data-col"]: td for td in row.find_all("td")}
        assert {"rank", "bot", "elo", "games", "mean_score", "bid_accuracy",
                "faults", "latency", "cpu"} <= set(cells)
        assert cells["bot"].find("a").attrs["href"] == f"bots/{slug(b['name'])}.html"
        assert cells["games"].text() == str(b["games"])
        assert float(cells["elo"].attrs["data-value"]) == b["elo"]
        assert len(cells["elo"].find_all("svg")) == 1
        assert cells["faults"].attrs["data-value"] == str(sum(b["faults"].values()))
        marks = row.find_all("span", class_="provisional")
        assert len(marks) == (1 if b["provisional"] else 0)
        assert all(m.attrs["title"].startswith("provisional") for m in marks)
    sortable = [th.attrs["data-sort"] for th in page.by_id("leaderboard").find_all("th")
                if "data-sort" in th.attrs]
    assert {"rank", "bot", "elo", "games", "mean_score", "latency", "cpu"} <= set(sortable)


def _chart_table(page: Node, chart: str) -> Node:
    """The chart's data table: the element after the <figure> holding the chart."""
    svg = page.by_id(chart)
    assert svg.tag == "svg"
    figures = [f for f in page.find_all("figure") if any(n is svg for n in f.iter())]
    assert len(figures) == 1 and figures[0].find("figcaption").text().strip()
    parent = next(n for n in page.iter() if any(c is figures[0] for c in n.children))
    siblings = [c for c in parent.children if isinstance(c, Node)]
    box = siblings[next(i for i, c in enumerate(siblings) if c is figures[0]) + 1]
    assert box.tag == "div" and box.attrs["class"] == "scroll"  # it scrolls, not the page
    (table,) = [c for c in box.children if isinstance(c, Node)]
    assert table.tag == "table" and table.attrs["class"] == "chart-data"
    assert table.attrs["data-chart"] == chart
    return table


def _values(row: Node) -> list[float | None]:
    return [None if td.attrs["data-value"] == "" else float(td.attrs["data-value"])
            for td in row.find_all("td") if "data-value" in td.attrs]


def test_chart_data_tables_hold_the_leaderboard_numbers(built: Built) -> None:
    page = built.pages[built.site / "index.html"]
    board = built.board
    bots = board["bots"]
    charts = page.by_id("charts")
    assert [s.attrs["id"] for s in charts.find_all("svg") if s.attrs.get("class") == "chart"
            ] == ["chart-ratings", "chart-history", "chart-h2h"] + (
                ["chart-bids"] if board["game"] == "wizard" else [])

    rows = _chart_table(page, "chart-ratings").rows()
    assert [r.find("th").text() for r in rows] == [b["name"] for b in bots]
    assert [_values(r) for r in rows] == [[b["elo"], b["elo_low"], b["elo_high"]] for b in bots]

    rows = _chart_table(page, "chart-history").rows()
    history = board["elo_history"]
    assert [_values(r) for r in rows] == [
        [len(history[b["name"]]), b["elo_incremental"], min(history[b["name"]]),
         max(history[b["name"]])] for b in bots]
    assert all(len(history[b["name"]]) == b["games"] for b in bots)

    table = _chart_table(page, "chart-h2h")
    cells = {(td.attrs["data-a"], td.attrs["data-b"]): float(td.attrs["data-value"])
             for td in table.find_all("td") if "data-a" in td.attrs}
    assert cells == {(p["a"], p["b"]): p["score"] for p in board["head_to_head"]}

    if board["game"] == "wizard":
        rows = _chart_table(page, "chart-bids").rows()
        hands = [th.text() for th in _chart_table(page, "chart-bids").find("thead")
                 .find_all("th")][1:]
        assert hands == [str(h) for h in range(1, 16)]
        assert [_values(r) for r in rows] == [
            [b["bid_accuracy_by_hand"].get(h) for h in hands] for b in bots]


# -- bots and games -----------------------------------------------------------------------


def test_bot_pages_list_opponents_and_faults(built: Built) -> None:
    faults: dict[str, list[tuple[str, int, int | None]]] = {}
    for game_id, record in built.records.items():
        for f in record["faults"]:
            faults.setdefault(record["seats"][f["seat"]], []).append(
                (game_id, f["round"], f["trick"]))
    for b in built.board["bots"]:
        page = built.pages[built.site / "bots" / f"{slug(b['name'])}.html"]
        versus = [r.attrs["data-bot"] for r in page.by_id("vs").rows()]
        assert versus == [p["b"] for p in built.board["head_to_head"] if p["a"] == b["name"]]
        listed = []
        for row in page.by_id("faults").rows():
            link = row.find("a").attrs["href"]
            assert link == f"../{game_path(row.attrs['data-game-id'])}"
            cells = [td.text() for td in row.find_all("td")]
            listed.append((row.attrs["data-game-id"], int(cells[2]),
                           None if cells[3] == "–" else int(cells[3])))
        assert listed == faults.get(b["name"], [])
        assert len(listed) == sum(b["faults"].values())
    if built.board["game"] == "trumps":
        assert len(faults.get("illegal", [])) > 0 and set(faults) == {"illegal"}


def test_games_list_has_a_row_per_game(built: Built) -> None:
    page = built.pages[built.site / "games.html"]
    rows = page.by_id("games").rows()
    assert [r.attrs["data-game-id"] for r in rows] == list(built.records)
    for row in rows:
        record = built.records[row.attrs["data-game-id"]]
        table, deal, _ = row.attrs["data-game-id"].split("-")
        assert row.attrs["data-table"] == table == record["table_id"]
        assert row.attrs["data-deal"] == deal.removeprefix("d")
        assert row.attrs["data-bots"] == ",".join(record["seats"])
        assert row.find("a").attrs["href"] == game_path(record["game_id"])
    bots = [o.attrs["value"] for o in page.by_id("filter-bot").find_all("option")]
    assert bots == ["", *(b["name"] for b in built.board["bots"])]
    assert [o.attrs["value"] for o in page.by_id("filter-table").find_all("option")] == [
        "", *sorted({r.attrs["data-table"] for r in rows})]
    assert [o.attrs["value"] for o in page.by_id("filter-deal").find_all("option")] == ["", "0"]


def test_tournament_page_states_seed_and_commitment(wizard: Built) -> None:
    text = (wizard.site / "tournament.html").read_text(encoding="utf-8")
    seed, commitment = wizard.board["seed"], wizard.board["seed_commitment"]
    assert seed == 4242 and commitment in text
    command = ("python3 -c &quot;import hashlib; print(hashlib.sha256(b&#x27;4242&#x27;)"
               ".hexdigest())&quot;")
    assert command in text
    assert "arena verify" in text and 'href="data/games.jsonl.gz"' in text


# -- CPU time, sandbox and isolation ------------------------------------------------------

SHARED_LINE = ("isolation: shared — bot processes may play several games at once and see a "
               "deal more than once; trusted bots only")
UNMEASURED = "random"
"""The bot whose CPU time is never measured in :func:`restore`."""


def restore(wizard: Built, tmp: Path, isolation: str | None, trusted: set[str],
            insecure: frozenset[str] = frozenset()) -> Built:
    """The Wizard tournament copied game by game into a new store through the Store API,
    with a CPU time per decision for every bot but UNMEASURED, the bots in ``trusted``
    registered as unsandboxed and the store's ``isolation`` as given (None: not said, as
    in a store from before the setting); then published."""
    folder = tmp / "out"
    rng = random.Random(8)
    with Store.open(wizard.folder) as old, Store.open(folder) as new:
        meta = {k: v for k, v in old.meta().items() if k != "isolation"}
        if isolation is not None:
            meta["isolation"] = isolation
        new.set_meta(meta)
        for b in old.bots():
            new.set_bot(b["name"], b["spec"], b["version"] or "", b["author"] or "",
                        b["protocol_version"], b["games"], sandboxed=b["name"] not in trusted,
                        isolation=isolation or "", insecure=b["name"] in insecure)
        for g in old.iter_games():
            sg = ScheduledGame(g.seq, g.table_no, g.deal_no, g.rotation, g.deal_seed, g.bots)
            cpu = [[None if name == UNMEASURED else round(rng.uniform(0.05, 30), 3)
                    for _ in ms] for name, ms in zip(g.bots, g.latencies_ms, strict=True)]
            new.game_started(sg)
            new.game_finished(sg, {**g.record, "timing": {
                "wall_ms": [list(ms) for ms in g.latencies_ms], "cpu_ms": cpu}})
    site = tmp / "site"
    assert main(["publish", str(folder), "--out", str(site), "--resamples", "50"]) == 0
    board = json.loads((site / "data" / "leaderboard.json").read_text(encoding="utf-8"))
    return Built(folder, site, board, wizard.records,
                 {p: parse(p) for p in sorted(site.rglob("*.html"))})


def _stats(page: Node) -> dict[str, str]:
    return {r.find("th").text(): r.find("td").text() for r in page.by_id("stats").rows()}


def test_cpu_time_and_unsandboxed_bots_are_shown(wizard: Built, tmp_path: Path) -> None:
    built = restore(wizard, tmp_path, None, {ODD})
    bots = built.board["bots"]
    assert built.board["isolation"] == "shared"
    assert {b["name"]: b["sandboxed"] for b in bots} == {b["name"]: b["name"] != ODD
                                                         for b in bots}
    assert [b["cpu_ms"] is None for b in bots] == [b["name"] == UNMEASURED for b in bots]

    index = built.pages[built.site / "index.html"]
    board = index.by_id("leaderboard")
    heads = {th.attrs["data-sort"]: th for th in board.find_all("th") if "data-sort" in th.attrs}
    assert heads["cpu"].text() == "CPU ms" and "median / 95th" in heads["cpu"].attrs["title"]
    for row, b in zip(board.rows(), bots, strict=True):
        cells = {td.attrs["data-col"]: td for td in row.find_all("td")}
        cpu = cells["cpu"]
        if b["cpu_ms"] is None:
            assert cpu.attrs["data-value"] == "" and cpu.text() == "–"
        else:
            assert float(cpu.attrs["data-value"]) == b["cpu_ms"]["p50"]
            assert " / " in cpu.text()
        marks = row.find_all("span", class_="unsandboxed")
        assert len(marks) == (0 if b["sandboxed"] else 1), b["name"]
        assert row.attrs["data-sandboxed"] == ("true" if b["sandboxed"] else "false")
        assert all(m.text() == "no sandbox" and "untrusted mode off" in m.attrs["title"]
                   for m in marks)
    warning = index.by_id("isolation-warning")
    assert SHARED_LINE in " ".join(warning.text().split())
    assert warning.find("a").attrs["href"] == "tournament.html#isolation"

    for b in bots:
        page = built.pages[built.site / "bots" / f"{slug(b['name'])}.html"]
        stats = _stats(page)
        cpu = b["cpu_ms"]
        assert stats["CPU time per decision"] == (
            "not measured" if cpu is None else
            f"p50 {_ms(cpu['p50'])} ms, p95 {_ms(cpu['p95'])} ms, max {_ms(cpu['max'])} ms")
        h1 = page.find("h1")
        assert len(h1.find_all("span", class_="unsandboxed")) == (0 if b["sandboxed"] else 1)
        assert stats["Sandbox"] == BUILTIN_SANDBOX if b["sandboxed"] else (
            stats["Sandbox"].startswith("no sandbox") and "untrusted mode off" in stats["Sandbox"])
        assert stats["Isolation"] == "shared"

    path = built.site / "tournament.html"
    statement = built.pages[path]
    assert statement.by_id("isolation-mode").text() == "shared"
    section = next(s for s in statement.find_all("section")
                   if s.attrs.get("aria-labelledby") == "isolation")
    text = " ".join(section.text().split())
    assert "trusted bots only" in text and f"{ODD}: not confined in it" in text
    rows = {r.attrs["data-bot"]: r for r in statement.by_id("bots").rows()}
    assert [n for n, r in rows.items() if r.find_all("span", class_="unsandboxed")] == [ODD]
    assert ODD not in path.read_text(encoding="utf-8")  # escaped wherever it is shown
    assert ODD not in (built.site / "index.html").read_text(encoding="utf-8")


def test_the_site_says_when_the_games_were_played_and_when_it_was_published(
        wizard: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store.open(wizard.folder) as store:
        games = list(store.iter_games())
    first, last = min(g.started_at for g in games), max(g.ended_at for g in games)
    epoch = 1767225600  # 2026-01-01 00:00:00 UTC
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(epoch))  # a reproducible build's time
    site = tmp_path / "site"
    assert main(["publish", str(wizard.folder), "--out", str(site), "--resamples", "50"]) == 0

    def stamp(t: float) -> str:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    index = parse(site / "index.html")
    dates = index.by_id("dates")
    times = [t.attrs["datetime"] for t in dates.find_all("time")]
    assert times == [stamp(first), stamp(last), "2026-01-01T00:00:00Z"], times
    text = " ".join(dates.text().split())
    assert text.startswith("Games played ") and text.endswith(
        " · published 2026-01-01 00:00 UTC"), text
    for path in (site / "index.html", site / "games.html",
                 next((site / "games").glob("*/*.html"))):
        footer = parse(path).find("footer")
        assert [t.attrs["datetime"] for t in footer.find_all("time")] == [
            "2026-01-01T00:00:00Z"], path
    facts = parse(site / "tournament.html")
    played = [t.attrs["datetime"] for t in facts.find_all("time")]
    assert played[:3] == [stamp(first), stamp(last), "2026-01-01T00:00:00Z"]
    # the leaderboard's data has no time in it: the same games give the same file
    assert (site / "data" / "leaderboard.json").read_bytes() == (
        wizard.site / "data" / "leaderboard.json").read_bytes()


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.0f}"


def test_insecure_bots_are_marked_on_the_site(wizard: Built, tmp_path: Path) -> None:
    built = restore(wizard, tmp_path, "deal", {ODD}, frozenset({ODD}))
    bots = built.board["bots"]
    assert {b["name"]: b["insecure"] for b in bots} == {b["name"]: b["name"] == ODD
                                                        for b in bots}
    index = built.pages[built.site / "index.html"]
    for row, b in zip(index.by_id("leaderboard").rows(), bots, strict=True):
        marks = row.find_all("span", class_="insecure")
        assert len(marks) == (1 if b["insecure"] else 0), b["name"]
        assert row.attrs["data-insecure"] == ("true" if b["insecure"] else "false")
        assert all(m.text() == "insecure" and "plain grpc://" in m.attrs["title"]
                   for m in marks)
    assert "insecure: reached by plain grpc://" in " ".join(index.text().split())
    for b in bots:
        page = built.pages[built.site / "bots" / f"{slug(b['name'])}.html"]
        assert len(page.find("h1").find_all("span", class_="insecure")) == int(b["insecure"])
        stats = _stats(page)
        assert ("Connection" in stats) == b["insecure"]
    statement = built.pages[built.site / "tournament.html"]
    rows = {r.attrs["data-bot"]: r for r in statement.by_id("bots").rows()}
    assert [n for n, r in rows.items() if r.find_all("span", class_="insecure")] == [ODD]


@pytest.mark.parametrize("isolation", ["game", "deal"])
def test_isolated_sandboxed_tournament_has_no_warning(wizard: Built, tmp_path: Path,
                                                      isolation: str) -> None:
    built = restore(wizard, tmp_path, isolation, set())
    assert built.board["isolation"] == isolation
    index = built.pages[built.site / "index.html"]
    assert not [n for n in index.iter() if n.attrs.get("id") == "isolation-warning"]
    assert not index.find_all("span", class_="unsandboxed")
    statement = built.pages[built.site / "tournament.html"]
    assert statement.by_id("isolation-mode").text() == isolation
    section = next(s for s in statement.find_all("section")
                   if s.attrs.get("aria-labelledby") == "isolation")
    text = " ".join(section.text().split())
    assert "no bot ran without it" in text and "trusted bots only" not in text
    for b in built.board["bots"]:
        page = built.pages[built.site / "bots" / f"{slug(b['name'])}.html"]
        assert _stats(page)["Sandbox"] == BUILTIN_SANDBOX  # the field is built-in bots
        assert _stats(page)["Isolation"] == isolation


# -- the command line -------------------------------------------------------------------


def test_usage_mistakes_are_one_line_and_exit_2(wizard: Built, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def run(*args: str) -> str:
        assert main(["publish", *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        return err

    assert run(str(tmp_path / "nowhere"), "--out", str(tmp_path / "s")) == (
        f"{tmp_path / 'nowhere'}: no tournament here\n")
    assert run(str(tmp_path), "--out", str(tmp_path / "s")) == f"{tmp_path}: no tournament here\n"
    assert "must not hold the tournament" in run(str(wizard.folder), "--out",
                                                 str(wizard.folder))
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert "not an earlier trick-arena site" in run(str(wizard.folder), "--out", str(other))
    assert (other / "notes.txt").read_text() == "mine"
    assert main(["serve", str(other), "--port", "0"]) == 2
    assert "no site here" in capsys.readouterr().err


def test_publishing_again_replaces_the_old_site(wizard: Built, tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert main(["publish", str(wizard.folder), "--out", str(site), "--resamples", "50"]) == 0
    stale = site / game_path("t9-d9-r9")
    stale.parent.mkdir(exist_ok=True)
    stale.write_text("an old game")
    flat = site / "games" / "t9-d9-r8.html"  # as sites were laid out before game folders
    flat.write_text("an older game")
    (site / "data" / "games.jsonl").write_text("{}\n")
    assert main(["publish", str(wizard.folder), "--out", str(site), "--resamples", "50"]) == 0
    assert not stale.exists() and not flat.exists()
    assert not (site / "data" / "games.jsonl").exists()
    assert sorted(p.stem for p in (site / "games").glob("*/*.html")) == sorted(wizard.records)
    assert [p.name for p in tmp_path.iterdir()] == ["site"], "no temporary folder left"
    assert (site / "data" / "leaderboard.json").read_text(encoding="utf-8") == (
        wizard.site / "data" / "leaderboard.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_answers_on_loopback_and_stops_on_a_signal(wizard: Built,
                                                         sig: signal.Signals) -> None:
    server = start_server(wizard.site)
    try:
        url = server.url
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url), url
        with urlopen(url + "index.html", timeout=10) as r:
            assert r.status == 200 and r.headers.get_content_type() == "text/html"
            assert r.read() == (wizard.site / "index.html").read_bytes()
        with urlopen(url + "assets/replay.js", timeout=10) as r:
            assert r.headers.get_content_type() == "text/javascript"
        port = int(url.rsplit(":", 1)[1].strip("/"))
        assert listening_on(port) == ["0100007F"], "not on 127.0.0.1 alone"
    finally:
        code, out, err = stop_server(server, sig)
    assert code == 0, err
    assert "Traceback" not in err and "stopped" in out


def test_serve_stops_on_sigint_even_when_started_with_sigint_ignored(wizard: Built) -> None:
    # as from a shell's background job: SIGINT is inherited as ignored
    server = start_server(wizard.site, ("sh", "-c", 'trap "" INT; exec "$@"', "sh"))
    with urlopen(server.url + "index.html", timeout=10) as r:
        assert r.status == 200
    code, out, err = stop_server(server, signal.SIGINT)
    assert code == 0, err
    assert "Traceback" not in err and "stopped" in out


def test_serve_stops_on_a_signal_that_lands_while_it_answers_a_request(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic: SIGTERM arrives while the server reads a file for a request (in its
    worker thread; the main thread only waits for the signal). The server stops; it must
    not serve a second request (the background thread stops it with a second SIGTERM if
    it does, and the test fails)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<!doctype html><title>t</title>")
    original = serve_module.site_answer
    signalled: list[bool] = []

    def site_answer(root: Path, path: str) -> Any:
        if not signalled:
            signalled.append(True)
            os.kill(os.getpid(), signal.SIGTERM)
        return original(root, path)

    monkeypatch.setattr(serve_module, "site_answer", site_answer)
    served_again: list[bool] = []

    def client(url: str) -> None:
        port = int(url.rsplit(":", 1)[1].strip("/"))

        def ask() -> bool:
            # a plain socket, closed here whatever happens (urlopen's socket, on a
            # connection the server drops, is left to the garbage collector, which may
            # report it unclosed in a later test)
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                    s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\n"
                              b"Connection: close\r\n\r\n")
                    return s.recv(64).startswith(b"HTTP/1.1 200")
            except OSError:
                return False
        ask()  # the request during which the signal lands
        if ask():  # still serving: the signal was swallowed
            served_again.append(True)
            os.kill(os.getpid(), signal.SIGTERM)

    def ready(url: str) -> None:
        threading.Thread(target=client, args=(url,), daemon=True).start()

    serve_module.serve(site, 0, ready)
    assert signalled and not served_again


def test_serve_answers_nothing_outside_its_site(tmp_path: Path) -> None:
    """A path with ``..``, a link that leads out, a missing file: 404; a folder without
    its ``/``: a redirect; a folder: its index.html."""
    site = tmp_path / "site"
    (site / "games").mkdir(parents=True)
    (site / "games" / "index.html").write_text("games")
    (tmp_path / "secret.txt").write_text("secret")
    (site / "out").symlink_to(tmp_path / "secret.txt")
    answer = serve_module.site_answer
    assert answer(site, "/../secret.txt").status == 404
    assert answer(site, "/games/../../secret.txt").status == 404
    assert answer(site, "/out").status == 404
    assert answer(site, "/missing.html").status == 404
    moved = answer(site, "/games")
    assert moved.status == 301 and dict(moved.headers)["Location"] == "/games/"
    found = answer(site, "/games/")
    assert found.status == 200 and found.body == b"games"
    assert found.content_type.startswith("text/html")


def test_serve_is_quiet_when_a_client_drops_its_connection(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<!doctype html><title>t</title>")
    (site / "big.bin").write_bytes(b"x" * (8 << 20))
    server = start_server(site)
    url = server.url
    port = int(url.rsplit(":", 1)[1].strip("/"))
    try:
        for _ in range(3):  # ask for 8 MiB and reset the connection before reading it
            with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
                client.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
                assert client.recv(64).startswith(b"HTTP/1.1 200")
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with urlopen(url + "big.bin", timeout=10) as r:  # still serving
            assert len(r.read()) == 8 << 20
    finally:
        code, _, err = stop_server(server, signal.SIGTERM)
    assert code == 0, err
    assert "Traceback" not in err and "Error" not in err, err


# -- small parts ----------------------------------------------------------------------------


def test_slugs_are_unique_file_names() -> None:
    slugs = Slugs(["a b", "a_b", "A_b", "ok-1.0"])
    names = [slugs["a b"], slugs["a_b"], slugs["A_b"], slugs["ok-1.0"]]
    assert names[3] == "ok-1.0" and slug("x/../y z") == "x_.._y_z"
    assert len({n.lower() for n in names}) == 4
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", n) for n in names)


@pytest.mark.parametrize(("lo", "hi"), [(0, 1), (1093.2, 2361.7), (-5, 5), (3, 3), (0, 100)])
def test_ticks_are_round_and_cover_the_range(lo: float, hi: float) -> None:
    ticks = nice_ticks(lo, hi)
    assert ticks[0] <= lo and ticks[-1] >= hi and 2 <= len(ticks) <= 12
    steps = {round(b - a, 9) for a, b in itertools.pairwise(ticks)}
    assert len(steps) == 1
    step = steps.pop()
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 6) in (1, 2, 2.5, 5)


def _repeated(wizard: Built, folder: Path, copies: int) -> Path:
    """The Wizard tournament's games ``copies`` times over (as further deals) in a store."""
    with Store.open(wizard.folder) as old, Store.open(folder) as new:
        new.set_meta(old.meta())
        for b in old.bots():
            new.set_bot(b["name"], b["spec"], b["version"] or "", b["author"] or "",
                        b["protocol_version"], b["games"], sandboxed=b["sandboxed"],
                        isolation=b["isolation"] or "")
        games = list(old.iter_games())
        for copy in range(copies):
            for g in games:
                sg = ScheduledGame(copy * len(games) + g.seq, g.table_no,
                                   copy * 100 + g.deal_no, g.rotation, g.deal_seed, g.bots)
                new.game_started(sg)
                new.game_finished(sg, dict(g.record, game_id=sg.id))  # its timing too
    return folder


def _publish_calls(folder: Path, site: Path) -> int:
    """The function calls (Python and built-in) one ``arena publish`` of ``folder`` makes:
    a measure of its work that, unlike a clock, does not depend on the machine's load."""
    profile = cProfile.Profile()
    profile.enable()
    code = main(["publish", str(folder), "--out", str(site), "--resamples", "10"])
    profile.disable()
    assert code == 0
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def test_publish_work_grows_linearly(wizard: Built, tmp_path: Path) -> None:
    """Publishing is one pass: each further game costs the same work. Counted in function
    calls, not timed, so a busy machine cannot fail it: with n, 2n and 4n games the second
    2n games cost twice what the first n more did (a quadratic step would cost 4 times)."""
    calls = [_publish_calls(_repeated(wizard, tmp_path / f"x{k}", k), tmp_path / f"s{k}")
             for k in (1, 2, 4)]
    assert len(list((tmp_path / "s4" / "games").glob("*/*.html"))) == 4 * len(wizard.records)
    growth = (calls[2] - calls[1]) / (calls[1] - calls[0])
    assert 1.95 < growth < 2.05, calls
    size = sum(p.stat().st_size for p in (tmp_path / "s1").rglob("*") if p.is_file())
    assert size < 2_000_000

