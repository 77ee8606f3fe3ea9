"""The league service's bounds against a hostile author or client (issue 35): what one
author may hold of the gRPC server, the limit on wrong tokens, and the authors kept in
memory (no file I/O on the trio thread that plays the games).

Two kinds of server: a real ``arena league serve`` process (the league runner playing
sandboxed games, the service in front, the live page beside it) on 127.0.0.1 port 0, and,
where a test needs to watch the process from inside (an audit hook on the trio thread) or
to set a cap, :func:`arena.league_service.server.serve_league` in this process, in front of an
empty league (:class:`EmptyLeague`). Every call is real gRPC through the real client.

Each hostile test has its control: the other author (or client) served while the hostile
one is refused, and the hostile one served again once it lets go."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import grpc
import pytest
import trio
from conftest import wait_until
from league_helpers import League, bot_folder, submit, submit_bytes, wait_clean

from arena.league.authors import AuthorFile, add_author, revoke, rotate_token, token_digest
from arena.league_service.server import Serving, serve_league
from arena.league_service.service import AUTHORS_POLL_S, WrongTokens
from arena.model.league_api import (
    ACCEPTED,
    REFUSED,
    AuthorLimits,
    BotDetail,
    FieldBot,
    GameSummary,
    LeagueError,
    LeagueEvent,
    LiveGame,
    SeasonInfo,
    Standing,
)
from arena.v1 import league_pb2, league_pb2_grpc
from arena.wire.league_client import LeagueCallError, LeagueClient
from arena.wire.league_server import ServiceCaps, client_of

STREAM_CAP = ServiceCaps().streams_per_author
CALL_CAP = ServiceCaps().calls_per_author
BURST = WrongTokens().burst
PER_S = WrongTokens().per_s
WRONG = "arena_" + "B" * 43
"""A token of the right form that is nobody's."""


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


@pytest.fixture(scope="module")
def league(tmp_path_factory: pytest.TempPathFactory) -> Iterator[League]:
    root = tmp_path_factory.mktemp("league-limits")
    tmp = Path(os.path.realpath(root / "tmp"))
    tmp.mkdir()
    server = League(root / "out", tmp, web=True, check_games=0)
    server.out.mkdir()
    server.start()
    try:
        yield server
    finally:
        server.stop()
    assert wait_clean(server) == []


# -- what one author may hold ------------------------------------------------------------


def test_one_author_with_100_streams_leaves_the_others_served(league: League,
                                                              tmp_path: Path) -> None:
    hostile, honest = league.author("hostile"), league.author("honest")
    channels = [grpc.insecure_channel(league.target) for _ in range(4)]
    streams: list[Any] = []
    try:
        for i in range(100):
            stub = league_pb2_grpc.LeagueServiceStub(channels[i % len(channels)])
            streams.append(stub.WatchEvents(league_pb2.WatchEventsRequest(), timeout=300,
                                            metadata=bearer(hostile)))
        with league.client(honest) as client:
            # while the hostile author holds what it may, the other one is served
            assert client.status().author == "honest"
            # the hostile author's streams past the cap are refused at once, in one line
            assert wait_until(lambda: sum(s.done() for s in streams) >= 100 - STREAM_CAP, 60)
            refused = [s for s in streams if s.done()]
            kept = [s for s in streams if not s.done()]
            assert len(refused) == 100 - STREAM_CAP and len(kept) == STREAM_CAP
            for call in refused:
                assert call.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
                assert call.details() == (f"too many event streams: {STREAM_CAP} open for "
                                          f"author hostile, the cap is {STREAM_CAP} per "
                                          f"author")
            steps = submit(client, bot_folder(tmp_path, "honest-bot"))
            assert steps[-1].verdict == ACCEPTED, steps[-1].text
            assert "honest-bot" in [b.name for b in client.status().bots]
            # the other author's own stream is let in, and served (its bot plays now)
            own = client.stub.WatchEvents(league_pb2.WatchEventsRequest(), timeout=120,
                                          metadata=client.metadata)
            try:
                assert next(own).kind != league_pb2.EVENT_KIND_UNSPECIFIED
            finally:
                own.cancel()
        # the hostile author's streams within the cap are served too
        for call in kept:
            assert next(call).kind != league_pb2.EVENT_KIND_UNSPECIFIED
        # and one closed gives its place back
        kept[0].cancel()
        stub = league_pb2_grpc.LeagueServiceStub(channels[0])
        deadline = time.monotonic() + 30
        while True:
            again = stub.WatchEvents(league_pb2.WatchEventsRequest(), timeout=120,
                                     metadata=bearer(hostile))
            try:
                next(again)
                break
            except grpc.RpcError as e:  # the server has not seen the cancel yet
                assert e.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
                assert time.monotonic() < deadline, "the place was never given back"
                time.sleep(0.05)
        again.cancel()
    finally:
        for call in streams:
            call.cancel()
        for channel in channels:
            channel.close()


