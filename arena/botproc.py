"""Bot specs, and the bot processes the arena starts, watches, restarts and ends.

A spec is a built-in name (``random``, ``heuristic``), ``cmd:<command line>`` (a child
process the arena starts in its own process group, listening on a fresh unix socket in a
private temporary directory, named in ``ARENA_BOT_LISTEN``), or ``grpc://host:port`` /
``grpcs://host:port`` (TLS) / ``unix:PATH`` (a bot already running, never started or
stopped by the arena). How a remote bot is reached (its CA, server name, bearer token,
whether plain ``grpc://`` beyond this machine is allowed) is its :class:`Remote`.
"""

from __future__ import annotations

import argparse
import io
import ipaddress
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import grpc
import trio
from grpc_health.v1 import health_pb2

from arena.bots import BUILTIN_BOTS
from arena.files import FolderError, open_new_file, private_dir, safe_name
from arena.sandbox import (
    Cgroup,
    Confinement,
    SandboxError,
    bwrap_args,
    idle_start_possible,
    limit_mechanism,
    pid_alive,
    spawn_wrapper,
    start_reaper,
    sweep_stale_cgroups,
)
from arena.trio_grpc import rpc_code, rpc_details, unary_call

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


TOKEN_VARIABLE = "ARENA_BOT_TOKEN"
"""The bearer token, for ``arena play``/``check-bot`` and for a bot served by the SDK."""
_BOT_SECRETS = ("ARENA_BOT_TOKEN", "ARENA_BOT_TLS_CERT", "ARENA_BOT_TLS_KEY")
"""Variables of the arena's environment a bot it starts does not inherit: that bot serves
on a private unix socket, without TLS or a token."""


@dataclass(frozen=True, slots=True)
class Remote:
    """How the arena reaches a bot over TCP (``grpc://``, ``grpcs://``)."""

    tls_ca: bytes | None = field(default=None, repr=False)
    """PEM certificates trusted for a ``grpcs://`` bot (None: the system's roots)."""
    server_name: str = ""
    """The name its certificate must carry, when not the host of the spec."""
    token: str = field(default="", repr=False)
    """Sent on every call as ``authorization: Bearer <token>`` ("" : none)."""
    insecure: bool = False
    """Plain ``grpc://`` to an address that is not this machine's loopback is allowed."""


