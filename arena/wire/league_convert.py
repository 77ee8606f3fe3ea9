"""The league service's messages: the conversions between ``arena.v1.LeagueService``'s
messages and the values of :mod:`arena.model.league_api`, and the sizes both ends agree
on. The server is :mod:`arena.wire.league_server`, the client
:mod:`arena.wire.league_client`."""

from __future__ import annotations

from typing import Any

import grpc

from arena.model.league_api import (
    ACTIVE,
    BOT_JOINED,
    BOT_RETIRED,
    CHECK,
    DONE,
    FAILED_CHECKS,
    FAILED_PRECONDITION,
    GAME_FINISHED,
    GAME_PROGRESS,
    GAME_STARTED,
    INVALID_ARGUMENT,
    NOT_FOUND,
    PERMISSION_DENIED,
    RECEIVED,
    REFUSED,
    RESOURCE_EXHAUSTED,
    RETIRED,
    STANDINGS,
    SUBMISSION,
    UNAUTHENTICATED,
    UNAVAILABLE,
    UNPACKED,
    AuthorLimits,
    AuthorStatus,
    FieldBot,
    GameSummary,
    LeagueEvent,
    Standing,
    SubmitStep,
)
from arena.v1 import league_pb2

CHUNK_BYTES = 1 << 20
"""The largest chunk of a submission or a log (one message)."""
MAX_MESSAGE_BYTES = CHUNK_BYTES + (64 << 10)
"""The largest message either end receives or sends."""

_STAGES = {RECEIVED: league_pb2.SUBMIT_STAGE_RECEIVED, UNPACKED: league_pb2.SUBMIT_STAGE_UNPACKED,
           CHECK: league_pb2.SUBMIT_STAGE_CHECK, DONE: league_pb2.SUBMIT_STAGE_DONE}
_VERDICTS = {"": league_pb2.SUBMIT_VERDICT_UNSPECIFIED,
             "accepted": league_pb2.SUBMIT_VERDICT_ACCEPTED,
             REFUSED: league_pb2.SUBMIT_VERDICT_REFUSED,
             FAILED_CHECKS: league_pb2.SUBMIT_VERDICT_FAILED_CHECKS}
_STATUSES = {ACTIVE: league_pb2.BOT_STATUS_ACTIVE, RETIRED: league_pb2.BOT_STATUS_RETIRED}
_EVENTS = {GAME_STARTED: league_pb2.EVENT_KIND_GAME_STARTED,
           GAME_PROGRESS: league_pb2.EVENT_KIND_GAME_PROGRESS,
           GAME_FINISHED: league_pb2.EVENT_KIND_GAME_FINISHED,
           STANDINGS: league_pb2.EVENT_KIND_STANDINGS,
           BOT_JOINED: league_pb2.EVENT_KIND_BOT_JOINED,
           BOT_RETIRED: league_pb2.EVENT_KIND_BOT_RETIRED,
           SUBMISSION: league_pb2.EVENT_KIND_SUBMISSION}
CODES = {UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
          PERMISSION_DENIED: grpc.StatusCode.PERMISSION_DENIED,
          NOT_FOUND: grpc.StatusCode.NOT_FOUND,
          RESOURCE_EXHAUSTED: grpc.StatusCode.RESOURCE_EXHAUSTED,
          INVALID_ARGUMENT: grpc.StatusCode.INVALID_ARGUMENT,
          FAILED_PRECONDITION: grpc.StatusCode.FAILED_PRECONDITION,
          UNAVAILABLE: grpc.StatusCode.UNAVAILABLE}
"""The service's error codes (:class:`~arena.model.league_api.ServiceError`) as gRPC
status codes."""


def _back(table: dict[str, Any]) -> dict[int, str]:
    return {int(v): k for k, v in table.items()}