def _no_header(release: threading.Event) -> Iterator[league_pb2.SubmitRequest]:
    """A Submit's requests that send nothing until ``release``: the call stays open."""
    release.wait(120)
    yield from ()


def test_calls_at_once_are_capped_per_author(league: League) -> None:
    holder, bystander = league.author("holder"), league.author("bystander")
    release = threading.Event()
    channel = grpc.insecure_channel(league.target)
    stub = league_pb2_grpc.LeagueServiceStub(channel)
    calls = [stub.Submit(_no_header(release), timeout=300, metadata=bearer(holder))
             for _ in range(CALL_CAP + 4)]
    try:
        assert wait_until(lambda: sum(c.done() for c in calls) >= 4, 60)
        refused = [c for c in calls if c.done()]
        assert len(refused) == 4
        for call in refused:
            assert call.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert call.details() == (f"too many calls at once: {CALL_CAP} in flight for "
                                      f"author holder, the cap is {CALL_CAP} per author")
        with league.client(holder) as client:
            with pytest.raises(LeagueCallError) as error:
                client.status()
            assert error.value.code == "RESOURCE_EXHAUSTED"
        with league.client(bystander) as client:  # the other author is served
            assert client.status().author == "bystander"
            steps = submit_bytes(client, b"not an archive")
            assert steps[-1].verdict == REFUSED and "gzip" in steps[-1].text, steps[-1].text
    finally:
        release.set()
    for call in calls:
        if call not in refused:  # the held ones end once they send no header
            with pytest.raises(grpc.RpcError) as ended:
                list(call)
            assert ended.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    channel.close()
    with league.client(holder) as client:  # every place given back
        assert client.status().author == "holder"


# -- wrong tokens ------------------------------------------------------------------------


def _status_or_error(client: LeagueClient) -> tuple[str, str]:
    try:
        return "OK", client.status().author
    except LeagueCallError as e:
        return e.code, str(e)


def test_wrong_tokens_are_limited_per_client(league: League) -> None:
    right = league.author("guesser")
    with league.client(right) as client:
        assert _status_or_error(client) == ("OK", "guesser")
    with league.client(WRONG) as wrong:
        started = time.monotonic()
        answers = [_status_or_error(wrong) for _ in range(4 * BURST)]
        elapsed = time.monotonic() - started
        heard = sum(code == "UNAUTHENTICATED" for code, _ in answers)
        refused = [text for code, text in answers if code == "RESOURCE_EXHAUSTED"]
        # BURST at once, then PER_S a second: the rest refused before the token is looked at
        assert BURST <= heard <= BURST + PER_S * elapsed + 1, (heard, elapsed)
        assert refused and heard + len(refused) == len(answers)
        assert all(re.fullmatch(r"too many wrong tokens from this client; wait \d+ s", t)
                   for t in refused), refused
        # the live page's /api/ authenticates through the same limit, for the same client:
        # refused too while the client is past it (the limit refills meanwhile, so the
        # client is brought past it again before each try)
        assert league.web_url is not None
        api = league.web_url + "api/my-games"
        tries: list[tuple[int, str]] = []

        def web_refused() -> bool:
            while _status_or_error(wrong)[0] != "RESOURCE_EXHAUSTED":
                pass
            tries.append(_web_get(api, WRONG))
            status, body = tries[-1]
            return status != 200 and "too many wrong tokens from this client" in body

        assert wait_until(web_refused, 30), tries[-3:]
    # once it waits, the client is heard again
    with league.client(right) as client:
        assert wait_until(lambda: _status_or_error(client) == ("OK", "guesser"), 30)


