"""The one way a game is hosted, whoever runs it (a tournament, ``arena match``, a league,
a Ray node's game host):
its seats leased from the bots' pools, the game marked started in the store, played,
stored finished, the leases released. The isolation rules live in what it uses, so no
runner can leave one out:

- a process plays one game at a time and never a deal twice (:class:`BotPool`'s lease,
  through its deal ledger), and is reclaimed between games and ended when it holds pages
  after the reclaim, has seen every deal, or plays under ``game`` isolation
  (:meth:`BotPool.release`);
- no two games of one deal with a bot in common are in flight at once
  (:class:`~arena.play.pool.DealsInFlight`, which the caller's queue takes from, and
  which :func:`host_game` enters and leaves around the game);
- the game's bots are held to the core of its slot (where cgroups allow).

On a Ray cluster the same rules hold by the same code: the driver
(:mod:`arena.tournament.ray_runner`) gives a game to a node only when
:class:`~arena.play.pool.DealsInFlight` lets it, enters it there while it is in
flight, and stores it; the node's game host (:class:`~arena.play.worker.GameHost`)
hosts it with :func:`host_game`, its seats leased from pools of its own (its store the
driver's: nothing is stored on the node).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from arena.model.job import GameJob, GameOutcome
from arena.play.game import run_game
from arena.play.pool import BotPool, DealsInFlight, Dealt, leased_players
from arena.play.referee import Player

G = TypeVar("G", bound=Dealt)
G_contra = TypeVar("G_contra", contravariant=True)


class GameStore(Protocol[G_contra]):
    """Where a hosted game is stored (the store's writer thread)."""

    async def game_started(self, game: G_contra) -> None: ...

    async def game_finished(self, game: G_contra, record: Mapping[str, Any]) -> None: ...


class Watcher(Protocol[G_contra]):
    """Who watches the hosted games (a league's live page): told of a game seated (it
    may wrap its players, to see each decision's public state) and of its end."""

    def started(self, scheduled: G_contra, players: list[Player]) -> list[Player]: ...

    def finished(self, scheduled: G_contra, outcome: GameOutcome | None) -> None: ...


async def host_game(pools: Mapping[str, BotPool], job: GameJob, scheduled: G,
                    core: int | None, store: GameStore[G],
                    in_flight: DealsInFlight | None = None,
                    watcher: Watcher[G] | None = None) -> GameOutcome:
    """Host ``scheduled`` (its ``job``): lease its seats from ``pools`` (held to
    ``core``), mark it started in ``store``, play it, store it finished with its
    record (its timing in it), and release the leases whatever happens. While it
    is in flight it is entered in ``in_flight`` (the caller took it from its queue
    there). ``watcher`` is told of it seated and of its end (None: not finished)."""
    token = in_flight.enter(scheduled.deal_seed, scheduled.bots) \
        if in_flight is not None else None
    outcome: GameOutcome | None = None
    try:
        async with leased_players(pools, job, core) as players:
            await store.game_started(scheduled)
            seated = watcher.started(scheduled, players) if watcher is not None else players
            outcome = await run_game(job, seated)
        await store.game_finished(scheduled, outcome.record)
    except BaseException:
        if watcher is not None:
            watcher.finished(scheduled, None)
        raise
    finally:
        if token is not None and in_flight is not None:
            in_flight.leave(token)
    return outcome
