"""A site of several events: ``arena publish DIR DIR ... --out SITE``.

Each store (a tournament's or a league's output folder) is published as it would be
alone, into ``events/SLUG/`` (the same pages, with an "All events" link up to the top
index), one event after another, so the memory is that of one event's site plus what the
boards keep. On their way into each event's leaderboard the games it counts (a league:
its whole duplicate sets) are folded into the board of their game and player count:
only the final scores of each game (for the pooled rating fit) and a few counters per
bot are kept, never the records. Then the top ``index.html`` (the dated list of the
events, newest first), a page per board (``boards/GAME-Np.html``) and their data files
(``data/events.json``, ``data/events.csv``, ``data/boards/KEY.json`` and ``.csv``) are
written. See ``docs/publishing.md``.

A bot on a board is its name and the version it reported in the hand-shake: the same
name and version in two events are one bot; the same name with another version is
another row; a bot whose store recorded no version (a league's built-in bots) is the one
bot of its name with a version on that board, if there is exactly one
(:func:`merge_unversioned`).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from arena.files import safe_name, write_marker
from arena.publish import charts
from arena.publish.build import (
    ASSETS,
    Event,
    PublishError,
    _check_target,
    _swap,
    _write,
    build_event,
    published_at,
)
from arena.publish.markup import (
    data_value,
    esc,
    num,
    page,
    pct,
    table,
    when,
    when_range,
)
from arena.publish.pages import PROVISIONAL_TITLE
from arena.publish.statement import scheduled_games
from arena.report.board import (
    LEAGUE,
    LEVEL,
    PRIOR_DRAWS,
    PROVISIONAL_GAMES,
    PROVISIONAL_HALF_WIDTH,
    whole_sets,
)
from arena.report.format import options_text
from arena.report.text import render_json
from arena.runs.lock import run_holds
from arena.runs.store import STORE_NAME, Store, StoredGame
from arena.stats.ratings import GameScores, rate

EVENTS_FORMAT = "trick-arena.events/1"
BOARD_FORMAT = "trick-arena.board/1"
UP = "../../index.html"
"""The top index, from an event's folder (``events/SLUG/``)."""
DATA_LINKS = (("data/events.json", "events.json"), ("data/events.csv", "events.csv"))
GAME_TITLES = {"wizard": "Wizard", "trumps": "Trumps"}


@dataclass(frozen=True, slots=True)
class EventRow:
    """One event of the index."""

    slug: str
    folder: Path
    name: str
    kind: str
    """``tournament`` or ``league``."""
    game: str
    seats: int | None
    options: dict[str, Any]
    bots: int
    """The bots with at least one counted game (the event's leaderboard rows)."""
    games: int
    """The games the event's leaderboard counts."""
    scheduled: int | None
    """A tournament's scheduled games (None: a league, or unknown)."""
    first: float | None
    last: float | None
    status: str
    boards: tuple[str, ...]

    @property
    def href(self) -> str:
        return f"events/{self.slug}/index.html"

    def to_json(self) -> dict[str, Any]:
        return {"slug": self.slug, "name": self.name, "kind": self.kind, "game": self.game,
                "seats": self.seats, "options": self.options, "bots": self.bots,
                "games": self.games, "scheduled": self.scheduled,
                "first_game": _iso(self.first), "last_game": _iso(self.last),
                "status": self.status, "href": self.href, "boards": list(self.boards)}


@dataclass
class Player:
    """A bot on a board: its name and version, and what the board keeps of its games."""

    name: str
    version: str | None
    games: int = 0
    wins: int = 0
    place_sum: int = 0
    events: dict[str, tuple[int, str]] = field(default_factory=dict)
    """Event slug: (games, the bot's page in the event's site, from the board's root)."""

    @property
    def key(self) -> str:
        """The bot's name in the rating fit (unique for name and version)."""
        return json.dumps([self.name, self.version])


