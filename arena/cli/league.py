"""``arena league``: run a league, change its field while it runs, show it, close a season
(docs/league.md)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import trio
from rich.console import Console

from arena.cli import league_field as field
from arena.cli.league_store import (
    LeagueUsage,
    prepared,
    write_board,
)
from arena.cli.run_folder import RunFolderError, open_run_store
from arena.league import inbox
from arena.league.config import LeagueConfig, load_league
from arena.league.runner import League, LeagueSummary, run_league
from arena.league.sets import rebuild_ratings
from arena.league.store import (
    has_tables,
    load_bots,
    load_sets,
    open_sets_in,
    season_rows,
)
from arena.model.names import clean
from arena.proc.bwrap import sandbox_works
from arena.proc.keeper import keeping
from arena.proc.reaper import start_cleanup
from arena.runs.config import ConfigError
from arena.runs.lock import Held, LockError, RunLock
from arena.runs.store import Store, StoreError

DEFAULT_ADDRESS = "127.0.0.1:50061"
DEFAULT_WEB = "127.0.0.1:8061"
WAIT_S = 60.0
"""How long a field change waits for the run's answer by default."""


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "league", help="run an open league, and change its field while it runs",
        description="An open league (docs/league.md): 'run' plays games until stopped, "
                    "choosing tables as games finish; 'add', 'update', 'retire' change "
                    "the field while it runs, from another terminal; 'status' shows it; "
                    "'close' ends the season and reveals its master seed. The ratings, "
                    "live and published, compare the bots that held the same cards in "
                    "each whole duplicate set.")
    sub = p.add_subparsers(dest="league_command", required=True, parser_class=type(p))

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("file", type=Path, metavar="FILE", help="the league file (TOML)")
        q.add_argument("--out", type=Path, metavar="DIR",
                       help="the output folder (default: the file's 'output')")

    def run_flags(run: argparse.ArgumentParser) -> None:
        common(run)
        run.add_argument("--fresh", action="store_true",
                         help="start afresh, deleting the stored games and field changes")
        run.add_argument("--games", type=int, metavar="N",
                         help="decide sets of N more games, finish them, and stop "
                              "(default: play until stopped)")
        run.add_argument("--resamples", type=int, default=1000, metavar="N",
                         help="bootstrap resamples of the leaderboard written at the end "
                              "(default 1000)")
        run.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                         help="play on a Ray cluster (not yet supported for leagues: see "
                              "docs/league.md)")

    run_flags(sub.add_parser("run", help="play games until stopped (or resume)"))
    serve = sub.add_parser(
        "serve", help="run the league and serve it: authors submit bots over the network "
                      "(docs/submit.md), everyone watches (--web)")
    run_flags(serve)
    serve.add_argument("--address", default=DEFAULT_ADDRESS, metavar="HOST:PORT",
                       help=f"where the league service listens (default {DEFAULT_ADDRESS};"
                            f" any address but loopback needs --tls-cert and --tls-key)")
    serve.add_argument("--tls-cert", type=Path, metavar="PEM",
                       help="the server's TLS certificate (chain), as for a remote bot")
    serve.add_argument("--tls-key", type=Path, metavar="PEM", help="its private key")
    serve.add_argument("--web", nargs="?", const=DEFAULT_WEB, default=None,
                       metavar="HOST:PORT",
                       help=f"serve the live page too (default {DEFAULT_WEB}; the same "
                            f"TLS rule)")
    serve.add_argument("--check-games", type=int, default=1, metavar="N",
                       help="check-bot's games of each kind for a submission (default 1)")
    serve.add_argument("--runtime", action="append", default=[], metavar="NAME",
                       help="a runtime submissions may name in bot.toml (repeatable; "
                            "built in: python3, node, java, ruby, native, and the league "
                            "file's [[runtimes]]; default: python3, node, ruby, native and "
                            "the file's)")
    serve.add_argument("--json", action="store_true",
                       help="print one JSON line once serving: its ports (for scripts)")

    author = sub.add_parser("author", help="the league's authors: who may submit bots")
    author_sub = author.add_subparsers(dest="author_command", required=True,
                                       parser_class=type(p))
    a_add = author_sub.add_parser("add", help="add an author; prints their token once")
    common(a_add)
    a_add.add_argument("name", metavar="NAME")
    a_add.add_argument("--submissions-per-hour", type=int, metavar="N")
    a_add.add_argument("--max-bundle-mib", type=float, metavar="MIB")
    a_rot = author_sub.add_parser("rotate", help="a new token for an author (the old one "
                                                 "stops working); printed once")
    common(a_rot)
    a_rot.add_argument("name", metavar="NAME")
    a_rev = author_sub.add_parser("revoke", help="an author's token stops working")
    common(a_rev)
    a_rev.add_argument("name", metavar="NAME")
    a_list = author_sub.add_parser("list", help="the authors and their limits")
    common(a_list)
    a_lim = author_sub.add_parser("limits", help="change an author's limits (the token "
                                                 "stays)")
    common(a_lim)
    a_lim.add_argument("name", metavar="NAME")
    a_lim.add_argument("--submissions-per-hour", type=int, metavar="N")
    a_lim.add_argument("--max-bundle-mib", type=float, metavar="MIB")

    def change(q: argparse.ArgumentParser) -> None:
        q.add_argument("--wait", type=float, default=WAIT_S, metavar="S",
                       help=f"how long to wait for a running league's answer (default "
                            f"{WAIT_S:.0f} s)")

    def bot_flags(q: argparse.ArgumentParser) -> None:
        q.add_argument("--no-sandbox", action="store_true",
                       help="run the cmd: bot without bubblewrap (trusted bots only)")
        q.add_argument("--read-only", action="append", default=[], type=Path,
                       metavar="PATH", help="a path the bot may read (repeatable)")
        q.add_argument("--no-check", action="store_true",
                       help="skip arena check-bot's checks before the bot is queued")

    add = sub.add_parser("add", help="add bots to the league")
    common(add)
    add.add_argument("name", metavar="NAME", nargs="?", help="the bot's name in the league")
    add.add_argument("spec", metavar="SPEC", nargs="?", help="a built-in, cmd:COMMAND, "
                     "grpc://, grpcs:// or unix:PATH (paths from the current folder)")
    add.add_argument("more", metavar="NAME SPEC", nargs="*",
                     help="more bots, each a name and a spec")
    add.add_argument("--folders", type=Path, metavar="PATH",
                     help="add every folder under PATH as a bot named after it, running "
                          "its bot.toml's command (or --command) in that folder")
    add.add_argument("--command", dest="folder_command", metavar="PATTERN",
                     help="with --folders: the command of each ({folder} and {name} are "
                          "replaced)")
    bot_flags(add)
    change(add)

    update = sub.add_parser("update", help="add a new version of a bot (NAME@2, ...)")
    common(update)
    update.add_argument("name", metavar="NAME")
    update.add_argument("spec", metavar="SPEC")
    update.add_argument("--keep", action="store_true",
                        help="keep the old version playing (default: it is retired)")
    bot_flags(update)
    change(update)

    retire_p = sub.add_parser("retire", help="retire a bot: it keeps its games, plays no more")
    common(retire_p)
    retire_p.add_argument("name", metavar="NAME")
    retire_p.add_argument("--reason", default="", help="why (stored, shown by status)")
    change(retire_p)

    status = sub.add_parser("status", help="show the league (reads the store only; the "
                                          "ratings of its whole sets)")
    common(status)
    status.add_argument("--json", action="store_true", help="print it as JSON")

    close = sub.add_parser("close", help="close the season: reveal its master seed")
    common(close)
    close.add_argument("--resamples", type=int, default=1000, metavar="N",
                       help="bootstrap resamples of the season's leaderboard (default 1000)")
    change(close)