@dataclass(frozen=True, slots=True)
class BotSpec:
    """How to reach a bot. ``kind`` is ``builtin``, ``cmd``, ``grpc``, ``grpcs`` or
    ``unix``; ``remote`` says how a ``grpc``/``grpcs`` bot is reached."""

    kind: str
    value: str
    remote: Remote = field(default_factory=Remote)

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
        if text.startswith(("grpc://", "grpcs://")):
            scheme, _, address = text.partition("://")
            host, sep, port = address.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise BotSpecError(f"bot spec {text!r}: expected {scheme}://HOST:PORT")
            return cls(scheme, address)
        if text.startswith("unix:"):
            if not text[5:]:
                raise BotSpecError(f"bot spec {text!r}: expected unix:PATH")
            return cls("unix", text[5:])
        raise BotSpecError(
            f"unknown bot {text!r}; allowed: {', '.join(BUILTIN_BOTS)}, cmd:COMMAND, "
            "grpc://HOST:PORT, grpcs://HOST:PORT or unix:PATH")

    def __str__(self) -> str:
        if self.kind == "builtin":
            return self.value
        if self.kind in ("grpc", "grpcs"):
            return f"{self.kind}://{self.value}"
        return f"{self.kind}:{self.value}"

    @property
    def target(self) -> str:
        """The gRPC target of an already running bot."""
        return self.value if self.kind in ("grpc", "grpcs") else f"unix:{self.value}"

    @property
    def host(self) -> str:
        """The host of a ``grpc``/``grpcs`` spec (IPv6 without its brackets)."""
        return self.value.rpartition(":")[0].strip("[]")

    @property
    def plain_remote(self) -> bool:
        """A ``grpc://`` bot at an address that is not loopback (allowed only with
        ``insecure``): its moves and token travel unencrypted; printed, and marked on the
        leaderboard."""
        return self.kind == "grpc" and not is_loopback(self.host)

    def transport_problem(self, allow: str = "insecure = true") -> str | None:
        """Why the arena refuses to reach this bot as it is (plain ``grpc://`` to an
        address that is not loopback, without ``insecure``), or None; ``allow`` names the
        setting that would allow it."""
        if self.plain_remote and not self.remote.insecure:
            return (f"{self} is not a loopback address, and plain grpc:// has no TLS and "
                    f"no authentication; use grpcs:// or allow it with {allow}")
        return None


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP literal (127.0.0.0/8, ::1). Other names are not
    looked up: what a name resolves to may change between the check and the connection."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def add_remote_flags(parser: argparse.ArgumentParser) -> None:
    """``--tls-ca``, ``--tls-server-name``, ``--token``, ``--insecure``: how the
    ``grpc://``/``grpcs://`` bots of ``arena play`` and ``arena check-bot`` are reached."""
    group = parser.add_argument_group("bots already running (grpc://, grpcs://)")
    group.add_argument("--tls-ca", type=Path, metavar="PEM",
                       help="for grpcs:// bots: trust this CA certificate, or the bot's "
                       "self-signed one (default: the system's CAs)")
    group.add_argument("--tls-server-name", metavar="NAME",
                       help="for grpcs:// bots: the name their certificate must carry "
                       "(default: the host of the spec)")
    group.add_argument("--token", default=os.environ.get(TOKEN_VARIABLE),
                       help="send 'authorization: Bearer TOKEN' to grpc:// and grpcs:// "
                       f"bots (default: ${TOKEN_VARIABLE}, which keeps it off the command "
                       "line)")
    group.add_argument("--insecure", action="store_true",
                       help="allow plain grpc:// to an address that is not loopback "
                       "(no TLS, no authentication)")


def remote_from_args(specs: list[BotSpec], args: argparse.Namespace) -> list[BotSpec]:
    """``specs`` with the remote flags applied to their ``grpc``/``grpcs`` bots;
    :class:`BotSpecError` (one line) for a flag that cannot apply or a refused address."""
    tls = [s for s in specs if s.kind == "grpcs"]
    for flag in ("tls_ca", "tls_server_name"):
        if getattr(args, flag) and not tls:
            raise BotSpecError(f"--{flag.replace('_', '-')}: only for grpcs:// bots")
    ca = None
    if args.tls_ca is not None:
        try:
            ca = args.tls_ca.read_bytes()
        except OSError as e:
            raise BotSpecError(f"--tls-ca: cannot read {args.tls_ca}: {e.strerror}") from None
        if b"-----BEGIN CERTIFICATE-----" not in ca:
            raise BotSpecError(f"--tls-ca: {args.tls_ca} holds no PEM certificate")
    token = args.token or ""
    if token and not all("!" <= c <= "~" for c in token):
        raise BotSpecError("--token: a token is printable ASCII without spaces")
    out: list[BotSpec] = []
    for spec in specs:
        if spec.kind in ("grpc", "grpcs"):
            spec = BotSpec(spec.kind, spec.value, Remote(
                tls_ca=ca if spec.kind == "grpcs" else None,
                server_name=(args.tls_server_name or "") if spec.kind == "grpcs" else "",
                token=token, insecure=args.insecure))
            problem = spec.transport_problem("--insecure")
            if problem is not None:
                raise BotSpecError(problem)
        out.append(spec)
    return out


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


def remote_channel(spec: BotSpec, name: str) -> grpc.Channel:
    """A channel to a bot already running: TLS for ``grpcs://`` (checked against its
    ``tls_ca``), and its bearer token on every call. :class:`BotStartError` for a plain
    ``grpc://`` address beyond loopback that is not allowed."""
    problem = spec.transport_problem()
    if problem is not None:
        raise BotStartError(f"bot {name}: {problem}")
    remote = spec.remote
    if spec.kind == "grpcs":
        options: list[tuple[str, str | int]] = list(CHANNEL_OPTIONS)
        if remote.server_name:
            options.append(("grpc.ssl_target_name_override", remote.server_name))
        channel = grpc.secure_channel(
            spec.target, grpc.ssl_channel_credentials(root_certificates=remote.tls_ca),
            options=options)
    else:
        channel = new_channel(spec.target)
    if remote.token:
        channel = grpc.intercept_channel(channel, _BearerToken(remote.token))
    return channel