@dataclass
class Board:
    """The ranking of every bot that played one game at one table size, over the events."""

    game: str
    seats: int
    scores: list[GameScores] = field(default_factory=list)
    players: dict[str, Player] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)
    """The events on the board, in publishing order, with their games on it."""

    @property
    def key(self) -> str:
        return f"{safe_name(self.game)}-{self.seats}p"

    @property
    def title(self) -> str:
        return f"{GAME_TITLES.get(self.game, self.game)}, {self.seats} players"

    def add(self, slug: str, game: StoredGame, versions: Mapping[str, str | None]) -> None:
        self.events[slug] = self.events.get(slug, 0) + 1
        record = game.record
        keys = []
        for name, place in zip(game.bots, record["places"], strict=True):
            player = Player(name, versions.get(name))
            player = self.players.setdefault(player.key, player)
            player.games += 1
            player.wins += int(place) == 1
            player.place_sum += int(place)
            count, href = player.events.get(slug, (0, ""))
            player.events[slug] = (count + 1, href)
            keys.append(sys.intern(player.key))  # one string a bot, not one a game
        self.scores.append(GameScores(sys.intern(f"{slug}/{game.unit}"), tuple(keys),
                                      tuple(float(t) for t in record["totals"])))


@dataclass(frozen=True, slots=True)
class MultiSummary:
    """What :func:`publish_many` wrote."""

    site: Path
    events: int
    games: int
    boards: int
    size: int


def event_slug(name: str) -> str:
    """An event's folder name: its name in lower case, characters other than
    ``[a-z0-9._-]`` made ``_``, no leading dot."""
    return safe_name(name).lower().lstrip(".") or "event"


