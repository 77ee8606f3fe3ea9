"""The published site in a real browser: Debian's Chromium, driven by Playwright.

The site of a small real tournament (see ``test_site_html.build_site``) is built once
per test run, shared with ``test_site_html.py``, and opened both from ``file://`` and
from ``arena serve``. The tests click and press keys as a person would and compare what
the pages show with the data the site was built from: the leaderboard's order and
sorting, the games list's filters, the replay viewer stepping through rounds (trick
winners, hands, tricks won, totals), and on every page no console error and no request
leaving the machine. Screenshots go to ``test-artifacts/``.

Playwright's own browser download does not work everywhere, so the tests drive the
system's Chromium (Debian package ``chromium``) and skip, saying why, where there is
none or Playwright is not installed.
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import urlopen

import pytest
from conftest import (
    REPO,
    Watch,
    listening_on,
    open_page,
    start_server,
    state,
    stop_server,
)
from test_site_html import BOTS, Site, game_rel, shared_site, slug

from arena.rules.cards import card_symbol, parse_card

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    return shared_site(tmp_path_factory)


# -- the leaderboard --------------------------------------------------------------------

ROWS = "table#leaderboard > tbody > tr[data-bot]"


def row_order(page: Page) -> list[str]:
    return [str(n) for n in page.eval_on_selector_all(ROWS, "rs => rs.map(r => r.dataset.bot)")]


def sort_headers(page: Page) -> dict[str, str]:
    """data-col of the column under each sortable header -> the header's data-sort key."""
    pairs = page.evaluate("""() => {
        const table = document.getElementById('leaderboard');
        const heads = [...table.querySelectorAll('thead th')];
        const row = table.querySelector('tbody tr');
        const out = [];
        heads.forEach((th, i) => {
            if (!th.dataset.sort) return;
            const cell = row.children[i];
            out.push([cell ? cell.dataset.col || '' : '', th.dataset.sort]);
        });
        return out;
    }""")
    return {str(col): str(key) for col, key in pairs}


def click_sort(page: Page, key: str) -> list[str]:
    before = row_order(page)
    page.click(f'#leaderboard th[data-sort="{key}"]')
    # sorting is synchronous in any sane site.js; still, let a re-render land
    page.wait_for_function(
        """([sel, before]) => {
            const now = [...document.querySelectorAll(sel)].map(r => r.dataset.bot);
            return now.length === before.length;
        }""", arg=[ROWS, before])
    return row_order(page)


def monotonic(values: list[Any]) -> bool:
    pairs = list(itertools.pairwise(values))
    return all(a <= b for a, b in pairs) or all(a >= b for a, b in pairs)


