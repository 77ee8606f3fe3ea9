"""``arena serve SITE``: a small static web server for a quick look at a published site.

It listens on 127.0.0.1 only, serves the files under SITE (nothing above it: a path with
``..`` or a link that leads out is not found) with the right content types, and stops
cleanly on Ctrl-C (SIGINT) or SIGTERM. It stands on the arena's one HTTP server
(:class:`arena.http.server.BoundedServer`, as the live page and the browser seat do: its
sending, headers, bounds, start and close); this module only maps a path to a file. For
real hosting copy the folder to any static web host; see ``docs/publishing.md``.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import quote

from arena.http.server import BoundedServer, Limits, Request, Response, text

HOST = "127.0.0.1"

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".jsonl": "application/jsonl; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    "": "application/octet-stream",
}

HEADERS = (("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff"))
LIMITS = Limits(connections=64, streams=1, write_s=30.0, handler_s=30.0)
"""A look at a site from this machine: few connections, no event streams, big files
(a season's records) given time."""


class _Stop(BaseException):
    """Raised in the main thread by the SIGINT or SIGTERM handler to leave the wait. Not
    an Exception, so that nothing on the way takes it for an error of its own."""


def site_answer(site: Path, path: str) -> Response:
    """The answer to a GET of ``path`` (percent-decoded) in ``site``: the file, a folder's
    ``index.html``, a redirect to a folder's path with its ``/``, or 404 for anything
    missing or outside ``site``. Blocking (reads the file): for a worker thread."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." or "\0" in p for p in parts):
        return text(404, "not found")
    root = site.resolve()
    try:
        target = root.joinpath(*parts).resolve(strict=True)
    except (OSError, RuntimeError):
        return text(404, "not found")
    if not target.is_relative_to(root):
        return text(404, "not found")
    if target.is_dir():
        if not path.endswith("/"):
            return Response(301, b"", headers=(("Location", quote(path) + "/"),))
        target = target / "index.html"
    try:
        data = target.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return text(404, "not found")
    except OSError:
        return text(403, "not readable")
    return Response(200, data, TYPES.get(target.suffix.lower(), TYPES[""]))


def make_server(site: Path, port: int) -> BoundedServer:
    """A server for ``site`` bound to 127.0.0.1:``port`` (0: a free port), not started.
    OSError when the port cannot be bound."""
    server: BoundedServer

    async def handle(request: Request) -> Response:
        answer = await server.blocking(site_answer, site, request.path)
        # one line a request on stderr, as a web server's log
        sys.stderr.write(f"{request.client} \"{request.method} {request.target[:200]}\" "
                         f"{answer.status}\n")
        return answer

    server = BoundedServer(HOST, port, handle, name="arena-serve", limits=LIMITS,
                           headers=HEADERS)
    return server


def serve(site: Path, port: int, ready: Callable[[str], None] | None = None) -> None:
    """Serve ``site`` until SIGINT or SIGTERM; ``ready`` gets the URL once listening.

    Raises OSError when the port cannot be bound.
    """
    server = make_server(site, port)
    url = f"http://{HOST}:{server.port}/"

    def stop(signum: int, frame: FrameType | None) -> None:
        raise _Stop

    # SIGINT too: a shell starts a background job with SIGINT ignored, and Python then
    # installs no KeyboardInterrupt handler of its own
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, stop)
    try:
        server.start()  # its own thread: this one only waits for the signal
        if ready is not None:
            ready(url)
        forever = threading.Event()
        while not forever.wait(3600):
            pass
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        server.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
