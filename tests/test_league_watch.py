"""A game in progress tells no card while its deal is still to be played: a real
``arena league serve --web`` (a submitted bot in its sandbox and two house bots, Trumps at
three seats: each duplicate set is three rotations of one deal, played one after another,
``concurrency = 1``), watched from before its first game through everything a client is
sent of the games in progress: the live page's event stream (``/events``) and its
``/state.json``, and the gRPC ``WatchEvents`` stream, each read as raw bytes.

While a game has another rotation of its set still to be played (known afterwards from
when each rotation finished: one that finished after a message arrived was still to be
played when it was sent), the bytes sent of it hold no card code at all (every code of a
52-card deck, so every card of its deal), and a message in which only such games are live
holds none anywhere; and these games had cards played (the check is not empty). The
control: the last rotation of a set, once the others finished, is shown with its cards,
the deal's trump card among them. Before, every card of every game was sent as it was
played. In Chromium, the watch page of a rotation with others to come says so and shows
the cards played face down; that of a last rotation shows them."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote
from urllib.request import urlopen

import grpc
import league_helpers
import pytest
from conftest import REPO, open_page
from league_helpers import League, bot_folder, submit, wait_clean

from arena.model.league_api import ACCEPTED
from arena.v1 import league_pb2

if TYPE_CHECKING:
    from conftest import Watch
    from playwright.sync_api import BrowserContext

SEATS = 3
LEAGUE_FILE = league_helpers.LEAGUE_FILE.replace(
    'output = "out"\n', 'output = "out"\nseed = 35\n', 1)
"""The service's tests' league, with a seed: one submitted bot and two house bots, so
every set is the same three bots, its three rotations played one after another (one game
at a time)."""
assert "seed = 35" in LEAGUE_FILE and f"seats = {SEATS}" in LEAGUE_FILE
PACE_S = 0.12
"""The submitted bot's think time per decision: a game lasts a second or two, several
messages of the event stream (at most one every 0.25 s)."""
CARD = re.compile(rb"(?<![A-Za-z0-9_])(?:[CDHS](?:1[0-4]|[1-9])|W|J)(?![A-Za-z0-9_])")
"""A card's code (``H7``, ``S14``, ``W``, ``J``) standing alone, as a JSON string or a
word of a text line: every card of a deck."""
GAME = re.compile(r"t(\d+)-d(\d+)-r(\d+)")


@dataclass
class Seen:
    """What the clients were sent, each piece with the time it arrived."""

    events: list[tuple[float, bytes]] = field(default_factory=list)
    """The live page's event stream: each message's raw bytes."""
    states: list[tuple[float, bytes]] = field(default_factory=list)
    """``/state.json``'s raw bodies, asked for over and over."""
    grpc: list[tuple[float, bytes]] = field(default_factory=list)
    """``WatchEvents``: each message's raw bytes."""
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[str] = field(default_factory=list)


def read_events(url: str, seen: Seen) -> None:
    try:
        with urlopen(url + "events", timeout=30) as stream:
            lines: list[bytes] = []
            while not seen.stop.is_set():
                line = stream.readline()
                if not line:
                    return
                lines.append(line)
                if line in (b"\n", b"\r\n"):
                    seen.events.append((time.time(), b"".join(lines)))
                    lines = []
    except Exception as e:  # reported by the test
        if not seen.stop.is_set():
            seen.errors.append(f"events: {e!r}")


def read_states(url: str, seen: Seen) -> None:
    while not seen.stop.wait(0.1):
        try:
            with urlopen(url + "state.json", timeout=10) as reply:
                seen.states.append((time.time(), reply.read()))
        except Exception as e:  # reported by the test
            seen.errors.append(f"state.json: {e!r}")
            return