def _web_get(url: str, token: str) -> tuple[int, str]:
    request = Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urlopen(request, timeout=10) as reply:
            return reply.status, reply.read().decode()
    except HTTPError as e:
        return e.code, e.read().decode()


# -- authors changed in another terminal -------------------------------------------------


def test_an_author_added_rotated_or_revoked_elsewhere_counts_at_once(league: League) -> None:
    store = AuthorFile.in_folder(league.out)  # this process is the other terminal
    token = add_author(store, "newcomer")
    with league.client(token) as client:  # known at once: an unknown token has a look
        assert client.status().author == "newcomer"
    fresh = rotate_token(store, "newcomer")
    with league.client(fresh) as client:
        assert client.status().author == "newcomer"
    with league.client(token) as client:  # the old one stops within a look
        assert wait_until(lambda: _status_or_error(client)[0] == "UNAUTHENTICATED",
                          10 * AUTHORS_POLL_S)
    revoke(store, "newcomer")
    with league.client(fresh) as client:
        assert wait_until(lambda: _status_or_error(client)[0] == "UNAUTHENTICATED",
                          10 * AUTHORS_POLL_S)


# -- in this process: the trio thread watched from inside ---------------------------------


class EmptyLeague:
    """A league with no bots and no games: the backend, for what the service does on its
    own (who is calling, the count of submissions, archives refused before a check)."""

    async def field(self) -> Sequence[FieldBot]:
        return ()

    async def add(self, author: str, name: str, spec: str, folder: Path,
                  version: str) -> FieldBot:
        raise LeagueError("this league takes no bots")

    update = add

    async def retire(self, author: str, name: str) -> FieldBot:
        raise LeagueError("this league has no bots")

    async def standings(self) -> Sequence[Standing]:
        return ()

    async def recent_games(self, n: int) -> Sequence[GameSummary]:
        return ()

    async def games_of(self, author: str) -> Sequence[GameSummary]:
        return ()

    async def log_path(self, author: str, game_id: str) -> Path | None:
        return None

    async def live_games(self) -> Sequence[LiveGame]:
        return ()

    async def record(self, game_id: str) -> dict[str, object] | None:
        return None

    async def bot(self, name: str) -> BotDetail | None:
        return None

    async def season(self) -> SeasonInfo:
        return SeasonInfo(1, 0.0, "0" * 64, 0)

    async def _none(self) -> AsyncIterator[LeagueEvent]:
        await trio.sleep_forever()
        yield LeagueEvent("never", 0.0, "")

    def events(self) -> AsyncIterator[LeagueEvent]:
        return self._none()


AUTHORS_IO = ("open", "os.rename", "os.remove")
_watched: dict[str, Any] = {"thread": None, "seen": []}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Every open, rename and remove of a path of the authors' store, with the thread."""
    if _watched["thread"] is None or event not in AUTHORS_IO:
        return
    if any("authors.json" in str(a) for a in args[:2]):
        _watched["seen"].append((event, str(args[0]), threading.get_ident()))


sys.addaudithook(_audit)


