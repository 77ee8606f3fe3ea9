"""The start and frame every run shares, wherever its games are played: a tournament on
this machine (:mod:`arena.tournament.runner`) or on a Ray cluster
(:mod:`arena.tournament.ray_runner`), a match (:mod:`arena.match.runner`); a league's run
(:mod:`arena.league.runner`) can use the same pieces.

- :func:`unplayed`: the games a stopped run left unfinished are cleared (played again),
  and the schedule's games not yet stored are the ones to play.
- :func:`run_framed`: the run is timed, a SIGINT or SIGTERM marks it interrupted and
  cancels it (finished games stay stored), and the reason it cannot go on
  (:class:`TournamentError`) is raised as one plain exception.
- :func:`hidden_paths`: what a bot must not see (the output, and every other bot's
  folders), for its seat and its pool alike.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import trio

from arena.runs.schedule import ScheduledGame
from arena.runs.store import Store


class TournamentError(RuntimeError):
    """The tournament cannot run (a bot fails its hand-shake, the file changed, ...)."""


class RunState(Protocol):
    """A run's state that its frame marks: interrupted by a signal, and how long it ran."""

    interrupted: bool
    seconds: float


class Interruptible(Protocol):
    """A run's state that a signal marks as interrupted."""

    interrupted: bool


def unplayed(store: Store, schedule: Iterable[ScheduledGame]
             ) -> tuple[Iterator[ScheduledGame], set[str]]:
    """The games of ``schedule`` a run is to play, in its order (lazily: a match's
    schedule is long), and the ids of the games already stored. The games a stopped run
    left unfinished are cleared first: they are played again, from their start."""
    store.reset_unfinished()
    done = store.done_ids()
    return (g for g in schedule if g.id not in done), done


def lane_order(games: Sequence[ScheduledGame]) -> list[ScheduledGame]:
    """``games`` lane by lane (table, rotation), each lane's deals in order: a process
    that has played deal d at one table plays deal d+1 next, never d again."""
    return sorted(games, key=lambda g: (g.table_no, g.rotation, g.deal_no))


def hidden_paths(output: Path, folders: Mapping[str, Sequence[Path]],
                 name: str) -> tuple[Path, ...]:
    """What bot ``name`` must not see: the run's ``output`` folder and the folders of
    every ``cmd:`` bot of the field (``folders``, by bot), less those that are its own
    too."""
    own = folders.get(name, ())
    every = (output.absolute(), *(f for fs in folders.values() for f in fs))
    return tuple(h for h in every if h not in own)


async def stop_on_signal(signals: trio.abc.AsyncReceiveChannel[int],  # type: ignore[name-defined]
                         scope: trio.CancelScope, state: Interruptible) -> None:
    """On the first signal: mark ``state`` interrupted and cancel ``scope``."""
    async for _ in signals:
        state.interrupted = True
        scope.cancel()
        return


async def run_framed(state: RunState, body: Callable[[], Awaitable[None]]) -> None:
    """Await ``body()`` in a run's frame: SIGINT/SIGTERM marks ``state`` interrupted and
    cancels it; ``state.seconds`` is set however it ends; a :class:`TournamentError` from
    ``body`` is raised as itself (not in an exception group), once ``body`` has ended
    (its processes with it)."""
    started = time.monotonic()
    failed: list[TournamentError] = []
    try:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(stop_on_signal, signals, nursery.cancel_scope, state)
                try:
                    await body()
                except TournamentError as e:
                    failed.append(e)  # raised outside the nursery: one plain exception
                nursery.cancel_scope.cancel()
    finally:
        state.seconds = time.monotonic() - started
    if failed:
        raise failed[0]
