"""A bounded HTTP/1.1 server on a thread of its own.

:class:`BoundedServer` runs one asyncio loop in one thread: a connection is a coroutine,
never a thread, so a thousand idle or half-sent connections cost memory for their
buffers and nothing else. What one client can take is bounded (:class:`Limits`):

- **connections**: at most ``connections`` at once. When they are all taken, a new one
  closes the oldest connection that is still waiting for its request (a half-sent
  request, an idle keep-alive); if every one is busy answering, the new one is answered
  503 and closed. So a flood of half-sent requests delays an honest request by a round
  trip, never past the flood's own deadline;
- **a deadline per request**: a request (its line, headers and body; the TLS handshake
  first) must arrive whole within ``request_s`` seconds of the moment the server waits
  for it (after the connection opened, or after the previous answer on a kept-alive
  connection); else the connection is closed;
- **sizes**: the request line and headers ``header_bytes`` (431 past it), a body
  ``body_bytes`` (413 past it; chunked bodies are refused, 411);
- **slow readers**: an answer must be taken within ``write_s`` seconds; an event stream
  whose unsent data passes ``stream_buffer`` bytes is closed (its page reconnects and
  gets the state of then);
- **event streams**: at most ``streams`` at once (503 past it, with ``Retry-After``).
  A stream follows a :class:`Feed`: one broadcaster renders each change ONCE (in this
  thread) and writes the same bytes to every stream; changes closer together than the
  feed's ``interval`` are coalesced into one message;
- **handlers**: a handler is a coroutine of this loop and has ``handler_s`` seconds (503
  after). Blocking work (a file to read) goes to a fixed pool of ``workers`` threads
  (:meth:`BoundedServer.blocking`); work in another thread's trio loop goes through
  :class:`arena.http.trio_calls.TrioCalls`.

Every answer carries the server's ``headers`` (the pages' security headers) besides its
own. Methods other than those the server is given are answered 501.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Limits:
    """What one client may take of a :class:`BoundedServer`."""

    connections: int = 256
    """Connections open at once (event streams included)."""
    streams: int = 64
    """Event streams open at once."""
    request_s: float = 5.0
    """A request (line, headers and body; the TLS handshake first) must arrive whole in
    this many seconds from the moment the server waits for it."""
    header_bytes: int = 8192
    """The request line and headers, at most."""
    body_bytes: int = 0
    """A request's body, at most (0: none is taken)."""
    write_s: float = 10.0
    """An answer must be taken by the client in this many seconds."""
    stream_buffer: int = 1 << 20
    """Unsent bytes an event stream may hold before it is closed."""
    handler_s: float = 15.0
    """The longest a handler may take (503 after)."""
    workers: int = 2
    """Threads for blocking work (:meth:`BoundedServer.blocking`)."""


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    target: str
    """As sent (path and query)."""
    version: str
    """``HTTP/1.1`` or ``HTTP/1.0``."""
    path: str
    """The target's path, percent-decoded."""
    query: str
    headers: Mapping[str, str]
    """By lower-case name (repeated headers joined with ``, ``)."""
    body: bytes
    client: str


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


def text(status: int, message: str) -> Response:
    """A plain-text answer of one line."""
    return Response(status, (message.rstrip("\n") + "\n").encode())


@dataclass(frozen=True, slots=True)
class Stream:
    """The answer that turns the connection into an event stream of ``feed`` (status 200,
    ``text/event-stream``), until the client leaves or the feed ends."""

    feed: Feed
    headers: tuple[tuple[str, str], ...] = ()


Handler = Callable[[Request], Awaitable[Response | Stream]]

_WAITING, _BUSY, _STREAM = "waiting", "busy", "stream"
STOP_GRACE_S = 2.0
"""How long a stopping server waits for its connections' tasks to end."""
LINGER_S = 1.0
"""How long a refused connection's input is read (and dropped) before it is closed."""


class _Conn:
    __slots__ = ("client", "since", "state", "writer")

    def __init__(self, writer: asyncio.StreamWriter, client: str) -> None:
        self.writer = writer
        self.client = client
        self.since = time.monotonic()
        self.state = _WAITING

    def abort(self) -> None:
        transport = self.writer.transport
        if not transport.is_closing():
            transport.abort()


