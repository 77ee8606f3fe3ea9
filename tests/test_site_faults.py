"""The published site of a tournament in which a bot breaks the rules, in a real browser.

A small Trumps tournament (draws and announcements on, 20 games) with the misbehaving
``tests/bots/illegal.py`` among four built-in bots is played and published once per
module. The tests check that the faulty bot's page lists its faults with working links
to the games where they happened, that the leaderboard counts them, and that a Trumps
replay (with draws from the stock) names the same trick winners and ends on the same
totals as the record. Browser set-up, request watching and the skip rules are those of
``test_site_browser.py``, from ``conftest.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import REPO, Watch, bot_cmd, open_page, state
from test_site_html import Site, game_rel, read_records, slug

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

FAULTY = "illegal"
BOTS = ((FAULTY, bot_cmd(REPO / "tests/bots/illegal.py")), ("heuristic", "heuristic"),
        ("random", "random"), ("heuristic-b", "heuristic"), ("random-b", "random"))
TOURNAMENT = """
name = "site-faults"
game = "trumps"
seats = 4
seed = 20261202
concurrency = 2
isolation = "shared"  # the pages are the subject: a process per bot, not per game

[options]
draw = true
announce = true

[time]
move_ms = 2000
max_faults = 3

[schedule]
format = "round-robin"
deals = 1
""" + "".join(f'\n[[bots]]\nname = "{name}"\nspec = "{spec}"\n' for name, spec in BOTS)
GAMES = 20


def run_arena(tmp: Path, *args: str) -> None:
    env = dict(os.environ, TMPDIR=str(tmp))
    done = subprocess.run([sys.executable, "-m", "arena", *args], cwd=REPO, env=env,
                          text=True, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, f"arena {args[0]} failed:\n{done.stdout}{done.stderr}"


@pytest.fixture(scope="module")
def faults_site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    folder = tmp_path_factory.mktemp("site-faults")
    tmp = folder / "tmp"
    tmp.mkdir()
    config = folder / "faults.toml"
    config.write_text(TOURNAMENT)
    out, site = folder / "out", (folder / "site").resolve()
    run_arena(tmp, "tournament", str(config), "--out", str(out), "--resamples", "100")
    run_arena(tmp, "publish", str(out), "--out", str(site))
    leaderboard = json.loads((site / "data" / "leaderboard.json").read_text(encoding="utf-8"))
    records = read_records(site / "data" / "games.jsonl.gz")
    assert len(records) == GAMES
    return Site(site, leaderboard, records, out)


def faults_of(site: Site, name: str) -> list[tuple[str, dict[str, Any]]]:
    """(game id, fault) for every fault of bot ``name`` in the published records."""
    return [(r["game_id"], f) for r in site.records for f in r.get("faults", ())
            if r["seats"][f["seat"]] == name]


def test_faulty_bot_page_and_leaderboard(context: tuple[BrowserContext, Watch],
                                         faults_site: Site) -> None:
    ctx, watch = context
    site = faults_site
    expected = faults_of(site, FAULTY)
    assert expected, "the illegal bot made no fault: nothing to show"

    page = open_page(ctx, (site.root / "bots" / f"{slug(FAULTY)}.html").as_uri())
    page.wait_for_selector("table#faults")
    hrefs = [str(h) for h in page.eval_on_selector_all(
        "table#faults > tbody > tr", "rs => rs.map(r => { const a = r.querySelector('a[href]');"
        " return a ? a.getAttribute('href') : null; })")]
    assert len(hrefs) == len(expected), (
        f"bots/{FAULTY}.html: table#faults has {len(hrefs)} rows for {len(expected)} faults")
    assert all(hrefs), f"bots/{FAULTY}.html: a row of table#faults has no link: {hrefs}"
    assert sorted(hrefs) == sorted(f"../{game_rel(gid)}" for gid, _ in expected), hrefs
    bot_page = site.root / "bots" / f"{slug(FAULTY)}.html"
    for href in set(hrefs):
        assert (bot_page.parent / href).resolve().is_file(), f"no game page {href}"
    watch.check()

    # follow the first link as a person would
    with page.expect_navigation(wait_until="load"):
        page.click("table#faults > tbody > tr a[href]")
    target = (bot_page.parent / hrefs[0]).resolve()
    assert page.url == target.as_uri(), page.url
    page.wait_for_selector("div#replay[data-step]")
    embedded = json.loads(page.text_content('script#record[type="application/json"]') or "null")
    assert embedded["game_id"] == target.stem
    assert FAULTY in embedded["seats"] and embedded["faults"], "the game has no fault"
    watch.check()

    page = open_page(ctx, (site.root / "index.html").as_uri())
    cell = page.text_content(f'table#leaderboard tr[data-bot="{FAULTY}"] td[data-col="faults"]')
    assert cell is not None, f'index.html: no tr[data-bot="{FAULTY}"] td[data-col="faults"]'
    count = re.search(r"\d+", cell)
    assert count and int(count.group(0)) == len(expected), (
        f"index.html: faults cell of {FAULTY} says {cell!r}, records have {len(expected)}")
    for other in (b["name"] for b in site.leaderboard["bots"] if b["name"] != FAULTY):
        text = page.text_content(f'table#leaderboard tr[data-bot="{other}"] '
                                 f'td[data-col="faults"]') or ""
        assert re.findall(r"\d+", text) in ([], ["0"]), f"faults of {other}: {text!r}"


def step_forward(page: Page) -> dict[str, Any] | None:
    """Press ArrowRight unless #next is disabled; the new state, or None at the end."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    if page.is_disabled("button#next"):
        return None
    before = page.get_attribute("#replay", "data-step")
    page.keyboard.press("ArrowRight")
    try:
        page.wait_for_function("s => document.getElementById('replay').dataset.step !== s",
                               arg=before, timeout=2_000)
    except PlaywrightTimeout:  # data-step stopped increasing: the last step
        return None
    return state(page)


