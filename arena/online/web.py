"""The live page of a league: ``arena league serve --web``.

A small HTTP server (threads; the league runs in trio) on 127.0.0.1 by default, or behind
the league's TLS. Pages, in the published site's style (its ``site.css``, cards and replay
viewer):

- ``/``: the standings with their intervals (``elo ± 2 sigma``), the games in progress,
  the recent games with a link to each replay, a link to the season; and a box where an
  author enters their token to list their own games and read their bots' stderr logs;
- ``/watch/ID``: a game in progress, public information only: the seats, the turned trump
  card and the trump, the bids, the cards of the trick being played and of the tricks of
  the round, the tricks won, the scores and how many cards each seat holds. No hand is
  shown: a card is seen once it is played (every hand is in the replay once the game is
  over, as in any record);
- ``/games/ID``: a finished game in the replay viewer (``/games/ID.json``: its record);
- ``/bots/NAME``: a bot's versions, faults, CPU per decision and rating history (a chart);
- ``/season``: the season: its number, start, games and the commitment to its seed.

Everything that moves comes through server-sent events (``/events``: the whole public
state, on every change) and is drawn by ``live.js``, which sets every name and every other
submitted text as text (``textContent``), never as markup; the pages the server writes
escape them (:func:`arena.publish.markup.esc`). The logs need the author's token, sent in
an ``Authorization`` header (never in a URL) and checked by the service: an author sees the
logs of their own bots only. Pages carry a Content-Security-Policy allowing only the
server's own scripts.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import trio

from arena import __version__
from arena.league.service import LeagueService
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
RECENT = 20
PUBLISH_ASSETS = {"site.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml",
                  "replay.js": "text/javascript; charset=utf-8"}
OWN_ASSETS = {"live.js": "text/javascript; charset=utf-8",
              "live.css": "text/css; charset=utf-8"}
CSP = ("default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; "
       "frame-ancestors 'none'; form-action 'self'")


def standing_json(row: Standing) -> dict[str, Any]:
    return {"rank": row.rank, "name": row.name, "author": row.author, "version": row.version,
            "elo": round(row.elo, 1), "sigma": round(row.sigma, 1),
            "low": round(row.elo - 2 * row.sigma, 1), "high": round(row.elo + 2 * row.sigma, 1),
            "games": row.games}


def game_json(game: GameSummary) -> dict[str, Any]:
    return {"game_id": game.game_id, "game": game.game, "seats": list(game.seats),
            "totals": list(game.totals), "places": list(game.places),
            "faults": list(game.faults), "finished_ms": round(game.finished * 1000)}


def live_json(game: LiveGame) -> dict[str, Any]:
    return {"game_id": game.game_id, "game": game.game, "seats": list(game.seats),
            "started_ms": round(game.started * 1000), "state": dict(game.state)}


class LiveState:
    """The public state the pages are sent, shared by the request threads; each change
    bumps ``version`` and wakes the event streams."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.version = 0
        self.closed = False
        self.state: dict[str, Any] = {"standings": [], "live": {}, "recent": [],
                                      "season": None}

    def update(self, **changes: Any) -> None:
        with self._cond:
            self.state = dict(self.state, **changes)
            self.version += 1
            self._cond.notify_all()

    def set_live(self, game: LiveGame) -> None:
        with self._cond:
            live = dict(self.state["live"])
            entry = live_json(game)
            if game.game_id in live:
                entry["started_ms"] = live[game.game_id]["started_ms"]
            live[game.game_id] = entry
            self.state = dict(self.state, live=live)
            self.version += 1
            self._cond.notify_all()

    def snapshot(self) -> tuple[int, dict[str, Any]]:
        with self._cond:
            return self.version, dict(self.state, version=self.version)

    def wait(self, after: int, timeout: float) -> tuple[int, dict[str, Any]] | None:
        with self._cond:
            self._cond.wait_for(lambda: self.version > after or self.closed, timeout)
            if self.version <= after:
                return None
            return self.version, dict(self.state, version=self.version)

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()


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
<p class="note">What a spectator sees: the cards played, the bids and the scores. No hand
is shown until the game is over (then the replay shows every hand).</p>
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
    history = list(detail.history)
    chart = ('<p class="note">No rated game yet.</p>' if not history else line_chart(
        [Series(bot.name, [p.elo for p in history], [float(p.games) for p in history])],
        "rating-history", f"Rating history of {bot.name}",
        "The bot's Elo after each of its games", "games", "Elo", legend=False))
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


