"""The bounded HTTP server (:mod:`arena.http.server`) on real sockets, 127.0.0.1 port 0.

Covered: a flood of half-sent requests holds no thread, an honest request is answered
through it (the oldest waiting connection makes room) and the flood is closed at its
deadline (control: the same flood with the deadline switched off stays open); when
every connection is busy a new one is answered 503; the cap on event streams; one render
per change for every stream, coalesced; a stream that does not read is dropped; the
sizes (headers, body), methods and headers of every answer; TLS, whose handshake is
under the same deadline. No timing is asserted: deadlines are waited for as conditions.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest
from test_remote_tls import Certs, certs  # noqa: F401  (the fixture)

from arena.http.server import BoundedServer, Limits, Request, Response, Stream

HEADERS = (("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store"))


class Served:
    """A server with a few routes: ``/`` answers at once, ``/hold`` waits for
    :attr:`release`, ``/events`` is the feed's stream."""

    def __init__(self, limits: Limits, context: ssl.SSLContext | None = None) -> None:
        self.state = {"n": 0}
        self.release: asyncio.Event | None = None
        self.held = 0
        self.server = BoundedServer("127.0.0.1", 0, self.answer, name="test-http",
                                    limits=limits, context=context, headers=HEADERS,
                                    methods=("GET", "HEAD", "POST"))
        self.feed = self.server.feed(self.render, interval=0.05, keep_alive=30)
        self.server.start()
        self.url = f"http://127.0.0.1:{self.server.port}/"

    def render(self) -> tuple[bytes, bool]:
        return f"data: {json.dumps(self.state)}\n\n".encode(), False

    async def answer(self, request: Request) -> Response | Stream:
        if request.path == "/events":
            return Stream(self.feed)
        if request.path == "/hold":
            if self.release is None:
                self.release = asyncio.Event()
            self.held += 1
            await self.release.wait()
        if request.path == "/big":
            return Response(200, b"x" * (8 << 20))
        return Response(200, f"{request.method} {request.path} {len(request.body)}".encode())


@pytest.fixture
def served() -> Iterator[Callable[..., Served]]:
    made: list[Served] = []

    def make(limits: Limits, context: ssl.SSLContext | None = None) -> Served:
        made.append(Served(limits, context))
        return made[-1]

    yield make
    for s in made:
        s.server.close()


def wait_until(predicate: Callable[[], Any], timeout: float = 30, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"not within {timeout} s: {what}")