class _Refused(Exception):
    """A request the server answers itself (and then closes the connection)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Feed:
    """Server-sent events for every stream that follows it (make it with
    :meth:`BoundedServer.feed`).

    :meth:`changed` (from any thread, cheap: it only marks) tells that the state moved;
    the feed's one broadcaster then calls ``render`` once, in the server's thread, and
    writes its bytes to every stream, at most once every ``interval`` seconds (changes in
    between are coalesced). ``render`` returns the message (``data: ...\\n\\n``) and
    whether it is the last: then every stream is closed after it, and a stream opened
    later gets it and is closed. After ``keep_alive`` seconds without a message, a
    comment line is sent (so a dead connection shows)."""

    def __init__(self, server: BoundedServer, render: Callable[[], tuple[bytes, bool]],
                 interval: float, keep_alive: float) -> None:
        self._server = server
        self._render = render
        self.interval = interval
        self.keep_alive = keep_alive
        self._flag = threading.Lock()
        self._marked = False
        self._wake: asyncio.Event | None = None
        self._message: bytes | None = None
        self._last = False
        self._streams: list[_Conn] = []
        self.renders = 0
        """How many times ``render`` was called (the tests read it)."""

    def changed(self) -> None:
        """The state moved: render it again soon (thread-safe)."""
        with self._flag:
            if self._marked:
                return
            self._marked = True
        self._server.call_soon(self._woken)

    def _woken(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _current(self) -> tuple[bytes, bool]:
        if self._message is None:
            with self._flag:
                self._marked = False
            self._message, self._last = self._render()
            self.renders += 1
        return self._message, self._last

    async def _run(self) -> None:
        """The broadcaster (a task of the server's loop)."""
        self._wake = asyncio.Event()
        if self._marked:
            self._wake.set()
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self.keep_alive)
            except TimeoutError:
                self._send(b": keep-alive\n\n", False)
                continue
            self._wake.clear()
            self._message = None
            if self._streams:  # none following: rendered when one comes
                message, last = self._current()
                self._send(message, last)
            await asyncio.sleep(self.interval)

    def _send(self, message: bytes, last: bool) -> None:
        limit = self._server.limits.stream_buffer
        for conn in list(self._streams):
            transport = conn.writer.transport
            if transport.is_closing():
                continue
            if transport.get_write_buffer_size() > limit:
                conn.abort()  # a reader that does not keep up is dropped
                continue
            transport.write(message)
            if last:
                transport.close()

    def _follow(self, conn: _Conn) -> None:
        message, last = self._current()
        conn.writer.transport.write(message)
        if last:
            conn.writer.transport.close()
        else:
            self._streams.append(conn)

    def _leave(self, conn: _Conn) -> None:
        with contextlib.suppress(ValueError):
            self._streams.remove(conn)

    @property
    def following(self) -> int:
        return len(self._streams)


