"""A bot process that is only a pipe: it listens on ``$ARENA_BOT_LISTEN`` (a unix
socket) and relays each connection's bytes, both ways, to the unix socket named by its
argument, where a scripted bot of the test's own process answers (tests/scripted.py).

So a test has a real ``cmd:`` process to kill and restart, while what the bot answers,
the restarted process's greeting included, is the test's script. Run unsandboxed: it
must reach the test's socket.
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:  # one side ended: end both
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main() -> None:
    target = sys.argv[1].removeprefix("unix:")
    path = os.environ["ARENA_BOT_LISTEN"].removeprefix("unix:")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)
    while True:
        client, _ = server.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(target)
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


if __name__ == "__main__":
    main()
