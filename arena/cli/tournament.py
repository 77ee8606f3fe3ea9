"""``arena tournament`` and ``arena leaderboard``: the terminal side of a tournament."""

from __future__ import annotations

import argparse
import errno
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import trio
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from arena.cli.run_folder import RunFolderError, open_run_store
from arena.model.job import GameOutcome
from arena.model.names import clean
from arena.model.spec import command_args
from arena.play.bound import machine_bound, memory_available
from arena.proc.bwrap import sandbox_works
from arena.proc.cgroup import limit_mechanism
from arena.proc.keeper import keeping
from arena.proc.reaper import start_cleanup
from arena.proc.runtimes import Runtime
from arena.proc.tasks import usable_cores
from arena.report.board import QuickStandings, build_leaderboard
from arena.report.format import for_terminal
from arena.report.text import (
    print_table,
    render_csv,
    render_json,
    render_markdown,
    write_leaderboard,
)
from arena.runs.config import BotEntry, ConfigError, TournamentConfig, load_config
from arena.runs.preamble import TournamentError
from arena.runs.schedule import ScheduledGame, game_count
from arena.runs.store import Store
from arena.tournament.runner import RunSummary, prepare, run


def insecure_warnings(config: TournamentConfig) -> list[str]:
    """A warning per bot reached by plain grpc:// beyond loopback (``insecure = true``)."""
    return [f"warning: bot {bot.name}: {bot.spec} without TLS (insecure = true): its moves "
            f"and token travel unencrypted; marked (insecure) on the leaderboard"
            for bot in config.bots if bot.spec.plain_remote]


