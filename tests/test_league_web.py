"""The live page of ``arena league serve --web`` in a real browser (Debian's Chromium,
driven by Playwright, as in tests/test_site_browser.py), on a league that plays real
sandboxed games on 127.0.0.1 port 0.

Covered: the standings move as games finish, through server-sent events (the page is
never reloaded), and the latency from a game's end to the page is measured; a game in
progress is shown with public information only; an author's token shows their own bot's
logs and never another's; a submitted name that looks like markup renders as text; the
pages are valid HTML (html5lib's strict parser, and the Nu Html Checker where it is
installed, as for the published site)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.error import HTTPError
from urllib.parse import quote, urlsplit
from urllib.request import Request, urlopen

import pytest
from conftest import VNU_JAVA, open_page, skip_or_fail
from league_helpers import League, bot_folder, submit, wait_clean
from test_site_html import _vnu_jar

from arena.model.league_api import ACCEPTED

if TYPE_CHECKING:
    from conftest import Watch
    from playwright.sync_api import BrowserContext

XSS = '<img src=x onerror="alert(1)">&amp;'
"""A bot name that would be markup if it were ever written as HTML."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("league-web")
    tmp = Path(os.path.realpath(root / "tmp"))
    tmp.mkdir()
    league = League(root / "out", tmp, web=True, check_games=0)
    league.out.mkdir()
    league.start()
    try:
        alice, bob = league.author("alice"), league.author("bob")
        with league.client(alice) as client:
            steps = submit(client, bot_folder(root / "a", "alice-bot"))
            assert steps[-1].verdict == ACCEPTED, steps[-1].text
        with league.client(bob) as client:
            steps = submit(client, bot_folder(root / "b", XSS))
            assert steps[-1].verdict == ACCEPTED, steps[-1].text
        yield {"league": league, "alice": alice, "bob": bob, "url": league.web_url}
    finally:
        league.stop()
    assert wait_clean(league) == []


def get(url: str, token: str | None = None) -> tuple[int, bytes]:
    request = Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urlopen(request, timeout=10) as reply:
            return reply.status, reply.read()
    except HTTPError as e:
        return e.code, e.read()


def first_state(url: str) -> dict[str, Any]:
    """The first state the event stream sends."""
    with urlopen(url + "events", timeout=10) as stream:
        for raw in stream:
            line = raw.decode()
            if line.startswith("data:"):
                data: dict[str, Any] = json.loads(line[5:])
                return data
    raise AssertionError("no event")


def games_shown(page: Any) -> int:
    return int(page.evaluate("""() => [...document.querySelectorAll('#standings tbody tr')]
        .reduce((n, tr) => n + Number(tr.lastElementChild.textContent), 0)"""))


