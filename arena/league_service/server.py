"""The package's entry, :func:`serve`: a league run (:func:`arena.league.runner.run_league`)
with the league service in front of it, in one trio run (``arena league serve FILE``).
:func:`serve_league` is its service half: the gRPC service and, if asked, the live page, in
front of any backend (:class:`arena.league_service.backend.RunnerBackend` for a run)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import trio

from arena.league.authors import AuthorFile, AuthorStore
from arena.league.config import LeagueConfig
from arena.league.manifest import DEFAULT_RUNTIMES
from arena.league.runner import Event, League, LeagueSummary, run_league
from arena.league_service.backend import RunnerBackend
from arena.league_service.checks import BundleCheck
from arena.league_service.service import (
    BundleChecker,
    LeagueBackend,
    LeagueService,
    SubmitRules,
    WrongTokens,
)
from arena.model.league_api import TlsFiles
from arena.runs.store import Store
from arena.wire.league_server import ServiceCaps, address_problem, start_server

DEFAULT_ADDRESS = "127.0.0.1:50061"


@dataclass(frozen=True, slots=True)
class Serving:
    """Where the league serves, once it does (``task_status.started``'s value)."""

    port: int
    """The gRPC port."""
    tls: bool
    web_url: str | None
    """The live page's address, when served."""
    swept: tuple[str, ...] = ()
    """What a crash had left half done in the bot store, removed at the start."""


async def serve_league(backend: LeagueBackend, out: Path, address: str = DEFAULT_ADDRESS,
                       tls: TlsFiles | None = None, *, authors: AuthorStore | None = None,
                       rules: SubmitRules | None = None, checker: BundleChecker | None = None,
                       web: str | None = None, caps: ServiceCaps | None = None,
                       wrong_tokens: WrongTokens | None = None,
                       announce: Callable[[Serving], None] | None = None,
                       task_status: trio.TaskStatus[Serving] = trio.TASK_STATUS_IGNORED,
                       ) -> None:
    """Serve the league of ``backend`` (its folder ``out``: bundles in ``out/bots/``,
    authors in ``out/authors.json`` unless ``authors`` is given) on ``address``
    (HOST:PORT; anything but loopback needs ``tls``), and the live page on ``web``
    (HOST:PORT, same rule, same TLS) if given, until cancelled. ``caps`` bound what one
    author, and all, may hold of the gRPC server; ``wrong_tokens`` limits wrong tokens per
    client (both have defaults). ValueError (one line) for an address or TLS file it
    cannot use, before anything is served."""
    problem = address_problem(address, tls) or (address_problem(web, tls) if web else None)
    if problem is not None:
        raise ValueError(problem)
    service = LeagueService(backend, authors or AuthorFile.in_folder(out), out,
                            checker or BundleCheck(), rules or SubmitRules(),
                            wrong_tokens=wrong_tokens)
    swept = tuple(await trio.to_thread.run_sync(service.prepare))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(service.run)
        server = await trio.to_thread.run_sync(partial(
            start_server, service, address, tls, nursery.start_soon,
            trio.lowlevel.current_trio_token(), caps or ServiceCaps()))
        site = None
        try:
            web_url = None
            if web is not None:
                from arena.league_service.web import LiveSite

                site = LiveSite(service, web, tls, trio.lowlevel.current_trio_token())
                nursery.start_soon(site.follow)
                site.start()
                web_url = site.url
            serving = Serving(server.port, server.tls, web_url, swept)
            if announce is not None:
                announce(serving)
            task_status.started(serving)
            await trio.sleep_forever()
        finally:
            if site is not None:
                site.close()
            with trio.CancelScope(shield=True):  # the calls it ends still need trio
                await trio.to_thread.run_sync(server.stop)
            nursery.cancel_scope.cancel()


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """What ``arena league serve`` was asked for (checked by the CLI before the start)."""

    address: str = DEFAULT_ADDRESS
    tls: TlsFiles | None = None
    web: str | None = None
    """The live page's HOST:PORT, or None for no page."""
    runtimes: tuple[str, ...] = DEFAULT_RUNTIMES
    """The runtimes a submission may name."""
    check_games: int = 1
    """check-bot's games of each kind for a submission (0: the hand-shake only)."""


async def serve(config: LeagueConfig, store: Store, settings: ServeSettings, *,
                on_event: Event | None = None,
                on_start: Callable[[League], None] | None = None,
                on_game: Callable[[League], None] | None = None,
                max_games: int | None = None,
                announce: Callable[[Serving], None] | None = None,
                ) -> tuple[LeagueSummary, League | None]:
    """Run the league of ``config`` on ``store`` (as ``arena league run`` does: until
    stopped, or ``max_games``) with the league service in front of it, once the run has
    opened its field. A passed submission reaches the run through memory
    (:meth:`arena.league.runner.League.submit`), never through the inbox's files.
    KeyboardInterrupt if the run ended without a summary."""
    backend = RunnerBackend(config)
    ready = trio.Event()
    result: list[tuple[LeagueSummary, League | None]] = []

    def started(league: League) -> None:
        backend.attach(league)
        if on_start is not None:
            on_start(league)
        ready.set()

    def event(text: str) -> None:
        if on_event is not None:
            on_event(text)
        backend.on_event(text)

    async with trio.open_nursery() as nursery:
        async def league_task() -> None:
            result.append(await run_league(config, store, on_event=event,
                                           on_start=started, on_game=on_game,
                                           max_games=max_games))
            nursery.cancel_scope.cancel()

        nursery.start_soon(league_task)
        await ready.wait()
        checker = BundleCheck(move_ms=config.base.move_ms,
                              games_per_kind=settings.check_games,
                              limits=config.base.limits, games=(config.base.game,),
                              options=tuple(sorted(config.base.options.items())))
        nursery.start_soon(lambda: serve_league(
            backend, config.output, settings.address, settings.tls,
            rules=SubmitRules(runtimes=settings.runtimes),
            checker=checker, web=settings.web, announce=announce))
    if not result:
        raise KeyboardInterrupt
    return result[0]
