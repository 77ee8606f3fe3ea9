"""What the league service's tests share: a league server process
(tests/league_server.py: ``serve_league`` in front of a ``LocalBackend``), started on
127.0.0.1 port 0 and ended (or killed) by the test; bot folders with their bot.toml; and
submitting one over real gRPC."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from conftest import REPO, bot_processes

from arena.league.authors import AuthorFile, add_author
from arena.league.bundle import pack_to_temp
from arena.model.league_api import AuthorLimits, SubmitStep
from arena.wire.league import LeagueClient

SERVER = REPO / "tests" / "league_server.py"
RANDOM_BOT = REPO / "sample_bots" / "python" / "random_bot.py"
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

    def start(self, timeout_s: float = 60) -> League:
        args = [sys.executable, str(SERVER), str(self.out), "--check-games",
                str(self.check_games)]
        if self.tls is not None:
            args += ["--tls", str(self.tls[0]), str(self.tls[1])]
        if self.web:
            args.append("--web")
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        env.update(TMPDIR=str(self.tmp), PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(args, cwd=REPO, env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=10)
            raise AssertionError(f"the league server did not start: {err[-2000:]}")
        info = json.loads(line)
        self.port, self.web_url, self.swept = info["port"], info["web"], info["swept"]
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
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


def bot_folder(where: Path, name: str, version: str = "1.0", script: Path = RANDOM_BOT,
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