def serve_here(out: Path, store: AuthorFile, work: Callable[[int], None],
               caps: ServiceCaps | None = None) -> list[tuple[str, str, int]]:
    """Serve an empty league on 127.0.0.1 port 0 in this process and run ``work(port)``
    on a thread; the authors' store I/O seen meanwhile, as (event, path, thread), and the
    trio thread's id as ``_watched["trio"]``."""
    async def main() -> None:
        _watched["trio"] = threading.get_ident()
        async with trio.open_nursery() as nursery:
            serving: Serving = await nursery.start(lambda task_status: serve_league(
                EmptyLeague(), out, "127.0.0.1:0", authors=store, caps=caps or ServiceCaps(),
                task_status=task_status))
            _watched.update(thread=threading.get_ident(), seen=[])
            try:
                await trio.to_thread.run_sync(work, serving.port)
            finally:
                _watched["thread"] = None
                nursery.cancel_scope.cancel()

    trio.run(main)
    return list(_watched["seen"])


def test_no_file_io_of_the_authors_on_the_trio_thread(tmp_path: Path) -> None:
    out = tmp_path / "out"
    store = AuthorFile.in_folder(out)
    token = add_author(store, "alice", AuthorLimits(submissions_per_hour=100))
    past = time.time() - 60  # a file that settled long ago: one read is trusted
    os.utime(store.path, (past, past))
    reads_before, writes_before = store.reads, store.writes

    def work(port: int) -> None:
        with LeagueClient(f"127.0.0.1:{port}", token) as client:
            for _ in range(200):
                assert client.status().author == "alice"
            for _ in range(3):
                steps = submit_bytes(client, b"not an archive")
                assert steps[-1].verdict == REFUSED
            assert client.status().submissions_last_hour == 3

    started = time.monotonic()
    seen = serve_here(out, store, work)
    elapsed = time.monotonic() - started
    trio_thread = _watched["trio"]
    on_trio = [(event, path) for event, path, thread in seen if thread == trio_thread]
    assert on_trio == []
    # the control: the hook does see the store's I/O, on the threads that do it
    renames = [path for event, path, thread in seen if event == "os.rename"]
    assert len(renames) == 3  # one write per submission counted, none per call
    assert store.writes - writes_before == 3
    # 203 authenticated calls, and the file read only: once at the start, once by each
    # write (under its lock), and at a look (every AUTHORS_POLL_S) when it changed or
    # within RACY_S of a change; never per call
    looks = elapsed / AUTHORS_POLL_S + 1
    assert store.reads - reads_before <= 1 + 3 + looks, (store.reads - reads_before, looks)


def test_a_submit_that_sends_no_header_is_given_up(tmp_path: Path) -> None:
    out = tmp_path / "out"
    store = AuthorFile.in_folder(out)
    token = add_author(store, "slow")
    release = threading.Event()
    result: dict[str, Any] = {}

    def work(port: int) -> None:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = league_pb2_grpc.LeagueServiceStub(channel)
            call = stub.Submit(_no_header(release), timeout=60, metadata=bearer(token))
            try:
                list(call)
            except grpc.RpcError as e:
                result.update(code=e.code(), details=e.details())
            finally:
                release.set()

    serve_here(out, store, work, ServiceCaps(header_timeout_s=0.5))
    assert result == {"code": grpc.StatusCode.INVALID_ARGUMENT,
                      "details": "no submission header within 0.5 s"}


# -- the limit on wrong tokens, by its clock -----------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_wrong_token_bucket_by_its_clock() -> None:
    clock = Clock()
    bucket = WrongTokens(per_s=2.0, burst=5, clock=clock, clients=3)
    for _ in range(5):
        assert bucket.wait_s("a") == 0
        bucket.wrong("a")
    assert bucket.wait_s("a") == pytest.approx(0.5)
    assert bucket.wait_s("b") == 0  # the control: another client is heard
    clock.now += 0.5
    assert bucket.wait_s("a") == 0  # one came back
    bucket.wrong("a")
    assert bucket.wait_s("a") == pytest.approx(0.5)
    clock.now += 100
    assert bucket.wait_s("a") == 0
    for _ in range(5):
        bucket.wrong("a")
    assert bucket.wait_s("a") > 0  # the burst does not grow past its size while waiting
    for client in ("b", "c", "d"):  # at most 3 remembered: the least recently wrong goes
        bucket.wrong(client)
    assert bucket.wait_s("a") == 0


