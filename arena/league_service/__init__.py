"""The league's service, in one place: a submission is handled here, from the gRPC call
to the run's answer.

- :func:`serve` (:mod:`.server`) is the one entry: a league run with the service in front
  of it, in one trio run (``arena league serve FILE``); :func:`serve_league` is its
  service half, in front of any backend.
- :mod:`.service`: the service's logic (:class:`LeagueService`: authentication, uploads,
  the submission's steps, the events), over the wire's handler protocol
  (:mod:`arena.wire.league_server`).
- :mod:`.checks`: check-bot on a submitted bundle, in the sandbox.
- :mod:`.backend`: the bridge to the run (:class:`RunnerBackend`): a passed submission is
  handed to the run through memory (:meth:`arena.league.runner.League.submit`); the file
  inbox (:mod:`arena.league.inbox`) is only for commands from another terminal.
- :mod:`.web`: the live page, on the shared HTTP server (:mod:`arena.http`).

A package of its own, not ``arena.league.serve``: it sits in the layer above
:mod:`arena.league` (the run), beside :mod:`arena.human`, because it uses
:mod:`arena.checkbot` and the site's replay viewer and charts (:mod:`arena.publish`),
which sit above the league (import-linter's layers cannot hold a package inside another
layer's package).
"""

from arena.league_service.server import DEFAULT_ADDRESS, ServeSettings, Serving, serve, serve_league

__all__ = ["DEFAULT_ADDRESS", "ServeSettings", "Serving", "serve", "serve_league"]
