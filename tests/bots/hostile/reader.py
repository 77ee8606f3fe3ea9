"""A hostile bot that tries to read the tournament's secrets, then plays legally.

On its first decision (synchronously, so the report is written before the game goes on;
give it a generous ``move_ms``) it looks at:

* every process it can see in /proc: command lines (the arena's names the tournament
  file and the output folder), environments, open files (``/proc/PID/fd/*`` links: the
  arena holds the store open), and the memory of its parent and of ``ARENA_PARENT_PID``;
* every file below the working directory, its temporary folder, /tmp, $HOME and / (in
  that order, breadth first, within ``--budget-s``, skipping /proc, /sys and /dev),
  reading the beginning of each;
* any ``tournament.sqlite`` found on the way, opened read-only: the ``meta`` table's
  seed; any ``.toml`` file: a ``seed = N`` line; other bots' logs (``logs/*.log``) and
  sources (``sample_bots``, ``tests/bots``).

Report: ``{"attack": "read", "store_found": [...], "seed_found": bool, "seeds": [...],
"toml_seeds": [...], "visible_pids": [...], "arena_seen": bool, "other_logs": [...],
"other_bot_sources": [...], ...}``.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import _hostile

from arena.sdk import View

SKIP_ROOTS = {"/proc", "/sys", "/dev"}
SKIP_NAMES = {".git", "node_modules", "__pycache__", ".venv", ".venv-bench", "site-packages",
              ".mypy_cache", ".ruff_cache", ".hypothesis", ".pytest_cache"}
SEED_LINE = re.compile(rb"^\s*seed\s*=\s*(\d+)", re.MULTILINE)
LIST_CAP = 100


def _cap(items: list[Any]) -> list[Any]:
    return items[:LIST_CAP]


class Scan:
    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self.own_script = os.path.realpath(sys.argv[0])
        self.stores: list[str] = []
        self.seeds: list[str] = []
        self.toml_seeds: list[str] = []
        self.tomls: list[str] = []
        self.logs: list[str] = []
        self.sources: list[str] = []
        self.files_read = 0
        self.checked: set[str] = set()

    # -- files --------------------------------------------------------------------------

    def look_at(self, path: str) -> None:
        """Read the start of one file and note what it is."""
        real = os.path.realpath(path)
        if real in self.checked:
            return
        self.checked.add(real)
        try:
            with open(real, "rb") as f:
                head = f.read(65536)
        except OSError:
            return
        self.files_read += 1
        name = os.path.basename(real)
        if name == "tournament.sqlite" or name.endswith(".sqlite"):
            self.read_store(real)
        elif name.endswith(".toml"):
            found = SEED_LINE.findall(head)
            if found:
                self.tomls.append(real)
                self.toml_seeds += [s.decode() for s in found]
        elif name.endswith(".log") and os.path.basename(os.path.dirname(real)) == "logs":
            self.logs.append(real)
        elif (name.endswith((".py", ".js")) and real != self.own_script
              and ("/sample_bots/" in real or "/tests/bots/" in real)
              and "/tests/bots/hostile/" not in real):
            self.sources.append(real)

    def read_store(self, path: str) -> None:
        for uri in (f"file:{path}?mode=ro", f"file:{path}?immutable=1"):
            try:
                db = sqlite3.connect(uri, uri=True, timeout=1)
                try:
                    row = db.execute("SELECT value FROM meta WHERE key = 'seed'").fetchone()
                finally:
                    db.close()
            except (sqlite3.Error, UnicodeDecodeError):  # another test's damaged store
                continue
            self.stores.append(path)
            if row is not None:
                self.seeds.append(str(row[0]))
            return

    def walk(self, roots: list[str]) -> float:
        """Breadth first from each root in turn, within the budget; returns seconds used."""
        start = time.monotonic()
        deadline = start + self.budget_s
        seen_dirs: set[tuple[int, int]] = set()
        queue: deque[str] = deque()
        for root in roots:
            queue.append(root)
            while queue and time.monotonic() < deadline:
                folder = queue.popleft()
                if folder in SKIP_ROOTS:
                    continue
                try:
                    info = os.stat(folder)
                except OSError:
                    continue
                if (info.st_dev, info.st_ino) in seen_dirs:
                    continue
                seen_dirs.add((info.st_dev, info.st_ino))
                try:
                    entries = list(os.scandir(folder))
                except OSError:
                    continue
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name not in SKIP_NAMES:
                                queue.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            self.look_at(entry.path)
                    except OSError:
                        continue
            queue.clear()
        return time.monotonic() - start

    # -- processes ----------------------------------------------------------------------

    def processes(self) -> dict[str, Any]:
        me = os.getpid()
        pids = _hostile.visible_pids()
        # its own ancestors first (the arena that started it), then the rest
        first = ancestors()
        order = first + [p for p in pids if p not in first]
        arena_seen = False
        bots_seen = 0
        environs = 0
        fd_links = 0
        named: list[str] = []
        for pid in order:
            if pid == me:
                continue
            argv = _hostile.cmdline(pid)
            if "tournament" in argv and any(a == "arena" or a.endswith("/arena")
                                            for a in argv):
                arena_seen = True
                # the arena's command line names the tournament file and its output folder
                for i, a in enumerate(argv):
                    if a.endswith(".toml"):
                        named.append(a)
                    if a == "--out" and i + 1 < len(argv):
                        named.append(os.path.join(argv[i + 1], "tournament.sqlite"))
            if any("sample_bots" in a or "/bots/" in a for a in argv):
                bots_seen += 1
            if _hostile.read_proc(pid, "environ"):
                environs += 1
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                fds = []
            for fd in fds:
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                fd_links += 1
                if target.endswith((".sqlite", ".toml", ".log")):
                    named.append(target)
        for path in named:
            self.look_at(path)
            folder = os.path.dirname(path)
            if path.endswith(".sqlite") and os.path.isdir(os.path.join(folder, "logs")):
                try:
                    for name in os.listdir(os.path.join(folder, "logs")):
                        self.look_at(os.path.join(folder, "logs", name))
                except OSError:
                    pass
        return {"visible_pids": _cap(pids), "n_visible": len(pids), "arena_seen": arena_seen,
                "bot_processes_seen": bots_seen, "environ_readable": environs,
                "fd_links": fd_links}


def ancestors() -> list[int]:
    found: list[int] = []
    pid = os.getppid()
    while pid > 0 and pid not in found:
        found.append(pid)
        stat = _hostile.read_proc(pid, "stat") or b""
        try:
            pid = int(stat.rpartition(b")")[2].split()[1])
        except (IndexError, ValueError):
            break
    return found


def read_memory(pid: int) -> bool:
    """Whether any of ``pid``'s memory could be read through /proc/PID/mem."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read().splitlines()
    except OSError:
        return False
    try:
        mem = open(f"/proc/{pid}/mem", "rb")  # noqa: SIM115
    except OSError:
        return False
    with mem:
        for line in maps:
            parts = line.split()
            if len(parts) < 2 or not parts[1].startswith("r"):
                continue
            low = int(parts[0].split("-")[0], 16)
            try:
                mem.seek(low)
                if mem.read(64):
                    return True
            except (OSError, ValueError, OverflowError):
                continue
    return False