def test_a_client_past_the_limit_is_refused_even_with_a_right_token(tmp_path: Path) -> None:
    from arena.league_service.checks import BundleCheck
    from arena.league_service.service import LeagueService
    from arena.model.league_api import ServiceError

    store = AuthorFile.in_folder(tmp_path)
    right = add_author(store, "alice")
    clock = Clock()
    service = LeagueService(EmptyLeague(), store, tmp_path, BundleCheck(),
                            wrong_tokens=WrongTokens(per_s=1.0, burst=3, clock=clock))
    service.prepare()

    async def answer(token: str, client: str) -> str:
        try:
            return (await service.authenticate(token, client)).name
        except ServiceError as e:
            return f"{e.code}: {e}"

    async def main() -> None:
        assert await answer(right, "10.0.0.1") == "alice"
        unknown = "unauthenticated: this token is not one of the league's authors'"
        assert [await answer(WRONG, "10.0.0.1") for _ in range(3)] == [unknown] * 3
        past = "resource_exhausted: too many wrong tokens from this client; wait 1 s"
        assert await answer(WRONG, "10.0.0.1") == past
        assert await answer(right, "10.0.0.1") == past  # a right guess gets no further
        assert await answer("", "10.0.0.1") == past
        assert await answer(right, "10.0.0.2") == "alice"  # the control: another client
        clock.now += 1.0
        assert await answer(right, "10.0.0.1") == "alice"

    trio.run(main)


@pytest.mark.parametrize(("peer", "client"), [
    ("ipv4:192.0.2.7:50312", "192.0.2.7"),
    ("ipv6:[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"),
    ("ipv6:%5B2001:db8:1:2::9%5D:443", "2001:db8:1:2::/64"),
    ("ipv6:[::ffff:192.0.2.7]:50312", "192.0.2.7"),
    ("unix:/run/league.sock", "unix:/run/league.sock"),
])
def test_the_client_of_a_peer(peer: str, client: str) -> None:
    assert client_of(peer) == client



# -- the authors' file ---------------------------------------------------------------------


def _settle(path: Path) -> None:
    """Date the file a minute back, as a file changed long ago is."""
    past = time.time() - 60
    os.utime(path, (past, past))


def test_the_authors_file_is_read_again_only_when_it_changed(tmp_path: Path) -> None:
    store = AuthorFile.in_folder(tmp_path)
    add_author(store, "alice")
    _settle(store.path)
    reads = store.reads
    for _ in range(100):
        assert store.get("alice") is not None and store.all()
    assert store.reads == reads + 1
    add_author(AuthorFile.in_folder(tmp_path), "bob")  # another terminal
    assert store.get("bob") is not None  # a new inode, size and times: read again
    assert store.reads == reads + 2
    # read within RACY_S of its change, the copy is not trusted: a change in the same
    # tick of the file system's clock, of the same size, would not show
    assert store.get("bob") is not None
    assert store.reads == reads + 3
    _settle(store.path)
    assert store.get("bob") is not None and store.get("alice") is not None
    assert store.reads == reads + 4


def test_two_writers_at_once_lose_no_change(tmp_path: Path) -> None:
    from arena.league.authors import take_submission

    store = AuthorFile.in_folder(tmp_path)
    for name in ("alice", "bob"):
        add_author(store, name, AuthorLimits(submissions_per_hour=1000))
    now = time.time()
    errors: list[BaseException] = []

    def count(name: str) -> None:
        own = AuthorFile.in_folder(tmp_path)  # as another process would, with its own copy
        try:
            for i in range(25):
                take_submission(own, name, now + i / 100)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=count, args=(n,)) for n in ("alice", "bob")]
    for thread in threads:
        thread.start()
    rotated = rotate_token(store, "alice")  # and a third writer, meanwhile
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    after = AuthorFile.in_folder(tmp_path)
    assert {n: len(after.get(n).submissions) for n in ("alice", "bob")  # type: ignore[union-attr]
            } == {"alice": 25, "bob": 25}
    assert after.by_digest(token_digest(rotated)) == after.get("alice")
