"""What several commands share: usage errors, the clock, sandbox and remote-bot flags,
the ``--bots`` list, and opening a store for a command."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any, NoReturn

from arena.files import (
    atomic_writer,
)
from arena.model.errors import SandboxError
from arena.model.limits import VIEWS, Confinement, Limits
from arena.model.spec import BUILTIN_BOTS, TOKEN_VARIABLE, BotSpec, BotSpecError, Remote
from arena.proc.bwrap import sandbox_works
from arena.rules import OptionError, game_class, option_specs
from arena.rules.options import parse_option_texts


def add_sandbox_flags(parser: argparse.ArgumentParser) -> None:
    """``--no-sandbox`` and ``--memory-mb`` for commands that start one game's bots."""
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run cmd: bots without bubblewrap (trusted bots only)")
    parser.add_argument("--memory-mb", type=int, default=Limits().memory_mb, metavar="MIB",
                        help=f"memory limit per bot process (default {Limits().memory_mb}; "
                             f"0: none)")
    parser.add_argument("--read-only", action="append", default=[], type=Path, metavar="PATH",
                        help="a path cmd: bots may read in their sandbox, besides their own "
                             "folder (repeatable)")
    parser.add_argument("--view", choices=VIEWS, default="runtime",
                        help="what the sandbox shows of the machine's files: runtime (what "
                             "the bot's runtime needs, read into the page cache first; the "
                             "default) or system (all of /usr and /opt: page-cache timing "
                             "between bots is then open)")


def confinement_from_args(args: argparse.Namespace, needed: bool) -> Confinement:
    """The confinement the flags ask for; :class:`SandboxError` (one line) where the
    sandbox is needed and cannot work here."""
    if args.memory_mb < 0:
        raise SandboxError("--memory-mb must be 0 or more")
    for path in args.read_only:
        if not path.exists():
            raise SandboxError(f"--read-only {path}: no such file or folder")
    confinement = Confinement(sandbox=not args.no_sandbox,
                              limits=Limits().merged({"memory_mb": args.memory_mb}),
                              read_only=tuple(p.absolute() for p in args.read_only),
                              view=args.view)
    if needed and confinement.sandbox:
        why = sandbox_works()
        if why is not None:
            raise SandboxError(why)
    return confinement


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


class UsageError(Exception):
    """A mistake in the command line: printed as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def game_options(game: str, players: int | None, pairs: list[str]) -> dict[str, Any]:
    game_class(game)
    specs = option_specs(game)
    given = parse_option_texts(game, specs, pairs)
    if players is not None:
        if "players" in given and given["players"] != players:
            raise OptionError("--players and --option players= disagree")
        given["players"] = specs["players"].coerce(players)
    return given


def add_clock_flags(parser: argparse.ArgumentParser) -> None:
    """The time control and fault policy of ``play`` and ``match``: --move-ms, --bank-ms,
    --max-faults, --startup-ms."""
    parser.add_argument("--move-ms", type=int, default=1000, metavar="MS",
                        help="time per decision in milliseconds (default 1000)")
    parser.add_argument("--bank-ms", type=int, default=0, metavar="MS",
                        help="a per-game time bank that slow answers draw down (default 0)")
    parser.add_argument("--max-faults", type=int, default=3, metavar="N",
                        help="faults in one game before a bot is forfeited (default 3)")
    parser.add_argument("--startup-ms", type=int, default=10000, metavar="MS",
                        help="how long a bot may take to start serving (default 10000)")


def split_bots(text: str) -> list[str]:
    """Split ``--bots`` at commas, keeping commas inside a ``cmd:`` command line."""
    from arena.human.terminal import HUMAN  # here: it imports trio, which --help needs not

    out: list[str] = []
    for part in text.split(","):
        known = part.strip() == HUMAN or part.strip().split(":")[0] in BUILTIN_BOTS or \
            part.strip().startswith(("cmd:", "grpc://", "grpcs://", "unix:"))
        if out and not known and out[-1].startswith("cmd:"):
            out[-1] += "," + part
        else:
            out.append(part.strip())
    return out


def write_json(path: Path, data: Any) -> None:
    try:
        with atomic_writer(path) as out:
            out.write(json.dumps(data, separators=(",", ":")) + "\n")
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from None


def open_store(folder: Path) -> Any:
    """The store in ``folder`` for a command that only reads it (opened read-only: it
    works in a read-only folder and while a run writes)."""
    from arena.runs.store import Store, StoreError

    if not Store.exists(folder):
        raise UsageError(f"{folder}: no tournament here (no tournament.sqlite)")
    try:
        return Store.open_readonly(folder)
    except StoreError as e:
        raise UsageError(str(e)) from None
