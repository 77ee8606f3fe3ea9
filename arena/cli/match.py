"""``arena match CANDIDATE BASELINE``: is the candidate better? A sequential test over
duplicate game pairs (docs/match.md)."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import secrets
import sys
from pathlib import Path
from typing import Any

import trio
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from arena import __version__
from arena.cli.common import (
    add_remote_flags,
    add_sandbox_flags,
    confinement_from_args,
    remote_from_args,
)
from arena.cli.run_folder import RunFolderError, open_run_store
from arena.files import atomic_writer
from arena.match.runner import MatchState, load_state, run_match
from arena.match.schedule import CANDIDATE, GAMES_PER_DEAL, field_names
from arena.model.errors import SandboxError, one_line
from arena.model.spec import BUILTIN_BOTS, BotSpec, BotSpecError
from arena.proc.keeper import keeping
from arena.proc.reaper import start_cleanup
from arena.proc.tasks import usable_cores
from arena.report.format import for_terminal
from arena.rules import GAMES, OptionError, option_specs
from arena.rules.options import parse_option_texts, resolve_options
from arena.runs.config import ISOLATIONS, MAX_GAMES, BotEntry, TournamentConfig
from arena.runs.preamble import TournamentError
from arena.runs.schedule import seed_commitment
from arena.runs.store import Store, StoreError
from arena.stats.sprt import Sprt, estimate

PROG = "arena match"


MAX_SEED = (1 << 256) - 1


class MatchError(ValueError):
    """A mistake in the command line or the output folder: one line, exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


