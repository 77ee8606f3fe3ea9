"""``arena league add``, ``update``, ``retire``, ``close`` (a request to the league: applied
here when no run holds it, else through the inbox to the run) and ``arena league
author`` (the authors' tokens)."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from arena.cli.interrupt import run_interruptible
from arena.cli.league_store import (
    PROG,
    LeagueUsage,
    claim,
    open_store,
    take_lock,
    write_board,
)
from arena.files import temp_dir
from arena.league import inbox
from arena.league.config import LeagueConfig
from arena.league.store import (
    Answer,
    FieldError,
    apply_request,
    close_season,
    entry_json,
    parse_spec,
)
from arena.model.league_api import AuthorLimits
from arena.model.limits import Confinement
from arena.model.names import NameError_, check_name, clean
from arena.model.spec import BotSpec, command_args
from arena.proc.bwrap import sandbox_works
from arena.proc.connection import HandshakeError
from arena.proc.keeper import keeping
from arena.proc.reaper import start_cleanup
from arena.runs.config import BotEntry, ConfigError, folder_bots
from arena.runs.lock import RunLock
from arena.runs.store import Store, StoreError


def _entry(config: LeagueConfig, args: argparse.Namespace,
           folder: Path | None = None) -> tuple[BotEntry, Path]:
    """The bot the command line describes (its command run in ``folder``, else the
    current folder), checked as the file's bots are."""
    where = f"{PROG} {args.league_command}"
    try:
        check_name(args.name, "NAME")
    except NameError_ as e:
        raise LeagueUsage(f"{where}: {e}") from None
    try:
        spec = parse_spec(args.spec, where)
    except FieldError as e:
        raise LeagueUsage(str(e)) from None
    cwd = folder or Path.cwd()
    if spec.kind == "cmd":
        program = command_args(spec.value)[0]
        found = ((cwd / program).exists() if os.sep in program
                 else shutil.which(program) is not None)
        if not found:
            raise LeagueUsage(f"{where}: bot {args.name}: cannot start: {program!r} not "
                              f"found" + (f" in {cwd}" if os.sep in program else ""))
    if spec.kind == "unix":
        spec = BotSpec("unix", str((cwd / spec.value).absolute()))
    if spec.kind in ("grpc", "grpcs"):
        problem = spec.transport_problem()
        if problem is not None:
            raise LeagueUsage(f"{where}: bot {args.name}: {problem}")
    for path in args.read_only:
        if not path.exists():
            raise LeagueUsage(f"{where}: --read-only {path}: no such file or folder")
    confinement = Confinement(sandbox=not args.no_sandbox, limits=config.base.limits,
                              read_only=tuple(p.absolute() for p in args.read_only))
    if spec.kind == "cmd" and confinement.sandbox:
        why = sandbox_works()
        if why is not None:
            raise LeagueUsage(f"{where}: bot {args.name}: cannot be sandboxed: {why}")
    return BotEntry(args.name, spec, None, confinement), cwd


def _check(config: LeagueConfig, entry: BotEntry, name: str,
           cwd: Path | None = None) -> str | None:
    """Run check-bot's checks on the bot (sandboxed as in a league game); None if it
    passes, else why not (one line)."""
    from arena.checkbot.checker import run_checks

    if entry.spec.kind == "builtin":
        return None
    log_dir = temp_dir("trick-arena-league-check-")
    try:
        start_cleanup()
        base = config.base  # the league's own game first, as a submission's check plays
        options = {base.game: {**base.options, "players": base.seats}}
        with keeping():
            report = run_interruptible(run_checks, entry.spec, str(entry.spec),
                                       [base.game], base.move_ms, 1, log_dir,
                                       entry.confinement, cwd, options)
    except HandshakeError as e:
        return f"cannot start: {clean(str(e))}"
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    failed = [c for c in report.checks if not c.ok]
    if failed:
        first = failed[0]
        return (f"check-bot: {len(failed)} check(s) failed, first {first.name}"
                f"{' (' + first.game + ')' if first.game else ''}: {clean(first.reason)}")
    return None