def read_grpc(target: str, token: str, seen: Seen) -> None:
    """``WatchEvents`` with no deserializer: the messages' bytes as they came."""
    with grpc.insecure_channel(target) as channel:
        watch: Any = channel.unary_stream("/arena.v1.LeagueService/WatchEvents")
        call = watch(b"", metadata=(("authorization", f"Bearer {token}"),), timeout=600)
        try:
            for raw in call:
                seen.grpc.append((time.time(), raw))
                if seen.stop.is_set():
                    break
        except grpc.RpcError as e:
            if not seen.stop.is_set():
                seen.errors.append(f"WatchEvents: {e!r}")
        finally:
            call.cancel()


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The league, watched by the three readers from before its first game."""
    root = tmp_path_factory.mktemp("league-watch")
    tmp = Path(os.path.realpath(root / "tmp"))
    tmp.mkdir()
    league = League(root / "out", tmp, web=True, check_games=0)
    league.out.mkdir()
    league.file.write_text(LEAGUE_FILE)
    league.start()
    seen = Seen()
    readers: list[threading.Thread] = []
    try:
        assert league.web_url is not None
        author = league.author("watcher")
        readers = [threading.Thread(target=read_events, args=(league.web_url, seen)),
                   threading.Thread(target=read_states, args=(league.web_url, seen)),
                   threading.Thread(target=read_grpc, args=(league.target, author, seen))]
        for reader in readers:
            reader.start()
        deadline = time.monotonic() + 30
        while not seen.events and time.monotonic() < deadline:
            time.sleep(0.05)
        assert seen.events, "the event stream sent nothing"
        script = root / "paced.py"
        script.write_text((REPO / "tests" / "bots" / "paced_random.py").read_text()
                          .replace("PACE_S = 0.03", f"PACE_S = {PACE_S}"))
        with league.client(author) as client:  # the first set starts once it joined
            steps = submit(client, bot_folder(root / "bot", "watch-bot", script=script))
            assert steps[-1].verdict == ACCEPTED, steps[-1].text
        yield {"league": league, "url": league.web_url, "seen": seen}
    finally:
        seen.stop.set()
        league.stop()
        for reader in readers:
            reader.join(30)
    assert wait_clean(league) == []


def payload(raw: bytes) -> dict[str, Any]:
    """The state in an event message (``data: {...}``) or a ``/state.json`` body."""
    text = raw.decode()
    body = "".join(line[5:] for line in text.splitlines() if line.startswith("data:"))
    value: dict[str, Any] = json.loads(body if body else text)
    return value


def live_slice(raw: bytes, game_id: str) -> bytes:
    """The bytes of ``game_id``'s entry in the ``live`` object of a message, as sent."""
    key = json.dumps(game_id).encode() + b": "
    start = raw.index(b'"live": ')
    at = raw.index(key, start) + len(key)
    text = raw.decode()
    # the entry's end, by decoding the JSON value that starts there (bytes = characters:
    # what precedes it is ASCII, as json.dumps writes it)
    _, end = json.JSONDecoder().raw_decode(text, at)
    return raw[at:end]


def finished_at(seen: Seen) -> dict[str, float]:
    """When each game finished (seconds since the epoch), from every list of recent
    games the page was sent."""
    ended: dict[str, float] = {}
    for _, _, _, state in messages(seen):
        for game in state["recent"]:
            ended[game["game_id"]] = game["finished_ms"] / 1000
    return ended


def others(game_id: str) -> list[str]:
    match = GAME.fullmatch(game_id)
    assert match is not None, game_id
    table, deal, rotation = (int(x) for x in match.groups())
    return [f"t{table}-d{deal}-r{r}" for r in range(SEATS) if r != rotation]


def to_come(game_id: str, at: float, ended: dict[str, float]) -> bool:
    """Was another rotation of ``game_id``'s set still to be played when a message that
    arrived at ``at`` was sent? (Surely so if one finished after it arrived.)"""
    return any(ended.get(g, float("inf")) > at for g in others(game_id))


def last_to_play(game_id: str, at: float, ended: dict[str, float]) -> bool:
    """Had every other rotation finished before the message arrived? (It was sent
    after they finished, or it could not show the game live with them all done: one
    game at a time.)"""
    return all(ended.get(g, float("inf")) < at for g in others(game_id))


def messages(seen: Seen) -> Iterator[tuple[str, float, bytes, dict[str, Any]]]:
    """Every state the page sent: (where, when it arrived, its bytes, the state)."""
    for source, sent in (("events", seen.events), ("state.json", seen.states)):
        for at, raw in sent:
            if raw.strip() and not raw.startswith(b":"):
                yield source, at, raw, payload(raw)


def deal_codes(url: str, game_id: str) -> set[bytes]:
    """Every card of ``game_id``'s deal (the hands and the turned card), from its replay,
    open now that its set is complete."""
    with urlopen(url + "games/" + quote(game_id) + ".json", timeout=10) as reply:
        record = json.loads(reply.read())
    codes = set()
    for round_ in record["rounds"]:
        codes |= {c.encode() for hand in round_["hands"] for c in hand}
        if round_.get("trump_card"):
            codes.add(round_["trump_card"].encode())
    return codes


def played(state: dict[str, Any]) -> int:
    return len(state["trick"]["cards"]) + sum(len(t["cards"]) for t in state["tricks"])


