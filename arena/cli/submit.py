"""``arena submit FOLDER --league URL --token-env VAR``: send a bot to a league.

The folder (with its ``bot.toml``) is packed as a bundle (:func:`arena.league.bundle.pack`)
and streamed to the league's service in chunks; the league's answers, the check-bot
report among them, are printed as they come, and the exit code is the verdict: 0 the bot
joined, 1 refused (a wrong token or a limit too) or failed its checks, 2 a usage or
connection error. Without a folder,
``--status``, ``--games``, ``--log GAME`` and ``--retire NAME`` read the league or retire
one of the author's bots. ``docs/submit.md`` is the authors' page.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from arena.league.bundle import BundleError, pack_to_temp
from arena.model.errors import one_line
from arena.model.league_api import ACCEPTED, CHECK
from arena.model.names import clean
from arena.model.spec import is_loopback
from arena.wire.league_client import LeagueCallError, LeagueClient

PROG = "arena submit"
REFUSALS = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                      "FAILED_PRECONDITION", "INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS"})
"""The league's answers that refuse a call (exit 1: a wrong token, another author's bot, a
limit reached), as against a call that did not reach it or broke (exit 2)."""
TOKEN_ENV = "ARENA_LEAGUE_TOKEN"


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "submit", help="send a bot (a folder with bot.toml) to a league",
        description="Pack FOLDER (which holds bot.toml) and send it to the league at URL; "
                    "print the league's answers, check-bot's report among them. Exit code "
                    "0 when the bot joined, 1 when it was refused or failed its checks, 2 "
                    "for a usage or connection error. See docs/submit.md.")
    p.add_argument("folder", nargs="?", type=Path, metavar="FOLDER",
                   help="the bot's folder (with bot.toml at its top)")
    p.add_argument("--league", required=True, metavar="URL",
                   help="the league: grpcs://HOST:PORT, or grpc://127.0.0.1:PORT on this "
                   "machine")
    p.add_argument("--token-env", default=TOKEN_ENV, metavar="VAR",
                   help=f"the environment variable holding your author token (default "
                   f"{TOKEN_ENV}); a token is never taken from the command line")
    p.add_argument("--tls-ca", type=Path, metavar="PEM",
                   help="for grpcs://: trust this CA certificate (default: the system's CAs)")
    p.add_argument("--tls-server-name", metavar="NAME",
                   help="for grpcs://: the name the league's certificate must carry")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--status", action="store_true",
                      help="print the field and your limits instead of submitting")
    what.add_argument("--games", action="store_true",
                      help="list the games your bots played, newest first")
    what.add_argument("--log", metavar="GAME",
                      help="print your bot's stderr log of that game")
    what.add_argument("--retire", metavar="NAME", help="retire your bot NAME")
    p.add_argument("--json", action="store_true", help="print JSON lines instead of text")


def _usage(message: str) -> int:
    print(f"{PROG}: {one_line(message)}", file=sys.stderr)
    return 2


def _client(args: argparse.Namespace) -> LeagueClient:
    url: str = args.league
    scheme, sep, address = url.partition("://")
    host, colon, port = address.rpartition(":")
    if not sep or scheme not in ("grpc", "grpcs") or not colon or not port.isdigit() or not host:
        raise ValueError(f"--league {url!r}: expected grpcs://HOST:PORT or grpc://HOST:PORT")
    if scheme == "grpc" and not is_loopback(host.strip("[]")):
        raise ValueError(f"--league {url!r}: plain grpc:// would send your token unencrypted; "
                         f"only a league on this machine (127.0.0.1, ::1, localhost) may be "
                         f"reached without TLS: use grpcs://")
    if scheme == "grpc" and (args.tls_ca or args.tls_server_name):
        raise ValueError("--tls-ca and --tls-server-name are for grpcs:// only")
    token = os.environ.get(args.token_env, "")
    if not token:
        raise ValueError(f"no token in ${args.token_env} (the organiser gave you one: "
                         f"export {args.token_env}=...)")
    ca = None
    if args.tls_ca:
        try:
            ca = Path(args.tls_ca).read_bytes()
        except OSError as e:
            raise ValueError(f"--tls-ca {args.tls_ca}: {e.strerror}") from None
    return LeagueClient(address, token, tls=scheme == "grpcs", ca=ca,
                        server_name=args.tls_server_name or "")


def cmd_submit(args: argparse.Namespace) -> int:
    reading = args.status or args.games or args.log or args.retire
    if reading and args.folder is not None:
        return _usage("give a FOLDER to submit, or --status/--games/--log/--retire, not both")
    if not reading and args.folder is None:
        return _usage("give the bot's FOLDER (or --status, --games, --log GAME, --retire NAME)")
    try:
        client = _client(args)
    except ValueError as e:
        return _usage(str(e))
    try:
        with client:
            if reading:
                return _read(client, args)
            return _submit(client, args.folder, args.json)
    except LeagueCallError as e:
        if e.code in REFUSALS:  # the league answered: no (a wrong token, a limit, ...)
            print(f"{PROG}: refused: {one_line(str(e))} ({e.code})", file=sys.stderr)
            return 1
        return _usage(f"{e.code}: {e}" if e.code not in ("UNAVAILABLE",) else str(e))


def _submit(client: LeagueClient, folder: Path, as_json: bool) -> int:
    if not folder.is_dir():
        return _usage(f"{folder}: not a folder")
    try:
        archive, size = pack_to_temp(folder)
    except (BundleError, OSError) as e:
        return _usage(str(e) if isinstance(e, BundleError) else f"{folder}: {e}")
    verdict = ""
    with archive:
        print(f"sending {folder} ({size} bytes) to {client.target}", file=sys.stderr)
        for step in client.submit(archive, size):
            if as_json:
                print(json.dumps({"stage": step.stage, "text": step.text,
                                  "verdict": step.verdict, "ok": step.ok, "name": step.name,
                                  "version": step.version, "bundle": step.bundle}),
                      flush=True)
            else:
                mark = "  " if step.stage == CHECK else ""
                print(f"{mark}{clean(step.text)}", flush=True)
            verdict = step.verdict or verdict
    return 0 if verdict == ACCEPTED else 1


def _read(client: LeagueClient, args: argparse.Namespace) -> int:
    if args.status:
        status = client.status()
        limits = status.limits
        if args.json:
            print(json.dumps({"author": status.author, "runtimes": list(status.runtimes),
                              "submissions_last_hour": status.submissions_last_hour,
                              "limits": {"submissions_per_hour": limits.submissions_per_hour,
                                         "max_bundle_bytes": limits.max_bundle_bytes,
                                         "max_unpacked_bytes": limits.max_unpacked_bytes,
                                         "max_files": limits.max_files},
                              "bots": [{"author": b.author, "name": b.name,
                                        "version": b.version, "status": b.status}
                                       for b in status.bots]}))
            return 0
        print(f"author {clean(status.author)}: {status.submissions_last_hour} of "
              f"{limits.submissions_per_hour} submissions in the last hour; bundles up to "
              f"{limits.max_bundle_bytes >> 20} MiB ({limits.max_unpacked_bytes >> 20} MiB "
              f"unpacked, {limits.max_files} entries); runtimes: {', '.join(status.runtimes)}")
        for bot in status.bots:
            mine = " (yours)" if bot.author == status.author else ""
            print(f"  {clean(bot.name)} {clean(bot.version)} by {clean(bot.author)}: "
                  f"{bot.status}{mine}")
        return 0
    if args.games:
        for game in client.games():
            seats = ", ".join(f"{clean(s)} {t}" for s, t in zip(game.seats, game.totals,
                                                               strict=True))
            print(f"{game.game_id}  {game.game}  {seats}  faults {sum(game.faults)}")
        return 0
    if args.log:
        sys.stdout.buffer.write(client.log(args.log))
        return 0
    bot = client.retire(args.retire)
    print(f"{clean(bot.name)} {clean(bot.version)}: {bot.status}")
    return 0