def test_leaderboard_rows_and_sorting(site: Site, context: tuple[BrowserContext, Watch]
                                      ) -> None:
    ctx, _ = context
    page = open_page(ctx, (site.root / "index.html").as_uri())
    page.wait_for_selector(ROWS)
    bots = site.leaderboard["bots"]
    rating_order = [b["name"] for b in bots]
    assert row_order(page) == rating_order, "rows on load are not in rating order"
    assert sorted(rating_order) == sorted(name for name, _ in BOTS)

    cells = page.evaluate("""sel => [...document.querySelectorAll(sel)].map(r => {
        const c = {};
        for (const td of r.querySelectorAll('[data-col]')) c[td.dataset.col] = td;
        const link = c.bot && c.bot.querySelector('a[href]');
        const prov = r.querySelector('span.provisional');
        return {rank: r.dataset.rank, cols: Object.keys(c), rankText: c.rank && c.rank.textContent,
                name: c.bot && c.bot.textContent, href: link && link.getAttribute('href'),
                games: c.games && c.games.textContent,
                eloSvg: c.elo ? c.elo.querySelectorAll('svg').length : 0,
                provisional: prov ? [prov.textContent.trim(), prov.getAttribute('title')] : null};
    })""", ROWS)
    for entry, row in zip(bots, cells, strict=True):
        where = f"row of {entry['name']}"
        assert row["rank"] == str(entry["rank"]), where
        assert set(row["cols"]) >= {"rank", "bot", "elo", "games", "mean_score",
                                    "bid_accuracy", "faults"}, where
        assert str(entry["rank"]) in row["rankText"], where
        assert entry["name"] in row["name"], where
        assert row["href"] == f"bots/{slug(entry['name'])}.html", where
        assert row["games"].strip() == str(entry["games"]), where
        assert row["eloSvg"] == 1, f"{where}: no SVG error bar in the elo cell"
        if entry["provisional"]:
            assert row["provisional"] is not None, f"{where}: no provisional mark"
            assert row["provisional"][0] == "?"
            assert (row["provisional"][1] or "").startswith("provisional"), where
        else:
            assert row["provisional"] is None, f"{where}: marked provisional"

    keys = sort_headers(page)
    for col in ("bot", "mean_score", "games", "rank"):
        assert col in keys, f"column {col} is not sortable (sortable: {keys})"
    by_name = {b["name"]: b for b in bots}

    def check_rows_whole() -> None:
        """Sorting moves whole rows: each row's bot cell still names its data-bot."""
        pairs = page.eval_on_selector_all(ROWS, """rs => rs.map(r => [r.dataset.bot,
            r.querySelector('[data-col=bot]').textContent])""")
        assert all(bot in text for bot, text in pairs), pairs

    names = click_sort(page, keys["bot"])
    assert sorted(names) == sorted(rating_order)
    assert monotonic([n.lower() for n in names]), f"not sorted by name: {names}"
    check_rows_whole()
    again = click_sort(page, keys["bot"])
    assert monotonic([n.lower() for n in again]) and sorted(again) == sorted(names)

    scores = click_sort(page, keys["mean_score"])
    assert monotonic([by_name[n]["mean_score"] for n in scores]), (
        f"not sorted by mean score: {[(n, by_name[n]['mean_score']) for n in scores]}")
    check_rows_whole()
    games = click_sort(page, keys["games"])
    assert monotonic([by_name[n]["games"] for n in games])

    restored = click_sort(page, keys["rank"])
    if restored != rating_order:  # a first click may sort descending
        assert restored == rating_order[::-1], f"clicking rank gave {restored}"
        restored = click_sort(page, keys["rank"])
    assert restored == rating_order
    check_rows_whole()

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "leaderboard.png"
    page.screenshot(path=str(shot), full_page=True)
    check_png(shot)


LAYOUT_JS = """() => {
    const box = document.getElementById('leaderboard-box');
    const table = document.getElementById('leaderboard');
    const hint = document.getElementById('leaderboard-more');
    const shown = [...document.querySelectorAll('svg.chart, svg.chart-compact')]
        .filter(s => s.getBoundingClientRect().width > 0);
    return {page: document.documentElement.scrollWidth, view: window.innerWidth,
            table: table.scrollWidth, box: box.clientWidth,
            overflows: box.classList.contains('overflows'),
            atEnd: box.classList.contains('at-end'), hint: !hint.hidden,
            charts: shown.map(s => [s.id, s.getBoundingClientRect().left,
                                    s.getBoundingClientRect().right])};
}"""


def test_the_ranking_fits_a_1400_px_window_or_scrolls_visibly_in_its_box(
        site: Site, context: tuple[BrowserContext, Watch]) -> None:
    ctx, _ = context
    page = open_page(ctx, (site.root / "index.html").as_uri())
    page.set_viewport_size({"width": 1400, "height": 900})
    page.wait_for_timeout(50)  # the resize handler has run
    wide = page.evaluate(LAYOUT_JS)
    assert wide["page"] <= wide["view"]
    assert wide["table"] <= wide["box"], wide  # all twelve columns, no scrolling
    assert not wide["overflows"] and not wide["hint"]
    # in a narrower window the table scrolls in its own box, and the page says so
    page.set_viewport_size({"width": 760, "height": 900})
    page.wait_for_function("() => document.getElementById('leaderboard-box')"
                           ".classList.contains('overflows')")
    narrow = page.evaluate(LAYOUT_JS)
    assert narrow["page"] <= narrow["view"], narrow  # the page itself does not scroll
    assert narrow["table"] > narrow["box"] and narrow["hint"] and not narrow["atEnd"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "site-ranking-760.png"))
    page.evaluate("() => { const b = document.getElementById('leaderboard-box');"
                  " b.scrollLeft = b.scrollWidth; }")
    page.wait_for_function("() => document.getElementById('leaderboard-box')"
                           ".classList.contains('at-end')")
    last = page.evaluate("""() => {
        const box = document.getElementById('leaderboard-box').getBoundingClientRect();
        const cell = document.querySelector('#leaderboard td[data-col="cpu"]')
            .getBoundingClientRect();
        return [cell.right <= box.right + 1, cell.left >= box.left - 1];
    }""")
    assert last == [True, True]  # scrolled, the last column shows