def threads_of(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def games_played(url: str) -> int:
    return int(json.loads(get(url + "state.json")[1])["season"]["games"])


def closed_by_server(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_a_flood_of_half_sent_requests_holds_no_thread_and_the_games_go_on(
        served: dict[str, Any]) -> None:
    """1,000 connections that send half a request (no token needed): the league's
    process gains no thread for them, the page answers a whole request at once, the games
    go on, and every half-sent request is closed at its deadline. Before, each held a
    thread of the page's server for as long as it stayed open."""
    league, url = served["league"], served["url"]
    port = urlsplit(url).port
    assert league.proc is not None and port is not None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
    threads = threads_of(league.proc.pid)
    games = games_played(url)
    flood = []
    try:
        for _ in range(1000):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET / HTTP/1.1\r\nHost: league\r\nAccept: text/html\r\n")
            flood.append(s)
        status, body = get(url)  # a whole request, through the flood
        assert status == 200 and b"The league, live" in body
        during = threads_of(league.proc.pid)
        assert during < threads + 25, (threads, during)  # before: 1,000 more
        deadline = time.monotonic() + 120
        while games_played(url) <= games and time.monotonic() < deadline:
            time.sleep(0.2)
        assert games_played(url) > games  # the games went on
        for s in flood:
            s.setblocking(False)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(closed_by_server(s) for s in flood):
            time.sleep(0.2)
        assert all(closed_by_server(s) for s in flood)  # closed at their deadline
        assert threads_of(league.proc.pid) < threads + 25
        print(f"\nfigure: threads of the league process {threads} before 1,000 half-sent "
              f"requests, {during} with them open")
    finally:
        for s in flood:
            s.close()


def test_the_standings_move_as_games_finish(served: dict[str, Any],
                                            context: tuple[BrowserContext, Watch]) -> None:
    ctx, watch = context
    watch.origin = served["url"]
    page = open_page(ctx, served["url"])
    page.wait_for_selector("#standings tbody tr", timeout=60_000)
    page.wait_for_function("document.getElementById('connection').textContent === "
                           "'connected'")
    before = games_shown(page)
    rows_before = page.eval_on_selector_all("#recent tbody tr", "rs => rs.length")
    latencies: list[float] = []
    deadline = time.monotonic() + 90
    while len(latencies) < 5 and time.monotonic() < deadline:
        page.wait_for_function("n => (window.arenaLatencies || []).length > n",
                               arg=len(latencies), timeout=60_000)
        latencies = [float(x["ms"]) for x in page.evaluate("window.arenaLatencies")]
    after = games_shown(page)
    assert after > before  # the standings moved, without a reload
    assert page.eval_on_selector_all("#recent tbody tr", "rs => rs.length") >= rows_before
    assert latencies
    print(f"\nfigure: a game's end to the page (server-sent events), {len(latencies)} games: "
          f"p50 {statistics.median(latencies):.0f} ms, slowest {max(latencies):.0f} ms")
    watch.check()


def test_a_game_in_progress_shows_public_information_only(
        served: dict[str, Any], context: tuple[BrowserContext, Watch]) -> None:
    ctx, watch = context
    watch.origin = served["url"]
    page = open_page(ctx, served["url"])
    page.wait_for_selector("#live-games li[data-game]", timeout=60_000)
    game_id = page.get_attribute("#live-games li[data-game]", "data-game")
    assert game_id
    page = open_page(ctx, served["url"] + "watch/" + quote(game_id))
    page.wait_for_selector("main[data-state]:not([data-state='unknown'])", timeout=30_000)
    if page.get_attribute("main", "data-state") == "live":
        seats = page.eval_on_selector_all("#watch-seats .seat", "s => s.length")
        assert seats == 3
        assert page.query_selector_all(".hand") == []  # no hand is shown
        text = page.inner_text("#watch-seats")
        assert "cards in hand" in text
    # what the stream sends of a game in progress: the public keys, never a hand (and no
    # card while its set has another rotation to come: tests/test_league_watch.py)
    public = {"game", "seats", "round", "rounds", "dealer", "trump_turned", "trump_card",
              "trump", "bids", "trick", "tricks", "won", "scores", "cards_left", "to_move",
              "over", "cards_shown", "rotations_to_come"}
    deadline = time.monotonic() + 60
    states: list[dict[str, Any]] = []
    while not states and time.monotonic() < deadline:
        states = [g["state"] for g in first_state(served["url"])["live"].values()
                  if g["state"]]
    assert states
    for state in states:
        assert set(state) == public
        assert "hand" not in json.dumps(state)
    watch.check()


def test_an_authors_token_shows_only_their_own_logs(
        served: dict[str, Any], context: tuple[BrowserContext, Watch]) -> None:
    ctx, watch = context
    watch.origin = served["url"]
    url = served["url"]
    page = open_page(ctx, url)
    page.fill("#token", served["alice"])
    page.click("#token-form button[type=submit], #token-form button")
    page.wait_for_selector("#my-games li[data-game]", timeout=60_000)
    assert page.inner_text("#mine-status").startswith("alice: ")
    page.click("#my-games li[data-game] button.show-log")
    page.wait_for_selector("#log[data-ok]")
    assert page.get_attribute("#log", "data-ok") == "true"
    assert "serving on unix:" in page.inner_text("#log")  # the bot's own stderr
    # a game of bob's bot without alice's: her token does not open its log
    status, body = get(url + "api/my-games", served["bob"])
    assert status == 200
    alice_games = {g["game_id"] for g in json.loads(get(url + "api/my-games",
                                                        served["alice"])[1])["games"]}
    others = [g["game_id"] for g in json.loads(body)["games"]
              if g["game_id"] not in alice_games]
    if others:
        status, _ = get(url + "api/log/" + quote(others[0]), served["alice"])
        assert status == 404
        status, _ = get(url + "api/log/" + quote(others[0]), served["bob"])
        assert status == 200
    assert get(url + "api/my-games")[0] == 401
    assert get(url + "api/my-games", "arena_" + "B" * 43)[0] == 401
    watch.check()


def test_a_name_that_looks_like_markup_renders_as_text(
        served: dict[str, Any], context: tuple[BrowserContext, Watch]) -> None:
    ctx, watch = context
    watch.origin = served["url"]
    dialogs: list[str] = []
    page = open_page(ctx, served["url"])
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.wait_for_function("n => [...document.querySelectorAll('#standings tbody th a')]"
                           ".some(a => a.textContent === n)", arg=XSS, timeout=60_000)
    assert page.query_selector_all("main img") == []
    bot_page = open_page(ctx, served["url"] + "bots/" + quote(XSS, safe=""))
    assert XSS in bot_page.inner_text("main")
    assert bot_page.query_selector_all("main img") == []
    assert dialogs == []
    watch.check()


def replays(url: str) -> tuple[str, str]:
    """A recent game whose replay is shown (its set whole) and one whose replay is
    withheld (its set still being played), waited for."""
    shown = withheld = ""
    deadline = time.monotonic() + 120
    while not (shown and withheld) and time.monotonic() < deadline:
        for game in first_state(url)["recent"]:
            status, body = get(url + "games/" + quote(game["game_id"]) + ".json")
            if status == 200:
                shown = shown or game["game_id"]
            elif status == 404 and json.loads(body).get("withheld"):
                withheld = withheld or game["game_id"]
        time.sleep(0.2)
    assert shown and withheld, (shown, withheld)
    return shown, withheld


def withheld_replay(url: str) -> tuple[str, bytes, bytes]:
    """A game whose replay both the JSON and the page withhold, seen so in a row: its
    id, the JSON and the page. (A set may become whole between two requests, whose game
    is then shown: the next withheld game is tried; the league plays on meanwhile.)"""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        _, game_id = replays(url)
        status, as_json = get(url + "games/" + quote(game_id) + ".json")
        page_status, page = get(url + "games/" + quote(game_id))
        if status == page_status == 404:
            return game_id, as_json, page
    raise AssertionError("no replay was seen withheld twice in a row in 120 s")


def test_a_replay_is_withheld_while_its_set_is_played(served: dict[str, Any]) -> None:
    url = served["url"]
    shown, _ = replays(url)
    _, as_json, page = withheld_replay(url)
    assert "withheld until its deal's set is complete" in json.loads(as_json)["error"]
    assert json.loads(as_json)["withheld"] is True
    assert b'id="withheld"' in page and b'id="record"' not in page
    status, body = get(url + "games/" + quote(shown))  # the control: a whole set's game
    assert status == 200 and b'id="record"' in body


def test_the_pages_are_valid_html(served: dict[str, Any], tmp_path: Path) -> None:
    url = served["url"]
    game, _ = replays(url)
    _, _, withheld = withheld_replay(url)
    paths = ["", "season", "bots/alice-bot", "bots/" + quote(XSS, safe=""),
             "games/" + quote(game), "watch/" + quote(game)]
    pages = []
    for i, path in enumerate(paths):
        status, body = get(url + path)
        assert status == 200, path
        assert b"<img src=x" not in body, path
        page = tmp_path / f"page{i}.html"
        page.write_bytes(body)
        pages.append(page)
    pages.append(tmp_path / "withheld.html")  # the withheld replay's page (a 404)
    pages[-1].write_bytes(withheld)
    paths.append("games/(withheld)")
    try:
        import html5lib
    except ImportError:
        skip_or_fail("html5lib is not installed (pip install -e '.[test]')")
    for page, path in zip(pages, paths, strict=True):
        parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
        try:
            parser.parse(page.read_bytes(), transport_encoding="utf-8")
        except html5lib.html5parser.ParseError as e:
            pytest.fail(f"/{path}: {e}")
    jar, java = _vnu_jar(), shutil.which("java")
    if jar is None or java is None:
        return  # html5lib's strict parse above; the Nu checker where it is installed
    done = subprocess.run([java, *VNU_JAVA, "-jar", str(jar), "--format", "json",
                           "--errors-only", *map(str, pages)],
                          text=True, capture_output=True, timeout=120, check=False)
    messages = json.loads(done.stderr or done.stdout or "{}").get("messages", [])
    errors = [f"{m.get('url')}: {m.get('message')}" for m in messages
              if m.get("type") in ("error", "non-document-error")]
    assert not errors, "\n".join(errors[:30])


def test_a_retired_bot_is_marked_in_the_live_standings(
        served: dict[str, Any], context: tuple[BrowserContext, Watch]) -> None:
    """Drawn by the page's script: once bob retires his bot, its row in the standings
    carries the mark (the author column is the league's author, not what the bot says);
    alice's bot, still playing, does not. (Last in this module: the field changes.)"""
    ctx, watch = context
    watch.origin = served["url"]
    page = open_page(ctx, served["url"])
    page.wait_for_selector("#standings tbody tr", timeout=60_000)
    with served["league"].client(served["bob"]) as client:
        client.retire(XSS)
    page.wait_for_selector("#standings tbody tr.is-retired", timeout=60_000)
    retired = page.eval_on_selector_all(
        "#standings tbody tr.is-retired",
        "rows => rows.map(r => [r.dataset.bot, r.querySelector('.mark.retired').textContent,"
        " r.children[2].textContent])")
    assert retired == [[XSS, "retired", "bob"]], retired
    alice = page.eval_on_selector_all("#standings tbody tr[data-bot='alice-bot']",
                                      "rows => rows.map(r => r.className)")
    assert alice == [""], alice
    watch.check()