def add(config: LeagueConfig, args: argparse.Namespace) -> int:
    """``add`` (one bot, several NAME SPEC pairs, or every folder under ``--folders``)
    and ``update``: each bot checked, then sent as a request of its own; the first
    failure's exit code (the others are still tried)."""
    if args.wait <= 0:
        raise LeagueUsage("--wait must be positive")
    wanted = _wanted(args)
    entries = []
    for name, spec, cwd in wanted:  # every bot checked before any is sent
        one = argparse.Namespace(**{**vars(args), "name": name, "spec": spec})
        entries.append((name, *_entry(config, one, cwd)))
    code = 0
    for name, entry, cwd in entries:
        if not args.no_check:
            problem = _check(config, entry, name, cwd)
            if problem is not None:
                print(f"{PROG} {args.league_command}: bot {name} refused: {problem}",
                      file=sys.stderr)
                code = code or 1
                continue
        request = {"id": inbox.new_id(), "kind": args.league_command, "name": name,
                   "entry": entry_json(entry, cwd), "keep": bool(getattr(args, "keep", False)),
                   "at": time.time()}
        code = _send(config, request, args.wait) or code
    return code


def _wanted(args: argparse.Namespace) -> list[tuple[str, str, Path | None]]:
    """The bots an ``add`` or ``update`` names: (name, spec, the folder it runs in or None
    for the current one)."""
    where = f"{PROG} {args.league_command}"
    pairs = [args.name, args.spec, *getattr(args, "more", [])]
    given = [p for p in pairs if p is not None]
    folders = getattr(args, "folders", None)
    if getattr(args, "folder_command", None) is not None and folders is None:
        raise LeagueUsage(f"{where}: --command goes with --folders")
    if len(given) % 2:
        raise LeagueUsage(f"{where}: {given[-1]!r} has no spec: give NAME SPEC pairs")
    wanted: list[tuple[str, str, Path | None]] = [
        (given[i], given[i + 1], None) for i in range(0, len(given), 2)]
    if folders is not None:
        table: dict[str, Any] = {"path": str(folders.absolute())}
        if args.folder_command is not None:
            table["command"] = args.folder_command
        try:
            entries, left = folder_bots(where, [table], Path.cwd())
        except ConfigError as e:
            raise LeagueUsage(str(e)) from None
        for name, reason in left:
            print(f"note: bot {clean(name)} left out: {clean(reason)}", file=sys.stderr)
        wanted += [(e["name"], e["spec"], Path(e["cwd"])) for e in entries]
    if not wanted:
        raise LeagueUsage(f"{where}: name a bot (NAME SPEC), or --folders PATH")
    return wanted


def retire(config: LeagueConfig, args: argparse.Namespace) -> int:
    request = {"id": inbox.new_id(), "kind": "retire", "name": args.name,
               "reason": args.reason, "at": time.time()}
    return _send(config, request, args.wait)


def close(config: LeagueConfig, args: argparse.Namespace) -> int:
    request = {"id": inbox.new_id(), "kind": "close", "at": time.time()}
    code = _send(config, request, args.wait)
    if code == 0:
        with Store.open_readonly(config.output) as store:
            write_board(store, config.output, args.resamples)
    return code


def _send(config: LeagueConfig, request: dict[str, Any], wait_s: float) -> int:
    """Apply ``request`` here if no run holds the store, else through the inbox (and here
    after all if the run stops before it answers)."""
    out = config.output
    if not Store.exists(out):
        claim(config)
    lock = take_lock(config)
    if lock is not None:
        return _apply_here(config, request, lock)
    try:
        inbox.post(out, request)
    except OSError as e:
        raise LeagueUsage(f"{out}: cannot write the request into {inbox.INBOX}/: "
                          f"{e.strerror}") from None
    deadline = time.monotonic() + wait_s
    while True:
        text = inbox.take_answer(out, request["id"])
        if text is not None:
            return _print_answer(Answer.from_json(text))
        lock = take_lock(config)
        if lock is not None:  # the run stopped before it answered
            text = inbox.take_answer(out, request["id"])
            if text is not None:
                lock.release()
                return _print_answer(Answer.from_json(text))
            inbox.withdraw(out, request["id"])
            return _apply_here(config, request, lock)
        if time.monotonic() > deadline:
            print(f"{PROG}: no answer from the running league in {wait_s:.0f} s; the request "
                  f"stays in {out / inbox.INBOX / (request['id'] + '.json')} and is applied "
                  f"when a run reads it", file=sys.stderr)
            return 3
        time.sleep(0.1)


