"""``LocalBackend``: a small league backend of its own that plays real games, for trials of
the service and its tests. ``arena league serve`` will use the league's own backend (the
league runner's store and scheduler); this one is the service's first real backend, not a
stand-in: it plays the field's bots against each other with :mod:`arena.play` (real
processes in the sandbox, the real referee), one game at a time, and rates them with
:class:`arena.league.live.LiveRatings`.

- The field (every bot, its versions and bundles) is kept in ``local-field.json`` in the
  league's folder, replaced atomically and fsynced: :meth:`add`, :meth:`update` and
  :meth:`retire` are durable when they return, and a restart finds the field as it was.
- Games, ratings and their history are kept in memory (a restart starts them afresh); each
  finished game's record is written to ``games/<id>.json`` and each bot's stderr to
  ``logs/<id>/``.
- Tables: ``seats`` distinct bots, the submitted bots with the fewest games first, the rest
  filled with the house bots (the built-in ``heuristic`` and ``random``, author ``house``).
  Games are played only while at least one submitted bot is active.
- Spectators see each game's public state, refreshed at every decision: the state as it
  was when the seat to move was asked (see :class:`arena.model.league_api.LiveGame`).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import secrets
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import trio

from arena.league.live import LiveRatings
from arena.league.service import Broadcast
from arena.model.league_api import (
    ACTIVE,
    BOT_JOINED,
    BOT_RETIRED,
    GAME_FINISHED,
    GAME_PROGRESS,
    GAME_STARTED,
    RETIRED,
    STANDINGS,
    BotDetail,
    FieldBot,
    GameSummary,
    LeagueError,
    LeagueEvent,
    LiveGame,
    RatingPoint,
    SeasonInfo,
    Standing,
    VersionEntry,
)
from arena.model.limits import Confinement, Limits
from arena.model.results import GameResult, RoundResult
from arena.model.spec import BotSpec
from arena.play.players import RemotePlayer, UnreachablePlayer
from arena.play.referee import Player, TimeControl, play_game
from arena.play.seats import builtin_player
from arena.proc.connection import BotConnection, HandshakeError
from arena.proc.logs import LogFolder
from arena.rules import Game, View, new_game
from arena.rules.cards import format_card, format_suit
from arena.stats.ratings import GameScores

FIELD_FILE = "local-field.json"
FORMAT = "trick-arena.local-field/1"
HOUSE = ("heuristic", "random")
HOUSE_AUTHOR = "house"


@dataclass
class _Bot:
    author: str
    name: str
    version: str
    spec: str
    folder: str
    bundle: str
    status: str = ACTIVE
    versions: list[VersionEntry] = field(default_factory=list)

    def public(self) -> FieldBot:
        return FieldBot(self.author, self.name, self.version, self.status, self.bundle)


@dataclass
class _Stats:
    games: int = 0
    faults: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    decisions: int = 0
    cpu_ms: float = 0.0
    cpu_n: int = 0
    wall_ms: float = 0.0
    history: list[RatingPoint] = field(default_factory=list)


def public_state(game: Game, seats: Sequence[str]) -> dict[str, Any]:
    """What a spectator may see of ``game``: everything but the cards not yet played."""
    seat = game.to_move
    view: View = game.view(seat if seat is not None else 0)
    played = len(view.trick.cards)
    return {
        "game": view.game, "seats": list(seats), "round": view.round, "rounds": view.rounds,
        "dealer": view.dealer,
        "trump_card": None if view.trump_card is None else format_card(view.trump_card),
        "trump": format_suit(view.trump), "bids": list(view.bids),
        "trick": {"leader": view.trick.leader, "cards": [format_card(c)
                                                         for c in view.trick.cards]},
        "tricks": [{"leader": t.leader, "cards": [format_card(c) for c in t.cards],
                    "winner": t.winner} for t in view.tricks],
        "won": list(view.won), "scores": list(view.scores),
        "cards_left": [view.tricks_in_round - len(view.tricks)
                       - (1 if (s - view.trick.leader) % view.players < played else 0)
                       for s in range(view.players)],
        "to_move": seat, "over": game.is_over,
    }


class _Watched:
    """A seat that tells the backend the game's public state each time it is asked."""

    def __init__(self, inner: Player, seen: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self._seen = seen

        self.last_cpu_ms: float | None = None

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        self._seen()
        try:
            return await self.inner.decide(view, game_id, table_id, deadline_ms, bank_ms)
        finally:
            self.last_cpu_ms = self.inner.last_cpu_ms

    def __getattr__(self, name: str) -> Any:  # last_call_ms and the like, as the seat has them
        return getattr(self.inner, name)

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None:
        await self.inner.round_ended(result, deadline_ms)

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None:
        await self.inner.game_ended(result, deadline_ms)


class LocalBackend:
    """A league of the bots submitted to it and the house bots, in the folder ``out``.

    ``game`` and ``seats`` say what is played, ``move_ms`` the time per decision; the
    master ``seed`` (default: random) is committed to by its SHA-256 (the season's page).
    :meth:`run` plays games until cancelled."""

    def __init__(self, out: Path, game: str = "trumps", seats: int = 3, move_ms: int = 1000,
                 seed: int | None = None, limits: Limits | None = None, sandbox: bool = True,
                 options: dict[str, Any] | None = None, idle_s: float = 0.2) -> None:
        self.out = out
        self.game = game
        self.seats = seats
        self.move_ms = move_ms
        self.options = {"players": seats, **(options or {})}
        self.limits = limits or Limits()
        self.sandbox = sandbox
        self.idle_s = idle_s
        self.seed = secrets.randbits(63) if seed is None else seed
        self.rng = random.Random(self.seed)
        self.started = time.time()
        self.path = out / FIELD_FILE
        self.bots: dict[str, _Bot] = {}
        self.stats: dict[str, _Stats] = {}
        self.ratings = LiveRatings(HOUSE)
        self.games: list[GameSummary] = []
        self.records: dict[str, Path] = {}
        self.logs: dict[tuple[str, str], Path] = {}
        self.live: dict[str, LiveGame] = {}
        self.broadcast = Broadcast()
        self._changed = trio.Event()
        self._count = 0
        out.mkdir(parents=True, exist_ok=True)
        self._load()

    # -- the field, durable ------------------------------------------------------------

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as e:
            raise LeagueError(f"{self.path}: cannot read the field: {e}") from None
        if data.get("format") != FORMAT:
            raise LeagueError(f"{self.path}: not a field file ({FORMAT})")
        for entry in data["bots"]:
            versions = [VersionEntry(**v) for v in entry.pop("versions")]
            bot = _Bot(**entry, versions=versions)
            self.bots[bot.name] = bot
            self.ratings.add_bot(bot.name)

    def _save(self) -> None:
        data = {"format": FORMAT, "bots": [
            {"author": b.author, "name": b.name, "version": b.version, "spec": b.spec,
             "folder": b.folder, "bundle": b.bundle, "status": b.status,
             "versions": [{"version": v.version, "bundle": v.bundle, "joined": v.joined}
                          for v in b.versions]} for b in self.bots.values()]}
        temp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, self.path)
        dfd = os.open(self.out, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    async def _commit(self, bot: _Bot, kind: str, text: str) -> FieldBot:
        before = self.bots.get(bot.name)
        self.bots[bot.name] = bot
        try:
            await trio.to_thread.run_sync(self._save)
        except OSError as e:
            if before is None:
                del self.bots[bot.name]
            else:
                self.bots[bot.name] = before
            raise LeagueError(f"the field cannot be saved: {e.strerror}") from None
        self.ratings.add_bot(bot.name)
        self._publish(LeagueEvent(kind, time.time(), text, bots=(bot.name,),
                                  data={"author": bot.author, "version": bot.version}))
        self._changed.set()
        return bot.public()

    async def field(self) -> list[FieldBot]:
        return [b.public() for b in self.bots.values()]

    async def add(self, author: str, name: str, spec: str, folder: Path,
                  version: str) -> FieldBot:
        if name in self.bots or name in HOUSE:
            raise LeagueError(f"the name {name!r} is taken")
        entry = VersionEntry(version, folder.name, time.time())
        bot = _Bot(author, name, version, spec, str(folder), folder.name, ACTIVE, [entry])
        return await self._commit(bot, BOT_JOINED, f"{name} {version} joined")

    async def update(self, author: str, name: str, spec: str, folder: Path,
                     version: str) -> FieldBot:
        bot = self.bots.get(name)
        if bot is None or bot.author != author:
            raise LeagueError(f"{name!r} is not a bot of {author}")
        entry = VersionEntry(version, folder.name, time.time())
        new = replace(bot, version=version, spec=spec, folder=str(folder), bundle=folder.name,
                      status=ACTIVE, versions=[*bot.versions, entry])
        return await self._commit(new, BOT_JOINED, f"{name} {version} joined (a new version)")

    async def retire(self, author: str, name: str) -> FieldBot:
        bot = self.bots.get(name)
        if bot is None or bot.author != author:
            raise LeagueError(f"{name!r} is not a bot of {author}")
        if bot.status == RETIRED:
            raise LeagueError(f"{name} is retired already")
        return await self._commit(replace(bot, status=RETIRED), BOT_RETIRED, f"{name} retired")

    # -- reading -----------------------------------------------------------------------

    def _author(self, name: str) -> str:
        bot = self.bots.get(name)
        return bot.author if bot is not None else HOUSE_AUTHOR

    def _version(self, name: str) -> str:
        bot = self.bots.get(name)
        return bot.version if bot is not None else "built-in"

    async def standings(self) -> list[Standing]:
        rows = [r for r in self.ratings.ranking() if r.games > 0]
        return [Standing(i + 1, r.name, self._author(r.name), self._version(r.name), r.elo,
                         r.sigma, r.games) for i, r in enumerate(rows)]

    async def recent_games(self, n: int) -> list[GameSummary]:
        return self.games[-n:][::-1] if n > 0 else []

    async def games_of(self, author: str) -> list[GameSummary]:
        return [g for g in reversed(self.games)
                if any(self._author(s) == author for s in g.seats)]

    async def log_path(self, author: str, game_id: str) -> Path | None:
        for (game, bot), path in self.logs.items():
            if game == game_id and self._author(bot) == author and path.is_file():
                return path
        return None

    async def live_games(self) -> list[LiveGame]:
        return list(self.live.values())

    async def record(self, game_id: str) -> dict[str, object] | None:
        path = self.records.get(game_id)
        if path is None:
            return None
        data: dict[str, object] = json.loads(await trio.Path(path).read_text())
        return data

    async def bot(self, name: str) -> BotDetail | None:
        bot = self.bots.get(name)
        if bot is None and name not in HOUSE:
            return None
        public = bot.public() if bot else FieldBot(HOUSE_AUTHOR, name, "built-in")
        stats = self.stats.get(name, _Stats())
        return BotDetail(public, tuple(bot.versions if bot else ()), stats.games, stats.faults,
                         dict(stats.kinds), stats.decisions,
                         stats.cpu_ms / stats.cpu_n if stats.cpu_n else None,
                         stats.wall_ms / stats.decisions if stats.decisions else None,
                         tuple(stats.history))

    async def season(self) -> SeasonInfo:
        commitment = hashlib.sha256(str(self.seed).encode()).hexdigest()
        return SeasonInfo(1, self.started, commitment, len(self.games))

    def events(self) -> AsyncIterator[LeagueEvent]:
        return self._subscription()

    async def _subscription(self) -> AsyncIterator[LeagueEvent]:
        async with self.broadcast.subscribe() as receive:
            async for event in receive:
                yield event

    def _publish(self, event: LeagueEvent) -> None:
        self.broadcast.publish(event)

    # -- playing -----------------------------------------------------------------------

    def _table(self) -> list[str] | None:
        submitted = [b.name for b in self.bots.values() if b.status == ACTIVE]
        if not submitted:
            return None
        self.rng.shuffle(submitted)
        submitted.sort(key=lambda n: self.stats.get(n, _Stats()).games)
        table = submitted[:self.seats]
        house = [h for h in HOUSE if h not in table]
        while len(table) < self.seats and house:
            table.append(house.pop(0))
        if len(table) < self.seats:
            return None
        self.rng.shuffle(table)
        return table

    async def run(self) -> None:
        """Play games until cancelled; an idle league waits for a bot to join."""
        while True:
            table = self._table()
            if table is None:
                self._changed = trio.Event()
                with trio.move_on_after(5):
                    await self._changed.wait()
                continue
            await self.play_one(table)
            await trio.sleep(self.idle_s)

    async def play_one(self, table: list[str]) -> GameSummary:
        """Play one game between the bots of ``table`` (by seat) and record it."""
        self._count += 1
        game_id = f"g{self._count:05d}-{secrets.token_hex(3)}"
        deal_seed = self.rng.randrange(1 << 62)
        log_dir = self.out / "logs" / game_id
        log_dir.mkdir(parents=True, exist_ok=True)
        logs = LogFolder(log_dir)
        game = new_game(self.game, self.options, deal_seed)
        started = time.time()
        conns: list[BotConnection] = []

        def seen() -> None:
            state = public_state(game, table)
            self.live[game_id] = LiveGame(game_id, self.game, tuple(table), started, state)
            self._publish(LeagueEvent(GAME_PROGRESS, time.time(), f"{game_id}: a move",
                                      game_id, tuple(table), data=state))

        players: list[Player] = []
        try:
            for seat, name in enumerate(table):
                bot = self.bots.get(name)
                if bot is None:
                    players.append(builtin_player(name, name, deal_seed, seat))
                    continue
                folder = Path(bot.folder)
                conn = BotConnection(name, BotSpec.parse(bot.spec), logs, 10.0, cwd=folder,
                                     confinement=Confinement(self.sandbox, self.limits,
                                                             (folder,)))
                conns.append(conn)
                try:
                    await conn.open(self.game)
                    players.append(RemotePlayer(conn, name))
                except HandshakeError as e:
                    players.append(UnreachablePlayer(name, f"cannot start: {e}"))
            self.live[game_id] = LiveGame(game_id, self.game, tuple(table), started,
                                          public_state(game, table))
            self._publish(LeagueEvent(GAME_STARTED, started, f"{game_id} started",
                                      game_id, tuple(table)))
            watched: list[Player] = [_Watched(p, seen) for p in players]
            report = await play_game(game, watched, TimeControl(self.move_ms),
                                     game_id=game_id, table_id="local")
        finally:
            self.live.pop(game_id, None)
            with trio.CancelScope(shield=True):
                for conn in conns:
                    await conn.aclose()
                    if conn.log_path is not None:
                        self.logs[(game_id, conn.name)] = conn.log_path
        for name in table:
            if (game_id, name) not in self.logs and name in self.bots:
                path = log_dir / f"{name}.log"
                if path.exists():
                    self.logs[(game_id, name)] = path
        return await self._finish(game_id, table, report.record, started)

    async def _finish(self, game_id: str, table: list[str], record: dict[str, Any],
                      started: float) -> GameSummary:
        games_dir = self.out / "games"
        games_dir.mkdir(exist_ok=True)
        path = games_dir / f"{game_id}.json"
        await trio.Path(path).write_text(json.dumps(record))
        self.records[game_id] = path
        faults = [0] * len(table)
        for f in record["faults"]:
            faults[f["seat"]] += 1
        now = time.time()
        summary = GameSummary(game_id, self.game, tuple(table), tuple(record["totals"]),
                              tuple(record["places"]), tuple(faults), now)
        self.games.append(summary)
        self.ratings.record(GameScores(game_id, tuple(table),
                                       tuple(float(t) for t in record["totals"])))
        timing = record.get("timing") or {}
        for seat, name in enumerate(table):
            stats = self.stats.setdefault(name, _Stats())
            stats.games += 1
            stats.faults += faults[seat]
            for f in record["faults"]:
                if f["seat"] == seat:
                    stats.kinds[f["kind"]] = stats.kinds.get(f["kind"], 0) + 1
            walls = (timing.get("wall_ms") or [[]] * len(table))[seat]
            cpus = (timing.get("cpu_ms") or [[]] * len(table))[seat]
            stats.decisions += len(walls)
            stats.wall_ms += sum(walls)
            measured = [c for c in cpus if c is not None]
            stats.cpu_ms += sum(measured)
            stats.cpu_n += len(measured)
        ratings = self.ratings.ratings()
        for name in table:
            r = ratings[name]
            self.stats[name].history.append(RatingPoint(r.games, r.elo, r.sigma, now))
        totals = ", ".join(f"{s} {t}" for s, t in zip(table, record["totals"], strict=True))
        self._publish(LeagueEvent(GAME_FINISHED, now, f"{game_id} finished: {totals}",
                                  game_id, tuple(table),
                                  data={"started": started, "totals": record["totals"],
                                        "places": record["places"], "faults": faults}))
        self._publish(LeagueEvent(STANDINGS, now, "the standings changed"))
        return summary
