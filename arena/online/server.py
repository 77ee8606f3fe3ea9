"""``serve_league``: the league service (gRPC) and, if asked, the live page, in front of a
running league's backend. ``arena league serve FILE`` calls it with the backend of the
running league (:class:`arena.online.backend.RunnerBackend`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import trio

from arena.league.authors import AuthorFile, AuthorStore
from arena.league.service import (
    BundleChecker,
    LeagueBackend,
    LeagueService,
    SubmitRules,
    WrongTokens,
)
from arena.model.league_api import TlsFiles
from arena.online.checks import BundleCheck
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
                from arena.online.web import LiveSite

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
