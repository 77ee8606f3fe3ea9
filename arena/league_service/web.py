"""The live page of a league: ``arena league serve --web``.

A bounded HTTP server (:class:`arena.http.server.BoundedServer`: one thread of its own, no
thread per connection, :data:`LIMITS` on what one client takes; the league runs in trio)
on 127.0.0.1 by default, or behind the league's TLS. Pages, in the published site's style
(its ``site.css``, cards and replay viewer):

- ``/``: the standings with their intervals (``elo ± 2 sigma``), the games in progress,
  the recent games with a link to each replay, a link to the season; and a box where an
  author enters their token to list their own games and read their bots' stderr logs;
- ``/watch/ID``: a game in progress, public information only: the seats, the bids, who
  is to move, the tricks won, the scores and how many cards each seat holds; the turned
  trump card and the trump, and the cards of the trick being played and of the tricks of
  the round, only once no other rotation of its duplicate set is still to be played
  (before, the cards played are shown face down and the page says why: the backend's
  state carries none, :func:`arena.league_service.backend.public_state`). No hand is
  shown: a card is seen once it is played (every hand is in the replay once the set is
  complete, as in any record);
- ``/games/ID``: a finished game in the replay viewer (``/games/ID.json``: its record);
  withheld (404, and why) while another rotation of its duplicate set is to be played;
- ``/bots/NAME``: a bot's versions, faults, CPU per decision and rating history (a chart);
- ``/season``: every season: its start and end, its own games, the commitment to its
  master seed and the seed once the season ended.

Everything that moves comes through server-sent events (``/events``: the whole public
state, serialised once per message for every stream, at most one message every
:data:`EVENT_INTERVAL_S`) and is drawn by ``live.js``, which sets every name and every other
submitted text as text (``textContent``), never as markup; the pages the server writes
escape them (:func:`arena.publish.markup.esc`). The logs need the author's token, sent in
an ``Authorization`` header (never in a URL) and checked by the service: an author sees the
logs of their own bots only. Pages carry a Content-Security-Policy allowing only the
server's own scripts. What a page reads of the league runs as a trio task of the league's
loop (:class:`arena.http.trio_calls.TrioCalls`) and reads the store through its readers
(:mod:`arena.runs.readers`), never on the writer thread.
"""

from __future__ import annotations

import json
import os
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import trio

from arena import __version__
from arena.http.server import (
    BoundedServer,
    Limits,
    Request,
    Response,
    Stream,
    text,
)
from arena.http.trio_calls import TrioCalls
from arena.league_service.backend import ReplayWithheld
from arena.league_service.service import LeagueService
from arena.model.league_api import (
    GAME_PROGRESS,
    GameSummary,
    LiveGame,
    ServiceError,
    Standing,
    TlsFiles,
)
from arena.publish.charts import Series, line_chart
from arena.publish.markup import esc
from arena.publish.replay import replay_section, script_json

KEEP_ALIVE_S = 15.0
"""An idle event stream gets a comment line this often (so a dead connection shows)."""
EVENT_INTERVAL_S = 0.25
"""The event streams get at most one message this often: moves in between are one."""
REFRESH_S = 0.25
"""The standings and recent games are read again at most this often."""
PAGE_CACHE_S = 1.0
"""A page read from the league (a bot's, the season's, a replay) is kept this long: many
clients asking for the same page cost the league one read a second."""
PAGE_CACHE_ENTRIES = 512
RECENT = 20
LOG_TAIL = 1 << 20
"""The end of a bot's log that its author is shown, in bytes."""
LIMITS = Limits(connections=256, streams=64, request_s=5.0, header_bytes=8192,
                body_bytes=0, write_s=10.0, stream_buffer=1 << 20, handler_s=15.0,
                workers=2)
"""What the page's clients may take (:class:`arena.http.server.Limits`): 256
connections, 64 event streams, 5 s for a request to arrive whole, no body."""
PUBLISH_ASSETS = {"site.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml",
                  "replay.js": "text/javascript; charset=utf-8"}
