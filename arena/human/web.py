"""A seat played by a person in the browser: ``arena play --bots human,... --web``.

A small HTTP server on 127.0.0.1 (:class:`arena.http.server.BoundedServer`: a thread of its
own, bounded; the referee runs in trio) serves one page
under a random path (the token in the printed URL keeps other local pages out). The page
gets the seat's state by server-sent events (``events``) and posts answers (``answer``:
the same words the terminal takes, :func:`arena.human.parse_answer`); an illegal answer
is refused with the rules' reason (``{"ok": false, "error": ...}``) and the game
waits for another.

The state sent is made from the seat's :class:`~arena.rules.View` and its round and game
results only: never another seat's cards. Once the game is over, the record (every hand,
as in any record) is served as ``record.json`` with a replay page. See
``docs/playing.md``.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

import trio

from arena.http.server import BoundedServer, Limits, Request, Response, Stream, text
from arena.human.terminal import HUMAN, AnswerError, leading_index, parse_answer, winning_now
from arena.model.results import GameResult, RoundResult
from arena.publish.markup import esc
from arena.rules import Decision, Trick, View
from arena.rules.cards import SUIT_LETTERS, format_card, format_suit
from arena.rules.reasons import illegal_reason
from arena.rules.search import hand_sizes

HOST = "127.0.0.1"


KEEP_ALIVE_S = 15.0
"""How often an idle event stream gets a comment line (so a dead connection shows)."""


MAX_BODY = 4096


ASSETS = {"site.css": "text/css; charset=utf-8", "play.css": "text/css; charset=utf-8",
          "play.js": "text/javascript; charset=utf-8",
          "replay.js": "text/javascript; charset=utf-8", "favicon.svg": "image/svg+xml"}


def _trick(trick: Trick) -> dict[str, Any]:
    return {"leader": trick.leader, "cards": [format_card(c) for c in trick.cards],
            "winner": trick.winner}


def answer_text(decision: Decision | None, action: int) -> str:
    """An action as the answer a person gives for it: ``H7``, ``2``, ``H``."""
    if decision is Decision.BID:
        return str(action)
    if decision is Decision.TRUMP:
        return SUIT_LETTERS[action]
    return format_card(action)


def view_state(view: View) -> dict[str, Any]:
    """The seat's view as JSON for the page: what it may see, and for each answer the page
    offers (its hand's cards; the bids; the suits) the rules' reason when it is illegal."""
    decision = view.decision
    choices: list[int] = []
    if decision is Decision.PLAY:
        choices = list(dict.fromkeys(view.hand))
    elif decision is Decision.BID:
        choices = list(range(view.tricks_in_round + 1))
    elif decision is Decision.TRUMP:
        choices = [0, 1, 2, 3]
    refused = {answer_text(decision, a): reason for a in choices
               if (reason := illegal_reason(view, a)) is not None}
    leading = winning_now(view)
    return {
        "game": view.game, "seat": view.seat, "players": view.players,
        "round": view.round, "rounds": view.rounds, "dealer": view.dealer,
        "hand": [format_card(c) for c in view.hand],
        "trump_card": None if view.trump_card is None else format_card(view.trump_card),
        "trump": format_suit(view.trump), "bids": list(view.bids),
        "trick": _trick(view.trick), "tricks": [_trick(t) for t in view.tricks],
        "won": list(view.won), "scores": list(view.scores), "stock_size": view.stock_size,
        "tricks_in_round": view.tricks_in_round,
        "decision": None if decision is None else decision.value,
        "legal": [answer_text(decision, a) for a in dict.fromkeys(view.legal)],
        "refused": refused,
        "hand_sizes": list(hand_sizes(view)),
        "leading": None if leading is None else leading[0],
    }


class WebTable:
    """The state shared by the page's server (its thread) and the seat's player (trio).

    ``state`` is the JSON the page is sent; each change bumps ``version`` and calls
    ``on_change`` (the event streams' :meth:`arena.http.server.Feed.changed`).
    """

    def __init__(self, names: Sequence[str] = (), token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(12)
        self._cond = threading.RLock()
        self.version = 0
        self.on_change: Callable[[], None] = lambda: None
        self.state: dict[str, Any] = {"status": "wait", "names": list(names), "view": None,
                                      "rounds": [], "result": None,
                                      "message": "the game is starting"}
        self._pending: View | None = None
        self._asked = 0
        self._deliver: Callable[[int, int], None] | None = None
        self.record: dict[str, Any] | None = None
        self.replay_page: str | None = None

    def _changed(self, **changes: Any) -> None:
        with self._cond:
            self.state = dict(self.state, **changes)
            self.version += 1
        self.on_change()

    def snapshot(self) -> tuple[int, dict[str, Any]]:
        with self._cond:
            return self.version, dict(self.state, version=self.version)

    def set_names(self, names: Sequence[str]) -> None:
        self._changed(names=list(names))

    # -- the player's side (trio) -----------------------------------------------------

    def ask(self, view: View, deliver: Callable[[int, int], None], deadline_ms: int) -> int:
        """Put a decision to the page; ``deliver(asked, action)`` is called (from a request
        thread) with the answer. Returns the number of this question."""
        with self._cond:
            self._asked += 1
            self._pending = view
            self._deliver = deliver
            self._changed(status="play", view=view_state(view), deadline_ms=deadline_ms,
                          message="your turn")
            return self._asked

    def withdraw(self, asked: int, message: str) -> None:
        """The question ``asked`` is no longer open (answered, or the time is up)."""
        with self._cond:
            if self._asked == asked and self._pending is not None:
                self._pending = None
                self._changed(status="wait", message=message)

    def round_over(self, result: RoundResult) -> None:
        entry = {"round": result.round, "trump": format_suit(result.trump),
                 "bids": list(result.bids), "won": list(result.won),
                 "points": list(result.points), "totals": list(result.totals),
                 "tricks": [_trick(t) for t in result.tricks]}
        self._changed(rounds=[*self.state["rounds"], entry])

    def game_over(self, result: GameResult) -> None:
        self._changed(result={"totals": list(result.totals), "places": list(result.places)},
                      message="the game is over")

    def finish(self, record: dict[str, Any], replay_page: str, written: str | None) -> None:
        """The game's record is made: serve it and its replay, and tell the page."""
        with self._cond:
            self.record = record
            self.replay_page = replay_page
            self._changed(status="over", view=None, written=written,
                          result={"totals": record["totals"], "places": record["places"]},
                          message="the game is over")

    # -- the page's side (request threads) -------------------------------------------

    def answer(self, text: str) -> str | None:
        """Take the page's answer; None when taken, else why it is refused."""
        with self._cond:
            view = self._pending
            if view is None or self._deliver is None:
                return "it is not your turn"
            try:
                action = parse_answer(view, text)
            except AnswerError as e:
                return str(e)
            self._pending = None
            deliver, asked = self._deliver, self._asked
            shown = dict(self.state["view"] or {}, decision=None, legal=[], refused={})
            if view.decision is Decision.PLAY:  # the card on the table at once
                card = format_card(action)
                hand = list(shown["hand"])
                hand.remove(card)
                trick = shown["trick"]
                sizes = list(shown["hand_sizes"])
                sizes[view.seat] -= 1
                shown.update(hand=hand, trick=dict(trick, cards=[*trick["cards"], card]),
                             hand_sizes=sizes, leading=leading_index(
                                 view.game, (*view.trick.cards, action), view.trump))
            self._changed(status="wait", view=shown, message="the others are playing")
        try:
            deliver(asked, action)
        except (trio.RunFinishedError, trio.BrokenResourceError, trio.ClosedResourceError):
            return "the game is no longer running"
        return None


class WebPlayer:
    """A seat played by a person in the browser, through ``table``. ``move_ms`` is the
    time per decision (None: no limit)."""

    def __init__(self, table: WebTable, name: str = HUMAN, move_ms: int | None = None) -> None:
        self.table = table
        self.name = name
        self.move_ms = move_ms
        self.last_cpu_ms: float | None = None
        self._channel: tuple[trio.MemorySendChannel[tuple[int, int]],
                             trio.MemoryReceiveChannel[tuple[int, int]]] | None = None

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        if self._channel is None:
            self._channel = trio.open_memory_channel[tuple[int, int]](math.inf)
        send, receive = self._channel
        token = trio.lowlevel.current_trio_token()

        def deliver(asked: int, action: int) -> None:
            trio.from_thread.run_sync(send.send_nowait, (asked, action), trio_token=token)

        asked = self.table.ask(view, deliver, deadline_ms)
        try:
            while True:
                number, action = await receive.receive()
                if number == asked:  # an answer to an earlier, timed-out question is stale
                    return action
        finally:
            self.table.withdraw(asked, "the time is up: the referee played for you")

    def set_names(self, names: Sequence[str]) -> None:
        self.table.set_names(names)

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None:
        self.table.round_over(result)

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None:
        self.table.game_over(result)


def play_page(title: str, game: str, players: int, seat: int, bids: bool) -> str:
    """The page: the replay viewer's card table (:func:`arena.publish.replay.board_html`,
    styled by the site's stylesheet) for a game of ``game`` with ``players`` seats, the
    person at ``seat``; ``bids``: whether the game has bids (Wizard) or announcements
    (Trumps with ``announce``). Its content is drawn by ``play.js`` from the state;
    nothing else in it comes from the game (names are set as text, never as markup)."""
    from arena.publish.replay import board_html

    names = [f'<span class="seat-name" data-seat="{s}"></span>' for s in range(players)]
    hands = ["" for _ in range(players)]
    attrs = {seat: ' id="hand" role="group" aria-label="Your hand"'}
    word = "bid" if game == "wizard" else "announcement"
    centre = (f'<div id="bids" class="choices" role="group" aria-label="Your {word}" hidden>'
              '</div>'
              '<div id="suits" class="choices" role="group" '
              'aria-label="Choose the trump suit" hidden></div>')
    board = board_html(names, names, hands, None, game,
                       ("bid", "won", "total") if bids else ("won", "total"), attrs, centre)
    rounds = "Finished rounds" if game == "wizard" else "The hand's score"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<link rel="icon" href="assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="assets/site.css">
<link rel="stylesheet" href="assets/play.css">
<script src="assets/play.js" defer></script>
</head>
<body>
<main class="wrap" id="play" data-status="wait" data-version="0" data-game="{esc(game)}"
 data-seat="{seat}" data-players="{players}" data-bids="{'true' if bids else 'false'}">
<h1 id="title">{esc(title)}</h1>
<p id="status" aria-live="polite">Connecting…</p>
<p id="message" role="alert" class="refusal" hidden></p>
<section id="result" aria-labelledby="result-h" hidden><h2 id="result-h">Result</h2>
<p id="result-text" class="result-text"></p>
<ol id="places" class="places"></ol>
<p><a id="replay-link" href="replay.html">Replay the game</a> ·
<a id="record-link" href="record.json">the record (JSON)</a></p>
</section>
<section id="table" aria-labelledby="table-h"><h2 id="table-h">The table</h2>
<div id="board" class="play-board">
{board}
</div>
<h3 id="tricks-h">Tricks of this round</h3>
<ol id="tricks-log" class="tricks-log" aria-labelledby="tricks-h"></ol>
<p class="note" id="hand-note">Your cards are buttons. Those you may not play now are
marked; their reason is in their title and is shown if you choose one.</p>
</section>
<section id="rounds-section" aria-labelledby="rounds-h" hidden>
<h2 id="rounds-h">{rounds}</h2>
<div class="scroll"><table id="rounds" class="data compact"><thead></thead><tbody></tbody>
</table></div></section>
<noscript><p class="note">Playing needs JavaScript.</p></noscript>
</main>
</body>
</html>
"""


def replay_page(record: Mapping[str, Any]) -> str:
    """The finished game in the site's replay viewer (``replay.js``)."""
    from arena.publish.replay import replay_section, script_json

    seats = [str(s) for s in record.get("seats") or []]
    body = replay_section(record, seats, lambda name: f"<span>{esc(name)}</span>",
                          '<a href="record.json">record.json</a>')
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Replay: {esc(record.get("game"))}, seed {esc(record.get("seed"))}</title>
<link rel="icon" href="assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="assets/site.css">
<script src="assets/replay.js" defer></script>
</head>
<body>
<main class="wrap">
<p><a href="./">back to the table</a></p>
<h1>Replay</h1>
{body}
<script type="application/json" id="record">{script_json(record)}</script>
</main>
</body>
</html>
"""


LIMITS = Limits(connections=64, streams=8, request_s=5.0, header_bytes=8192,
                body_bytes=MAX_BODY, write_s=10.0, handler_s=15.0, workers=1)
"""What the page's clients may take (:class:`arena.http.server.Limits`)."""
HEADERS = (("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"))


def _json(status: int, value: Any) -> Response:
    return Response(status, json.dumps(value).encode(), "application/json")


class WebServer:
    """The page's server (:class:`arena.http.server.BoundedServer`), serving ``table``
    and its ``page`` (:func:`play_page`) from a thread until :meth:`close`."""

    def __init__(self, table: WebTable, page: str, port: int = 0) -> None:
        self.table = table
        self.page = page.encode()
        self._server = BoundedServer(HOST, port, self._answer, name="play-web",
                                     limits=LIMITS, headers=HEADERS,
                                     methods=("GET", "HEAD", "POST"))
        self.feed = self._server.feed(self._message, interval=0.05,
                                      keep_alive=KEEP_ALIVE_S)
        table.on_change = self.feed.changed
        self.url = f"http://{HOST}:{self._server.port}/{table.token}/"

    def start(self) -> None:
        self._server.start()

    def close(self) -> None:
        self._server.close()

    def _message(self) -> tuple[bytes, bool]:
        state = self.table.snapshot()[1]
        if state["status"] == "over":  # the last event: the stream ends, and the page is
            # told not to reconnect for a day (it needs nothing more)
            return f"retry: 86400000\ndata: {json.dumps(state)}\n\n".encode(), True
        return f"data: {json.dumps(state)}\n\n".encode(), False

    async def _answer(self, request: Request) -> Response | Stream:
        table = self.table
        prefix = f"/{table.token}/"  # any other path is not found
        route = request.path[len(prefix):] if request.path.startswith(prefix) else None
        if request.method == "POST":
            if route != "answer":
                return text(404, "not found")
            return await self._take(request.body)
        if route in ("", "index.html"):
            return Response(200, self.page, "text/html; charset=utf-8")
        if route == "state":
            return _json(200, table.snapshot()[1])
        if route == "events":
            return Stream(self.feed)
        if route == "record.json" and table.record is not None:
            return _json(200, table.record)
        if route == "replay.html" and table.replay_page is not None:
            return Response(200, table.replay_page.encode(), "text/html; charset=utf-8")
        if route is not None and route.startswith("assets/") and route[7:] in ASSETS:
            name = route[7:]
            data = resources.files("arena.publish").joinpath("assets", name).read_bytes()
            return Response(200, data, ASSETS[name])
        return text(404, "not found")

    async def _take(self, body: bytes) -> Response:
        try:
            answer = json.loads(body)["answer"]
            if not isinstance(answer, str):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            return _json(400, {"error": 'expected JSON {"answer": "H7"}'})
        # (a worker thread: the answer is handed to the game's trio loop, and waited for)
        refused = await self._server.blocking(self.table.answer, answer)
        return _json(200, {"ok": True} if refused is None else {"ok": False, "error": refused})