def test_the_charts_scale_on_a_phone(site: Site, context: tuple[BrowserContext, Watch]
                                     ) -> None:
    ctx, _ = context
    page = open_page(ctx, (site.root / "index.html").as_uri())
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(50)
    phone = page.evaluate(LAYOUT_JS)
    assert phone["page"] <= phone["view"] == 390, phone  # no sideways scrolling
    ids = [chart_id for chart_id, _, _ in phone["charts"]]
    assert ids == ["chart-ratings-compact", "chart-history-compact", "chart-h2h-compact",
                   "chart-bids-compact"], ids
    for chart_id, left, right in phone["charts"]:
        assert left >= 0 and right <= 390, (chart_id, left, right)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "site-index-phone.png"), full_page=True)
    bot = open_page(ctx, (site.root / "bots" / f"{slug(BOTS[0][0])}.html").as_uri())
    bot.set_viewport_size({"width": 390, "height": 844})
    bot.wait_for_timeout(50)
    box = bot.evaluate("""() => [document.documentElement.scrollWidth,
        document.getElementById('chart-bot-history-compact').getBoundingClientRect().right]""")
    assert box[0] <= 390 and box[1] <= 390, box
    # on a desktop the wide charts show, not the compact ones
    page.set_viewport_size({"width": 1280, "height": 900})
    page.wait_for_timeout(50)
    assert [c[0] for c in page.evaluate(LAYOUT_JS)["charts"]] == [
        "chart-ratings", "chart-history", "chart-h2h", "chart-bids"]


def test_leaderboard_and_charts_without_javascript(browser: Browser, site: Site) -> None:
    """The table and the four charts are in the HTML as built: no script needed."""
    ctx = browser.new_context(java_script_enabled=False)
    try:
        page = open_page(ctx, (site.root / "index.html").as_uri())
        assert row_order(page) == [b["name"] for b in site.leaderboard["bots"]]
        n = len(site.leaderboard["bots"])
        for chart in ("chart-ratings", "chart-history", "chart-h2h", "chart-bids"):
            info = page.evaluate("""id => {
                const el = document.getElementById(id);
                if (!el) return null;
                const svg = el.tagName.toLowerCase() === 'svg' ? el : el.querySelector('svg');
                const fig = el.closest('figure');
                const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
                let table = fig && fig.querySelector('table.chart-data');
                if (!table && fig) {  // next to the figure, in a box that scrolls
                    const next = fig.nextElementSibling;
                    if (next && next.matches('table.chart-data')) table = next;
                    else if (next && next.matches('div.scroll'))
                        table = next.querySelector(':scope > table.chart-data');
                }
                return {svg: !!svg, w: box.width, h: box.height,
                        inCharts: !!el.closest('#charts'),
                        caption: fig && fig.querySelector('figcaption')
                                 ? fig.querySelector('figcaption').textContent.trim() : '',
                        shapes: svg ? svg.querySelectorAll(
                            'rect,line,circle,path,polyline,polygon,ellipse').length : 0,
                        rows: table ? table.querySelectorAll('tr').length : -1};
            }""", chart)
            assert info is not None, f"no #{chart}"
            assert info["svg"] and info["inCharts"], f"#{chart}: no inline SVG in #charts"
            assert info["w"] > 50 and info["h"] > 50, f"#{chart}: drawn {info['w']}x{info['h']}"
            assert info["caption"], f"#{chart}: no <figcaption>"
            assert info["shapes"] >= n, f"#{chart}: {info['shapes']} shapes for {n} bots"
            assert info["rows"] > 1, f"#{chart}: no table.chart-data with its numbers"
    finally:
        ctx.close()


