"""What the league service's tests share: a league server process (``arena league serve
FILE``: the league runner with the service in front), started on 127.0.0.1 port 0 and
ended (or killed) by the test; bot folders with their bot.toml; and submitting one over
real gRPC."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from conftest import REPO, bot_processes, read_line

from arena.league.authors import AuthorFile, add_author
from arena.league.bundle import pack_to_temp
from arena.model.league_api import AuthorLimits, SubmitStep
from arena.wire.league import LeagueClient

LEAGUE_FILE = """name = "served"
game = "trumps"
seats = 3
concurrency = 1
output = "out"
[options]
draw = false
[time]
move_ms = 2000
[[house]]
name = "heuristic"
spec = "heuristic"
rating = 1550
[[house]]
name = "random"
spec = "random"
rating = 1400
"""
"""Trumps without the draw at 3 seats: short games; the two house bots fill a table with
the first submitted bot. A move may take 2 s: the bots submitted think 30 ms, and the
limit is the referee's wall-clock rule, which a check (on the league's time limit) must
not fail because the machine is busy with other tests (it did, at 300 ms: a concurrent
submission's check answered "failed checks")."""
PACED_BOT = REPO / "tests" / "bots" / "paced_random.py"
"""What the leagues of the tests are submitted by default: the random sample, 30 ms a
decision (a league plays as long as its tests run; at full speed it would start the
bot's process afresh some hundred times a module for nothing a test reads)."""
CRASH_BOT = REPO / "tests" / "checkbot_bots" / "crash_bot.py"


@dataclass
class League:
    """A league server process on folder ``out``; ``tmp`` is its TMPDIR (bot sockets)."""

    out: Path
    tmp: Path
    tls: tuple[Path, Path] | None = None
    ca: bytes | None = None
    web: bool = False
    check_games: int = 1
    proc: subprocess.Popen[str] | None = None
    port: int = 0
    web_url: str | None = None
    swept: list[str] = field(default_factory=list)
    errors: Path | None = None

    @property
    def file(self) -> Path:
        return self.out.parent / "league.toml"

    def start(self, timeout_s: float = 60) -> League:
        if not self.file.exists():
            self.file.write_text(LEAGUE_FILE)
        args = [sys.executable, "-m", "arena", "league", "serve", str(self.file), "--json",
                "--address", "127.0.0.1:0", "--check-games", str(self.check_games)]
        if self.tls is not None:
            args += ["--tls-cert", str(self.tls[0]), "--tls-key", str(self.tls[1])]
        if self.web:
            args += ["--web", "127.0.0.1:0"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        env.update(TMPDIR=str(self.tmp), PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        self.errors = self.out.parent / "serve.err"
        with self.errors.open("a") as err:
            self.proc = subprocess.Popen(args, cwd=self.out.parent, env=env, text=True,
                                         stdout=subprocess.PIPE, stderr=err)
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        line: str | None = ""
        while line is not None:
            # (from the pipe itself: a buffered readline took the JSON line into its buffer
            # with the lines before it, where select does not see it, and the start was
            # waited for in vain on a loaded machine)
            line = read_line(self.proc, deadline)
            if not line or line.startswith("{"):
                break
        if not line or not line.startswith("{"):
            self.proc.kill()
            self.proc.communicate(timeout=10)
            raise AssertionError(f"the league server did not start: "
                                 f"{self.errors.read_text()[-2000:]}")
        info = json.loads(line)
        self.port, self.web_url, self.swept = info["port"], info["web"], info["swept"]
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc.communicate(timeout=10)
        self.proc = None

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.proc.communicate(timeout=10)
        self.proc = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client(self, token: str, ca: bytes | None = None) -> LeagueClient:
        return LeagueClient(self.target, token, tls=self.tls is not None,
                            ca=self.ca if ca is None else ca)

    def author(self, name: str, limits: AuthorLimits | None = None) -> str:
        return add_author(AuthorFile.in_folder(self.out), name, limits)

    def leftovers(self) -> list[str]:
        """Bot processes or socket folders of this league still there (after it stopped)."""
        left = [f"process {pid}" for pid in bot_processes(self.tmp)]
        return left + [p.name for p in self.tmp.glob("arena-bot-*")]


def wait_clean(league: League, timeout_s: float = 15) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while league.leftovers() and time.monotonic() < deadline:
        time.sleep(0.1)
    return league.leftovers()


def bot_folder(where: Path, name: str, version: str = "1.0", script: Path = PACED_BOT,
               prelude: str = "") -> Path:
    """A Python bot's folder: ``script`` as bot.py (after ``prelude``), and its bot.toml."""
    folder = where / f"{name}-{version}".replace("/", "_").replace("<", "_").replace(">", "_")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bot.py").write_text(prelude + script.read_text())
    (folder / "bot.toml").write_text(
        f"name = {json.dumps(name)}\nversion = {json.dumps(version)}\n"
        f'runtime = "python3"\ncommand = "python3 bot.py"\n')
    return folder


def submit(client: LeagueClient, folder: Path) -> list[SubmitStep]:
    archive, size = pack_to_temp(folder)
    with archive:
        return list(client.submit(archive, size))


def submit_bytes(client: LeagueClient, data: bytes) -> list[SubmitStep]:
    import io

    return list(client.submit(io.BytesIO(data), len(data)))


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest

