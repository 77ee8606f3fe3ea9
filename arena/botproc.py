"""Bot specs, and the bot processes the arena starts, watches, restarts and ends.

A spec is a built-in name (``random``, ``heuristic``), ``cmd:<command line>`` (a child
process the arena starts in its own process group, listening on a fresh unix socket in a
private temporary directory, named in ``ARENA_BOT_LISTEN``), or ``grpc://host:port`` /
``unix:PATH`` (a bot already running, never started or stopped by the arena).
"""

from __future__ import annotations

import io
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import grpc
import trio
from grpc_health.v1 import health_pb2

from arena.bots import BUILTIN_BOTS
from arena.trio_grpc import rpc_code, unary_call

MAX_MESSAGE_BYTES = 256 * 1024
"""The largest message the referee accepts from a bot (and sends): far above any real one."""
LOG_CAP_BYTES = 1024 * 1024
"""A bot's stderr log is cut off at this size."""
CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_retries", 0),
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 500),
]


class BotSpecError(ValueError):
    """Raised for a string that is not a bot spec; the message says what is allowed."""


class BotStartError(RuntimeError):
    """Raised when a bot cannot be started or reached; the message names the bot."""


@dataclass(frozen=True, slots=True)
class BotSpec:
    """How to reach a bot. ``kind`` is ``builtin``, ``cmd``, ``grpc`` or ``unix``."""

    kind: str
    value: str

    @classmethod
    def parse(cls, text: str) -> BotSpec:
        text = text.strip()
        if text in BUILTIN_BOTS:
            return cls("builtin", text)
        if text.startswith("cmd:"):
            command = text[4:].strip()
            try:
                args = shlex.split(command)
            except ValueError as e:
                raise BotSpecError(f"bot spec {text!r}: {e}") from None
            if not args:
                raise BotSpecError(f"bot spec {text!r}: empty command")
            return cls("cmd", command)
        if text.startswith("grpc://"):
            address = text[7:]
            host, sep, port = address.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise BotSpecError(f"bot spec {text!r}: expected grpc://HOST:PORT")
            return cls("grpc", address)
        if text.startswith("unix:"):
            if not text[5:]:
                raise BotSpecError(f"bot spec {text!r}: expected unix:PATH")
            return cls("unix", text[5:])
        raise BotSpecError(
            f"unknown bot {text!r}; allowed: {', '.join(BUILTIN_BOTS)}, cmd:COMMAND, "
            "grpc://HOST:PORT or unix:PATH")

    def __str__(self) -> str:
        if self.kind == "builtin":
            return self.value
        if self.kind == "grpc":
            return f"grpc://{self.value}"
        return f"{self.kind}:{self.value}"

    @property
    def target(self) -> str:
        """The gRPC target of an already running bot."""
        return self.value if self.kind == "grpc" else f"unix:{self.value}"


def command_args(command: str) -> list[str]:
    """The argument list of a ``cmd:`` command; a leading ``python``/``python3`` means the
    arena's own interpreter, so Python bots see the same installed packages."""
    args = shlex.split(command)
    if args and args[0] in ("python", "python3"):
        args[0] = sys.executable
    return args


def new_channel(target: str) -> grpc.Channel:
    """A channel to a bot with the referee's limits (message size, no retries)."""
    return grpc.insecure_channel(target, options=CHANNEL_OPTIONS)


async def wait_serving(channel: grpc.Channel, deadline: float, name: str,
                       process: BotProcess | None = None) -> None:
    """Poll the standard health service until it says SERVING, before ``deadline``."""
    check = channel.unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
        response_deserializer=health_pb2.HealthCheckResponse.FromString)
    last = "no answer"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BotStartError(f"bot {name}: not serving after the start-up limit ({last})")
        if process is not None and process.returncode is not None:
            raise BotStartError(f"bot {name}: exited with code {process.returncode} "
                                f"before serving; see {process.log_path}")
        try:
            reply = await unary_call(check, health_pb2.HealthCheckRequest(service=""),
                                     timeout=min(left, 1.0))
        except grpc.RpcError as e:
            last = f"health check: {rpc_code(e)}"
        else:
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            last = f"health status {status}"
        await trio.sleep(0.02)


