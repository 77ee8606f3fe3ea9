"""The league service on the wire, in three modules: the messages and their conversions
(:mod:`arena.wire.league_convert`), the server (:mod:`arena.wire.league_server`: the
``arena.v1.LeagueService`` servicer on grpcio's asyncio server, bridged to the service's
logic in trio) and the client ``arena submit`` uses (:mod:`arena.wire.league_client`,
which imports nothing of the server). This module gathers their names for the code that
wants all of them."""

from __future__ import annotations

from arena.wire.league_bridge import EVENT_QUEUE
from arena.wire.league_client import LeagueCallError, LeagueClient
from arena.wire.league_convert import (
    CHUNK_BYTES,
    CODES,
    MAX_MESSAGE_BYTES,
    bot_from_pb,
    bot_to_pb,
    event_from_pb,
    event_to_pb,
    game_from_pb,
    game_to_pb,
    standing_from_pb,
    standing_to_pb,
    status_from_pb,
    status_to_pb,
    step_from_pb,
    step_to_pb,
)
from arena.wire.league_server import (
    SERVICE_NAME,
    LeagueHandler,
    LeagueServer,
    ServiceCaps,
    address_problem,
    bearer_token,
    client_of,
    read_pem,
    start_server,
)

__all__ = [
    "CHUNK_BYTES", "CODES", "EVENT_QUEUE", "MAX_MESSAGE_BYTES", "SERVICE_NAME",
    "LeagueCallError", "LeagueClient", "LeagueHandler", "LeagueServer", "ServiceCaps",
    "address_problem", "bearer_token", "bot_from_pb", "bot_to_pb", "client_of",
    "event_from_pb", "event_to_pb", "game_from_pb", "game_to_pb", "read_pem",
    "standing_from_pb", "standing_to_pb", "start_server", "status_from_pb", "status_to_pb",
    "step_from_pb", "step_to_pb",
]