class _Details(grpc.ClientCallDetails):
    def __init__(self, base: grpc.ClientCallDetails,
                 metadata: tuple[tuple[str, str | bytes], ...]) -> None:
        self.method = base.method
        self.timeout = base.timeout
        self.metadata = metadata
        self.credentials = base.credentials
        self.wait_for_ready = base.wait_for_ready
        self.compression = base.compression


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds ``authorization: Bearer <token>`` to every call."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _with_token(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        return _Details(details, (*(details.metadata or ()), self._header))

    def intercept_unary_unary(self, continuation: Any, details: grpc.ClientCallDetails,
                              request: Any) -> Any:
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation: Any, details: grpc.ClientCallDetails,
                               request: Any) -> Any:
        return continuation(self._with_token(details), request)


def tls_failure(details: str) -> str | None:
    """What a failed TLS connection says is wrong (from a call's status details), or
    None when the failure was not the TLS hand-shake."""
    if "CERTIFICATE_VERIFY_FAILED" in details:
        why = details.rpartition("CERTIFICATE_VERIFY_FAILED:")[2].strip(" :")
        why = why.removesuffix(": OK").strip() or "not trusted"
        return (f"TLS: its certificate is not signed by a CA we trust (its tls_ca, else the "
                f"system's): {why}")
    if "Hostname Verification" in details:
        return "TLS: its certificate does not name the host we dialled (set tls_server_name?)"
    if "handshake failed" in details.lower():
        return "TLS: hand-shake failed: " + details.rpartition("last error:")[2].strip()[:150]
    return None


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
            raise BotStartError(f"bot {name}: {process.exit_text()} before serving; "
                                f"see {process.log_path}")
        try:
            reply = await unary_call(check, health_pb2.HealthCheckRequest(service=""),
                                     timeout=min(left, 1.0))
        except grpc.RpcError as e:
            tls = tls_failure(rpc_details(e)) if process is None else None
            if tls is not None:  # a certificate does not fix itself: no use waiting
                raise BotStartError(f"bot {name}: {tls}") from None
            last = f"health check: {rpc_code(e)}"
        else:
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            last = f"health status {status}"
        await trio.sleep(0.02)


