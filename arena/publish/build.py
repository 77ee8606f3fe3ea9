"""The static site of a tournament: ``arena publish DIR --out SITE``.

:func:`publish` reads the tournament store once, in schedule order. While the games
stream past on their way into :func:`~arena.report.board.build_leaderboard`, each one
is written out as its replay page (``games/XY/ID.html``, 256 folders) and as a line of
``data/games.jsonl.gz``, and only a few
numbers per game are kept (for the games list, packed by :class:`~arena.publish.rows.GameRows`,
and the bots' fault tables), so the time grows linearly with the games and the memory
by a few hundred bytes a game (docs/publishing.md has the figures). Then the
leaderboard, bot, games-list (:data:`~arena.publish.markup.LIST_ROWS` games a page) and
tournament pages are written, with their charts drawn as SVG here (see
:mod:`arena.publish.charts`). The site is built in a temporary folder beside SITE and
renamed into place at the end, so SITE is never half written and files of an earlier
publish (games that no longer exist) do not linger. See ``docs/publishing.md``.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from arena.files import MARKER, read_marker, write_marker
from arena.league.store import field_rows, has_tables, season_rows
from arena.publish.game_pages import game_page, games_page, list_pages
from arena.publish.markup import (
    DATA_FILE,
    Slugs,
    game_path,
    list_path,
    slug,
)
from arena.publish.pages import FaultRow, GameRow, LeagueFacts, bot_page, index_page
from arena.publish.rows import GameRows
from arena.publish.statement import tournament_page
from arena.report.board import (
    LEAGUE,
    build_leaderboard,
)
from arena.report.text import render_json
from arena.runs.store import Store, StoredGame

ASSETS = ("site.css", "site.js", "replay.js", "favicon.svg")


SITE_MARKER = Path("data") / "leaderboard.json"
"""A folder holding this file (and only site files) is taken for an earlier publish made
before sites were marked (:data:`arena.files.MARKER`), which may be replaced."""


_SITE_FILE = re.compile(
    r"(index|games|tournament)\.html|" + re.escape(MARKER) + r"|(games|bots)/[^/]+\.html"
    r"|games/([0-9a-f]{2}|list)/[^/]+\.html"
    r"|data/(leaderboard\.json|games\.jsonl|games\.jsonl\.gz)|assets/("
    + "|".join(re.escape(name) for name in ASSETS) + ")")
"""The files of a site (paths relative to it): what a publish may replace (those of the
layout before game pages had folders of their own too)."""


_SITE_DIRS = ("games", "bots", "data", "assets")
_SITE_SUBDIRS = re.compile(r"games/([0-9a-f]{2}|list)")

_EVENTS_FILE = re.compile(r"boards/[^/]+\.html|data/events\.(json|csv)"
                          r"|data/boards/[^/]+\.(json|csv)")
"""The files of a site of several events (:mod:`arena.publish.multi`) besides those of
the single sites in ``events/SLUG/``."""

_EVENTS_DIRS = re.compile(r"events(/[^/]+)?|boards|data/boards")
_EVENT_PREFIX = re.compile(r"events/[^/]+/")


def _site_path(rel: str, folder: bool) -> bool:
    """Whether ``rel`` (a path relative to a site) is one a publish writes."""
    if folder:
        if rel in _SITE_DIRS or _SITE_SUBDIRS.fullmatch(rel) or _EVENTS_DIRS.fullmatch(rel):
            return True
    elif _SITE_FILE.fullmatch(rel) or _EVENTS_FILE.fullmatch(rel):
        return True
    inner = _EVENT_PREFIX.match(rel)  # an event's own site, as a single site is
    if inner is None:
        return False
    rest = rel[inner.end():]
    return bool(rest in _SITE_DIRS or _SITE_SUBDIRS.fullmatch(rest)) if folder else bool(
        _SITE_FILE.fullmatch(rest))


class PublishError(Exception):
    """The site cannot be built where asked (one line, for the command line)."""


@dataclass(frozen=True, slots=True)
class Summary:
    """What :func:`publish` wrote."""

    site: Path
    games: int
    bots: int
    size: int
    """Total bytes of the site's files."""