def wait_for_a_whole_watched_set(url: str, seen: Seen, timeout_s: float = 240,
                                 ) -> tuple[str, dict[str, float]]:
    """A set every rotation of which was seen live, with cards played, and is finished:
    its first rotation's id, and when each game finished. Asked every 0.2 s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert not seen.errors, seen.errors
        ended = finished_at(seen)
        live_played: set[str] = set()
        for _, _, _, state in messages(seen):
            live_played |= {g for g, entry in state["live"].items()
                            if entry["state"] and played(entry["state"])}
        for game_id in sorted(live_played):
            if game_id.endswith("-r0") and all(
                    g in live_played and g in ended for g in [game_id, *others(game_id)]):
                return game_id, ended
        time.sleep(0.2)
    raise AssertionError(f"no set was seen whole in {timeout_s:.0f} s")


def test_no_card_of_a_deal_still_to_be_played_is_sent_while_its_game_is_live(
        watched: dict[str, Any]) -> None:
    url, seen = watched["url"], watched["seen"]
    first, ended = wait_for_a_whole_watched_set(url, seen)
    deal = deal_codes(url, first)
    assert len(deal) == 3 * 7 + 1  # three hands of seven and the turned card, all codes
    assert all(CARD.fullmatch(c) for c in deal)
    hidden_with_cards = {"events": 0, "state.json": 0}
    shown_with_cards = 0
    for source, at, raw, state in messages(seen):
        live = state["live"]
        hidden = [g for g in live if to_come(g, at, ended)]
        for game_id in hidden:
            sent = live_slice(raw, game_id)
            leaked = CARD.findall(sent)
            assert not leaked, (game_id, leaked, sent[:400])
            entry = live[game_id]["state"]
            if entry:
                assert entry["cards_shown"] is False and entry["rotations_to_come"] > 0
                assert entry["trump_card"] is None and entry["trump"] is None
                hidden_with_cards[source] += played(entry) > 0
        if live and len(hidden) == len(live):  # nothing else live: nothing at all
            assert not CARD.findall(raw), raw[:400]
        for game_id in live:
            entry = live[game_id]["state"]
            if game_id in (first, *others(first)) and last_to_play(game_id, at, ended) \
                    and entry and played(entry):
                sent = live_slice(raw, game_id)
                codes = set(CARD.findall(sent))
                assert codes and codes <= deal, (codes, deal)  # the control: its cards
                assert entry["cards_shown"] is True and entry["trump_card"].encode() in deal
                shown_with_cards += 1
    assert all(hidden_with_cards.values()), (
        "no game with others to come was seen with a card played", hidden_with_cards)
    assert shown_with_cards, "the last rotation of the watched set was not seen with cards"
    # WatchEvents: every field of every message of the league's (all but the author's own
    # submission's check-bot report, of check-bot's own situations), as sent, holds no
    # card code at all
    assert seen.grpc
    progress = 0
    for _, raw in seen.grpc:
        message = league_pb2.WatchEventsResponse.FromString(raw)
        if message.kind == league_pb2.EVENT_KIND_SUBMISSION:
            continue
        for desc, value in message.ListFields():
            values = [value] if isinstance(value, str | bytes | int | float) else list(value)
            for v in values:
                if isinstance(v, str | bytes):
                    text = v.encode() if isinstance(v, str) else v
                    assert not CARD.findall(text), (desc.name, text)
        progress += message.kind == league_pb2.EVENT_KIND_GAME_PROGRESS
    assert progress  # the moves were streamed
    print(f"\nfigure: {len(seen.events)} event messages, {len(seen.states)} state.json "
          f"bodies, {len(seen.grpc)} WatchEvents messages; states of a game with others to "
          f"come that had cards played and sent none: {hidden_with_cards}; of the last "
          f"rotation, showing them: {shown_with_cards}")


def current_set(url: str) -> int:
    """The highest set number the page knows of (live or finished)."""
    with urlopen(url + "state.json", timeout=10) as reply:
        state = json.loads(reply.read())
    ids = [*state["live"], *(g["game_id"] for g in state["recent"])]
    found = [m for m in map(GAME.fullmatch, ids) if m is not None]
    return max((int(m.group(1)) for m in found), default=0)


def test_the_watch_page_shows_cards_face_down_and_says_why(
        watched: dict[str, Any], context: tuple[BrowserContext, Watch]) -> None:
    """Opened before the set is played: its first rotation is drawn with its cards face
    down and the page says why; its last rotation with its cards."""
    ctx, watch = context
    url = watched["url"]
    watch.origin = url
    table = current_set(url) + 2  # not started yet: one game at a time
    first = open_page(ctx, url + f"watch/t{table}-d1-r0")
    first.wait_for_selector("main[data-cards='hidden']", timeout=120_000)
    first.wait_for_selector("#trick .card.back, #tricks-log .card.back", timeout=60_000)
    assert first.is_visible("#cards-hidden")
    note = " ".join(first.inner_text("#cards-hidden").split())
    assert note.startswith("Cards are hidden while other rotations of this deal are still "
                           "to be played (2 more rotations); the replay opens when the set "
                           "is complete"), note
    assert first.eval_on_selector_all("[data-card]:not([data-card=''])", "cs => cs.length") == 0
    assert "Trump: hidden" in first.inner_text("#trump")
    last = open_page(ctx, url + f"watch/t{table}-d1-r{SEATS - 1}")
    last.wait_for_selector("main[data-cards='shown']", timeout=120_000)
    last.wait_for_selector("#trick [data-card]:not([data-card='']), "
                           "#tricks-log [data-card]:not([data-card=''])", timeout=60_000)
    assert not last.is_visible("#cards-hidden")
    assert last.eval_on_selector_all(".card.back", "cs => cs.length") == 0
    watch.check()