def publish_many(folders: Sequence[Path], out: Path, resamples: int | None = None,
                 slugs: Mapping[Path, str] | None = None) -> MultiSummary:
    """Build one site of the stores in ``folders`` (two or more) into ``out``, replacing
    an earlier publish there; ``slugs``: the event folder of some of ``folders`` (by the
    path as given), in place of :func:`event_slug` of the event's name. Raises
    :class:`PublishError` (one line naming the folder) for a folder without a store, two
    folders of one store, two events of the same folder, or an unusable ``out``."""
    out = out.resolve()
    plan = _plan(folders, out, slugs or {})
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    published = published_at()
    try:
        boards: dict[tuple[str, int], Board] = {}
        rows = []
        for folder, slug in plan:
            dest = staging / "events" / slug
            dest.mkdir(parents=True)
            rows.append(_event(folder, slug, dest, resamples, boards))
            write_marker(dest, "site")
        ranked = {key: _rank(board, resamples or 1000) for key, board in boards.items()}
        rows.sort(key=lambda r: (-(r.last or 0.0), r.name))
        _write_top(staging, rows, boards, ranked, published, resamples or 1000)
        write_marker(staging, "site")
        os.chmod(staging, 0o755)  # mkdtemp makes the folder private; a site is public
        size = sum(p.stat().st_size for p in staging.rglob("*") if p.is_file())
        _swap(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return MultiSummary(out, len(rows), sum(r.games for r in rows), len(boards), size)


def _plan(folders: Sequence[Path], out: Path,
          chosen: Mapping[Path, str]) -> list[tuple[Path, str]]:
    """Each folder with its event's slug, after the checks (read-only)."""
    stores: dict[tuple[int, int], Path] = {}
    slugs: dict[str, Path] = {}
    plan = []
    for folder in folders:
        if not folder.is_dir() or not Store.exists(folder):
            raise PublishError(f"{folder}: no tournament or league here")
        info = (folder / STORE_NAME).stat()
        same = stores.setdefault((info.st_dev, info.st_ino), folder)
        if same is not folder:
            raise PublishError(f"{folder}: the same store as {same} (named twice)")
        _check_target(folder.resolve(), out)
        with Store.open_readonly(folder) as store:
            name = store.meta().get("name") or folder.resolve().name
        slug = chosen.get(folder) or event_slug(name)
        taken = slugs.setdefault(slug, folder)
        if taken is not folder:
            raise PublishError(f"{folder}: its event {name!r} would be published as "
                               f"events/{slug}/, as {taken} is; give one of them a folder "
                               f"of its own with --slug {folder}=SLUG")
        plan.append((folder, slug))
    return plan


def _event(folder: Path, slug: str, dest: Path, resamples: int | None,
           boards: dict[tuple[str, int], Board]) -> EventRow:
    """Publish one event into ``dest``, folding its counted games into ``boards``."""
    versions: dict[str, str | None] = {}
    touched: dict[tuple[str, int], Board] = {}
    league = False

    def counted(games: Iterator[StoredGame]) -> Iterator[StoredGame]:
        # the same games the event's leaderboard counts (it takes whole sets again: a
        # no-op on whole sets), so that the board's counts add up to the events'
        stream = whole_sets(games, seats) if league else games
        for game in stream:
            key = (str(game.record.get("game") or default_game), len(game.bots))
            board = boards.get(key)
            if board is None:
                board = boards[key] = Board(*key)
            touched[key] = board
            board.add(slug, game, versions)
            yield game

    with Store.open_readonly(folder) as store:  # the few facts needed before the games
        meta = store.meta()
        versions.update({str(b["name"]): b.get("version") or None for b in store.bots()})
    league = meta.get("format") == LEAGUE
    seats = int(meta["seats"]) if meta.get("seats", "").isdigit() else 0
    default_game = meta.get("game") or "?"
    event = build_event(folder, dest, resamples, up=UP, counted=counted)
    for board in touched.values():
        for player in board.players.values():
            if slug in player.events and not player.events[slug][1]:
                href = f"../events/{slug}/bots/{event.site.slugs[player.name]}.html"
                player.events[slug] = (player.events[slug][0], href)
    return _row(folder, slug, event, tuple(sorted(b.key for b in touched.values())))


def _row(folder: Path, slug: str, event: Event, boards: tuple[str, ...]) -> EventRow:
    meta, lb = event.meta, event.leaderboard
    league = meta.get("format") == LEAGUE
    scheduled = None if league else scheduled_games(meta)
    status = _status(folder, meta, event.total, scheduled)
    played = event.site.played
    return EventRow(slug, folder, event.site.name, "league" if league else "tournament",
                    str(lb.get("game") or meta.get("game") or "?"),
                    int(meta["seats"]) if meta.get("seats", "").isdigit() else None,
                    dict(lb.get("options") or {}), len(lb["bots"]), int(lb["games"]),
                    scheduled, played[0] if played else None, played[1] if played else None,
                    status, boards)


def _status(folder: Path, meta: dict[str, str], games: int, scheduled: int | None) -> str:
    """An event's status on the index: ``finished`` or ``season N closed`` as the store
    says; else "running" only while a run holds the folder's lock on this machine
    (:func:`arena.runs.lock.run_holds`), and a stopped run, or a copy of a folder,
    ``unfinished`` or ``season N open``."""
    if meta.get("format") == LEAGUE:
        seasons = _seasons(meta.get("seasons"))
        last = seasons[-1] if seasons else None
        if last is None:
            running, idle = "running", "no season yet"
        elif last.get("closed"):
            return f"season {last.get('season')} closed"
        else:
            running, idle = (f"running (season {last.get('season')})",
                             f"season {last.get('season')} open")
    elif scheduled is not None and games >= scheduled:
        return "finished"
    else:
        running, idle = "running", "unfinished" if scheduled is not None else "–"
    return running if run_holds(folder) else idle


def _seasons(text: str | None) -> list[dict[str, Any]]:
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return [s for s in value if isinstance(s, dict)] if isinstance(value, list) else []


def _iso(moment: float | None) -> str | None:
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the boards ---------------------------------------------------------------------------


def merge_unversioned(board: Board) -> None:
    """Fold a bot whose store recorded no version into the bot of the same name if the
    board has exactly one version of that name (a league records none for built-in
    bots); with none or several it stays a row of its own (version unknown)."""
    versions: dict[str, list[Player]] = {}
    for player in board.players.values():
        if player.version is not None:
            versions.setdefault(player.name, []).append(player)
    into: dict[str, str] = {}
    for key, player in list(board.players.items()):
        found = versions.get(player.name, [])
        if player.version is not None or len(found) != 1:
            continue
        target = found[0]
        target.games += player.games
        target.wins += player.wins
        target.place_sum += player.place_sum
        target.events.update(player.events)  # one event has one version of a name
        into[key] = target.key
        del board.players[key]
    if into:
        board.scores = [GameScores(g.unit, tuple(into.get(b, b) for b in g.bots), g.scores)
                        if any(b in into for b in g.bots) else g for g in board.scores]


def _rank(board: Board, resamples: int) -> list[dict[str, Any]]:
    """The board's rows, best first: the pooled Bradley-Terry fit with its bootstrap
    intervals (over the duplicate sets of every event), and the counters."""
    merge_unversioned(board)
    ratings = rate(board.scores, resamples=resamples, seed=0, level=LEVEL,
                   prior_draws=PRIOR_DRAWS)
    rows = []
    for rank, r in enumerate(ratings, 1):
        p = board.players[r.name]
        half = (r.high - r.low) / 2
        rows.append({
            "rank": rank, "name": p.name, "version": p.version,
            "elo": round(r.elo, 1), "elo_low": round(r.low, 1), "elo_high": round(r.high, 1),
            "p_above_next": None if r.p_above_next is None else round(r.p_above_next, 4),
            "games": p.games, "wins": p.wins, "mean_place": round(p.place_sum / p.games, 3),
            "provisional": p.games < PROVISIONAL_GAMES or half > PROVISIONAL_HALF_WIDTH,
            "events": [{"event": slug, "games": games, "page": href.removeprefix("../")}
                       for slug, (games, href) in p.events.items()],
        })
    return rows


def _board_json(board: Board, rows: list[dict[str, Any]], resamples: int) -> dict[str, Any]:
    return {"format": BOARD_FORMAT, "key": board.key, "game": board.game,
            "seats": board.seats, "events": [{"event": slug, "games": games} for slug, games
                                             in board.events.items()],
            "games": len(board.scores),
            "identity": "name and version",
            "rating": {"method": "bradley-terry", "pooled": True, "resamples": resamples,
                       "seed": 0, "level": LEVEL, "prior_draws": PRIOR_DRAWS},
            "bots": rows}


def _csv(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


# -- the pages ----------------------------------------------------------------------------


def _links(boards: Sequence[Board]) -> list[tuple[str, str]]:
    return [("index.html", "Events"),
            *((f"boards/{b.key}.html", esc(b.title)) for b in boards)]


def _game_text(row: EventRow) -> str:
    parts = [GAME_TITLES.get(row.game, row.game)]
    if row.seats:
        parts.append(f"{row.seats} seats")
    options = options_text(row.options)
    if options:
        parts.append(options)
    return " · ".join(parts)


def _date_cell(col: str, moment: float | None) -> str:
    return (f'<td data-col="{col}"{data_value(_iso(moment))}>'
            f"{when(moment) if moment is not None else '–'}</td>")


def _index_page(rows: Sequence[EventRow], boards: Sequence[Board],
                names: Mapping[str, str], published: float) -> str:
    head = ["Event", "Kind", "Game", "Bots", "Games", "First game", "Last game", "Status"]
    body_rows = []
    for r in rows:
        games = f"{r.games}" + (f" of {r.scheduled}" if r.scheduled is not None else "")
        body_rows.append(
            f'<tr data-event="{esc(r.slug)}" data-kind="{r.kind}" data-game="{esc(r.game)}">'
            f'<td data-col="event"><a href="{esc(r.href)}">{esc(r.name)}</a></td>'
            f'<td data-col="kind">{r.kind}</td>'
            f'<td data-col="game">{esc(_game_text(r))}</td>'
            f'<td data-col="bots" class="num"{data_value(r.bots)}>{r.bots}</td>'
            f'<td data-col="games" class="num"{data_value(r.games)}>{games}</td>'
            f'{_date_cell("first", r.first)}{_date_cell("last", r.last)}'
            f'<td data-col="status">{esc(r.status)}</td></tr>')
    firsts = [r.first for r in rows if r.first is not None]
    lasts = [r.last for r in rows if r.last is not None]
    played = (f"Games played {when_range(min(firsts), max(lasts))}" if firsts and lasts
              else "No games played yet")
    board_items = "".join(
        f'<li><a href="boards/{b.key}.html">{esc(b.title)}</a>: {len(b.players)} bots, '
        f"{len(b.scores)} games of {len(b.events)} event{'s' if len(b.events) != 1 else ''}"
        f" ({esc(', '.join(names[s] for s in b.events))})</li>" for b in boards)
    body = [
        "<h1>Events</h1>",
        f'<p class="lede">{len(rows)} events · {sum(r.games for r in rows)} games</p>',
        f'<p class="lede" id="dates">{played} · published {when(published)}</p>',
        '<section aria-labelledby="events-h"><h2 id="events-h">Events, newest first</h2>',
        '<div class="scroll">',
        table(head, body_rows, ' id="events" class="data"'),
        "</div>",
        '<p class="note">Newest first by the last game. Games: those the event\'s own '
        "leaderboard counts (a league: its whole duplicate sets), of the scheduled ones for "
        "a tournament. Status: <i>finished</i>, every scheduled game played; "
        "<i>running</i>, a run was writing it when this site was published; "
        "<i>unfinished</i>, neither (stopped, or run elsewhere); a league's season, "
        "open or closed. Each event links to its own site.</p>",
        "</section>",
        '<section aria-labelledby="boards-h"><h2 id="boards-h">Boards</h2>',
        f'<ul id="boards">{board_items}</ul>' if boards
        else '<p class="note">No boards without games.</p>',
        '<p class="note">A board ranks every bot that played one game at one table size, '
        "over all the events listed here, with one rating fit of all their games.</p>",
        "</section>",
    ]
    return page("Events", "", "\n".join(body), "index.html", "trick-arena events",
                description="The events published here, and a board per game",
                published=published, links=_links(boards), data=DATA_LINKS)


def _board_page(board: Board, rows: Sequence[Mapping[str, Any]], events: Sequence[EventRow],
                boards: Sequence[Board], resamples: int, published: float) -> str:
    root = "../"
    by_slug = {e.slug: e for e in events}
    lows = [r["elo_low"] for r in rows]
    highs = [r["elo_high"] for r in rows]
    lo, hi = (min(lows), max(highs)) if rows else (1400.0, 1600.0)
    pad = max(5.0, (hi - lo) * 0.05)
    lo, hi = lo - pad, hi + pad
    current = ' aria-sort="ascending"'
    head = [f'<th scope="col" data-sort="{k}" data-dir="{d}"{current if k == "rank" else ""}>'
            f'<button type="button">{label}</button></th>'
            for k, label, d in (("rank", "#", "asc"), ("bot", "Bot", "asc"),
                                ("version", "Version", "asc"), ("elo", "Elo", "desc"),
                                ("p_above_next", "P(&gt;next)", "desc"),
                                ("games", "Games", "desc"), ("wins", "Wins", "desc"),
                                ("mean_place", "Place", "asc"))] + ["Events"]
    body_rows = []
    for r in rows:
        half = (r["elo_high"] - r["elo_low"]) / 2
        prov = (f' <span class="provisional" title="{PROVISIONAL_TITLE}">?</span>'
                if r["provisional"] else "")
        played = ", ".join(
            f'<a href="{esc(root + e["page"])}">{esc(by_slug[e["event"]].name)}</a> '
            f'({e["games"]})' for e in r["events"])
        body_rows.append(
            f'<tr data-bot="{esc(r["name"])}" data-version="{esc(r["version"] or "")}" '
            f'data-rank="{r["rank"]}" data-games="{r["games"]}">'
            f'<td data-col="rank" class="num"{data_value(r["rank"])}>{r["rank"]}</td>'
            f'<td data-col="bot"{data_value(r["name"])}>{esc(r["name"])}{prov}</td>'
            f'<td data-col="version"{data_value(r["version"] or "")}>'
            f'{esc(r["version"] or "–")}</td>'
            f'<td data-col="elo" class="num elo"{data_value(r["elo"])} '
            f'title="95% interval {num(r["elo_low"], 1)} to {num(r["elo_high"], 1)}">'
            f'<span class="value">{num(r["elo"])}</span><span class="pm">±{num(half)}</span>'
            f'{charts.error_bar(r["elo"], r["elo_low"], r["elo_high"], lo, hi, width=64)}'
            "</td>"
            f'<td data-col="p_above_next" class="num"{data_value(r["p_above_next"])}>'
            f'{pct(r["p_above_next"])}</td>'
            f'<td data-col="games" class="num"{data_value(r["games"])}>{r["games"]}</td>'
            f'<td data-col="wins" class="num"{data_value(r["wins"])}>{r["wins"]}</td>'
            f'<td data-col="mean_place" class="num"{data_value(r["mean_place"])}>'
            f'{num(r["mean_place"], 2)}</td>'
            f'<td data-col="events">{played}</td></tr>')
    event_rows = []
    for slug in board.events:
        e = by_slug[slug]
        count = board.events[slug]
        event_rows.append(
            f'<tr data-event="{esc(slug)}"><td><a href="{esc(root + e.href)}">{esc(e.name)}'
            f'</a></td><td>{e.kind}</td><td>{esc(options_text(e.options) or "the defaults")}'
            f'</td><td class="num">{count}</td><td>{when(e.last) if e.last else "–"}</td></tr>')
    body = [
        f"<h1>{esc(board.title)}</h1>",
        f'<p class="lede">{len(board.scores)} games · {len(rows)} bots · '
        f"{len(board.events)} event{'s' if len(board.events) != 1 else ''}</p>",
        '<section aria-labelledby="board-h"><h2 id="board-h">Ranking</h2>',
        '<div class="scroll">',
        table(head, body_rows, ' id="board" class="data sortable"'),
        "</div>",
        f'<p class="note">One Bradley-Terry fit of every game of {esc(board.title)} in the '
        "events below (each game of <i>k</i> seats counts as <i>k</i>(<i>k</i> − 1)/2 "
        "comparisons, as on a tournament's leaderboard; a league's own leaderboard compares "
        "the bots that held the same cards), on the Elo scale with the pool averaging "
        f"1500; the bar and ± show its {round(100 * LEVEL)}% bootstrap interval over the "
        f"duplicate sets of all the events ({resamples} resamples). A bot is its name and "
        "the version it reported: the same name and version in two events are one bot, "
        "another version is another row, and a bot whose event recorded no version (a "
        "league's built-in bots) is the bot of its name that has one, where there is "
        "exactly one (else a row of its own, version –). A league's house bots are "
        "fitted like the others here (their fixed ratings anchor only their league's own "
        "board). Ratings from events that shared no bot are not comparable. "
        f'<span class="provisional" title="{PROVISIONAL_TITLE}">?</span> provisional. '
        f'Events: the bot\'s page in each event, with its games there.</p>',
        "</section>",
        '<section aria-labelledby="board-events-h"><h2 id="board-events-h">Events</h2>',
        table(["Event", "Kind", "Options", "Games", "Last game"], event_rows,
              ' id="board-events" class="data compact"'),
        '<p class="note">Events of this game and table size are pooled whatever their other '
        "options; they are listed here.</p>",
        "</section>",
    ]
    return page(f"{board.title}: all events", root, "\n".join(body),
                f"boards/{board.key}.html", "trick-arena events",
                description=f"The board of {board.title} over the events",
                published=published, links=_links(boards),
                data=(("data/events.json", "events.json"),
                      (f"data/boards/{board.key}.json", f"{board.key}.json"),
                      (f"data/boards/{board.key}.csv", f"{board.key}.csv")))


def _write_top(dest: Path, rows: Sequence[EventRow], boards: Mapping[tuple[str, int], Board],
               ranked: Mapping[tuple[str, int], list[dict[str, Any]]], published: float,
               resamples: int = 1000) -> None:
    ordered = [boards[k] for k in sorted(boards)]
    names = {r.slug: r.name for r in rows}
    _write(dest / "index.html", _index_page(rows, ordered, names, published))
    _write(dest / "data" / "events.json", render_json(
        {"format": EVENTS_FORMAT, "events": [r.to_json() for r in rows],
         "boards": [{"key": b.key, "game": b.game, "seats": b.seats,
                     "href": f"boards/{b.key}.html", "events": list(b.events),
                     "games": len(b.scores), "bots": len(b.players)} for b in ordered]}))
    _write(dest / "data" / "events.csv", _csv(
        ["slug", "name", "kind", "game", "seats", "options", "bots", "games", "scheduled",
         "first_game", "last_game", "status", "href"],
        [[r.slug, r.name, r.kind, r.game, r.seats, json.dumps(r.options, sort_keys=True),
          r.bots, r.games, r.scheduled, _iso(r.first), _iso(r.last), r.status, r.href]
         for r in rows]))
    for key in sorted(boards):
        board = boards[key]
        _write(dest / "boards" / f"{board.key}.html",
               _board_page(board, ranked[key], rows, ordered, resamples, published))
        _write(dest / "data" / "boards" / f"{board.key}.json",
               render_json(_board_json(board, ranked[key], resamples)))
        _write(dest / "data" / "boards" / f"{board.key}.csv", _csv(
            ["rank", "name", "version", "elo", "elo_low", "elo_high", "p_above_next", "games",
             "wins", "mean_place", "provisional", "events"],
            [[r["rank"], r["name"], r["version"], r["elo"], r["elo_low"], r["elo_high"],
              r["p_above_next"], r["games"], r["wins"], r["mean_place"], r["provisional"],
              " ".join(f"{e['event']}:{e['games']}" for e in r["events"])]
             for r in ranked[key]]))
    (dest / "assets").mkdir()
    assets = resources.files("arena.publish").joinpath("assets")
    for name in ASSETS:
        (dest / "assets" / name).write_bytes(assets.joinpath(name).read_bytes())
