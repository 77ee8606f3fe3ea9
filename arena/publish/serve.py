"""``arena serve SITE``: a small static web server for a quick look at a published site.

It listens on 127.0.0.1 only, serves the files under SITE (nothing above it) with the
right content types, and stops cleanly on Ctrl-C (SIGINT) or SIGTERM. For real hosting
copy the folder to any static web host; see ``docs/publishing.md``.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

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


class _Handler(SimpleHTTPRequestHandler):
    extensions_map = TYPES

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"{self.address_string()} {format % args}\n")

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that drops its connection (a browser closing a tab) is no error."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Stop(BaseException):
    """Raised in the main thread by the SIGINT or SIGTERM handler to leave serve_forever.
    Not an Exception: a signal that lands while the main thread takes a request in
    (``socketserver``'s ``except Exception`` around ``process_request``) would be taken
    for that request's error and the server would go on serving."""


def make_server(site: Path, port: int) -> ThreadingHTTPServer:
    """A server for ``site`` bound to 127.0.0.1:``port`` (0: a free port)."""
    handler = partial(_Handler, directory=str(site))
    return _Server((HOST, port), handler)


def serve(site: Path, port: int, ready: Callable[[str], None] | None = None) -> None:
    """Serve ``site`` until SIGINT or SIGTERM; ``ready`` gets the URL once listening.

    Raises OSError when the port cannot be bound.
    """
    server = make_server(site, port)
    url = f"http://{HOST}:{server.server_address[1]}/"

    def stop(signum: int, frame: FrameType | None) -> None:
        raise _Stop

    # SIGINT too: a shell starts a background job with SIGINT ignored, and Python then
    # installs no KeyboardInterrupt handler of its own
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, stop)
    try:
        if ready is not None:
            ready(url)
        server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        server.server_close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