# -- the replay viewer ------------------------------------------------------------------


def number(text: str) -> int:
    return int(text.replace("\u2212", "-").replace("+", "").strip())


def by_seat(cells: dict[str, str], n: int) -> list[int]:
    assert sorted(cells) == [str(s) for s in range(n)], f"cells by seat: {cells}"
    return [number(cells[str(s)]) for s in range(n)]


def press(page: Page, key: str) -> dict[str, Any]:
    """Press ``key`` on the replay and wait for data-step to change; the new state."""
    before = page.get_attribute("#replay", "data-step")
    page.keyboard.press(key)
    page.wait_for_function("s => document.getElementById('replay').dataset.step !== s",
                           arg=before)
    return state(page)


def step_until(page: Page, done: Callable[[dict[str, Any]], bool], on_step: Callable[
        [dict[str, Any], dict[str, Any]], None] | None = None, limit: int = 400,
               ) -> dict[str, Any]:
    now = state(page)
    for _ in range(limit):
        if done(now):
            return now
        prev, now = now, press(page, "ArrowRight")
        assert now["step"] == prev["step"] + 1, (prev["step"], now["step"])
        if on_step:
            on_step(prev, now)
    pytest.fail(f"no state reached in {limit} steps; last {now}")


FACES_JS = """() => [...document.querySelectorAll('div.hand[data-seat] span.card')].map(c => [
    c.dataset.card, c.textContent.trim(), getComputedStyle(c).color])"""


def check_card_faces(page: Page) -> None:
    """Cards in hand show their symbols (7♥, Q♠, Wizard, Jester), red suits in red."""
    faces = page.evaluate(FACES_JS)
    assert faces, "no cards in hand"
    for card, text, colour in faces:
        assert text == card_symbol(parse_card(card)), (card, text)
        red, green, blue = (int(x) for x in re.findall(r"\d+", colour)[:3])
        is_red = red >= 140 and red - max(green, blue) >= 60
        if card[0] in "DH":
            assert is_red, f"{card} is drawn in {colour}"
        elif card[0] in "CS":
            assert not is_red, f"{card} is drawn in {colour}"


def played_by(rnd: dict[str, Any], tricks: int, n: int) -> list[list[str]]:
    """The cards each seat played in the first ``tricks`` tricks of a round."""
    out: list[list[str]] = [[] for _ in range(n)]
    for trick in rnd["tricks"][:tricks]:
        for i, card in enumerate(trick["cards"]):
            out[(trick["leader"] + i) % n].append(card)
    return out