def add_parser(subparsers: Any) -> None:
    """Add ``match`` to ``subparsers`` (argparse's add_subparsers())."""
    p = subparsers.add_parser(
        "match", help="is the candidate better than the baseline? a sequential test",
        description="Play duplicate game pairs, the candidate and the baseline in the same "
                    "seat of the same deal against the same opponents, until a "
                    "generalized SPRT on the pentanomial counts decides (docs/match.md). "
                    "Exit code 0: the candidate is better (H1); 1: it is not better by "
                    "--elo1 (H0), or no decision within --max-games; 2: a usage error or "
                    "a bot that does not start.")
    bots = f"{', '.join(BUILTIN_BOTS)}, cmd:COMMAND, grpc://HOST:PORT, grpcs://HOST:PORT " \
           f"or unix:PATH"
    p.add_argument("candidate", metavar="CANDIDATE", help=f"the bot tested: {bots}")
    p.add_argument("baseline", metavar="BASELINE", help="the bot it is compared with")
    p.add_argument("--game", default="wizard", help=f"one of: {', '.join(GAMES)} "
                   f"(default wizard)")
    p.add_argument("--players", type=int, help="seats per table (the game's default)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a game option, e.g. hook_rule=true (repeatable)")
    p.add_argument("--opponents", metavar="SPEC,...",
                   help="the bots in the other seats: one spec for all of them, or one "
                        "per seat (default: the baseline)")
    p.add_argument("--elo0", type=float, default=0.0,
                   help="H0: the logistic Elo of the game-pair score (default 0)")
    p.add_argument("--elo1", type=float, default=20.0,
                   help="H1: the logistic Elo of the game-pair score (default 20)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="the chance of H1 when H0 holds (default 0.05)")
    p.add_argument("--beta", type=float, default=0.05,
                   help="the chance of H0 when H1 holds (default 0.05)")
    p.add_argument("--max-games", type=int, default=10000, metavar="N",
                   help=f"stop without a verdict after N games, whole deals of "
                        f"{GAMES_PER_DEAL} games (default 10000)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="the output folder: the store, logs (default: out/match-HASH, the "
                        "hash of the settings); the same command continues a match there")
    p.add_argument("--fresh", action="store_true",
                   help="start afresh, deleting the stored games of an earlier run")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="write the verdict and figures here as JSON")
    p.add_argument("--seed", type=int, help="the match seed (default: random, stored)")
    p.add_argument("--concurrency", type=int, metavar="N",
                   help="games played at once (default: the usable cores)")
    p.add_argument("--isolation", choices=ISOLATIONS, default="deal",
                   help="how bot processes are shared between games, as in a tournament "
                        "(default deal)")
    from arena.cli.common import add_clock_flags

    add_clock_flags(p)
    add_sandbox_flags(p)
    add_remote_flags(p)


def _specs(args: argparse.Namespace, seats: int) -> tuple[BotSpec, BotSpec, list[BotSpec]]:
    from arena.cli.common import split_bots

    opponents = split_bots(args.opponents) if args.opponents else [args.baseline]
    if len(opponents) == 1:
        opponents *= seats - 1
    if len(opponents) != seats - 1:
        raise MatchError(f"--opponents: {len(opponents)} specs for the {seats - 1} other "
                         f"seats; give one spec, or exactly {seats - 1}")
    try:
        specs = remote_from_args([BotSpec.parse(text) for text in
                                  (args.candidate, args.baseline, *opponents)], args)
    except BotSpecError as e:
        raise MatchError(str(e)) from None
    return specs[0], specs[1], specs[2:]


def _settings(args: argparse.Namespace) -> tuple[dict[str, Any], Sprt]:
    """What defines the match's games and test, checked: stored, and compared on resume."""
    if args.game not in GAMES:
        raise MatchError(f"--game: {args.game!r} is not a game; expected one of "
                         f"{', '.join(GAMES)}")
    specs = option_specs(args.game)
    try:
        given = parse_option_texts(args.game, specs, args.option)
        if "players" in given and args.players is not None and given["players"] != \
                args.players:
            raise OptionError("--players and --option players= disagree")
        if args.players is not None:
            given["players"] = specs["players"].coerce(args.players)
        options = resolve_options(args.game, specs, given)
    except OptionError as e:
        raise MatchError(str(e)) from None
    sprt = Sprt(args.elo0, args.elo1, args.alpha, args.beta)
    problem = sprt.problem()
    if problem is not None:
        raise MatchError(problem)
    for flag, low in (("move_ms", 1), ("bank_ms", 0), ("max_faults", 1), ("startup_ms", 1)):
        if getattr(args, flag) < low:
            raise MatchError(f"--{flag.replace('_', '-')} must be {low} or more")
    seats = int(options["players"])
    candidate, baseline, opponents = _specs(args, seats)
    settings = {
        "game": args.game, "options": options, "candidate": str(candidate),
        "baseline": str(baseline), "opponents": [str(s) for s in opponents],
        "move_ms": args.move_ms, "bank_ms": args.bank_ms, "max_faults": args.max_faults,
        "startup_ms": args.startup_ms, "isolation": args.isolation,
        "sandbox": not args.no_sandbox, "memory_mb": args.memory_mb,
        "read_only": [str(p) for p in args.read_only],
        "elo0": sprt.elo0, "elo1": sprt.elo1, "alpha": sprt.alpha, "beta": sprt.beta}
    return settings, sprt


def _config(args: argparse.Namespace, settings: dict[str, Any], out: Path,
            deals: int) -> TournamentConfig:
    """The match as a tournament's configuration: what the tournament machinery reads."""
    seats = int(settings["options"]["players"])
    candidate, baseline, opponents = _specs(args, seats)
    specs = [candidate, baseline, *opponents]
    try:
        confinement = confinement_from_args(args, any(s.kind == "cmd" for s in specs))
    except SandboxError as e:
        raise MatchError(str(e)) from None
    bots = tuple(BotEntry(name, spec, None, confinement)
                 for name, spec in zip(field_names(seats), specs, strict=True))
    concurrency = args.concurrency if args.concurrency is not None else usable_cores()
    if not 1 <= concurrency <= 256:
        raise MatchError(f"--concurrency must be 1..256, not {concurrency}")
    text = json.dumps(settings, sort_keys=True, indent=1)
    return TournamentConfig(
        path=Path(PROG), text=text, name=f"match {candidate} vs {baseline}",
        game=settings["game"], seats=seats, options=settings["options"], bots=bots,
        skipped=(), move_ms=args.move_ms, bank_ms=args.bank_ms, max_faults=args.max_faults,
        startup_ms=args.startup_ms, format="match", deals=deals, concurrency=concurrency,
        concurrency_given=args.concurrency is not None, isolation=args.isolation,
        limits=confinement.limits, output=out)


def _digest(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def _open_store(config: TournamentConfig, fresh: bool, err: Console) -> Store:
    try:
        return open_run_store(config.output, "match", "choose another --out", fresh=fresh,
                              err=err)
    except RunFolderError as e:
        raise MatchError(str(e)) from None


def _prepare(config: TournamentConfig, settings: dict[str, Any], store: Store,
             seed: int | None) -> int:
    """Check the store against the settings and record the match; returns its seed."""
    meta = store.meta()
    out = config.output
    if "match" in meta and meta["match"] != config.text:
        try:
            stored = json.loads(meta["match"])
        except ValueError:
            stored = {}
        if not isinstance(stored, dict):
            stored = {}
        key = next((k for k in settings if stored.get(k) != settings[k]), "settings")
        old, new = stored.get(key, "?"), settings.get(key, "?")
        if isinstance(old, dict) and isinstance(new, dict):  # the game's options
            option = next((k for k in sorted({*old, *new}) if old.get(k) != new.get(k)), "")
            key, old, new = f"{key}.{option}", old.get(option), new.get(option)
        raise MatchError(f"{out}: the match stored here has {key} {old!r}, not {new!r}; "
                         f"run it with its own settings, another --out, or add --fresh to "
                         f"start afresh")
    if "match" not in meta and store.count_done():
        raise MatchError(f"{out}: holds games that are not a match's; choose another --out")
    if "seed" in meta:
        stored_seed = int(meta["seed"])
        if seed is not None and seed != stored_seed:
            raise MatchError(f"{out}: the match stored here was dealt from another seed; "
                             f"leave out --seed, or add --fresh to start afresh")
        seed = stored_seed
    elif seed is None:
        seed = secrets.randbits(128)
    # the schedule arena verify checks: every deal any run of this match may have played
    deals = max(config.deals, int(meta.get("deals", "0")) if "match" in meta else 0)
    store.set_meta({
        "name": config.name, "game": config.game, "options": json.dumps(config.options),
        "seats": str(config.seats), "format": "match", "deals": str(deals),
        "candidates": json.dumps([CANDIDATE]), "seed": str(seed),
        "seed_commitment": seed_commitment(seed), "move_ms": str(config.move_ms),
        "bank_ms": str(config.bank_ms), "max_faults": str(config.max_faults),
        "tournament_file": config.text, "tournament_path": PROG,
        "tournament_hash": config.digest, "arena_version": __version__,
        "bots": json.dumps(config.field_names), "skipped": "[]",
        "isolation": config.isolation, "match": config.text})
    return seed


def cmd_match(args: argparse.Namespace) -> int:
    err = Console(stderr=True, highlight=False)
    out_console = Console(highlight=False)
    settings, sprt = _settings(args)
    if not GAMES_PER_DEAL <= args.max_games <= MAX_GAMES:
        raise MatchError(f"--max-games must be {GAMES_PER_DEAL}..{MAX_GAMES} (whole deals of "
                         f"{GAMES_PER_DEAL} games), not {args.max_games}")
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        raise MatchError("--seed must be an integer 0..2^256-1")
    if args.json is not None and not args.json.absolute().parent.is_dir():
        raise MatchError(f"--json {args.json}: no folder {args.json.absolute().parent}")
    deals = args.max_games // GAMES_PER_DEAL
    out = args.out or Path("out") / f"match-{_digest(settings)[:12]}"
    config = _config(args, settings, out, deals)
    for bot in config.bots:
        if bot.spec.plain_remote:
            err.print(f"warning: bot {bot.name}: {bot.spec} without TLS (--insecure): its "
                      f"moves and token travel unencrypted", soft_wrap=True, markup=False)
    with _open_store(config, args.fresh, err) as store:
        try:
            seed = _prepare(config, settings, store, args.seed)
            state = load_state(store, sprt, config.seats, deals)
        except StoreError as e:
            raise MatchError(str(e)) from None
        opponents = ", ".join(settings["opponents"])
        out_console.print(
            f"[bold]match[/]: candidate {for_terminal(settings['candidate'])} against "
            f"baseline {for_terminal(settings['baseline'])}, {config.game}, {config.seats} "
            f"seats (opponents {for_terminal(opponents)}); H0 elo {sprt.elo0:g}, H1 elo "
            f"{sprt.elo1:g}, alpha {sprt.alpha:g}, beta {sprt.beta:g}; LLR bounds "
            f"{sprt.lower:.2f} .. {sprt.upper:.2f}; at most {deals * GAMES_PER_DEAL} games; "
            f"stored in {for_terminal(str(out))}", soft_wrap=True)
        if state.stored:
            out_console.print(f"resuming: {state.stored} games stored, "
                              f"{state.tally.counted} deals counted", soft_wrap=True)
        if state.verdict is None and state.tally.counted < deals:
            try:
                state = _run(config, store, seed, state, err)
            except TournamentError as e:
                print(one_line(str(e)), file=sys.stderr)
                return 2
            except KeyboardInterrupt:
                state.interrupted = True
            if state.interrupted:
                print(f"stopped: {store.count_done()} games kept, games in flight "
                      f"discarded, every bot ended; resume with the same command",
                      file=sys.stderr)
                return 130
        else:
            out_console.print("already decided: no game played" if state.verdict else
                              "every deal up to --max-games is in: no game played")
        result = report(state, settings, deals, str(out))
    for line in verdict_lines(result):
        out_console.print(line, markup=False, soft_wrap=True)
    if args.json is not None:
        try:
            with atomic_writer(args.json) as f:
                f.write(json.dumps(result, indent=2) + "\n")
        except OSError as e:
            raise MatchError(f"--json {args.json}: cannot write: {e.strerror}") from None
    return 0 if result["verdict"] == "H1" else 1


def _run(config: TournamentConfig, store: Store, seed: int, state: MatchState,
         err: Console) -> MatchState:
    sprt = state.sprt
    span = sprt.upper - sprt.lower
    progress = Progress(
        TextColumn("[bold]LLR"), TextColumn("{task.fields[low]}"), BarColumn(),
        TextColumn("{task.fields[high]}"), TextColumn("{task.fields[llr]}"),
        TextColumn("{task.fields[elo]}"), TextColumn("games {task.fields[games]}"),
        TimeElapsedColumn(), console=err, disable=not err.is_terminal, transient=False)
    task: list[TaskID] = []
    last = [state.tally.counted]

    def fields(s: MatchState) -> dict[str, Any]:
        e = estimate(s.tally.pentanomial)
        elo = (f"elo {e.elo:+.1f} [{e.low:+.1f}, {e.high:+.1f}]" if s.tally.counted
               else "elo -")
        return {"completed": min(max(s.llr - sprt.lower, 0.0), span),
                "llr": f"{s.llr:+.2f}", "elo": elo, "games": s.stored}

    def started(s: MatchState) -> None:
        task.append(progress.add_task("llr", total=span, low=f"{sprt.lower:.2f}",
                                      high=f"{sprt.upper:.2f}", **fields(s)))
        progress.start()

    def finished(s: MatchState, counted: bool) -> None:
        if task:
            progress.update(task[0], **fields(s))
        if not err.is_terminal and counted and (s.tally.counted // 50 > last[0] // 50):
            last[0] = s.tally.counted
            f = fields(s)
            print(f"deals {s.tally.counted}, games {s.stored}, LLR {f['llr']} "
                  f"({sprt.lower:.2f} .. {sprt.upper:.2f}), {f['elo']}", file=sys.stderr,
                  flush=True)

    try:
        start_cleanup()
        with keeping():
            return trio.run(run_match, config, store, seed, state, started, finished)
    finally:
        progress.stop()


MEANING = {"H1": "the candidate is better",
           "H0": "the candidate is not better by {elo1:g} Elo",
           "inconclusive": "no decision within {max_games} games"}


def report(state: MatchState, settings: dict[str, Any], deals: int, out: str,
           ) -> dict[str, Any]:
    """The verdict and its figures, as ``--json`` writes them."""
    sprt = state.sprt
    verdict = state.verdict or "inconclusive"
    counted = state.tally.counted
    e = estimate(state.tally.pentanomial)
    lost, drawn, won = state.tally.trinomial
    return {
        "verdict": verdict,
        "meaning": MEANING[verdict].format(elo1=sprt.elo1, max_games=deals * GAMES_PER_DEAL),
        "candidate": settings["candidate"], "baseline": settings["baseline"],
        "opponents": settings["opponents"], "game": settings["game"],
        "options": settings["options"],
        "elo0": sprt.elo0, "elo1": sprt.elo1, "alpha": sprt.alpha, "beta": sprt.beta,
        "llr": round(state.llr, 4), "lower_bound": round(sprt.lower, 4),
        "upper_bound": round(sprt.upper, 4),
        "games": counted * GAMES_PER_DEAL, "pairs": 2 * counted, "pairs_of_pairs": counted,
        "games_stored": state.stored, "games_played_now": state.played,
        "max_games": deals * GAMES_PER_DEAL,
        "pentanomial": list(state.tally.pentanomial),
        "game_pairs": {"won": won, "drawn": drawn, "lost": lost},
        "elo": _round(e.elo) if counted else None,
        "elo_95": [_round(e.low), _round(e.high)] if counted else None,
        "los": round(e.los, 4) if counted else None,
        "faults": state.faults, "seconds": round(state.seconds, 2), "out": out,
        "llr_by_deal": [round(x, 4) for x in state.llrs],
    }


def _round(x: float) -> float:
    return round(x, 1) if math.isfinite(x) else x


def verdict_lines(result: dict[str, Any]) -> list[str]:
    verdict = result["verdict"]
    llr, low, high = result["llr"], result["lower_bound"], result["upper_bound"]
    if verdict == "H1":
        why = f"LLR {llr:+.2f} reached the upper bound {high:+.2f}"
    elif verdict == "H0":
        why = f"LLR {llr:+.2f} reached the lower bound {low:+.2f}"
    else:
        why = f"LLR {llr:+.2f}, between {low:+.2f} and {high:+.2f}"
    g = result["game_pairs"]
    lines = [f"{verdict}: {result['meaning']} ({why})",
             f"games: {result['games']} in {result['pairs']} game pairs (won {g['won']}, "
             f"drawn {g['drawn']}, lost {g['lost']}); pentanomial "
             f"{' '.join(map(str, result['pentanomial']))}"]
    if result["games_stored"] > result["games"]:
        lines[-1] += (f"; {result['games_stored'] - result['games']} more stored, not "
                      f"counted (of deals after the last one counted)")
    if result["elo"] is not None:
        low95, high95 = result["elo_95"]
        lines.append(f"elo: {result['elo']:+.1f}, 95% interval {low95:+.1f} .. "
                     f"{high95:+.1f} (LOS {100 * result['los']:.1f}%)")
    return lines


__all__ = ["MatchError", "add_parser", "cmd_match", "report", "verdict_lines"]