class BoundedServer:
    """An HTTP/1.1 server on ``host``:``port`` (0: a free port; bound now, OSError if it
    cannot be) answering with ``handler``, in a thread of its own from :meth:`start` to
    :meth:`close`; TLS with ``context``. See the module's text for the bounds."""

    def __init__(self, host: str, port: int, handler: Handler, *, name: str = "http",
                 limits: Limits = Limits(), context: ssl.SSLContext | None = None,
                 headers: Iterable[tuple[str, str]] = (),
                 methods: Iterable[str] = ("GET", "HEAD")) -> None:
        self.limits = limits
        self.handler = handler
        self.name = name
        self.context = context
        self.headers = tuple(headers)
        self.methods = frozenset(methods)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.create_server((host, port), family=family, backlog=128)
        self.port: int = self._socket.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        self._conns: dict[_Conn, None] = {}  # in the order they came
        self._open: set[asyncio.StreamWriter] = set()
        """Every connection's, from its start until its socket is closed."""
        self._streams = 0
        self._feeds: list[Feed] = []
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=limits.workers, thread_name_prefix=f"{name}-work")
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.refused = 0
        """Connections answered 503 because every connection was busy."""
        self.evicted = 0
        """Connections closed to make room (the oldest waiting for a request)."""
        self.timed_out = 0
        """Connections closed because their request did not arrive in time."""
        self.dropped = 0
        """Connections closed because their client did not take an answer in time."""
        self._stopping = False

    # -- from any thread ------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()

    def close(self) -> None:
        """Stop serving: every connection is closed; waits for the thread."""
        if self._thread.is_alive():
            self.call_soon(self._request_stop)
            self._thread.join(10)
        else:
            self._socket.close()
            self._loop.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def call_soon(self, fn: Callable[[], Any]) -> None:
        """Run ``fn()`` in the server's thread (thread-safe; nothing once it stopped)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to tell
            self._loop.call_soon_threadsafe(fn)

    def feed(self, render: Callable[[], tuple[bytes, bool]], *, interval: float = 0.25,
             keep_alive: float = 15.0) -> Feed:
        """A :class:`Feed` of this server (make it before :meth:`start`)."""
        feed = Feed(self, render, interval, keep_alive)
        self._feeds.append(feed)
        return feed

    @property
    def connections(self) -> int:
        return len(self._conns)

    # -- in the server's thread -----------------------------------------------------

    async def blocking(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)`` in the server's pool of worker threads (a handler's blocking
        work: reading a file)."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def _request_stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve_all())
        finally:
            self._ready.set()  # a server that failed to start does not hold start() up
            self._loop.close()

    async def _serve_all(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connected, sock=self._socket,
                                            limit=self.limits.header_bytes)
        feeds = [asyncio.create_task(f._run()) for f in self._feeds]
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            self._stopping = True  # a connection accepted from now on is closed at once
            server.close()
            for task in feeds:
                task.cancel()
            for conn in list(self._conns):
                conn.abort()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            # every connection's task runs to its end (its transport closed), a task
            # still waiting for a handler after a grace is cancelled
            _, late = await asyncio.wait(tasks, timeout=STOP_GRACE_S) if tasks else ((), ())
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
            await server.wait_closed()
            await self._all_closed()

    async def _all_closed(self) -> None:
        """Wait until every connection's socket is closed (its transport's closing
        callback runs on this loop, which closes after this): one accepted as the
        server stopped, or still flushing an answer, too; one still open after a grace
        is aborted."""
        for _ in range(3):  # a connection accepted at the stop starts its task
            await asyncio.sleep(0)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STOP_GRACE_S):
                while self._open:
                    await asyncio.sleep(0.005)
        for writer in list(self._open):
            writer.transport.abort()
        for _ in range(3):
            await asyncio.sleep(0)

    def _admit(self, conn: _Conn) -> bool:
        """Take ``conn`` in, making room by closing the oldest connection waiting for a
        request if all are taken; False when every connection is busy."""
        if len(self._conns) >= self.limits.connections:
            oldest = next((c for c in self._conns if c.state == _WAITING), None)
            if oldest is None:
                return False
            del self._conns[oldest]
            oldest.abort()
            self.evicted += 1
        self._conns[conn] = None
        return True

    async def _connected(self, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        conn = _Conn(writer, str(peer[0]) if isinstance(peer, tuple) else "")
        self._open.add(writer)
        try:
            if self._stopping:
                return  # closed below
            if not self._admit(conn):
                self.refused += 1
                with contextlib.suppress(TimeoutError, asyncio.LimitOverrunError):
                    async with asyncio.timeout(LINGER_S):  # its request read (or none)
                        await reader.readuntil(b"\r\n\r\n")
                writer.write(self._plain(503, "the server is busy; try again",
                                         (("Retry-After", "1"),)))
                await self._linger(reader, writer)
                return
            await self._serve(conn, reader, writer)
        except (ConnectionError, OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass  # a client that leaves is no error
        except asyncio.CancelledError:
            pass  # the server stops (asyncio would log a connection's task cancelled)
        finally:
            self._conns.pop(conn, None)
            if self._stopping or writer.transport.get_write_buffer_size():
                conn.abort()  # a client that does not read: its unsent bytes dropped
            else:
                writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()  # its socket closed (or a flush that fails)
            self._open.discard(writer)

    async def _serve(self, conn: _Conn, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        first = True
        while True:
            conn.state, conn.since = _WAITING, time.monotonic()
            try:
                async with asyncio.timeout(self.limits.request_s):
                    if first and self.context is not None:
                        await writer.start_tls(self.context)
                    request = await self._read(reader, conn.client)
            except TimeoutError:
                self.timed_out += 1
                return
            except _Refused as e:
                writer.write(self._plain(e.status, str(e)))
                await self._linger(reader, writer)
                return
            first = False
            if request is None:
                return
            conn.state = _BUSY
            answer = await self._answer(request)
            keep = self._keep_alive(request)
            if isinstance(answer, Stream):
                await self._stream(conn, reader, answer)
                return
            body = b"" if request.method == "HEAD" else answer.body
            writer.write(self._head(answer.status, answer.body, answer.content_type, keep,
                                    answer.headers, len(answer.body)) + body)
            await self._drain(writer)
            if not keep:
                return

    async def _linger(self, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        """Send what is written, then read what the client still sends (for at most
        :data:`LINGER_S` seconds and 64 KiB) before the close: a close with unread bytes
        is a reset, which can lose the answer on its way."""
        await self._drain(writer)
        if writer.can_write_eof():
            writer.write_eof()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(LINGER_S):
                left = 64 << 10
                while left > 0 and (chunk := await reader.read(left)):
                    left -= len(chunk)

    async def _drain(self, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(self.limits.write_s):
                await writer.drain()
        except TimeoutError:
            self.dropped += 1
            raise

    async def _read(self, reader: asyncio.StreamReader, client: str) -> Request | None:
        try:
            raw = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as e:
            if e.partial.strip():
                raise _Refused(400, "an incomplete request") from None
            return None  # the client closed between requests
        except asyncio.LimitOverrunError:
            raise _Refused(431, f"the request's headers pass {self.limits.header_bytes} "
                                f"bytes") from None
        try:
            head = raw.decode("latin-1").split("\r\n")
            method, target, version = head[0].split(" ")
        except ValueError:
            raise _Refused(400, "not an HTTP request") from None
        if not version.startswith("HTTP/1."):
            raise _Refused(505, "HTTP/1.x only")
        headers: dict[str, str] = {}
        for line in head[1:]:
            if not line:
                continue
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip() or line[0] in " \t":
                raise _Refused(400, "a malformed header line")
            key = name.lower()
            headers[key] = (f"{headers[key]}, {value.strip()}" if key in headers
                            else value.strip())
        if method not in self.methods:
            raise _Refused(501, f"method {method[:20]!r} is not served here")
        if "transfer-encoding" in headers:
            raise _Refused(411, "a body needs a Content-Length")
        length_text = headers.get("content-length", "0")
        if not length_text.isdigit():
            raise _Refused(400, "a bad Content-Length")
        length = int(length_text)
        if length > self.limits.body_bytes:
            raise _Refused(413, f"a body of at most {self.limits.body_bytes} bytes is "
                                f"taken here")
        body = await reader.readexactly(length) if length else b""
        parts = urlsplit(target)
        return Request(method, target, version, unquote(parts.path), parts.query, headers,
                       body, client)

    @staticmethod
    def _keep_alive(request: Request) -> bool:
        connection = request.headers.get("connection", "").lower()
        if request.version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection

    async def _answer(self, request: Request) -> Response | Stream:
        try:
            async with asyncio.timeout(self.limits.handler_s):
                return await self.handler(request)
        except TimeoutError:
            return text(503, "the answer took too long; try again")
        except Unavailable as e:
            return text(503, str(e))
        except Exception:  # a handler's bug is one request's 500, never the server's end
            return text(500, "internal error")

    async def _stream(self, conn: _Conn, reader: asyncio.StreamReader,
                      answer: Stream) -> None:
        writer = conn.writer
        if self._streams >= self.limits.streams:
            writer.write(self._plain(503, "too many event streams; try again later",
                                     (("Retry-After", "5"),)))
            await self._drain(writer)
            return
        conn.state = _STREAM
        self._streams += 1
        try:
            writer.write(self._head(200, b"", "text/event-stream", True, answer.headers,
                                    None))
            answer.feed._follow(conn)
            while not writer.transport.is_closing():
                if not await reader.read(1024):  # what a stream's client sends is ignored
                    return
        finally:
            self._streams -= 1
            answer.feed._leave(conn)

    def _plain(self, status: int, message: str,
               extra: Iterable[tuple[str, str]] = ()) -> bytes:
        """A plain-text answer of one line, and the connection closed after it."""
        body = (message + "\n").encode()
        return self._head(status, body, "text/plain; charset=utf-8", False, extra) + body

    def _head(self, status: int, body: bytes, content_type: str, keep: bool,
              extra: Iterable[tuple[str, str]], length: int | None = -1) -> bytes:
        """The status line and headers (with the body's length, unless ``length`` is
        None: an event stream)."""
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Status"
        lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}"]
        if length is not None:
            lines.append(f"Content-Length: {len(body) if length < 0 else length}")
        lines.append(f"Connection: {'keep-alive' if keep else 'close'}")
        lines += [f"{k}: {v}" for k, v in (*self.headers, *extra)]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class Unavailable(Exception):
    """What a handler raises for a 503 (one line: the league is stopping, ...)."""