def publish(folder: Path, out: Path, resamples: int | None = None) -> Summary:
    """Build the site of the tournament in ``folder`` (which must hold a store) into
    ``out``, replacing an earlier publish there. Raises :class:`PublishError` when there
    is no store in ``folder`` or ``out`` is unusable (it holds other files, or holds the
    tournament itself)."""
    if not Store.exists(folder):
        raise PublishError(f"{folder}: no tournament here")
    out = out.resolve()
    _check_target(folder.resolve(), out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        event = build_event(folder, staging, resamples)
        write_marker(staging, "site")
        os.chmod(staging, 0o755)  # mkdtemp makes the folder private; a site is public
        size = _size(staging)
        _swap(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Summary(out, len(event.site.rows), len(event.leaderboard["bots"]), size)


@dataclass(frozen=True, slots=True)
class Event:
    """What :func:`build_event` read and wrote: the site (its game rows, bot slugs and
    dates), the leaderboard and the store's metadata and bots."""

    site: Site
    leaderboard: dict[str, Any]
    meta: dict[str, str]
    registered: list[dict[str, Any]]
    total: int
    """The finished games the store holds."""


def build_event(folder: Path, dest: Path, resamples: int | None = None, *,
                up: str | None = None,
                counted: Callable[[Iterator[StoredGame]], Iterator[StoredGame]] | None = None,
                ) -> Event:
    """Write the site of the store in ``folder`` into the empty folder ``dest`` (no
    marker), reading the store once, read-only. ``up``: the index of all events, from
    ``dest`` (an event of a site of several); ``counted`` sees the games on their way
    into the leaderboard (after their pages are written)."""
    with Store.open_readonly(folder) as store:
        meta = store.meta()
        registered = store.bots()
        total = store.count_done()
        names = [str(b["name"]) for b in registered]
        site = Site(dest, meta, Slugs(names), total, up=up)
        seats = meta.get("seats", "")
        if meta.get("format") == LEAGUE and seats.isdigit():  # its sets in flight
            site.withheld = store.open_units(int(seats))
        if meta.get("format") == LEAGUE and has_tables(store):
            site.league = league_facts(store)
        if resamples is None:  # as the tournament's own leaderboard was built
            stored = meta.get("resamples", "")
            resamples = int(stored) if stored.isdigit() and int(stored) > 0 else 1000
        games = site.tap(store.iter_games())
        lb = build_leaderboard(games if counted is None else counted(games), meta,
                               registered, resamples=resamples)
    site.finish(lb, registered)
    return Event(site, lb, meta, registered, total)


def league_facts(store: Store) -> LeagueFacts:
    """A league's seasons, each bot's league author (who submitted it; the organiser for
    the file's and house bots; a later version's is its first version's) and standing."""
    rows = field_rows(store)
    first: dict[str, str] = {}
    authors: dict[str, str] = {}
    status: dict[str, str] = {}
    for row in rows:
        author = str(row.request.get("author") or "the organiser")
        first.setdefault(row.base, author)
        authors[row.name] = first[row.base]
        status[row.name] = "house" if row.house else row.status
    return LeagueFacts(season_rows(store), authors, status)


def _size(folder: Path) -> int:
    """Total bytes of the files under ``folder``, read a folder at a time (``rglob`` keeps
    every path it has yielded: 100,000 game pages' worth of memory)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            if os.path.isfile(path):
                total += os.path.getsize(path)
    return total


def _check_target(folder: Path, out: Path) -> None:
    if out == folder or folder.is_relative_to(out):
        raise PublishError(f"{out}: the site folder must not hold the tournament; "
                           "choose another --out")
    if out.exists():
        if not out.is_dir():
            raise PublishError(f"{out}: exists and is not a folder")
        why = _not_a_site(out)
        if why is not None:
            raise PublishError(f"{out}: exists and is not an earlier trick-arena site "
                               f"({why}); choose an empty or new folder")


def _not_a_site(out: Path) -> str | None:
    """Why the folder ``out`` may not be replaced by a site (None when it may): it must
    be empty, or be marked as a site (or hold ``data/leaderboard.json``, from before the
    marker) and hold nothing but site files, none of them a symlink."""
    if not any(out.iterdir()):
        return None
    marker = read_marker(out)
    if marker is not None and marker["kind"] != "site":
        return f"a trick-arena {marker['kind']} folder"
    if marker is None and not (out / SITE_MARKER).is_file():
        return f"no {MARKER} file"
    for root, dirs, files in os.walk(out):
        for name in sorted(dirs) + sorted(files):
            path = Path(root, name)
            rel = path.relative_to(out).as_posix()
            if path.is_symlink() or not _site_path(rel, name in dirs):
                return f"{rel} is not a site file"
    return None


def _swap(staging: Path, out: Path) -> None:
    """Put ``staging`` where ``out`` is, removing the old ``out``."""
    if not out.exists():
        staging.rename(out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    old.rmdir()
    out.rename(old)
    try:
        staging.rename(out)
    except BaseException:
        old.rename(out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def published_at() -> float:
    """The time a site is published: ``SOURCE_DATE_EPOCH`` where it is set (the
    reproducible-builds convention: the same store and epoch give the same site), else
    now."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    return float(epoch) if epoch.isdigit() else time.time()


class Site:
    """The site being built in ``dir``: game pages as the games stream past, the rest at
    the end."""

    def __init__(self, folder: Path, meta: Mapping[str, str], slugs: Slugs,
                 total: int, published: float | None = None, up: str | None = None) -> None:
        self.dir = folder
        self.up = up
        self.meta = meta
        self.slugs = slugs
        self.total = total
        self.published = published_at() if published is None else published
        """When the site is published (Unix seconds): now, or ``SOURCE_DATE_EPOCH``."""
        self.played: tuple[float, float] | None = None
        """When the first stored game started and the last one ended (None: no games)."""
        self.name = meta.get("name") or "Tournament"
        self.rows = GameRows()
        self.league: LeagueFacts | None = None
        """A league's seasons and field (None for a tournament or a match)."""
        self.withheld: set[tuple[int, int]] = set()
        """The duplicate sets (table, deal) whose replays are withheld: a league's sets
        still being played (a rotation of their deal is to come)."""
        self.faults: dict[str, list[FaultRow]] = {}
        self._pending: StoredGame | None = None
        self._previous: str | None = None
        (folder / "games").mkdir()
        (folder / "bots").mkdir()
        (folder / "data").mkdir()
        (folder / "assets").mkdir()

    # -- the games, one at a time -----------------------------------------------------

    def tap(self, games: Iterable[StoredGame]) -> Iterator[StoredGame]:
        """Pass ``games`` through, writing each one's page and JSON line on the way."""
        # mtime 0 and no name in the gzip header: the same games make the same bytes
        with open(self.dir / DATA_FILE, "wb") as raw, \
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                              compresslevel=6) as jsonl:
            for game in games:
                if (game.table_no, game.deal_no) not in self.withheld:
                    jsonl.write(json.dumps(game.record, separators=(",", ":")).encode()
                                + b"\n")
                self._add(game)
                yield game
        self._flush(None)

    def _add(self, game: StoredGame) -> None:
        record = game.record
        first, last = self.played or (game.started_at, game.ended_at)
        self.played = (min(first, game.started_at), max(last, game.ended_at))
        faults = record.get("faults") or []
        for name in game.bots:
            self.slugs.add(name)
        self.rows.append(GameRow(game.id, game.seq, game.table_no, game.deal_no,
                                 game.rotation, tuple(game.bots),
                                 tuple(int(t) for t in record["totals"]),
                                 tuple(int(p) for p in record["places"]), len(faults)))
        for f in faults:
            seat = int(f["seat"])
            self.faults.setdefault(game.bots[seat], []).append(FaultRow(
                game.id, seat, f.get("round"), f.get("trick"), str(f.get("kind")),
                str(f.get("detail", "")), str(f.get("action", "")),
                bool(f.get("forfeited"))))
        self._flush(game)

    def _flush(self, following: StoredGame | None) -> None:
        """Write the pending game's page, now that the next one (or none) is known."""
        if self._pending is not None:
            pending = self._pending
            target = self.dir / game_path(pending.id)
            target.parent.mkdir(exist_ok=True)
            _write(target, game_page(
                pending, self, self._previous, following.id if following else None,
                len(self.rows) - (1 if following else 0),
                (pending.table_no, pending.deal_no) in self.withheld))
            self._previous = pending.id
        self._pending = following

    # -- the rest -----------------------------------------------------------------------

    def finish(self, lb: Mapping[str, Any], registered: Sequence[Mapping[str, Any]]) -> None:
        _write(self.dir / "data" / "leaderboard.json", render_json(lb))
        _write(self.dir / "index.html", index_page(lb, self))
        for page_no in range(1, list_pages(len(self.rows)) + 1):
            target = self.dir / list_path(page_no)
            target.parent.mkdir(parents=True, exist_ok=True)
            _write(target, games_page(lb, self, page_no))
        _write(self.dir / "tournament.html", tournament_page(lb, self, registered))
        authors = {str(b["name"]): str(b.get("author") or "") for b in registered}
        for entry in lb["bots"]:
            _write(self.dir / "bots" / f"{self.slugs[entry['name']]}.html",
                   bot_page(entry, lb, self, authors.get(entry["name"], "")))
        assets = resources.files("arena.publish").joinpath("assets")
        for name in ASSETS:
            (self.dir / "assets" / name).write_bytes(assets.joinpath(name).read_bytes())


__all__ = ["PublishError", "Summary", "publish", "slug"]