def _apply_here(config: LeagueConfig, request: dict[str, Any], lock: RunLock) -> int:
    with open_store(config, lock) as store:
        try:
            if request["kind"] == "close":
                answer = close_season(store, request["id"])
            else:
                house = {n: r for n, r in config.house.items()}
                answer, _ = apply_request(store, request, house)
        except StoreError as e:
            raise LeagueUsage(str(e)) from None
    if answer.ok and request["kind"] in ("add", "update"):
        answer.message += " (no run holds the league: it joins when the league runs)"
    return _print_answer(answer)


def _print_answer(answer: Answer) -> int:
    if answer.ok:
        print(answer.message)
        return 0
    print(f"{PROG}: refused: {answer.message}", file=sys.stderr)
    return 1


def author(config: LeagueConfig, args: argparse.Namespace) -> int:
    from arena.league.authors import (
        AuthorError,
        AuthorExists,
        AuthorFile,
        add_author,
        revoke,
        rotate_token,
        set_limits,
    )

    claim(config)
    authors = AuthorFile.in_folder(config.output)
    try:
        if args.author_command == "list":
            for a in authors.all():
                lim = a.limits
                print(f"{a.name}: {'revoked' if a.revoked else 'active'}; "
                      f"{lim.submissions_per_hour} submissions/hour, bundles up to "
                      f"{lim.max_bundle_bytes / (1 << 20):g} MiB")
            return 0
        if args.author_command == "revoke":
            revoke(authors, args.name)
            print(f"{args.name}: the token no longer works")
            return 0
        if args.author_command == "limits":
            known = authors.get(args.name)
            if known is None:
                raise AuthorError(f"no author {args.name!r}")
            limits = _limits(known.limits, args)
            set_limits(authors, args.name, limits)
            print(f"{args.name}: {limits.submissions_per_hour} submissions/hour, bundles up "
                  f"to {limits.max_bundle_bytes / (1 << 20):g} MiB (a running service "
                  f"reads them at its next look at the authors)")
            return 0
        if args.author_command == "rotate":
            token = rotate_token(authors, args.name)
        else:
            token = add_author(authors, args.name, _limits(AuthorLimits(), args))
    except AuthorExists as e:
        rotate = shlex.join([*PROG.split(), "author", "rotate", str(args.file), args.name])
        raise LeagueUsage(f"{PROG} author add: {e}; for a new token: {rotate}") from None
    except AuthorError as e:
        raise LeagueUsage(f"{PROG} author {args.author_command}: {e}") from None
    print(f"the token of {args.name} (shown once, only its SHA-256 is kept; give it to "
          f"them privately):", file=sys.stderr)
    print(token)
    return 0


def _limits(limits: AuthorLimits, args: argparse.Namespace) -> AuthorLimits:
    """``limits`` with what ``--submissions-per-hour`` and ``--max-bundle-mib`` change."""
    if args.submissions_per_hour is not None:
        if not 1 <= args.submissions_per_hour <= 10_000:
            raise LeagueUsage("--submissions-per-hour must be 1..10000")
        limits = replace(limits, submissions_per_hour=args.submissions_per_hour)
    if args.max_bundle_mib is not None:
        if not 0 < args.max_bundle_mib <= 1024:
            raise LeagueUsage("--max-bundle-mib must be in (0, 1024]")
        limits = replace(limits, max_bundle_bytes=int(args.max_bundle_mib * (1 << 20)))
    return limits