def test_replay_steps_through_three_rounds(site: Site, context: tuple[BrowserContext, Watch]
                                           ) -> None:
    ctx, _ = context
    record = site.records[0]
    n = len(record["seats"])
    page = open_page(ctx, site.game_page(record).as_uri())
    page.wait_for_selector("div#replay[data-step]")
    assert page.locator("button#prev").count() == 1 and page.locator("button#next").count() == 1
    assert page.locator("div#trick").count() == 1
    # parsed here, not with JSON.parse: 64-bit seeds do not survive a JavaScript number
    embedded = json.loads(page.text_content('script#record[type="application/json"]') or "null")
    assert embedded == record, "the embedded record differs from data/games.jsonl.gz"

    first = state(page)
    assert first["round"] == 1 and first["trick"] == 0
    check_card_faces(page)
    assert by_seat(first["totals"], n) == [0] * n
    page.keyboard.press("ArrowLeft")  # at the first step: nowhere to go
    assert state(page) == first

    seen: dict[int, dict[str, Any]] = {first["step"]: first}
    checked: list[tuple[int, int]] = []  # (round, trick) completions checked
    totals = [0] * n

    def on_step(prev: dict[str, Any], now: dict[str, Any]) -> None:
        seen[now["step"]] = now
        rnd = record["rounds"][now["round"] - 1]
        dealt = rnd["hands"]
        held = [now["hands"].get(str(s), []) for s in range(n)]
        assert sorted(now["hands"]) == [str(s) for s in range(n)], now["hands"].keys()
        for s in range(n):
            assert not Counter(held[s]) - Counter(dealt[s]), (now["round"], s, held[s])
        if now["round"] == prev["round"]:
            shrink = [len(prev["hands"][str(s)]) - len(held[s]) for s in range(n)]
            assert all(d >= 0 for d in shrink) and sum(shrink) <= 1, (
                f"step {now['step']}: hands went {shrink} cards down")
            assert now["trick"] in (prev["trick"], prev["trick"] + 1)
        else:
            assert now["round"] == prev["round"] + 1 and now["trick"] == 0
            done = record["rounds"][prev["round"] - 1]
            for s in range(n):
                totals[s] += done["points"][s]
            assert by_seat(now["totals"], n) == totals, (
                f"totals at the start of round {now['round']}")
            assert [sorted(h) for h in held] == [sorted(h) for h in dealt], "dealt hands"
            check_card_faces(page)
        if now["round"] == prev["round"] and now["trick"] == prev["trick"] + 1:
            t = now["trick"]
            winner = rnd["tricks"][t - 1]["winner"]
            assert now["winner"] == winner, f"round {now['round']} trick {t}: #trick-winner"
            assert record["seats"][winner] in (now["winnerName"] or "")
            assert now["log"] == [[str(i + 1), str(x["winner"])]
                                  for i, x in enumerate(rnd["tricks"][:t])], "#tricks-log"
            assert len(now["winningCards"]) == 1, "the winning card is not marked .winner"
            trick = rnd["tricks"][t - 1]
            card = trick["cards"][(winner - trick["leader"]) % n]
            assert now["winningCards"][0] in (None, card)
            played = played_by(rnd, t, n)
            assert [sorted(h) for h in held] == [
                sorted((Counter(dealt[s]) - Counter(played[s])).elements()) for s in range(n)], (
                f"hands after round {now['round']} trick {t}")
            if t == len(rnd["tricks"]):
                assert by_seat(now["won"], n) == rnd["won"], f"won in round {now['round']}"
            checked.append((now["round"], t))

    end = step_until(page, lambda s: s["round"] == 4, on_step)
    assert checked == [(r, t) for r in (1, 2, 3) for t in range(1, r + 1)]
    assert by_seat(end["totals"], n) == [
        sum(record["rounds"][r]["points"][s] for r in range(3)) for s in range(n)]

    # back and forth: the same states again
    now = end
    for _ in range(6):
        now = press(page, "ArrowLeft")
        assert now == seen[now["step"]], f"ArrowLeft to step {now['step']}"
    assert now["step"] == end["step"] - 6
    now = press(page, "ArrowRight")
    assert now == seen[now["step"]]
    page.click("button#next")
    page.wait_for_function(f"document.getElementById('replay').dataset.step === "
                           f"'{now['step'] + 1}'")
    assert state(page) == seen[now["step"] + 1]
    page.click("button#prev")
    page.wait_for_function(f"document.getElementById('replay').dataset.step === "
                           f"'{now['step']}'")
    assert state(page) == now


def test_replay_screenshot_mid_round(site: Site, context: tuple[BrowserContext, Watch]
                                     ) -> None:
    ctx, _ = context
    record = site.records[-1]
    page = open_page(ctx, site.game_page(record).as_uri())
    page.wait_for_selector("div#replay[data-step]")
    mid = step_until(page, lambda s: s["round"] == 3 and s["trick"] == 1)
    held = sum(len(h) for h in mid["hands"].values())
    now = step_until(page, lambda s: sum(len(h) for h in s["hands"].values()) <= held - 2)
    assert now["round"] == 3 and now["trick"] == 1, "two cards into trick 2 of round 3"
    page.wait_for_selector("div#trick .card")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "replay-mid-round.png"
    page.screenshot(path=str(shot), full_page=True)
    check_png(shot)


