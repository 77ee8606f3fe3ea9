"""A random bot that leaves a trace of where and when it played, and of what its process
found in the page cache at the start of each game (tests/test_ray.py).

``--trace FILE``: one JSON line a call, appended as the call arrives: the process id,
the game's id, the time (``time.time()``; one machine's clock for every node of a
local cluster). ``--pages DIR``: at its start the process writes a file of its own there
(``PAGES`` pages) and drops it from the page cache; at the first call of each game it
counts how many of that file's pages are in the page cache (``mincore``, so it must run
unsandboxed: the sandbox's filter answers that call "all resident"), then reads the file
whole. The pages it reads are charged to its cgroup, so a process kept between games
finds none of them at its next game when the arena reclaimed its cgroup after the last
one, and all of them when it did not (``ARENA_NO_RECLAIM=1``). ``--pace S``: it waits
that long before each answer, so that its games last long enough to be seen at once."""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import time

from arena.sdk import Bot, View, serve

PAGE = os.sysconf("SC_PAGE_SIZE")
PAGES = 256
"""The file's pages (1 MiB with 4 KiB pages)."""

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def make_file(folder: str) -> str:
    """A file of this process's own, on disk and out of the page cache."""
    path = os.path.join(folder, f"pages-{os.getpid()}.bin")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, os.urandom(PAGE * PAGES))
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return path


def resident(path: str) -> int:
    """How many of the file's pages are in the page cache now."""
    size = PAGE * PAGES
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        try:
            vec = (ctypes.c_ubyte * PAGES)()
            if _libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), "mincore")
            return sum(v & 1 for v in vec)
        finally:
            _libc.munmap(addr, size)  # nothing of it mapped between games
    finally:
        os.close(fd)


def read_whole(path: str) -> None:
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


class PageProbe(Bot):
    name = "page-probe-py"
    version = "1.0"
    author = "trick-arena tests"

    def __init__(self, trace: str, pages: str, pace: float) -> None:
        self.trace = trace
        self.file = make_file(pages)
        self.pace = pace
        self.seen: set[str] = set()

    def record(self, **entry: object) -> None:
        line = json.dumps({"pid": os.getpid(), "game": self.game_id, "t": time.time(),
                           **entry}) + "\n"
        fd = os.open(self.trace, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def choose(self, view: View) -> int:
        if self.game_id not in self.seen:
            self.seen.add(self.game_id)
            found = resident(self.file)
            read_whole(self.file)
            self.record(resident=found, pages=PAGES)
        else:
            self.record()
        time.sleep(self.pace)
        where = (self.game_id, view.seat, view.round, len(view.tricks), len(view.trick.cards))
        return random.Random(str(where)).choice(view.legal)

    bid = play = choose_trump = choose


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trace", required=True)
    parser.add_argument("--pages", required=True)
    parser.add_argument("--pace", type=float, default=0.0)
    args, rest = parser.parse_known_args()
    serve(PageProbe(args.trace, args.pages, args.pace), rest)
