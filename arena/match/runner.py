"""Running a match: the tournament's machinery (bot pools, sandbox, fair clock, store,
:func:`arena.play.game.run_game`) over the match's schedule, until the SPRT decides.

Games are started in schedule order, ``concurrency`` at a time, and each is stored when it
ends. The test reads the deals in order: deal ``d`` is counted once its four games and
every earlier deal are in, and the LLR is checked after each deal counted. At the first
crossing of a bound the run stops: the games in flight then are discarded (as when a
tournament is stopped), so the verdict is the one at the crossing and a resumed or
repeated run reaches the same one. Games of later deals that had already ended stay in
the store (they are real games: exported and verified) but are not counted.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import trio

from arena.match.schedule import Tally, match_schedule
from arena.play.host import host_game
from arena.play.pool import BotPool, DealsInFlight
from arena.runs.config import TournamentConfig
from arena.runs.field import job_of, seat_jobs, with_field
from arena.runs.preamble import unplayed
from arena.runs.schedule import ScheduledGame
from arena.runs.store import Store
from arena.runs.writer import StoreWriter, store_writer
from arena.stats.sprt import Sprt


@dataclass(slots=True)
class MatchState:
    """Where the match stands: the tally, the LLR and the verdict (None: going on)."""

    sprt: Sprt
    tally: Tally
    llr: float = 0.0
    verdict: str | None = None
    played: int = 0
    """Games played by this run."""
    stored: int = 0
    """Finished games in the store (this run's and earlier runs')."""
    faults: int = 0
    interrupted: bool = False
    seconds: float = 0.0
    llrs: list[float] = field(default_factory=list)
    """The LLR after each deal counted."""

    def count_ready(self) -> bool:
        """Count the deals now complete, in order, stopping at a verdict; whether any
        was counted."""
        counted = False
        while self.verdict is None and self.tally.advance():
            counted = True
            self.llr = self.sprt.llr(self.tally.pentanomial)
            self.llrs.append(self.llr)
            self.verdict = self.sprt.verdict(self.llr)
        return counted


def load_state(store: Store, sprt: Sprt, seats: int, deals: int) -> MatchState:
    """The state the stored games give, counting at most ``deals`` deals."""
    state = MatchState(sprt, Tally(seats, deals))
    for game in store.iter_games():
        state.tally.add(game.id, game.rotation, game.record)
        state.stored += 1
    state.count_ready()
    return state


async def run_match(config: TournamentConfig, store: Store, seed: int, state: MatchState,
                    on_start: Callable[[MatchState], None] | None = None,
                    on_game: Callable[[MatchState, bool], None] | None = None) -> MatchState:
    """Play the match's games not yet stored, up to ``config.deals`` deals, until a
    verdict. ``on_game(state, counted)`` is called after each stored game (``counted``:
    a deal was counted). Stops cleanly on SIGINT/SIGTERM (``state.interrupted``)."""
    pending, _ = unplayed(store, match_schedule(config.seats, config.deals, seed))

    async def play(pools: dict[str, BotPool]) -> None:
        if on_start is not None:
            on_start(state)
        if state.verdict is None:
            async with store_writer(store) as writer:
                await _play(config, seed, pending, pools, writer, state, on_game)

    try:
        await with_field(config, store, state, play)
    finally:
        # games cut off by the verdict or a signal: played again by a later run, if any
        store.reset_unfinished()
    return state


async def _play(config: TournamentConfig, seed: int, pending: Iterator[ScheduledGame],
                pools: dict[str, BotPool], store: StoreWriter, state: MatchState,
                on_game: Callable[[MatchState, bool], None] | None) -> None:
    seats = seat_jobs(config)
    cores = sorted(os.sched_getaffinity(0))
    # the two games of a pair share their deal: never in flight at once (DealsInFlight)
    flight = DealsInFlight((lambda name: name in pools) if config.isolation != "shared"
                           else (lambda name: False))
    ahead: deque[ScheduledGame] = deque()  # taken from ``pending``, waiting for a clash

    async def next_game() -> ScheduledGame | None:
        while True:
            if (game := flight.take(ahead)) is not None:
                return game
            taken = next(pending, None)  # shared by the workers: each game taken once
            if taken is not None:
                ahead.append(taken)
            elif ahead:
                await flight.changed()
            else:
                return None

    async with trio.open_nursery() as nursery:

        async def worker(slot: int) -> None:
            core = cores[slot % len(cores)] if config.isolation != "shared" else None
            while (scheduled := await next_game()) is not None:
                # a game of built-in bots never waits: let the other workers and the
                # signal handler run between games
                await trio.lowlevel.checkpoint()
                # both games of a pair share the deal and the tested seat, so their
                # built-in bots are seeded alike (arena.play.seats.builtin_seed)
                job = job_of(config, seed, scheduled, seats)
                outcome = await host_game(pools, job, scheduled, core, store, flight)
                state.played += 1
                state.stored += 1
                state.faults += len(outcome.faults)
                state.tally.add(scheduled.id, scheduled.rotation, outcome.record)
                counted = state.count_ready()
                if on_game is not None:
                    on_game(state, counted)
                if state.verdict is not None:
                    nursery.cancel_scope.cancel()  # the games in flight are discarded
                    return

        for slot in range(config.concurrency):
            nursery.start_soon(worker, slot)
