"""The values the league service trades: between the running league (its backend), the
service's logic (:mod:`arena.league_service.service`), the wire (:mod:`arena.wire.league`) and the
live page. Standard library only, frozen, so any layer may hold them.

They sit here, below :mod:`arena.wire`, because the gRPC servicer converts them to and from
protobuf and the service's logic sits above the wire: both layers must see them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ACTIVE = "active"
RETIRED = "retired"
BOT_STATUSES = (ACTIVE, RETIRED)


class LeagueError(Exception):
    """A request the league refuses (a name taken, a version already in, not the
    author's bot); the message is one line for the author."""


UNAUTHENTICATED = "unauthenticated"
PERMISSION_DENIED = "permission_denied"
NOT_FOUND = "not_found"
RESOURCE_EXHAUSTED = "resource_exhausted"
INVALID_ARGUMENT = "invalid_argument"
FAILED_PRECONDITION = "failed_precondition"
UNAVAILABLE = "unavailable"
SERVICE_CODES = (UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, RESOURCE_EXHAUSTED,
                 INVALID_ARGUMENT, FAILED_PRECONDITION, UNAVAILABLE)


class ServiceError(Exception):
    """A call the service refuses: ``code`` (one of :data:`SERVICE_CODES`, which the wire
    maps to gRPC status codes) and one line."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class FieldBot:
    """A bot of the league's field."""

    author: str
    name: str
    version: str
    status: str = ACTIVE
    """:data:`ACTIVE` or :data:`RETIRED`."""
    bundle: str = ""
    """The SHA-256 (hex) of its current bundle; "" for a bot that came without one."""


@dataclass(frozen=True, slots=True)
class Standing:
    """One row of the live standings."""

    rank: int
    """1 for the best; 0 for a house bot (shown, not ranked)."""
    name: str
    author: str
    version: str
    elo: float
    sigma: float
    """Standard error in Elo points: the interval shown is ``elo ± 2 sigma``."""
    games: int
    status: str = "active"
    """:data:`ACTIVE` or :data:`RETIRED` (the live page marks a retired bot; not sent
    over the wire)."""


@dataclass(frozen=True, slots=True)
class GameSummary:
    """A finished game."""

    game_id: str
    game: str
    seats: tuple[str, ...]
    totals: tuple[int, ...]
    places: tuple[int, ...]
    faults: tuple[int, ...]
    finished: float
    """When it ended, seconds since the Unix epoch."""


@dataclass(frozen=True, slots=True)
class LiveGame:
    """A game in progress, as a spectator may see it: public information only.

    ``state`` is JSON-ready: the game, the seats, the round, the dealer, the turned trump
    card and the trump, the bids made so far, the cards of the trick being played and of
    the tricks played this round (with each trick's leader and winner), the tricks won,
    the scores, the number of cards each seat holds, and the seat to move. Never a card
    that has not been played; and while another rotation of the game's duplicate set is
    still to be played (``rotations_to_come`` > 0, ``cards_shown`` false) no card at all:
    each card played is null, and so are the turned trump card and the trump suit (unless
    no card was turned: a fixed trump is the league file's, not a card's)."""

    game_id: str
    game: str
    seats: tuple[str, ...]
    started: float
    state: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VersionEntry:
    """One version of a bot, as it joined."""

    version: str
    bundle: str
    joined: float


@dataclass(frozen=True, slots=True)
class RatingPoint:
    """A bot's rating after one of its games."""

    games: int
    elo: float
    sigma: float
    time: float


@dataclass(frozen=True, slots=True)
class BotDetail:
    """Everything the bot's page shows."""

    bot: FieldBot
    versions: tuple[VersionEntry, ...]
    games: int
    faults: int
    """Faults over every game it played."""
    fault_kinds: Mapping[str, int]
    decisions: int
    cpu_ms_mean: float | None
    """The bot's own CPU per decision, milliseconds (None where not measured)."""
    wall_ms_mean: float | None
    history: tuple[tuple[str, tuple[RatingPoint, ...]], ...]
    """Each version's rating after each of its games: (the version, its points), in the
    order the versions joined (a version is rated on its own, from its first game)."""


@dataclass(frozen=True, slots=True)
class SeasonInfo:
    """A season of the league: the one under way, or one that ended."""

    number: int
    started: float
    seed_commitment: str
    """The SHA-256 (hex) of the season's master seed, published before its games; the seed
    itself is published when the season ends."""
    games: int
    """The season's own finished games."""
    seed: int | None = None
    """The master seed, once the season has ended (None before)."""
    closed: float | None = None
    """When the season ended (None while it is under way)."""


GAME_STARTED = "game_started"
GAME_PROGRESS = "game_progress"
GAME_FINISHED = "game_finished"
STANDINGS = "standings"
BOT_JOINED = "bot_joined"
BOT_RETIRED = "bot_retired"
SUBMISSION = "submission"
EVENT_KINDS = (GAME_STARTED, GAME_PROGRESS, GAME_FINISHED, STANDINGS, BOT_JOINED,
               BOT_RETIRED, SUBMISSION)


@dataclass(frozen=True, slots=True)
class LeagueEvent:
    """Something that happened in the league."""

    kind: str
    """One of :data:`EVENT_KINDS`."""
    time: float
    text: str
    game_id: str = ""
    bots: tuple[str, ...] = ()
    author: str = ""
    """For a submission's progress: whose it is (only they are sent it)."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """JSON-ready details (a live game's public state, a finished game's summary)."""


CHECK = "check"
RECEIVED = "received"
UNPACKED = "unpacked"
DONE = "done"
ACCEPTED = "accepted"
REFUSED = "refused"
FAILED_CHECKS = "failed_checks"


@dataclass(frozen=True, slots=True)
class SubmitStep:
    """One line of a submission's progress; the last one has a ``verdict``."""

    stage: str
    """:data:`RECEIVED`, :data:`UNPACKED`, :data:`CHECK` or :data:`DONE`."""
    text: str
    verdict: str = ""
    """"" until the end; then :data:`ACCEPTED`, :data:`REFUSED` or :data:`FAILED_CHECKS`."""
    name: str = ""
    version: str = ""
    bundle: str = ""
    ok: bool = False
    """For a check line: whether the check passed."""


@dataclass(frozen=True, slots=True)
class AuthorLimits:
    """An author's limits (the organiser may raise or lower them per author)."""

    submissions_per_hour: int = 6
    max_bundle_bytes: int = 32 << 20
    max_unpacked_bytes: int = 128 << 20
    max_files: int = 5000


@dataclass(frozen=True, slots=True)
class AuthorStatus:
    """What ``GetStatus`` tells an author about themselves."""

    author: str
    limits: AuthorLimits
    submissions_last_hour: int
    runtimes: tuple[str, ...]
    bots: tuple[FieldBot, ...]


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """A server's TLS: its certificate (chain) and private key, PEM files (the settings of
    a bot served with TLS: ``--tls-cert``, ``--tls-key``)."""

    cert: Path
    key: Path