OWN_ASSETS = {"live.js": "text/javascript; charset=utf-8",
              "live.css": "text/css; charset=utf-8"}
CSP = ("default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; "
       "frame-ancestors 'none'; form-action 'self'")
HEADERS = (("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
           ("Content-Security-Policy", CSP), ("Referrer-Policy", "no-referrer"))
"""Every answer's headers."""


def standing_json(row: Standing) -> dict[str, Any]:
    return {"rank": row.rank, "name": row.name, "author": row.author, "version": row.version,
            "elo": round(row.elo, 1), "sigma": round(row.sigma, 1),
            "low": round(row.elo - 2 * row.sigma, 1), "high": round(row.elo + 2 * row.sigma, 1),
            "games": row.games, "status": row.status}


def game_json(game: GameSummary) -> dict[str, Any]:
    return {"game_id": game.game_id, "game": game.game, "seats": list(game.seats),
            "totals": list(game.totals), "places": list(game.places),
            "faults": list(game.faults), "finished_ms": round(game.finished * 1000)}


def live_json(game: LiveGame) -> dict[str, Any]:
    return {"game_id": game.game_id, "game": game.game, "seats": list(game.seats),
            "started_ms": round(game.started * 1000), "state": dict(game.state)}


class LiveState:
    """The public state the pages are sent: changed by the league's trio loop (cheap: a
    dictionary replaced), read by the page's server thread. Each change bumps
    ``version`` and calls ``on_change`` (the event streams' :meth:`Feed.changed`, which
    only marks: the state is serialised once per message, in the server's thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.version = 0
        self.state: dict[str, Any] = {"standings": [], "live": {}, "recent": [],
                                      "season": None}
        self.on_change: Callable[[], None] = lambda: None

    def update(self, **changes: Any) -> None:
        with self._lock:
            self.state = dict(self.state, **changes)
            self.version += 1
        self.on_change()

    def set_live(self, game: LiveGame) -> None:
        with self._lock:
            live = dict(self.state["live"])
            entry = live_json(game)
            if game.game_id in live:
                entry["started_ms"] = live[game.game_id]["started_ms"]
            live[game.game_id] = entry
            self.state = dict(self.state, live=live)
            self.version += 1
        self.on_change()

    def snapshot(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            return self.version, dict(self.state, version=self.version)


def _page(title: str, body: str, page: str, scripts: tuple[str, ...] = ("live.js",),
          data: Mapping[str, str] | None = None) -> str:
    attrs = "".join(f' data-{k}="{esc(v)}"' for k, v in (data or {}).items())
    tags = "".join(f'<script src="/assets/{s}" defer></script>' for s in scripts)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n"
        '<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">\n'
        '<link rel="stylesheet" href="/assets/site.css">\n'
        f'<link rel="stylesheet" href="/assets/live.css">\n{tags}\n'
        "</head>\n<body>\n"
        '<header class="site"><div class="wrap"><a class="brand" href="/">'
        '<img src="/assets/favicon.svg" alt="" width="22" height="22">trick-arena league</a>'
        '<nav aria-label="Site"><a href="/">Live</a><a href="/season">Season</a></nav>'
        "</div></header>\n"
        f'<main class="wrap" data-page="{esc(page)}"{attrs}>\n{body}\n</main>\n'
        f'<footer class="wrap">trick-arena {esc(__version__)} · live: '
        '<span id="connection">connecting…</span></footer>\n'
        "</body>\n</html>\n")


def index_page() -> str:
    body = """<h1>The league, live</h1>
<section aria-labelledby="standings-h"><h2 id="standings-h">Standings</h2>
<div class="scroll"><table id="standings" class="data">
<caption>Ratings (Elo) with their 95% interval, elo ± 2 standard errors; they move as games
finish.</caption>
<thead><tr><th scope="col" class="num">Rank</th><th scope="col">Bot</th>
<th scope="col">Author</th><th scope="col">Version</th><th scope="col" class="num">Elo</th>
<th scope="col" class="num">Interval</th><th scope="col" class="num">Games</th></tr></thead>
<tbody></tbody></table></div>
<p class="note" id="standings-empty">No game has finished yet.</p>
</section>
<section aria-labelledby="live-h"><h2 id="live-h">Games in progress</h2>
<ul id="live-games" class="plain"></ul>
<p class="note" id="live-empty">No game is being played.</p>
</section>
<section aria-labelledby="recent-h"><h2 id="recent-h">Recent games</h2>
<div class="scroll"><table id="recent" class="data">
<thead><tr><th scope="col">Game</th><th scope="col">Seats (total)</th>
<th scope="col" class="num">Faults</th><th scope="col">Ended</th></tr></thead>
<tbody></tbody></table></div>
</section>
<section aria-labelledby="mine-h"><h2 id="mine-h">Your bots' logs</h2>
<form id="token-form" autocomplete="off">
<label for="token">Your author token</label>
<input id="token" name="token" type="password" spellcheck="false" autocomplete="off">
<button type="submit">Show my games</button></form>
<p id="mine-status" class="note" aria-live="polite">The token stays in this page: it is
sent only to this server, in a header.</p>
<ul id="my-games" class="plain"></ul>
<pre id="log" class="log" hidden></pre>
</section>
<noscript><p class="note">The live page needs JavaScript.</p></noscript>"""
    return _page("The league, live", body, "index")


def watch_page(game_id: str) -> str:
    body = f"""<p><a href="/">back to the league</a></p>
<h1>Game <span id="watch-id">{esc(game_id)}</span></h1>
<p id="watch-status" aria-live="polite">Connecting…</p>
<p class="note">What a spectator sees: the bids, the tricks won and the scores, and the
cards played once no other rotation of this deal is to come. No hand is shown until the
game's set is complete (then the replay shows every hand).</p>
<p id="cards-hidden" class="note" hidden>Cards are hidden while other rotations of this
deal are still to be played (<span id="to-come"></span>); the replay opens when the set is
complete.</p>
<div class="board"><div class="seats" id="watch-seats"></div>
<div class="centre"><div id="trump" class="trump"></div>
<div id="trick" class="trick" role="group" aria-label="The current trick"></div>
<h2 id="tricks-h">Tricks of this round</h2>
<ol id="tricks-log" class="tricks-log" aria-labelledby="tricks-h"></ol></div></div>
<p id="replay-link" hidden><a href="/games/{esc(quote(game_id))}">The replay</a></p>"""
    return _page(f"Game {game_id}", body, "watch", data={"game": game_id})


def replay_page(record: Mapping[str, Any]) -> str:
    seats = [str(s) for s in record.get("seats") or []]
    game_id = str(record.get("game_id", ""))
    body = replay_section(record, seats, lambda name: f'<a href="/bots/{esc(quote(name))}">'
                                                      f"{esc(name)}</a>",
                          f'<a href="/games/{esc(quote(game_id))}.json">its record</a>')
    return _page(f"Replay of {game_id}",
                 f'<p><a href="/">back to the league</a></p><h1>Replay of {esc(game_id)}</h1>'
                 f'\n{body}\n<script type="application/json" id="record">'
                 f"{script_json(record)}</script>", "replay", ("replay.js",))


def bot_page(detail: Any) -> str:
    bot = detail.bot
    versions = "".join(
        f"<tr><td>{esc(v.version)}</td><td><code>{esc(v.bundle[:16])}</code></td>"
        f"<td>{esc(time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(v.joined)))} UTC</td></tr>"
        for v in detail.versions) or '<tr><td colspan="3">built in</td></tr>'
    kinds = ", ".join(f"{esc(k)} {n}" for k, n in sorted(detail.fault_kinds.items())) or "none"
    cpu = "–" if detail.cpu_ms_mean is None else f"{detail.cpu_ms_mean:.2f} ms"
    wall = "–" if detail.wall_ms_mean is None else f"{detail.wall_ms_mean:.2f} ms"
    history = [(version, list(points)) for version, points in detail.history if points]
    chart = ('<p class="note">No rated game yet.</p>' if not history else line_chart(
        [Series(f"version {version}", [p.elo for p in points],
                [float(p.games) for p in points]) for version, points in history],
        "rating-history", f"Rating history of {bot.name}",
        "Each version's Elo after each of its games (a version is rated on its own, "
        "from its first game)", "games of the version", "Elo", legend=len(history) > 1))
    body = f"""<p><a href="/">back to the league</a></p>
<h1>{esc(bot.name)}</h1>
<table class="data compact" id="bot-facts"><tbody>
<tr><th scope="row">Author</th><td>{esc(bot.author)}</td></tr>
<tr><th scope="row">Version</th><td>{esc(bot.version)}</td></tr>
<tr><th scope="row">Status</th><td>{esc(bot.status)}</td></tr>
<tr><th scope="row">Games</th><td class="num">{detail.games}</td></tr>
<tr><th scope="row">Faults</th><td>{detail.faults} ({kinds})</td></tr>
<tr><th scope="row">Decisions</th><td class="num">{detail.decisions}</td></tr>
<tr><th scope="row">CPU per decision</th><td class="num">{cpu}</td></tr>
<tr><th scope="row">Answer time per decision</th><td class="num">{wall}</td></tr>
</tbody></table>
<section aria-labelledby="versions-h"><h2 id="versions-h">Versions</h2>
<table class="data" id="versions"><thead><tr><th scope="col">Version</th>
<th scope="col">Bundle (SHA-256)</th><th scope="col">Joined</th></tr></thead>
<tbody>{versions}</tbody></table></section>
<section aria-labelledby="history-h"><h2 id="history-h">Rating history</h2>
<figure>{chart}</figure></section>"""
    return _page(bot.name, body, "bot", ())


def _seed_cell(seed: int | None) -> str:
    return "sealed until the season ends" if seed is None else f"<code>{esc(seed)}</code>"


def _utc(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) + " UTC"


def season_page(seasons: Sequence[Any]) -> str:
    """Every season: its start and end, its own games, the commitment to its master seed
    and the seed once revealed; the one under way named at the top."""
    current = seasons[-1] if seasons else None
    rows = "".join(
        f'<tr data-season="{s.number}"><th scope="row" class="num">{s.number}</th>'
        f"<td>{esc(_utc(s.started))}</td>"
        f"<td>{esc(_utc(s.closed)) if s.closed is not None else 'under way'}</td>"
        f'<td class="num">{s.games}</td><td><code>{esc(s.seed_commitment)}</code></td>'
        f"<td>{_seed_cell(s.seed)}</td></tr>" for s in seasons)
    lede = (f"Season {current.number} is under way." if current is not None and
            current.closed is None else "No season is under way." if current is None
            else f"Season {current.number} has ended; the next starts with the next run.")
    body = f"""<p><a href="/">back to the league</a></p>
<h1>Seasons</h1>
<p class="lede" id="season-now">{esc(lede)}</p>
<div class="scroll"><table class="data" id="seasons"><thead><tr>
<th scope="col" class="num">Season</th><th scope="col">Started</th><th scope="col">Ended</th>
<th scope="col" class="num">Games</th><th scope="col">Master seed, SHA-256</th>
<th scope="col">Master seed</th></tr></thead><tbody>{rows}</tbody></table></div>
<p class="note">Every deal of a season follows from its master seed, committed to here
before its games: once the season ends its seed is published, and anyone can check that
season's deals (and only that season's: each season has a seed of its own).</p>"""
    return _page("Seasons", body, "season", ())


def withheld_page(game_id: str, why: str) -> str:
    body = (f'<p><a href="/">back to the league</a></p><h1>Replay of {esc(game_id)}</h1>'
            f'<p id="withheld" class="note">{esc(why)}</p>')
    return _page(f"Replay of {game_id}", body, "withheld", ())


def _html(text: str, status: int = 200) -> Response:
    return Response(status, text.encode(), "text/html; charset=utf-8")


def _json(status: int, value: Any) -> Response:
    return Response(status, json.dumps(value).encode(), "application/json")


MISSING = text(404, "not found")


class LiveSite:
    """The live page's server for ``service``, on ``address`` (HOST:PORT), with ``tls`` if
    given: a :class:`BoundedServer` (its own thread; :data:`LIMITS`); :meth:`follow` (a
    trio task) keeps its state up to date and runs the page's calls into the league."""

    def __init__(self, service: LeagueService, address: str, tls: TlsFiles | None,
                 token: trio.lowlevel.TrioToken, limits: Limits = LIMITS) -> None:
        host, _, port = address.rpartition(":")
        context = None
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            try:
                context.load_cert_chain(str(tls.cert), str(tls.key))
            except (OSError, ssl.SSLError) as e:
                raise ValueError(f"the live page: cannot use the TLS certificate and key: "
                                 f"{e}") from None
        self.service = service
        self.live = LiveState()
        self.calls = TrioCalls(token)
        self._server = BoundedServer(host.strip("[]"), int(port), self._answer,
                                     name="league-web", limits=limits, context=context,
                                     headers=HEADERS)
        self.feed = self._server.feed(self._message, interval=EVENT_INTERVAL_S,
                                      keep_alive=KEEP_ALIVE_S)
        self.live.on_change = self.feed.changed
        self._stale = trio.Event()
        self._refreshing = False
        self._cache: dict[str, tuple[float, Response]] = {}
        """Pages read from the league (path -> (until, answer)), in the server's thread."""
        self._assets: dict[str, Response] = {}
        for names, package in ((PUBLISH_ASSETS, "arena.publish"),
                               (OWN_ASSETS, "arena.league_service")):
            for name, ctype in names.items():
                data = resources.files(package).joinpath("assets", name).read_bytes()
                self._assets[name] = Response(200, data, ctype)
        self._index = _html(index_page())
        scheme = "https" if context is not None else "http"
        shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
        self.url = f"{scheme}://{shown}:{self._server.port}/"

    @property
    def server(self) -> BoundedServer:
        return self._server

    def start(self) -> None:
        self._server.start()

    def close(self) -> None:
        self._server.close()

    # -- the page's server (its own thread) -------------------------------------------

    def _message(self) -> tuple[bytes, bool]:
        """The event streams' message: the whole public state, serialised once for every
        stream."""
        return f"data: {json.dumps(self.live.snapshot()[1])}\n\n".encode(), False

    async def _answer(self, request: Request) -> Response | Stream:
        path = request.path
        if path in ("/", "/index.html"):
            return self._index
        if path == "/events":
            return Stream(self.feed)
        if path == "/state.json":
            return _json(200, self.live.snapshot()[1])
        if path.startswith("/assets/"):
            return self._assets.get(path[len("/assets/"):], MISSING)
        if path.startswith("/watch/"):
            return _html(watch_page(path[len("/watch/"):]))
        if path == "/api/my-games":
            return await self._mine(request, None)
        if path.startswith("/api/log/"):
            return await self._mine(request, path[len("/api/log/"):])
        cached = self._cache.get(path)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        answer = await self._read(path)  # the same answer, for a second, to every client
        if answer is not MISSING or path.startswith("/bots/"):
            self._cache[path] = (time.monotonic() + PAGE_CACHE_S, answer)
            while len(self._cache) > PAGE_CACHE_ENTRIES:
                del self._cache[next(iter(self._cache))]
        return answer

    async def _read(self, path: str) -> Response:
        """The pages read from the league: a replay, a bot's page, the season."""
        backend = self.service.backend
        if path.startswith("/games/"):
            game_id = path[len("/games/"):]
            as_json = game_id.endswith(".json")
            try:
                record = await self.calls.call(backend.record, game_id.removesuffix(".json"))
            except ReplayWithheld as e:  # its set is still being played
                why = str(e)
                return (_json(404, {"error": why, "withheld": True}) if as_json
                        else _html(withheld_page(game_id, why), 404))
            if record is None:
                return MISSING
            if as_json:
                return _json(200, record)
            return _html(replay_page({**record, "game_id": game_id}))
        if path.startswith("/bots/"):
            detail = await self.calls.call(backend.bot, path[len("/bots/"):])
            return MISSING if detail is None else _html(bot_page(detail))
        if path == "/season":
            return _html(season_page(await self.calls.call(backend.seasons)))
        return MISSING

    @staticmethod
    def _token(request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        return token.strip() if scheme.lower() == "bearer" and token.strip() else None

    async def _mine(self, request: Request, game_id: str | None) -> Response:
        try:
            found = await self.calls.call(self._games_or_log, self._token(request),
                                          request.client, game_id)
        except ServiceError as e:
            status = {"unauthenticated": 401, "not_found": 404,
                      "permission_denied": 403}.get(e.code, 400)
            return _json(status, {"error": str(e)})
        if isinstance(found, Path):
            try:
                data = await self._server.blocking(_tail, found, LOG_TAIL)
            except OSError as e:
                return _json(404, {"error": f"the log cannot be read: {e.strerror}"})
            return Response(200, data, "text/plain; charset=utf-8")
        return _json(200, found)

    async def _games_or_log(self, token: str | None, client: str, game_id: str | None,
                            ) -> dict[str, Any] | Path:
        """(In the league's loop.) The author's games, or the path of a log of theirs;
        ``client`` (the peer's address) is what the limit on wrong tokens counts by."""
        service = self.service
        author = await service.authenticate(token, client)
        if game_id is None:
            games = await service.games_of(author, 100)
            return {"author": author.name, "games": [game_json(g) for g in games]}
        return await service.log_file(author, game_id)

    # -- the league's side (trio) -------------------------------------------------------

    async def refresh(self) -> None:
        backend = self.service.backend
        standings = await backend.standings()
        live = await backend.live_games()
        recent = await backend.recent_games(RECENT)
        season = await backend.season()
        self.live.update(
            standings=[standing_json(r) for r in standings],
            live={g.game_id: live_json(g) for g in live},
            recent=[game_json(g) for g in recent],
            season={"number": season.number, "games": season.games})

    async def _refresher(self) -> None:
        """Refresh the state once something but a move happened, at most every
        :data:`REFRESH_S` seconds (the reads go to the store's readers)."""
        while True:
            await self._stale.wait()
            self._stale = trio.Event()
            await self.refresh()
            await trio.sleep(REFRESH_S)

    async def follow(self) -> None:
        """Keep the state up to date from the league's events, and run the page's calls
        into the league, until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.calls.serve)
            while True:  # a subscription dropped for falling behind is taken again
                async with self.service.events(None) as events:
                    await self.refresh()
                    if not self._refreshing:
                        self._refreshing = True
                        nursery.start_soon(self._refresher)
                    async for event in events:
                        if event.kind == GAME_PROGRESS and event.game_id:
                            self.live.set_live(LiveGame(event.game_id,
                                                        str(event.data.get("game", "")),
                                                        event.bots, event.time, event.data))
                        else:
                            self._stale.set()


def _tail(path: Path, size: int) -> bytes:
    """The last ``size`` bytes of the file at ``path``."""
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - size))
        return f.read()