def half_sent(port: int, n: int) -> list[socket.socket]:
    """``n`` connections that each send the start of a request and no more."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
    return socks


def closed_by_server(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True  # reset


def get(url: str, timeout: float = 10) -> tuple[int, bytes, dict[str, str]]:
    try:
        with urlopen(url, timeout=timeout) as reply:
            return reply.status, reply.read(), dict(reply.headers)
    except HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_a_flood_of_half_sent_requests_holds_no_thread_and_is_closed_at_its_deadline(
        served: Callable[..., Served]) -> None:
    s = served(Limits(connections=64, request_s=1.0))
    threads = threading.active_count()
    flood = half_sent(s.server.port, 300)
    status, body, _ = get(s.url + "honest")  # through the flood: the oldest made room
    assert (status, body) == (200, b"GET /honest 0")
    assert threading.active_count() <= threads + 2  # no thread per connection
    assert s.server.connections <= 64
    assert s.server.evicted + s.server.timed_out >= 300 - 64  # made room, or too late
    assert s.server.evicted > 0
    wait_until(lambda: all(closed_by_server(c) for c in flood), what="the flood closed")
    assert s.server.timed_out >= 1
    for c in flood:
        c.close()


def test_control_without_the_deadline_the_half_sent_requests_stay_open(
        served: Callable[..., Served]) -> None:
    """The same flood, with the deadline switched off (an hour): nothing closes the
    connections the cap leaves in (the test above sees the deadline's effect)."""
    on = served(Limits(connections=64, request_s=0.5))
    off = served(Limits(connections=64, request_s=3600))
    flood_on, flood_off = half_sent(on.server.port, 10), half_sent(off.server.port, 10)
    wait_until(lambda: all(closed_by_server(c) for c in flood_on), what="closed")
    assert not any(closed_by_server(c) for c in flood_off)
    assert off.server.timed_out == 0 and off.server.connections == 10
    for c in flood_on + flood_off:
        c.close()


def test_when_every_connection_is_busy_a_new_one_is_answered_503(
        served: Callable[..., Served]) -> None:
    s = served(Limits(connections=4, request_s=5))
    holders = []
    for _ in range(4):
        c = socket.create_connection(("127.0.0.1", s.server.port), timeout=10)
        c.sendall(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        holders.append(c)
    wait_until(lambda: s.held == 4, what="four requests held")
    status, body, headers = get(s.url)
    assert status == 503 and headers.get("Retry-After") == "1"
    assert body == b"the server is busy; try again\n"
    assert s.server.refused == 1
    assert s.release is not None
    s.server.call_soon(s.release.set)
    for c in holders:
        assert c.recv(4096).startswith(b"HTTP/1.1 200 OK")
        c.close()
    assert get(s.url)[0] == 200


def test_event_streams_are_capped_and_share_one_render_per_change(
        served: Callable[..., Served]) -> None:
    s = served(Limits(connections=16, streams=3, request_s=5))
    streams = [urlopen(s.url + "events", timeout=10) for _ in range(3)]
    first = [st.readline() for st in streams]
    assert first[0].startswith(b"data: ") and len(set(first)) == 1
    assert get(s.url + "events")[0] == 503  # a fourth stream
    renders = s.feed.renders
    for i in range(1, 2001):
        s.state = {"n": i}
        s.feed.changed()
    for st in streams:  # each gets the last state, rendered once for all
        line = b""
        while line != b'data: {"n": 2000}\n':
            line = st.readline()
    assert s.feed.renders - renders < 50  # 2,000 changes, coalesced
    assert s.feed.following == 3
    for st in streams:
        st.close()
    wait_until(lambda: s.feed.following == 0, what="the streams gone")
    with urlopen(s.url + "events", timeout=10) as again:
        assert again.readline() == b'data: {"n": 2000}\n'


def test_a_stream_that_does_not_read_is_dropped(served: Callable[..., Served]) -> None:
    s = served(Limits(connections=16, streams=4, request_s=5, stream_buffer=64 << 10))
    idle = socket.socket()
    idle.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before the connect
    idle.connect(("127.0.0.1", s.server.port))
    idle.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
    wait_until(lambda: s.feed.following == 1, what="the stream open")
    pad = "x" * 200_000
    i = 0
    while s.feed.following and i < 10_000:  # never read: the kernel's buffers fill
        i += 1
        s.state = {"n": i, "pad": pad}  # type: ignore[dict-item]
        s.feed.changed()
        time.sleep(0.05)
    assert s.feed.following == 0  # dropped: its unsent bytes passed 64 KiB
    idle.close()


def test_sizes_methods_and_headers(served: Callable[..., Served]) -> None:
    s = served(Limits(connections=16, request_s=5, header_bytes=2048, body_bytes=16))
    status, _, headers = get(s.url)
    assert status == 200
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Cache-Control"] == "no-store"
    port = s.server.port
    assert raw(port, b"GET / HTTP/1.1\r\nX: " + b"a" * 4096 + b"\r\n\r\n").startswith(
        b"HTTP/1.1 431 ")
    assert raw(port, b"POST / HTTP/1.1\r\nContent-Length: 17\r\n\r\n" + b"a" * 17
               ).startswith(b"HTTP/1.1 413 ")
    assert raw(port, b"POST / HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\n"
                     b"abc").endswith(b"POST / 3")
    assert raw(port, b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").startswith(
        b"HTTP/1.1 411 ")
    assert raw(port, b"DELETE / HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 501 ")
    assert raw(port, b"nonsense\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    head = raw(port, b"HEAD /x HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and head.endswith(b"\r\n\r\n")
    assert b"Content-Length: 9\r\n" in head  # "HEAD /x 0": its length, no body
    # two requests on one connection (keep-alive), then close
    two = raw(port, b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert two.count(b"HTTP/1.1 200 OK") == 2 and two.endswith(b"GET /b 0")


def test_an_answer_not_taken_in_time_is_dropped(served: Callable[..., Served]) -> None:
    s = served(Limits(connections=16, request_s=5, write_s=0.5))
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before the connect
    c.connect(("127.0.0.1", s.server.port))
    c.sendall(b"GET /big HTTP/1.1\r\n\r\n")  # 8 MiB, never read
    wait_until(lambda: s.server.dropped == 1, what="the reader dropped")
    wait_until(lambda: s.server.connections == 0, what="its connection closed")
    c.close()


def test_tls_and_a_handshake_that_never_comes(served: Callable[..., Served],
                                              certs: Certs) -> None:  # noqa: F811
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(certs.cert), str(certs.key))
    s = served(Limits(connections=16, request_s=0.5), context)
    client = ssl.create_default_context(cafile=str(certs.ca))
    with urlopen(f"https://127.0.0.1:{s.server.port}/tls", context=client,
                 timeout=10) as reply:
        assert reply.read() == b"GET /tls 0"
    silent = socket.create_connection(("127.0.0.1", s.server.port), timeout=10)
    wait_until(lambda: closed_by_server(silent), what="the silent handshake closed")
    silent.close()
    try:  # a plain request to the TLS port gets no plain answer
        answer = raw(s.server.port, b"GET / HTTP/1.1\r\n\r\n")
    except ConnectionError:
        answer = b""
    assert not answer.startswith(b"HTTP/")