def attack(budget_s: float) -> None:
    scan = Scan(budget_s)
    procs = scan.processes()
    parent_mem = read_memory(os.getppid())
    arena_pid = os.environ.get("ARENA_PARENT_PID", "")
    arena_mem = arena_pid.isdigit() and read_memory(int(arena_pid))
    # the working directory, the temporary folders and home first, then up to /
    roots = [os.getcwd(), tempfile.gettempdir(), "/tmp", os.path.expanduser("~")]
    roots += [str(p) for p in Path(os.getcwd()).parents]
    walk_s = scan.walk(roots)
    _hostile.report(
        "read", store_found=_cap(scan.stores), seed_found=bool(scan.seeds),
        seeds=_cap(scan.seeds), toml_seeds=_cap(scan.toml_seeds), tomls=_cap(scan.tomls),
        other_logs=_cap(scan.logs), other_bot_sources=_cap(scan.sources),
        n_other_bot_sources=len(scan.sources), files_read=scan.files_read,
        parent_mem=parent_mem, arena_mem=bool(arena_mem), walk_s=round(walk_s, 2),
        cwd=os.getcwd(), uid=os.getuid(), env=sorted(os.environ), **procs)


class Reader(_hostile.Legal):
    name = "hostile-reader"

    def __init__(self, budget_s: float) -> None:
        super().__init__()
        self.budget_s = budget_s
        self.done = False
        self.lock = threading.Lock()

    def _first(self) -> None:
        with self.lock:
            if not self.done:
                self.done = True
                attack(self.budget_s)

    def bid(self, view: View) -> int:
        self._first()
        return super().bid(view)

    def play(self, view: View) -> int:
        self._first()
        return super().play(view)


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--budget-s", type=float, default=2.0, help="time for the file walk")
    args, rest = _hostile.parse(p)
    _hostile.serve(Reader(args.budget_s), rest)
