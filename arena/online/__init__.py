"""The league on the network: ``serve_league`` (:mod:`arena.online.server`) serves the
league service over gRPC (:mod:`arena.wire.league`) and the live page
(:mod:`arena.online.web`) in front of a running league's backend
(:class:`arena.league.service.LeagueBackend`); :mod:`arena.online.checks` puts a submitted
bundle through check-bot in the sandbox; :mod:`arena.online.backend` is the backend of a
league run by :mod:`arena.league.runner` (``arena league serve``).

A layer of its own, beside :mod:`arena.human`: it uses :mod:`arena.checkbot` and the
site's replay viewer and charts (:mod:`arena.publish`), which sit above
:mod:`arena.league`.
"""