def season_page(season: Any) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(season.started))
    seed = ("published when the season ends" if season.seed is None
            else f"<code>{esc(season.seed)}</code>")
    body = f"""<p><a href="/">back to the league</a></p>
<h1>Season {season.number}</h1>
<table class="data compact" id="season"><tbody>
<tr><th scope="row">Started</th><td>{esc(started)} UTC</td></tr>
<tr><th scope="row">Games</th><td class="num">{season.games}</td></tr>
<tr><th scope="row">Master seed, SHA-256</th><td><code>{esc(season.seed_commitment)}</code></td>
</tr><tr><th scope="row">Master seed</th><td>{seed}</td></tr>
</tbody></table>
<p class="note">Every deal of the season follows from its master seed, committed to here
before its games: once the seed is published, anyone can check the deals.</p>"""
    return _page(f"Season {season.number}", body, "season", ())


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)

    def _html(self, text: str) -> None:
        self._send(200, text.encode(), "text/html; charset=utf-8")

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value).encode(), "application/json")

    def _missing(self) -> None:
        self._send(404, b"not found\n", "text/plain; charset=utf-8")

    def _trio(self, fn: Any, *args: Any) -> Any:
        return trio.from_thread.run(fn, *args, trio_token=self.server.token)

    def do_GET(self) -> None:
        try:
            self._get()
        except trio.RunFinishedError:
            self._send(503, b"the league is stopping\n", "text/plain; charset=utf-8")

    def _get(self) -> None:
        path = unquote(urlsplit(self.path).path)
        backend = self.server.service.backend
        if path in ("/", "/index.html"):
            self._html(index_page())
        elif path == "/events":
            self._events()
        elif path == "/state.json":
            self._json(200, self.server.live.snapshot()[1])
        elif path.startswith("/assets/"):
            name = path[len("/assets/"):]
            if name in PUBLISH_ASSETS:
                data = resources.files("arena.publish").joinpath("assets", name).read_bytes()
                self._send(200, data, PUBLISH_ASSETS[name])
            elif name in OWN_ASSETS:
                data = resources.files("arena.online").joinpath("assets", name).read_bytes()
                self._send(200, data, OWN_ASSETS[name])
            else:
                self._missing()
        elif path.startswith("/watch/"):
            self._html(watch_page(path[len("/watch/"):]))
        elif path.startswith("/games/"):
            game_id = path[len("/games/"):]
            as_json = game_id.endswith(".json")
            record = self._trio(backend.record, game_id.removesuffix(".json"))
            if record is None:
                self._missing()
            elif as_json:
                self._json(200, record)
            else:
                self._html(replay_page({**record, "game_id": game_id}))
        elif path.startswith("/bots/"):
            detail = self._trio(backend.bot, path[len("/bots/"):])
            if detail is None:
                self._missing()
            else:
                self._html(bot_page(detail))
        elif path == "/season":
            self._html(season_page(self._trio(backend.season)))
        elif path == "/api/my-games":
            self._mine(None)
        elif path.startswith("/api/log/"):
            self._mine(path[len("/api/log/"):])
        else:
            self._missing()

    def _token(self) -> str | None:
        header = self.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        return token.strip() if scheme.lower() == "bearer" and token.strip() else None

    def _mine(self, game_id: str | None) -> None:
        service = self.server.service
        try:
            author = trio.from_thread.run(service.authenticate, self._token(),
                                          self.client_address[0], trio_token=self.server.token)
            if game_id is None:
                games = self._trio(service.games_of, author, 100)
                self._json(200, {"author": author.name,
                                 "games": [game_json(g) for g in games]})
                return
            path = self._trio(service.log_file, author, game_id)
        except ServiceError as e:
            status = {"unauthenticated": 401, "not_found": 404,
                      "permission_denied": 403}.get(e.code, 400)
            self._json(status, {"error": str(e)})
            return
        try:
            data = path.read_bytes()[-(1 << 20):]
        except OSError as e:
            self._json(404, {"error": f"the log cannot be read: {e.strerror}"})
            return
        self._send(200, data, "text/plain; charset=utf-8")

    def _events(self) -> None:
        live = self.server.live
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        seen, state = live.snapshot()
        try:
            while True:
                self.wfile.write(f"data: {json.dumps(state)}\n\n".encode())
                self.wfile.flush()
                got = None
                while got is None and not live.closed:
                    got = live.wait(seen, KEEP_ALIVE_S)
                    if got is None:
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
                if got is None:
                    return
                seen, state = got
        except (ConnectionError, OSError, ssl.SSLError):
            return


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], service: LeagueService, live: LiveState,
                 token: trio.lowlevel.TrioToken, context: ssl.SSLContext | None) -> None:
        super().__init__(address, _Handler)
        if context is not None:
            self.socket = context.wrap_socket(self.socket, server_side=True,
                                              do_handshake_on_connect=False)
        self.service = service
        self.live = live
        self.token = token

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # a browser that drops its connection is no error


class LiveSite:
    """The live page's server for ``service``, on ``address`` (HOST:PORT), with ``tls`` if
    given; :meth:`follow` (a trio task) keeps its state up to date."""

    def __init__(self, service: LeagueService, address: str, tls: TlsFiles | None,
                 token: trio.lowlevel.TrioToken) -> None:
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
        self._server = _Server((host.strip("[]"), int(port)), service, self.live, token, context)
        scheme = "https" if context is not None else "http"
        shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
        self.url = f"{scheme}://{shown}:{self._server.server_address[1]}/"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.2}, daemon=True,
                                        name="league-web")

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.live.close()
        self._server.shutdown()
        self._server.server_close()

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

    async def follow(self) -> None:
        """Keep the state up to date from the league's events, until cancelled."""
        async with self.service.events(None) as events:
            await self.refresh()
            async for event in events:
                if event.kind == GAME_PROGRESS and event.game_id:
                    self.live.set_live(LiveGame(event.game_id, str(event.data.get("game", "")),
                                                event.bots, event.time, event.data))
                else:
                    await self.refresh()