def run_command(args: argparse.Namespace) -> int:
    err = Console(stderr=True, highlight=False)
    out = Console(highlight=False)
    try:
        config = load_config(args.file, args.out)
    except ConfigError as e:
        print(str(e), file=sys.stderr)
        return 2
    use_ray = getattr(args, "ray", None) is not None or config.engine == "ray"
    address = getattr(args, "ray", None) or config.address
    if use_ray:
        from arena.tournament.ray_runner import import_ray
        try:
            import_ray()
        except TournamentError as e:
            print(str(e), file=sys.stderr)
            return 2
    for name, reason in config.skipped:
        err.print(f"note: bot {for_terminal(name)} left out: {for_terminal(reason)}")
    for line in insecure_warnings(config):
        err.print(line, markup=False)
    confined = [b for b in config.bots if b.spec.kind == "cmd" and b.confinement.sandbox]
    if confined:
        why = sandbox_works()
        if why is not None:
            print(f"{config.path}: bot {confined[0].name}: cannot be sandboxed: {why}",
                  file=sys.stderr)
            return 2
    try:
        store = open_run_store(config.output, "tournament",
                               f"choose another output in {config.path} or --out",
                               fresh=args.fresh, err=err)
    except RunFolderError as e:
        print(str(e), file=sys.stderr)
        return 2
    with store:
        try:
            seed, commitment = prepare(config, store)
        except TournamentError as e:
            print(str(e), file=sys.stderr)
            return 2
        out.print(f"[bold]{for_terminal(config.name)}[/]: {config.game}, {config.seats} seats, "
                  f"{len(config.bots)} bots, {config.format}, {config.deals} deal(s) per table")
        _print_confinement(config, err)
        if not use_ray:
            config = machine_bound_of(config, err)
        if use_ray:
            err.print(f"engine: ray ({address or 'RAY_ADDRESS, else a local Ray instance'}): "
                      f"one game per CPU of the cluster; concurrency does not apply",
                      soft_wrap=True, markup=False)
        out.print("seed commitment (SHA-256 of the seed's decimal string):", soft_wrap=True)
        print(commitment, flush=True)
        total = game_count(config.format, len(config.bots), config.seats, config.deals,
                           len(config.candidates), tables_per_bot=config.tables_per_bot)
        report = ProgressReport(store.count_faults())
        stored = store.count_done()
        if stored:  # the standings so far, from the results rows, before any bot starts
            report.standings.add_stored(store.iter_results())
        out.print(f"{total} games" + (f", {stored} already played: {total - stored} to play"
                                      if stored else " to play")
                  + f"; a progress line after the first game and every "
                    f"{report_every(total)} games, with the time left", soft_wrap=True)
        progress = Progress(
            TextColumn("[bold]games"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("eta"),
            TimeRemainingColumn(), TextColumn("faults {task.fields[faults]}"),
            console=err, disable=not err.is_terminal, transient=False)
        task: list[TaskID] = []

        def started(total: int, done: int) -> None:
            if done:
                out.print(f"resuming: {done} of {total} games already played")
            report.start(total, done)
            task.append(progress.add_task("games", total=total, completed=done,
                                          faults=report.faults, rate=""))
            progress.start()

        def finished(game: ScheduledGame, outcome: GameOutcome) -> None:
            line = report.game(game.bots, outcome.record["totals"], len(outcome.faults))
            t = task[0]
            progress.update(t, advance=1, faults=report.faults)
            speed = progress.tasks[t].speed
            if speed:
                progress.update(t, rate=f"{speed:.2f}/s")
            if line is not None:  # above the bar on a terminal, else a plain line
                progress.console.print(line, markup=False, highlight=False, soft_wrap=True)

        try:
            summary = _run(config, store, seed, started, finished, use_ray, address)
        except TournamentError as e:
            progress.stop()
            print(str(e), file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            progress.stop()
            summary = None
        progress.stop()
        if summary is None or summary.interrupted:
            done = store.count_done()
            print(f"stopped: {done} games kept, games in flight discarded, every bot "
                  f"ended; resume with: arena tournament {config.path}"
                  + (f" --out {config.output}" if args.out else ""), file=sys.stderr)
            return 130
        out.print(f"played {summary.played} games in {summary.seconds:.1f} s "
                  f"({summary.played / max(summary.seconds, 1e-9):.2f} games/s), "
                  f"{summary.faults} faults; {summary.done_before + summary.played} of "
                  f"{summary.total} games done"
                  + (f"; {summary.retries} game(s) played again after a cluster failure "
                     f"(not a bot's fault)" if use_ray else ""))
        store.set_meta({"resamples": str(args.resamples)})  # arena publish builds the same board
        return leaderboard_command(store, config.output, "table", args.resamples)


STANDINGS_TOP = 3
"""How many bots a progress line's standings name."""


def report_every(total: int) -> int:
    """How often a progress line is printed: every tenth of the games or every 50 games,
    whichever comes first."""
    return max(1, min(50, math.ceil(total / 10)))


def duration_text(seconds: float) -> str:
    """A duration for a progress line: ``45s``, ``3m05s``, ``1h02m``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class ProgressReport:
    """The progress lines of a tournament: after the first game of the run (the first
    estimate of the time left), then every :func:`report_every` games (and at the
    last), games done of the total, time elapsed in this run, the time left at this
    run's pace, the faults, and the top of the standings by the incremental Elo
    (:class:`~arena.report.board.QuickStandings`: cheap, no bootstrap). The same line on
    a terminal (above the progress bar) and in a log."""

    def __init__(self, faults: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        self.faults = faults
        self.standings = QuickStandings()
        self.total = 0
        self.done = 0
        self._clock = clock
        self._started = 0.0
        self._done_before = 0
        self._every = 1

    def start(self, total: int, done: int) -> None:
        self.total, self.done, self._done_before = total, done, done
        self._every = report_every(total)
        self._started = self._clock()

    def game(self, bots: Sequence[str], totals: Sequence[float], faults: int) -> str | None:
        """One game finished: its bots, totals and faults; the progress line when one is
        due, else None."""
        self.done += 1
        self.faults += faults
        self.standings.add(bots, totals)
        first = self.done == self._done_before + 1  # the first estimate of the time left
        if self.done % self._every and self.done != self.total and not first:
            return None
        return self.line()

    def line(self) -> str:
        elapsed = self._clock() - self._started
        played = self.done - self._done_before
        left = self.total - self.done
        eta = ("done" if not left else
               f"eta {duration_text(elapsed / played * left)}" if played else "eta ?")
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        top = ", ".join(f"{i}. {clean(name)} {elo:.0f}"
                        for i, (name, elo, _) in enumerate(
                            self.standings.top(STANDINGS_TOP), start=1))
        return (f"games {self.done}/{self.total}{share}, {duration_text(elapsed)} elapsed, "
                f"{eta}, faults {self.faults}" + (f"; Elo so far: {top}" if top else ""))


def _run(config: TournamentConfig, store: Store, seed: int,
         started: Callable[[int, int], None],
         finished: Callable[[ScheduledGame, GameOutcome], None],
         use_ray: bool, address: str) -> RunSummary:
    if not use_ray:
        start_cleanup()
        with keeping():
            return trio.run(run, config, store, seed, started, finished)
    from arena.tournament.ray_runner import run_ray
    return trio.run(run_ray, config, store, seed, address, started, finished)


def machine_bound_of(config: TournamentConfig, err: Console,
                     league: bool = False) -> TournamentConfig:
    """``config`` with the memory its pools may keep idle and spare processes in, from the
    machine's available memory (read once, here, before the run's loop) and the bots'
    memory limits; said in one line. A league counts the default limits too (the limits
    of the bots it will be sent), and every seat of its games."""
    limits = [b.confinement.limits.memory_mb for b in config.bots if b.spec.kind == "cmd"]
    if league:
        limits.append(config.limits.memory_mb)
    if not limits or config.isolation == "shared":
        return config
    in_games = config.concurrency * (config.seats if league else
                                     min(config.seats, len(limits)))
    budget, line = machine_bound(limits, in_games, memory_available())
    err.print(line, soft_wrap=True, markup=False)
    return replace(config, pool=replace(config.pool, idle_bytes=budget))


def _print_confinement(config: TournamentConfig, err: Console) -> None:
    """Say at the start how the bots are confined, and what is not as it should be."""
    cores = usable_cores()
    isolation = {"deal": "a process per bot plays one game at a time and never sees a "
                         "deal twice",
                 "game": "a fresh process per bot and game",
                 "shared": "one process per bot serves every game, several at once: "
                           "for trusted bots only"}[config.isolation]
    err.print(f"isolation: {config.isolation} ({isolation}); {config.concurrency} game(s) at "
              f"once on {cores} usable core(s)", soft_wrap=True, markup=False)
    if config.concurrency_given and config.concurrency > cores:
        err.print(f"warning: concurrency {config.concurrency} is more than the {cores} usable "
                  f"core(s): bots that think for their whole time may time out",
                  soft_wrap=True, markup=False)
    external = [b for b in config.bots if b.spec.kind == "cmd"]
    if not external:
        return
    mechanism = limit_mechanism()
    err.print(mechanism.describe(config.limits), soft_wrap=True, markup=False)
    if any(bot.confinement.sandbox for bot in external):
        from arena.proc.ids import id_mechanism
        from arena.proc.images import image_mechanism

        err.print(id_mechanism().describe(), soft_wrap=True, markup=False)
        err.print(image_mechanism().describe(), soft_wrap=True, markup=False)
        err.print("sandbox view: what each bot's runtime needs, read into the page cache "
                  "before it starts (view = \"runtime\")", soft_wrap=True, markup=False)
    for line in runtime_lines(config.bots, config.folder, config.runtimes):
        err.print(line, soft_wrap=True, markup=False)
    for bot in external:
        conf = bot.confinement
        if conf.sandbox and conf.view == "system":
            err.print(f"warning: bot {bot.name} sees all of /usr and /opt (view = "
                      f"\"system\"), nothing read in first: page-cache timing between bots "
                      f"is open", soft_wrap=True, markup=False)
        if not conf.sandbox:
            err.print(f"warning: bot {bot.name} runs without a sandbox (sandbox = false): "
                      f"it can read and change everything the arena can", soft_wrap=True,
                      markup=False)
        if conf.limits != config.limits:
            err.print(f"bot {bot.name}: {conf.limits.describe()}", soft_wrap=True,
                      markup=False)


def runtime_lines(bots: Sequence[BotEntry], folder: Path, runtimes: Sequence[Runtime]
                  ) -> list[str]:
    """What the start of a run says of runtimes: each of the file's own (what it shows),
    then each sandboxed ``cmd:`` bot's with the ``runtime`` view (what its command
    starts, :func:`arena.proc.runtimes.command_view`)."""
    from arena.proc.gate import program_path
    from arena.proc.runtimes import command_view, describe_runtime

    lines = [f"runtime {clean(describe_runtime(r))}" for r in runtimes]
    for bot in bots:
        conf = bot.confinement
        if bot.spec.kind != "cmd" or not conf.sandbox or conf.view != "runtime":
            continue
        program = program_path(command_args(bot.spec.value)[0], folder)
        if program is not None:
            lines.append(f"bot {clean(bot.name)}: runtime "
                         f"{command_view(program).describe()}")
    return lines


def leaderboard_command(store: Store, folder: Path, fmt: str, resamples: int) -> int:
    """Build the board (it only reads the store), write its files in ``folder`` and print
    it; in a read-only folder it is printed with a note that the files are not written."""
    board = build_leaderboard(store.iter_games(), store.meta(), store.bots(),
                              resamples=resamples)  # first: a store it cannot read is not written
    try:
        written = write_leaderboard(folder, board)
    except OSError as e:
        if e.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        written = []
        print(f"note: {folder}: read-only ({e.strerror}): the leaderboard is printed, its "
              f"files are not written", file=sys.stderr)
    if fmt == "table":
        console = Console(highlight=False)
        print_table(board, console)
        if written:
            console.print("written: " + ", ".join(str(p) for p in written), markup=False,
                          soft_wrap=True)
    elif fmt == "md":
        sys.stdout.write(render_markdown(board))
    elif fmt == "csv":
        sys.stdout.write(render_csv(board))
    else:
        sys.stdout.write(render_json(board))
    return 0
