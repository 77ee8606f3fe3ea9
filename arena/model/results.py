"""What the referee tells a bot about itself and about finished rounds and games, as
domain values: :class:`BotInfo` (a bot's answer to Hello), :class:`RoundResult` and
:class:`GameResult` (the RoundEnded and GameEnded notifications, per seat). The wire
layer turns them into protobuf; the referee and the players never see protobuf."""

from __future__ import annotations

from dataclasses import dataclass

from arena.rules import Game, Outcome, Trick
from arena.rules.cards import Card, Suit


@dataclass(frozen=True, slots=True)
class BotInfo:
    """Who a bot is, from its answer to Hello."""

    name: str
    version: str
    author: str
    protocol_version: int
    games: tuple[str, ...]
    """The games it plays that this code knows (unknown future games are left out)."""
    skip_round_ended: bool = False
    """The bot wants no RoundEnded notifications."""


@dataclass(frozen=True, slots=True)
class RoundResult:
    """A finished round, as a RoundEnded notification tells it to one seat."""

    game_id: str
    table_id: str
    game: str
    seat: int
    players: int
    round: int
    rounds: int
    dealer: int
    trump_card: Card | None
    trump: Suit | None
    bids: tuple[int | None, ...]
    """By seat; None where no bid was made (Trumps without announce)."""
    tricks: tuple[Trick, ...]
    won: tuple[int, ...]
    points: tuple[int, ...]
    totals: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class GameResult:
    """A finished game, as a GameEnded notification tells it to one seat."""

    game_id: str
    table_id: str
    game: str
    seat: int
    players: int
    totals: tuple[int, ...]
    places: tuple[int, ...]
    forfeited: bool = False
    forfeit_reason: str = ""


def round_result(game: Game, round_number: int, seat: int, game_id: str,
                 table_id: str) -> RoundResult:
    """What ``seat`` learns of ``game``'s finished round ``round_number``; ValueError if
    that round is not finished."""
    log = game.log
    if not 1 <= round_number <= len(log) or log[round_number - 1].points is None:
        raise ValueError(f"round {round_number} of this game is not finished")
    entry = log[round_number - 1]
    totals = [0] * game.players
    for e in log[:round_number]:
        for i, p in enumerate(e.points or ()):
            totals[i] += p
    return RoundResult(
        game_id=game_id, table_id=table_id, game=game.name, seat=seat, players=game.players,
        round=round_number, rounds=game.rounds, dealer=entry.dealer,
        trump_card=entry.trump_card, trump=entry.trump,
        bids=tuple(entry.bids) if entry.bids is not None else (None,) * game.players,
        tricks=tuple(entry.tricks), won=tuple(entry.won), points=tuple(entry.points or ()),
        totals=tuple(totals))


def game_result(game: Game, seat: int, game_id: str, table_id: str, *,
                outcome: Outcome | None = None, forfeited: bool = False,
                forfeit_reason: str = "") -> GameResult:
    """What ``seat`` learns at the end of ``game``: ``outcome`` (default
    ``game.outcome()``) and whether its bot was forfeited, and why."""
    result = game.outcome() if outcome is None else outcome
    return GameResult(game_id, table_id, game.name, seat, game.players, result.totals,
                      result.places, forfeited, forfeit_reason)
