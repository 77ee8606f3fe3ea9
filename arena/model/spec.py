"""Bot specs: how to reach a bot, parsed from a string, with no I/O.

A spec is a built-in name (``random``, ``heuristic``, ``pimc``), ``cmd:<command line>``
(a process the arena starts, in its sandbox, on a private unix socket),
``grpc://host:port`` / ``grpcs://host:port`` (TLS) or ``unix:PATH`` (a bot already
running, never started or stopped by the arena). How a remote bot is reached (its CA,
server name, bearer token, whether plain ``grpc://`` beyond this machine is allowed) is
its :class:`Remote`.
"""

from __future__ import annotations

import ipaddress
import shlex
import sys
from dataclasses import dataclass, field

BUILTIN_BOTS = ("random", "heuristic", "pimc")
"""The names of the built-in bots (:mod:`arena.bots` holds their code)."""


class BotSpecError(ValueError):
    """Raised for a string that is not a bot spec; the message says what is allowed."""


TOKEN_VARIABLE = "ARENA_BOT_TOKEN"
"""The bearer token, for ``arena play``/``check-bot`` and for a bot served by the SDK."""


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


BUILTIN_SETTINGS: dict[str, dict[str, tuple[int, int]]] = {
    "pimc": {"ms": (1, 600_000)},
}
"""The settings a built-in bot takes in its spec (``pimc:ms=200``), with their ranges."""


def builtin_settings(text: str) -> tuple[str, dict[str, int]] | None:
    """A built-in bot's spec as its name and settings (``pimc:ms=200`` -> ``("pimc",
    {"ms": 200})``); None when ``text`` names no built-in bot; :class:`BotSpecError`
    (one line) for a setting it does not take or a value out of range."""
    base, sep, rest = text.partition(":")
    if base not in BUILTIN_BOTS:
        return None
    if not sep:
        return base, {}
    known = BUILTIN_SETTINGS.get(base, {})
    settings: dict[str, int] = {}
    for part in rest.split(","):
        key, eq, value = part.strip().partition("=")
        if key not in known:
            takes = (f"its settings: {', '.join(f'{k}=N' for k in known)}" if known else
                     "it takes none")
            raise BotSpecError(f"bot spec {text!r}: {base} has no setting {key!r} ({takes})")
        low, high = known[key]
        if not eq or not value.isdigit() or not low <= int(value) <= high:
            raise BotSpecError(f"bot spec {text!r}: {key} must be a whole number in "
                               f"{low}..{high}")
        settings[key] = int(value)
    return base, settings


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
        if builtin_settings(text) is not None:
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


def command_args(command: str) -> list[str]:
    """The argument list of a ``cmd:`` command; a leading ``python``/``python3`` means the
    arena's own interpreter, so Python bots see the same installed packages."""
    args = shlex.split(command)
    if args and args[0] in ("python", "python3"):
        args[0] = sys.executable
    return args