class BotProcess:
    """One ``cmd:`` bot: a child process in its own process group, on a private socket.

    :meth:`start` starts it and waits until it serves; :meth:`stop` ends its whole
    process group (SIGTERM, then SIGKILL) and removes its socket directory. Its stderr
    goes to ``log_path``, cut off at :data:`LOG_CAP_BYTES`.
    """

    def __init__(self, name: str, command: str, log_path: Path, startup_s: float = 10.0,
                 cwd: Path | None = None) -> None:
        self.name = name
        self.command = command
        self.log_path = log_path
        self.startup_s = startup_s
        self.cwd = cwd
        self.starts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None
        self.target = ""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> int | None:
        """None while the process runs (or was never started)."""
        return None if self._proc is None else self._proc.poll()

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    async def start(self) -> grpc.Channel:
        """Start the process, wait until it serves, and return a channel to it."""
        self.stop_now()
        sweep_stale_socket_dirs()
        self._dir = tempfile.mkdtemp(prefix=f"arena-bot-{os.getpid()}-")
        socket_path = os.path.join(self._dir, "bot.sock")
        self.target = f"unix:{socket_path}"
        env = dict(os.environ, ARENA_BOT_LISTEN=self.target, ARENA_PARENT_PID=str(os.getpid()),
                   PYTHONUNBUFFERED="1")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        mode = "ab" if self.starts else "wb"
        with open(self.log_path, mode) as log:
            if self.starts:
                log.write(f"\n--- restart {self.starts} ---\n".encode())
        try:
            self._proc = subprocess.Popen(
                command_args(self.command), env=env, cwd=self.cwd,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                start_new_session=True)
        except OSError as e:
            self.stop_now()
            raise BotStartError(f"bot {self.name}: cannot start {self.command!r}: "
                                f"{e.strerror}") from None
        self.starts += 1
        _drain_to_log(self._proc, self.log_path)
        deadline = time.monotonic() + self.startup_s
        while not os.path.exists(socket_path):
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self.stop_now()
                raise BotStartError(f"bot {self.name}: exited with code {code} before "
                                    f"serving; see {self.log_path}")
            if time.monotonic() > deadline:
                self.stop_now()
                raise BotStartError(f"bot {self.name}: no socket after {self.startup_s:g} s "
                                    f"(does it listen on $ARENA_BOT_LISTEN?); "
                                    f"see {self.log_path}")
            await trio.sleep(0.005)
        channel = new_channel(self.target)
        try:
            await wait_serving(channel, deadline, self.name, self)
        except BaseException:
            channel.close()
            self.stop_now()
            raise
        return channel

    def stop_now(self, grace_s: float = 1.0) -> None:
        """End the process group (SIGTERM, SIGKILL after ``grace_s``); safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _end_group(proc, grace_s)
        if self._dir is not None:
            for entry in os.listdir(self._dir):
                try:
                    os.unlink(os.path.join(self._dir, entry))
                except OSError:
                    pass
            try:
                os.rmdir(self._dir)
            except OSError:
                pass
            self._dir = None


_swept = False


def sweep_stale_socket_dirs() -> None:
    """Remove the socket folders of arena processes that are gone (after a kill -9),
    once per process. A folder is ``arena-bot-PID-*``; one whose PID lives is left."""
    global _swept
    if _swept:
        return
    _swept = True
    root = tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) < 4 or parts[:2] != ["arena", "bot"] or not parts[2].isdigit():
            continue
        try:
            os.kill(int(parts[2]), 0)
            continue  # its arena still runs
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        folder = os.path.join(root, name)
        try:
            for entry in os.listdir(folder):
                os.unlink(os.path.join(folder, entry))
            os.rmdir(folder)
        except OSError:
            pass


def _end_group(proc: subprocess.Popen[Any], grace_s: float) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    try:  # the leader may be gone while children of the group live on
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    if proc.stderr is not None:
        try:
            proc.stderr.close()
        except OSError:
            pass


def _drain_to_log(proc: subprocess.Popen[bytes], path: Path) -> None:
    """Copy the process's stderr to ``path`` on a daemon thread, up to the cap."""
    import threading

    stream = cast(io.BufferedReader, proc.stderr)

    def pump() -> None:
        written = path.stat().st_size if path.exists() else 0
        with open(path, "ab", buffering=0) as log:
            while True:
                try:
                    chunk = stream.read1(65536)
                except (OSError, ValueError):
                    return
                if not chunk:
                    return
                if written < LOG_CAP_BYTES:
                    room = LOG_CAP_BYTES - written
                    log.write(chunk[:room])
                    written += min(room, len(chunk))
                    if written >= LOG_CAP_BYTES:
                        log.write(b"\n[log cut off at the size limit]\n")

    threading.Thread(target=pump, name=f"bot-log-{proc.pid}", daemon=True).start()
