"""A league server for the tests: ``serve_league`` in front of a ``LocalBackend`` in the
folder ARGV[1], as ``arena league serve`` will run it in front of the league's own backend.

    python tests/league_server.py OUT [--tls CERT KEY] [--web] [--check-games N]
        [--address HOST:PORT] [--move-ms MS] [--no-sandbox]

Prints one JSON line once it serves: {"port": ..., "web": ..., "swept": [...]}. Stops on
SIGTERM or SIGINT; a test may also kill it with SIGKILL (that is what some tests are for).
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import trio

from arena.model.league_api import TlsFiles
from arena.online.checks import BundleCheck
from arena.online.local import LocalBackend
from arena.online.server import Serving, serve_league
from arena.proc.reaper import start_cleanup


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    tls = None
    web = None
    games = 1
    address = "127.0.0.1:0"
    move_ms = 1000
    sandbox = True
    rest = argv[1:]
    while rest:
        flag = rest.pop(0)
        if flag == "--tls":
            tls = TlsFiles(Path(rest.pop(0)), Path(rest.pop(0)))
        elif flag == "--web":
            web = "127.0.0.1:0"
        elif flag == "--check-games":
            games = int(rest.pop(0))
        elif flag == "--address":
            address = rest.pop(0)
        elif flag == "--move-ms":
            move_ms = int(rest.pop(0))
        elif flag == "--no-sandbox":
            sandbox = False
        else:
            print(f"unknown flag {flag}", file=sys.stderr)
            return 2
    start_cleanup()

    def announce(serving: Serving) -> None:
        print(json.dumps({"port": serving.port, "web": serving.web_url,
                          "swept": list(serving.swept)}), flush=True)

    async def run() -> None:
        backend = LocalBackend(out, move_ms=move_ms, sandbox=sandbox, idle_s=0.05)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(backend.run)
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                nursery.start_soon(lambda: serve_league(
                    backend, out, address, tls, web=web, announce=announce,
                    checker=BundleCheck(games_per_kind=games, sandbox=sandbox)))
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    break

    trio.run(run)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