def step_to_pb(step: SubmitStep) -> league_pb2.SubmitResponse:
    return league_pb2.SubmitResponse(
        stage=_STAGES.get(step.stage, league_pb2.SUBMIT_STAGE_UNSPECIFIED), text=step.text,
        verdict=_VERDICTS.get(step.verdict, league_pb2.SUBMIT_VERDICT_UNSPECIFIED),
        name=step.name, version=step.version, bundle_sha256=step.bundle, ok=step.ok)


def step_from_pb(msg: league_pb2.SubmitResponse) -> SubmitStep:
    return SubmitStep(_back(_STAGES).get(msg.stage, ""), msg.text,
                      _back(_VERDICTS).get(msg.verdict, ""), msg.name, msg.version,
                      msg.bundle_sha256, msg.ok)


def bot_to_pb(bot: FieldBot) -> league_pb2.FieldBot:
    return league_pb2.FieldBot(author=bot.author, name=bot.name, version=bot.version,
                               status=_STATUSES.get(bot.status,
                                                    league_pb2.BOT_STATUS_UNSPECIFIED),
                               bundle_sha256=bot.bundle)


def bot_from_pb(msg: league_pb2.FieldBot) -> FieldBot:
    return FieldBot(msg.author, msg.name, msg.version,
                    _back(_STATUSES).get(msg.status, "unknown"), msg.bundle_sha256)


def status_to_pb(status: AuthorStatus) -> league_pb2.GetStatusResponse:
    limits = status.limits
    return league_pb2.GetStatusResponse(
        author=status.author, bots=[bot_to_pb(b) for b in status.bots],
        limits=league_pb2.AuthorLimits(
            submissions_per_hour=limits.submissions_per_hour,
            submissions_last_hour=status.submissions_last_hour,
            max_bundle_bytes=limits.max_bundle_bytes,
            max_unpacked_bytes=limits.max_unpacked_bytes, max_files=limits.max_files),
        runtimes=list(status.runtimes))


def status_from_pb(msg: league_pb2.GetStatusResponse) -> AuthorStatus:
    limits = msg.limits
    return AuthorStatus(msg.author, AuthorLimits(limits.submissions_per_hour,
                                                 limits.max_bundle_bytes,
                                                 limits.max_unpacked_bytes, limits.max_files),
                        limits.submissions_last_hour, tuple(msg.runtimes),
                        tuple(bot_from_pb(b) for b in msg.bots))


def standing_to_pb(row: Standing) -> league_pb2.Standing:
    return league_pb2.Standing(rank=row.rank, name=row.name, author=row.author,
                               version=row.version, elo=row.elo, sigma=row.sigma,
                               games=row.games)


def standing_from_pb(msg: league_pb2.Standing) -> Standing:
    return Standing(msg.rank, msg.name, msg.author, msg.version, msg.elo, msg.sigma, msg.games)


def game_to_pb(game: GameSummary) -> league_pb2.GameSummary:
    return league_pb2.GameSummary(game_id=game.game_id, game=game.game, seats=list(game.seats),
                                  totals=list(game.totals), places=list(game.places),
                                  faults=list(game.faults),
                                  finished_unix_ms=round(game.finished * 1000))


def game_from_pb(msg: league_pb2.GameSummary) -> GameSummary:
    return GameSummary(msg.game_id, msg.game, tuple(msg.seats), tuple(msg.totals),
                       tuple(msg.places), tuple(msg.faults), msg.finished_unix_ms / 1000)


def event_to_pb(event: LeagueEvent) -> league_pb2.WatchEventsResponse:
    return league_pb2.WatchEventsResponse(
        kind=_EVENTS.get(event.kind, league_pb2.EVENT_KIND_UNSPECIFIED),
        time_unix_ms=round(event.time * 1000), game_id=event.game_id, bots=list(event.bots),
        text=event.text)


def event_from_pb(msg: league_pb2.WatchEventsResponse) -> LeagueEvent:
    return LeagueEvent(_back(_EVENTS).get(msg.kind, "unknown"), msg.time_unix_ms / 1000,
                       msg.text, msg.game_id, tuple(msg.bots))