def cmd_league(args: argparse.Namespace) -> int:
    try:
        config = load_league(args.file, args.out)
    except ConfigError as e:
        raise LeagueUsage(str(e)) from None
    command: Callable[[LeagueConfig, argparse.Namespace], int] = {
        "run": _run, "serve": _run, "add": field.add, "update": field.add,
        "retire": field.retire, "status": _status, "close": field.close,
        "author": field.author}[args.league_command]
    return command(config, args)


# -- run ---------------------------------------------------------------------------------


def _run(config: LeagueConfig, args: argparse.Namespace) -> int:
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    base = config.base
    if args.ray is not None or base.engine == "ray":
        raise LeagueUsage(f"{config.path}: a league does not run on Ray yet (only "
                          f"tournaments do); leave out --ray and [cluster] engine = \"ray\"")
    if args.games is not None and not 1 <= args.games <= 10**7:
        raise LeagueUsage("--games must be 1..10000000")
    if args.resamples < 1:
        raise LeagueUsage("--resamples must be 1 or more")
    for name, reason in base.skipped:
        err.print(f"note: bot {clean(name)} left out: {clean(reason)}", markup=False)
    confined = [b for b in base.bots if b.spec.kind == "cmd" and b.confinement.sandbox]
    if confined:
        why = sandbox_works()
        if why is not None:
            raise LeagueUsage(f"{config.path}: bot {confined[0].name}: cannot be sandboxed: "
                              f"{why}")
    serving = _serving(config, args) if args.league_command == "serve" else None
    try:
        store = prepared(config, open_run_store(
            config.output, "league", f"choose another output in {config.path} or --out",
            fresh=args.fresh, err=err, also_fresh=(inbox.inbox_dir(config.output),)))
    except RunFolderError as e:
        raise LeagueUsage(str(e)) from None
    out = Console(highlight=False, soft_wrap=True)
    with store:
        out.print(f"{clean(config.name)}: league, {base.game}, {base.seats} seats, "
                  f"{len(config.house)} house bot(s), {len(config.starting)} bot(s) from the "
                  f"file; stored in {clean(str(config.output))}", markup=False)
        err.print(f"isolation: {base.isolation}; {base.concurrency} game(s) at once",
                  markup=False)
        from arena.cli.tournament import machine_bound_of, runtime_lines
        from arena.proc.ids import id_mechanism
        from arena.proc.images import image_mechanism

        err.print(id_mechanism().describe(), markup=False)
        err.print(image_mechanism().describe(), markup=False)
        for line in runtime_lines(base.bots, base.folder, base.runtimes):
            err.print(line, markup=False)
        config = replace(config, base=machine_bound_of(base, err, league=True))
        if serving is not None:
            err.print(f"runtimes a bot.toml may name: {', '.join(serving['runtimes'])}",
                      markup=False)
            try:  # for 'arena league status'
                store.set_meta({"runtimes": json.dumps(list(serving["runtimes"]))})
            except StoreError as e:
                raise LeagueUsage(str(e)) from None
        last = [time.monotonic(), 0]

        def event(text: str) -> None:
            err.print(clean(text), markup=False)

        def started(league: League) -> None:
            season = league.season
            if season is not None:
                out.print(f"season {season.season}: seed commitment (SHA-256 of the master "
                          f"seed's decimal string):", markup=False)
                print(season.commitment, flush=True)
            if league.queue:
                err.print(f"resuming: {league.games_stored} games stored; "
                          f"{len(league.open_sets)} unfinished set(s) are finished first",
                          markup=False)

        def game(league: League) -> None:
            now = time.monotonic()
            if now - last[0] >= 10:
                rate = (league.summary.played - last[1]) / (now - last[0])
                last[0], last[1] = now, league.summary.played
                active = sum(b.active and not b.house for b in league.bots.values())
                err.print(f"games {league.games_stored} ({rate:.2f}/s), sets in flight "
                          f"{len(league.open_sets)}, {active} active bot(s), faults "
                          f"{league.summary.faults}", markup=False)

        start_cleanup()
        summary: LeagueSummary | None = None
        league: League | None = None
        try:
            with keeping():
                if serving is None:
                    summary, league = trio.run(lambda: run_league(
                        config, store, on_event=event, on_start=started, on_game=game,
                        max_games=args.games))
                else:
                    summary, league = trio.run(lambda: _serve(
                        config, store, serving, event, started, game, args.games))
        except KeyboardInterrupt:
            summary = None
        interrupted = summary is None or summary.interrupted
        if summary is not None:
            updates = sorted(summary.update_ms)
            median = updates[len(updates) // 2] if updates else 0.0
            out.print(f"played {summary.played} games in {summary.seconds:.1f} s "
                      f"({summary.played / max(summary.seconds, 1e-9):.2f} games/s), "
                      f"{summary.sets} set(s) decided, {summary.faults} faults, "
                      f"{summary.requests} field change(s); live rating update "
                      f"{median:.3f} ms a set (median)", markup=False)
        if league is not None:
            for i, (name, elo, sigma, games) in enumerate(league.ranking()[:10], start=1):
                out.print(f"  {i:>3} {clean(name):<24} {elo:7.1f} ± {sigma:5.1f}  "
                          f"{games} games", markup=False)
        if interrupted:
            print(f"stopped: {store.count_done()} games kept; games in flight are played "
                  f"again and unfinished sets finished by the next run: arena league run "
                  f"{config.path}" + (f" --out {config.output}" if args.out else ""),
                  file=sys.stderr)
        write_board(store, config.output, args.resamples)
        return 130 if interrupted else 0


# -- serve -------------------------------------------------------------------------------


def _serving(config: LeagueConfig, args: argparse.Namespace) -> dict[str, Any]:
    """The settings of ``serve``, checked before anything starts."""
    from arena.league.manifest import ManifestError, check_runtimes, default_runtimes
    from arena.model.league_api import TlsFiles
    from arena.wire.league import address_problem

    if bool(args.tls_cert) != bool(args.tls_key):
        raise LeagueUsage("TLS needs both --tls-cert and --tls-key")
    tls = TlsFiles(args.tls_cert, args.tls_key) if args.tls_cert else None
    for path in (args.tls_cert, args.tls_key):
        if path is not None and not path.is_file():
            raise LeagueUsage(f"{path}: no such file")
    for where in (args.address, args.web):
        if where is not None:
            problem = address_problem(where, tls)
            if problem is not None:
                raise LeagueUsage(problem)
    if not 0 <= args.check_games <= 100:
        raise LeagueUsage("--check-games must be 0..100 (0: the hand-shake only)")
    runtimes = tuple(dict.fromkeys(args.runtime)) or default_runtimes()
    try:
        check_runtimes(runtimes)
    except ManifestError as e:
        raise LeagueUsage(f"--runtime: {e}") from None
    return {"address": args.address, "tls": tls, "web": args.web, "runtimes": runtimes,
            "check_games": args.check_games, "json": args.json}


async def _serve(config: LeagueConfig, store: Store, serving: dict[str, Any],
                 event: Callable[[str], None], started: Callable[[League], None],
                 game: Callable[[League], None], max_games: int | None,
                 ) -> tuple[LeagueSummary, League | None]:
    """Run the league (as ``run`` does) with the league service in front of it."""
    from arena.league_service import ServeSettings, Serving, serve

    def announce(where: Serving) -> None:
        scheme = "grpcs" if where.tls else "grpc"
        host = serving["address"].rpartition(":")[0]
        if serving["json"]:
            print(json.dumps({"port": where.port, "web": where.web_url,
                              "swept": list(where.swept)}), flush=True)
        print(f"league service on {scheme}://{host}:{where.port}"
              + (f"; live page {where.web_url}" if where.web_url else ""),
              file=sys.stderr, flush=True)

    settings = ServeSettings(serving["address"], serving["tls"], serving["web"],
                             serving["runtimes"], serving["check_games"])
    return await serve(config, store, settings, on_event=event, on_start=started,
                       on_game=game, max_games=max_games, announce=announce)


# -- status ------------------------------------------------------------------------------


def _status(config: LeagueConfig, args: argparse.Namespace) -> int:
    out = config.output
    if not Store.exists(out):
        raise LeagueUsage(f"{out}: no league here yet (start it: arena league run "
                          f"{config.path})")
    try:
        with Store.open_readonly(out) as store, store.snapshot():
            if not has_tables(store):
                raise LeagueUsage(f"{out}: not a league's store")
            data = _status_data(store, config)
    except StoreError as e:
        raise LeagueUsage(str(e)) from None
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    console = Console(highlight=False, soft_wrap=True)
    run = f"run: PID {data['run_pid']}" if data["run_pid"] else "run: none"
    console.print(f"{clean(config.name)}: {data['games']} games, {data['sets']} sets "
                  f"({data['open_sets']} unfinished); {run}; requests waiting "
                  f"{data['inbox']}", markup=False)
    for one in data["seasons"]:
        seed = f"seed {one['seed']}" if one["seed"] is not None else "seed sealed"
        console.print(f"season {one['season']} ({'closed' if one['closed'] else 'open'}): "
                      f"{one['games']} games, commitment {one['commitment']}, {seed}",
                      markup=False)
    console.print(f"runtimes ({data['runtimes_from']}): "
                  f"{', '.join(clean(r) for r in data['runtimes'])}", markup=False)
    for line in data["runtime_views"]:
        console.print(f"  {clean(line)}", markup=False)
    for b in data["bots"]:
        rating = "" if b["elo"] is None else f"{b['elo']:7.1f} ± {b['sigma']:5.1f}"
        marks = " ".join(filter(None, [
            "house" if b["house"] else "", b["status"],
            f"after {b['previous']}" if b["previous"] else "",
            f"({b['reason']})" if b["reason"] else ""]))
        console.print(f"  {clean(b['name']):<24} {rating:>15}  {b['games']:>6} games  "
                      f"{clean(marks)}", markup=False)
    return 0


def _status_data(store: Store, config: LeagueConfig) -> dict[str, Any]:
    bots = load_bots(store)
    live, games = rebuild_ratings(store, bots)
    ratings = live.ratings()
    sets = load_sets(store)
    unfinished = open_sets_in(store.db)
    holder: int | None = None
    try:
        text = (config.output / "tournament.lock").read_text().strip()
        shared = RunLock.share(config.output)
        if shared is not None:
            shared.release()
    except Held as e:
        holder = e.pid or (int(text) if text.isdigit() else None)
    except (OSError, LockError):
        pass
    rows = []
    house = {n for n, b in bots.items() if b.house}
    order = sorted(bots.values(), key=lambda b: (b.house, not b.active,
                                                 -(ratings[b.name].elo if b.name in ratings
                                                   else 0.0), b.name))
    for b in order:
        r = ratings.get(b.name)
        rows.append({"name": b.name, "house": b.house, "status": b.status,
                     "previous": b.previous, "version": b.version_no,
                     "fixed_rating": b.rating, "reason": b.reason,
                     "elo": None if r is None or not r.games else round(r.elo, 1),
                     "sigma": None if r is None or not r.games else round(r.sigma, 1),
                     "games": 0 if r is None else r.games, "spec": str(b.entry.spec)})
    every = [{"season": r.season, "commitment": r.commitment, "closed": r.closed_at is not None,
              "seed": None if r.seed is None else str(r.seed), "games": r.games,
              "started_at": r.started_at, "closed_at": r.closed_at}
             for r in season_rows(store)]
    served = store.meta().get("runtimes")
    try:
        runtimes = [str(r) for r in json.loads(served)] if served else None
    except (ValueError, TypeError):
        runtimes = None
    from arena.league.manifest import default_runtimes
    from arena.proc.runtimes import describe_runtime, runtime_named

    known = [runtime_named(r) for r in (runtimes or default_runtimes())]
    return {"league": config.name, "games": games, "sets": len(sets),
            "runtimes": runtimes or list(default_runtimes()),
            "runtimes_from": "as served last" if runtimes else "the defaults",
            "runtime_views": [describe_runtime(r) for r in known if r is not None],
            "open_sets": len(unfinished), "run_pid": holder,
            "inbox": len(inbox.pending(config.output)),
            "season": every[-1] if every else None, "seasons": every,
            "house": sorted(house), "bots": rows}


__all__ = ["LeagueUsage", "add_parser", "cmd_league"]