def test_trumps_replay_with_draws(context: tuple[BrowserContext, Watch],
                                  faults_site: Site) -> None:
    ctx, _ = context
    record = next(r for r in faults_site.records
                  if r["options"].get("draw") and any(any(d) for d in r["rounds"][0]["draws"]))
    n = len(record["seats"])
    assert len(record["rounds"]) == 1
    rnd = record["rounds"][0]
    page = open_page(ctx, faults_site.game_page(record).as_uri())
    page.wait_for_selector("div#replay[data-step]")
    # parsed here, not with JSON.parse: 64-bit seeds do not survive a JavaScript number
    embedded = json.loads(page.text_content('script#record[type="application/json"]') or "null")
    assert embedded == record, "the embedded record differs from data/games.jsonl.gz"

    now = state(page)
    winners: list[int] = []
    for _ in range(600):
        nxt = step_forward(page)
        if nxt is None:
            break
        assert nxt["step"] == now["step"] + 1, (now["step"], nxt["step"])
        assert nxt["round"] == 1, f"step {nxt['step']}: data-round {nxt['round']}"
        if nxt["trick"] == now["trick"] + 1:
            assert nxt["winner"] is not None, f"trick {nxt['trick']}: no #trick-winner"
            winners.append(nxt["winner"])
        else:
            assert nxt["trick"] == now["trick"], (now["trick"], nxt["trick"])
        now = nxt
    else:
        pytest.fail(f"the replay did not end in 600 steps; last {now}")

    assert winners == [t["winner"] for t in rnd["tricks"]], "trick winners (#trick-winner)"
    totals = {str(k): v for k, v in now["totals"].items()}
    assert sorted(totals) == [str(s) for s in range(n)], f"#scores td.total: {totals}"
    shown = [int(totals[str(s)].replace("\u2212", "-").replace("+", "")) for s in range(n)]
    assert shown == record["totals"], "#scores td.total at the end"