class BotProcess:
    """One ``cmd:`` bot process, confined (see :mod:`arena.sandbox`), on a private socket.

    :meth:`spawn` starts it; :meth:`ready` waits until it serves and returns a channel;
    :meth:`aclose` ends it without blocking the trio thread (SIGTERM, then SIGKILL) and
    removes its socket folder and cgroup. Its stderr goes to ``log_path``, cut off at
    :data:`LOG_CAP_BYTES`. One object is one process: a restart is a new object, so an
    exit code always belongs to the process that had it.
    """

    def __init__(self, name: str, command: str, log_path: Path, startup_s: float = 10.0,
                 cwd: Path | None = None, confinement: Confinement | None = None,
                 hide: tuple[Path, ...] = (), idle: bool = True) -> None:
        self.name = name
        self.command = command
        self.idle = idle
        """Start at idle CPU priority (a spare, started ahead); False for a start a game
        waits for (it is held to that game's core instead)."""
        self.log_path = log_path
        self.startup_s = startup_s
        self.cwd = cwd
        self.confinement = confinement or Confinement(sandbox=False)
        self.hide = hide
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None
        self._cgroup: Cgroup | None = None
        self._deadline = 0.0
        self._exit_code: int | None = None
        self.target = ""

    @property
    def pid(self) -> int | None:
        """The process id while it is ours (None before the start and after the end)."""
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> int | None:
        """None while the process runs (or before it was started); then its exit code."""
        if self._exit_code is None and self._proc is not None:
            self._exit_code = self._proc.poll()
        return self._exit_code

    def alive(self) -> bool:
        return self._proc is not None and self.returncode is None

    def spawn(self) -> None:
        """Start the process (confined, in its cgroup); :class:`BotStartError` if it cannot."""
        if self._proc is not None:
            raise RuntimeError("a BotProcess starts once")
        sweep_stale_socket_dirs()
        cwd = (self.cwd or Path.cwd()).absolute()
        self._dir = tempfile.mkdtemp(prefix=f"arena-bot-{os.getpid()}-")
        socket_path = os.path.join(self._dir, "bot.sock")
        self.target = f"unix:{socket_path}"
        confinement = self.confinement
        args = command_args(self.command)
        program = shutil.which(args[0], path=os.environ.get("PATH")) if os.sep not in args[0] \
            else str(cwd / args[0])
        if program is None or not os.path.exists(program):
            self._cleanup()
            raise BotStartError(f"bot {self.name}: cannot start {self.command!r}: "
                                f"No such file or directory")
        if not os.access(program, os.X_OK) or os.path.isdir(program):
            self._cleanup()
            raise BotStartError(f"bot {self.name}: cannot start {self.command!r}: "
                                f"Permission denied")
        env = bot_environment(self.target, confinement)
        mechanism = limit_mechanism()
        try:
            if confinement.sandbox:
                args = bwrap_args(args, Path(self._dir), cwd, confinement, env, self.hide)
                env = {}
            else:
                env = {**{k: v for k, v in os.environ.items() if k not in _BOT_SECRETS},
                       **env}
            if mechanism.cgroups:
                self._cgroup = Cgroup(mechanism, confinement.limits, safe_name(self.name)[:40])
        except SandboxError as e:
            self._cleanup()
            raise BotStartError(f"bot {self.name}: {e}") from None
        args = spawn_wrapper(self._cgroup, confinement.limits, mechanism) + args
        try:  # a new file in a folder of ours: a planted symlink is never followed
            private_dir(self.log_path.parent)
            log_fd, self.log_path = _open_new_log(self.log_path)
        except (FolderError, OSError) as e:
            self._cleanup()
            why = str(e) if isinstance(e, FolderError) else f"{e.filename}: {e.strerror}"
            raise BotStartError(f"bot {self.name}: cannot make its log: {why}") from None
        try:
            self._proc = subprocess.Popen(
                args, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            os.close(log_fd)
            self._cleanup()
            raise BotStartError(f"bot {self.name}: cannot start {self.command!r}: "
                                f"{e.strerror}") from None
        _drain_to_log(self._proc, log_fd)
        self._deadline = time.monotonic() + self.startup_s

    async def ready(self) -> grpc.Channel:
        """Wait until the spawned process serves; a channel to it. On failure the process
        is ended and :class:`BotStartError` says why."""
        assert self._proc is not None and self._dir is not None
        socket_path = os.path.join(self._dir, "bot.sock")
        try:
            starting = (self._cgroup if self.idle and idle_start_possible(self._cgroup)
                        else None)
            while not os.path.exists(socket_path):
                if starting is not None and self.idle:
                    starting.idle_priority(self.confinement.sandbox)
                if self.returncode is not None:
                    raise BotStartError(f"bot {self.name}: {self.exit_text()} before "
                                        f"serving; see {self.log_path}")
                if time.monotonic() > self._deadline:
                    raise BotStartError(f"bot {self.name}: no socket after {self.startup_s:g}"
                                        f" s (does it listen on $ARENA_BOT_LISTEN?); "
                                        f"see {self.log_path}")
                await trio.sleep(0.005)
            channel = new_channel(self.target)
            try:
                await wait_serving(channel, self._deadline, self.name, self)
            except BaseException:
                channel.close()
                raise
            if starting is not None:
                starting.normal_priority()  # it started at idle priority
        except BaseException:
            with trio.CancelScope(shield=True):
                await self.aclose()
            raise
        return channel

    def hurry(self) -> None:
        """Stop starting at idle priority: a game now waits for this process."""
        if self.idle:
            self.idle = False
            if self._cgroup is not None and idle_start_possible(self._cgroup):
                self._cgroup.normal_priority()

    async def start(self) -> grpc.Channel:
        """:meth:`spawn`, then :meth:`ready`."""
        self.spawn()
        return await self.ready()

    # -- while it runs ----------------------------------------------------------------

    def freeze(self) -> None:
        """Stop the bot's processes between its calls (where it has a cgroup)."""
        if self._cgroup is not None:
            self._cgroup.freeze()

    def thaw(self) -> None:
        if self._cgroup is not None:
            self._cgroup.thaw()

    def pin(self, core: int | None) -> None:
        """Hold the bot's processes to one core (None: release), where cgroups allow."""
        if self._cgroup is not None:
            self._cgroup.pin(core)

    def cpu_ns(self, stopped_ok: bool = False) -> int | None:
        """CPU time the bot's processes have used so far (None where not measurable).
        With ``stopped_ok``, the figure noted when it was last stopped, if it still is
        (it cannot have changed: one file read less per decision)."""
        cgroup = self._cgroup
        if cgroup is None:
            return None
        if stopped_ok and cgroup.stopped and cgroup.cpu_at_rest is not None:
            return cgroup.cpu_at_rest
        return cgroup.cpu_ns()

    def limit_detail(self) -> str | None:
        """The limit an ended process ran into, as a fault detail ("memory limit 1024 MiB
        reached"), or None when it ended for another reason."""
        limits = self.confinement.limits
        if self._cgroup is not None:
            hit = self._cgroup.limit_hit()
            if hit is not None:
                return hit
        code = self.returncode
        signo = -code if code is not None and code < 0 else (
            code - 128 if code is not None and code > 128 else 0)
        if signo == signal.SIGXCPU or (signo == signal.SIGKILL and limits.cpu_s and
                                       (self.cpu_ns() or 0) >= limits.cpu_s * 10**9):
            return f"CPU time limit {limits.cpu_s} s reached"
        if signo == signal.SIGXFSZ:
            return f"file size limit {limits.file_mb} MiB reached"
        return None

    def exit_text(self) -> str:
        """How the process ended, for fault details: ``exited with code 3``."""
        code = self.returncode
        if code is None:
            return "still running"
        limit = self.limit_detail()
        if limit is not None:
            return limit
        if code < 0:
            return f"was killed by {_signal_name(-code)}"
        if code > 128 and self.confinement.sandbox:  # bubblewrap reports a signal so
            return f"was killed by {_signal_name(code - 128)}"
        return f"exited with code {code}"

    # -- ending it --------------------------------------------------------------------

    async def aclose(self, grace_s: float = 1.0) -> None:
        """End the process and everything it started: SIGTERM, then SIGKILL after
        ``grace_s``. Never blocks the trio thread; safe to call twice."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            self._signal_all(signal.SIGTERM)
            with trio.move_on_after(grace_s):
                while proc.poll() is None:
                    await trio.sleep(0.005)
        if proc is not None:
            self._signal_all(signal.SIGKILL)
            with trio.move_on_after(5):
                while proc.poll() is None:
                    await trio.sleep(0.005)
            # the cgroup empties a moment after the leader is reaped
            with trio.move_on_after(1):
                while self._cgroup is not None and self._cgroup.pids():
                    self._signal_all(signal.SIGKILL)
                    await trio.sleep(0.005)
        self._finish()

    @property
    def signals_reach_bot(self) -> bool:
        """Whether SIGTERM reaches the bot's own processes: with cgroups, or outside the
        sandbox. (Without cgroups it reaches bubblewrap, which ends the sandbox itself.)"""
        return self._cgroup is not None or not self.confinement.sandbox

    async def terminate(self, wait_s: float) -> float | None:
        """SIGTERM, as :meth:`aclose` sends it, then wait up to ``wait_s`` for the process
        to exit: the seconds it took, or None if it is still running (:meth:`aclose`
        then ends it)."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            raise RuntimeError("terminate() needs a running process")
        started = time.monotonic()
        self._signal_all(signal.SIGTERM)
        with trio.move_on_after(wait_s):
            while proc.poll() is None:
                await trio.sleep(0.005)
            return time.monotonic() - started
        return None

    def stop_now(self, grace_s: float = 1.0) -> None:
        """A blocking :meth:`aclose`, for the last clean-up outside trio."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            self._signal_all(signal.SIGTERM)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                pass
        if proc is not None:
            self._signal_all(signal.SIGKILL)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._finish()

    def _signal_all(self, signo: int) -> None:
        proc = self._proc
        if proc is None:
            return
        if self._cgroup is not None:
            # thawed first: a frozen process does not act on signals (cgroup v1)
            self._cgroup.thaw()
            # SIGTERM goes to the bot, not to bubblewrap, which would end it with SIGKILL
            spare = proc.pid if signo == signal.SIGTERM and self.confinement.sandbox else None
            self._cgroup.kill_all(signo, spare)
            if spare is not None:
                return
        try:  # the process group: the wrapper, bubblewrap or an unsandboxed bot's children
            os.killpg(proc.pid, signo)
        except (ProcessLookupError, PermissionError):
            pass

    def _finish(self) -> None:
        proc, self._proc = self._proc, None  # ended: no pid any more, its exit code stays
        if proc is not None:
            self._exit_code = proc.poll()
            if proc.stderr is not None:
                try:
                    proc.stderr.close()
                except OSError:
                    pass
        self._cleanup()

    def _cleanup(self) -> None:
        if self._cgroup is not None and not self._cgroup.pids():
            self._cgroup.remove()
            self._cgroup = None
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


def bot_environment(target: str, confinement: Confinement) -> dict[str, str]:
    """The variables a bot process gets (documented in docs/protocol.md): the listen
    address, and in the sandbox a plain PATH, HOME and locale; plus what the tournament
    file grants the bot."""
    env = {"ARENA_BOT_LISTEN": target, "PYTHONUNBUFFERED": "1"}
    if confinement.sandbox:
        env.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp",
                    "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(dict(confinement.env))
    return env


def _signal_name(signo: int) -> str:
    try:
        return signal.Signals(signo).name
    except ValueError:
        return f"signal {signo}"


_swept = False


def _open_new_log(path: Path) -> tuple[int, Path]:
    """Create a bot's log at ``path``, or at the next free number (``NAME.N.log``) when
    another process took that name meanwhile: the processes of several Ray workers write
    to one log folder. :class:`OSError` for anything else."""
    for _ in range(1000):
        try:
            return open_new_file(path), path
        except FileExistsError:
            if not path.name.endswith(".log"):
                raise
            stem, _, number = path.name[:-len(".log")].rpartition(".")
            if not stem or not number.isdigit():
                stem, number = path.name[:-len(".log")], "1"
            path = path.with_name(f"{stem}.{int(number) + 1}.log")
    return open_new_file(path), path


def sweep_stale_socket_dirs() -> None:
    """Remove the socket folders and cgroups of arena processes that are gone (after a
    kill -9), once per process. A folder is ``arena-bot-PID-*``; one whose PID lives is
    left."""
    global _swept
    if _swept:
        return
    _swept = True
    mechanism = limit_mechanism()
    if mechanism.cgroups:
        sweep_stale_cgroups(mechanism)
        start_reaper(mechanism)
    root = tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) < 4 or parts[:2] != ["arena", "bot"] or not parts[2].isdigit():
            continue
        if pid_alive(int(parts[2])):
            continue  # its arena still runs
        folder = os.path.join(root, name)
        try:
            for entry in os.listdir(folder):
                os.unlink(os.path.join(folder, entry))
            os.rmdir(folder)
        except OSError:
            pass


def _drain_to_log(proc: subprocess.Popen[bytes], log_fd: int) -> None:
    """Copy the process's stderr to the open file ``log_fd`` (closed at the end) on a
    daemon thread, up to the cap."""
    import threading

    stream = cast(io.BufferedReader, proc.stderr)

    def pump() -> None:
        written = 0
        with open(log_fd, "ab", buffering=0) as log:
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