def check_png(path: Path) -> None:
    """A real picture: a PNG of a sensible size whose pixels are not all alike."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    assert len(data) > 10_000, f"{path}: only {len(data)} bytes"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width >= 800 and height >= 400, f"{path}: {width}x{height}"
    idat, pos = b"", 8
    while pos < len(data):
        size = int.from_bytes(data[pos:pos + 4], "big")
        if data[pos + 4:pos + 8] == b"IDAT":
            idat += data[pos + 8:pos + 8 + size]
        pos += 12 + size
    pixels = zlib.decompress(idat)
    assert len(set(pixels)) > 32, f"{path}: looks blank"


# -- the games list ---------------------------------------------------------------------

VISIBLE_JS = """() => [...document.querySelectorAll('table#games tr[data-game-id]')].map(
    r => [r.dataset.gameId, r.getClientRects().length > 0])"""


def test_games_list_filters(site: Site, context: tuple[BrowserContext, Watch]) -> None:
    ctx, _ = context
    page = open_page(ctx, (site.root / "games.html").as_uri())
    page.wait_for_selector("table#games tr[data-game-id]")
    rows = page.eval_on_selector_all("table#games tr[data-game-id]", """rs => rs.map(r => ({
        id: r.dataset.gameId, table: r.dataset.table, deal: r.dataset.deal,
        bots: r.dataset.bots, href: (r.querySelector('a[href]') || {}).getAttribute
            ? r.querySelector('a[href]').getAttribute('href') : null}))""")
    records = {r["game_id"]: r for r in site.records}
    assert sorted(r["id"] for r in rows) == sorted(records), "one row per game"
    for row in rows:
        record = records[row["id"]]
        assert row["bots"] == ",".join(record["seats"]), row
        assert row["href"] == game_rel(row["id"]), row
        assert re.fullmatch(r"t\d+", row["table"] or ""), row
        assert re.fullmatch(r"\d+", row["deal"] or ""), row
        assert record.get("table_id") in (None, row["table"]), (record.get("table_id"), row)

    def visible() -> dict[str, bool]:
        return {str(i): bool(v) for i, v in page.evaluate(VISIBLE_JS)}

    def options(select: str) -> list[str]:
        return [str(v) for v in page.eval_on_selector_all(
            f"{select} option", "os => os.map(o => o.value)")]

    assert all(visible().values()), "rows hidden before any filter"
    bot_options = options("#filter-bot")
    assert "" in bot_options
    assert sorted(v for v in bot_options if v) == sorted(name for name, _ in BOTS)
    for name, _ in BOTS:
        page.select_option("#filter-bot", name)
        shown = visible()
        expect = {r["id"]: name in r["bots"].split(",") for r in rows}
        assert shown == expect, f"filter bot {name}"
        assert 0 < sum(shown.values()) < len(rows)
    table_options = [v for v in options("#filter-table") if v]
    assert sorted(table_options) == sorted({r["table"] for r in rows})
    name = BOTS[0][0]
    page.select_option("#filter-bot", name)
    page.select_option("#filter-table", table_options[0])
    expect = {r["id"]: name in r["bots"].split(",") and r["table"] == table_options[0]
              for r in rows}
    assert visible() == expect, "filters bot and table together"
    assert [v for v in options("#filter-deal") if v] == sorted({r["deal"] for r in rows})
    page.select_option("#filter-bot", "")
    page.select_option("#filter-table", "")
    page.select_option("#filter-deal", "")
    assert all(visible().values()), "'' (all) shows every row again"


# -- every page: no errors, nothing from outside, from file:// and over http -----------


def site_pages(site: Site) -> list[str]:
    """Paths relative to the site: the three top pages, every bot page, four games."""
    games = [site.records[i] for i in (0, 1, len(site.records) // 2, -1)]
    return ["index.html", "games.html", "tournament.html",
            *(f"bots/{slug(b['name'])}.html" for b in site.leaderboard["bots"]),
            *(game_rel(r["game_id"]) for r in games)]


def drive(page: Page, rel: str) -> None:
    """Exercise the scripts of page ``rel``: sorting, filters, stepping a replay."""
    if rel == "index.html":
        keys = page.eval_on_selector_all("th[data-sort]", "hs => hs.map(h => h.dataset.sort)")
        for key in keys:
            page.click(f'th[data-sort="{key}"]')
    elif rel == "games.html":
        page.select_option("#filter-bot", BOTS[1][0])
        page.select_option("#filter-bot", "")
    elif rel.startswith("games/"):
        for _ in range(12):
            press(page, "ArrowRight")
        press(page, "ArrowLeft")


def visit_all(ctx: BrowserContext, watch: Watch, base: str, site: Site, *,
              exercise: bool = True) -> None:
    """Open every page of ``site`` under ``base``; with ``exercise``, drive its scripts
    too."""
    pages = site_pages(site)
    assert len(pages) == 3 + len(BOTS) + 4
    for rel in pages:
        before = len(watch.problems)
        page = open_page(ctx, base + rel)
        assert page.locator("nav a[href]").count() >= 3, f"{rel}: no nav"
        if rel.startswith("bots/"):
            assert page.locator("table#vs").count() == 1, f"{rel}: no table#vs"
            assert page.locator("table#faults").count() == 1, f"{rel}: no table#faults"
        elif exercise:
            drive(page, rel)
        page.close()
        new = watch.problems[before:]
        watch.problems[before:] = [f"{rel}: {p}" for p in new]


def test_pages_from_file(site: Site, context: tuple[BrowserContext, Watch]) -> None:
    ctx, watch = context
    visit_all(ctx, watch, site.root.as_uri() + "/", site)
    watch.check()


@pytest.fixture(scope="module")
def served(site: Site) -> Iterator[str]:
    server = start_server(site.root)
    try:
        yield server.url
    finally:
        _, _, err = stop_server(server, signal.SIGTERM)
        assert server.proc.poll() is not None, "arena serve did not exit on SIGTERM"
        assert "Traceback" not in err, err


def test_pages_over_http(site: Site, served: str,
                         context: tuple[BrowserContext, Watch]) -> None:
    ctx, watch = context
    parts = urlsplit(served)
    assert parts.hostname == "127.0.0.1" and parts.port, served
    watch.origin = f"{parts.scheme}://{parts.netloc}"
    base = served if served.endswith("/") else served + "/"
    base = base.removesuffix("index.html")
    # every page and what it loads, over http; the scripts are driven from file:// above
    # (they fetch nothing and never look at the scheme, so they run the same here)
    visit_all(ctx, watch, base, site, exercise=False)
    watch.check()


def test_serve_loopback_only_and_stops_on_ctrl_c(site: Site) -> None:
    server = start_server(site.root)
    try:
        parts = urlsplit(server.url)
        assert parts.scheme == "http" and parts.hostname == "127.0.0.1", server.url
        assert listening_on(parts.port or 0) == ["0100007F"], (
            "arena serve must listen on 127.0.0.1 only")
        base = f"http://127.0.0.1:{parts.port}/"
        with urlopen(base + "index.html", timeout=10) as r:
            assert r.status == 200 and r.headers.get_content_type() == "text/html"
            assert b'id="leaderboard"' in r.read()
        with urlopen(base + "assets/site.js", timeout=10) as r:
            assert r.status == 200 and "javascript" in r.headers.get_content_type()
        with pytest.raises(HTTPError) as missing:
            urlopen(base + "no-such-page.html", timeout=10)
        missing.value.close()
        assert missing.value.code == 404
    finally:
        code, _, err = stop_server(server, signal.SIGINT)
    # its own handler ends serve_forever (installed before it prints the address the test
    # waits for): a clean stop, exit 0, never Python's KeyboardInterrupt (130) nor death
    # by the signal (-SIGINT)
    assert code == 0, f"exit {code} on Ctrl-C: {err}"
    # nothing but its log of the three requests (no traceback, no "interrupted")
    assert err.splitlines() == [
        '127.0.0.1 "GET /index.html" 200',
        '127.0.0.1 "GET /assets/site.js" 200',
        '127.0.0.1 "GET /no-such-page.html" 404'], err
