"""Filling a game's seats: the one seat builder, and the one seeding rule for built-in bots.

A built-in bot in seat ``s`` of a game dealt from ``deal_seed`` is seeded with
:func:`builtin_seed`, ``"{deal_seed}/{s}"``, wherever the game is played: ``arena play``,
``arena check-bot``, a tournament, both games of a match's pair (the same deal and
seat), a Ray node. So the same deal with the same bots in the same seats is the same
game everywhere.

:func:`seat_all` fills the seats: built-in bots at once, every other seat by a function
of the caller's (a process started for the game, one leased from a pool, a person's
seat), side by side. :func:`seated_players` is that for one game of ``arena play``: a
fresh connection per external bot, ended on exit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import trio

from arena.bots import make_bot
from arena.model.limits import Confinement
from arena.model.spec import BotSpec
from arena.play.players import LocalPlayer, RemotePlayer
from arena.play.referee import Player
from arena.proc.connection import BotConnection, HandshakeError
from arena.proc.logs import LogFolder


def builtin_seed(deal_seed: int, seat: int) -> str:
    """What a built-in bot in ``seat`` of a game dealt from ``deal_seed`` is seeded with."""
    return f"{deal_seed}/{seat}"


def builtin_player(bot: str, name: str, deal_seed: int, seat: int) -> LocalPlayer:
    """The built-in bot ``bot`` at ``seat``, seeded by :func:`builtin_seed`."""
    return LocalPlayer(make_bot(bot, builtin_seed(deal_seed, seat)), name)


class Seat(Protocol):
    """A seat to fill: its bot's name (None: the bot's own), and what kind of bot it is
    (``builtin`` with the built-in's name as ``value``, or anything else, for the caller
    to seat)."""

    @property
    def name(self) -> str | None: ...

    @property
    def kind(self) -> str: ...

    @property
    def value(self) -> str: ...


S = TypeVar("S", bound=Seat)


async def seat_all(seats: Sequence[S], deal_seed: int,
                   other: Callable[[int, S], Awaitable[Player]]) -> list[Player]:
    """The players by seat: each built-in bot made at once (:func:`builtin_player`), each
    other seat by ``await other(seat, entry)``, those side by side."""
    seated: list[Player | None] = [None] * len(seats)

    async def one(seat: int, entry: S) -> None:
        seated[seat] = await other(seat, entry)

    async with trio.open_nursery() as nursery:
        for seat, entry in enumerate(seats):
            if entry.kind == "builtin":
                seated[seat] = builtin_player(entry.value, entry.name or entry.value,
                                              deal_seed, seat)
            else:
                nursery.start_soon(one, seat, entry)
    players = [player for player in seated if player is not None]
    if len(players) != len(seats):  # ``other`` returned for every seat it was given
        raise RuntimeError("a seat was left empty")
    return players


@dataclass(frozen=True, slots=True)
class SeatSpec:
    """A seat of ``arena play`` to fill: how to reach its bot, and the name it plays under
    (None: the name the bot gives in its hand-shake)."""

    name: str | None
    spec: BotSpec
    player: Player | None = None
    """A player the caller made (a person's seat, :mod:`arena.human`): seated as it is."""

    @property
    def kind(self) -> str:
        return "player" if self.player is not None else self.spec.kind

    @property
    def value(self) -> str:
        return self.spec.value


@asynccontextmanager
async def seated_players(seats: Sequence[SeatSpec], game: str, log_dir: Path,
                         deal_seed: int, startup_s: float = 10.0,
                         confinement: Confinement | None = None,
                         ) -> AsyncIterator[list[Player]]:
    """Players for ``seats``, one connection per external seat, ended on exit.

    ``cmd:`` bots run confined as ``confinement`` says (default: sandboxed, with the
    default limits). The hand-shakes run side by side; the first failure (by seat)
    raises :class:`HandshakeError` once every started process has been ended.
    """
    connections: list[BotConnection] = []
    errors: dict[int, HandshakeError] = {}
    logs = LogFolder(log_dir)

    async def other(seat: int, entry: SeatSpec) -> Player:
        if entry.player is not None:
            return entry.player
        conn = BotConnection(entry.name or f"seat{seat} ({entry.spec})", entry.spec, logs,
                             startup_s,
                             confinement=confinement)
        connections.append(conn)
        try:
            info = await conn.open(game)
        except HandshakeError as e:
            errors[seat] = e
            return RemotePlayer(conn)
        return RemotePlayer(conn, entry.name or info.name)

    try:
        players = await seat_all(seats, deal_seed, other)
        if errors:
            raise errors[min(errors)]
        yield players
    finally:
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for conn in connections:
                    nursery.start_soon(conn.aclose)
