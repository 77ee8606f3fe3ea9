"""``RunnerBackend``: the league service in front of a running league
(:mod:`arena.league.runner`), as ``arena league serve FILE`` runs it.

There is one way the field changes: a submission that passed check-bot becomes an ``add``
or ``update`` request, the request ``arena league add`` writes into the inbox from another
terminal, but handed to the run of this process through memory
(:meth:`arena.league.runner.League.submit`: no file, no poll), applied by the run in one
store transaction with its id (:func:`arena.league.store.apply_request`) and answered once
the bot's first process has answered its hand-shake. The request carries the author, the
manifest's version and the bundle's SHA-256; the store keeps the request's body, so who
owns which bot survives every restart. The service acknowledges a submission only once
that answer is there: the bot is in the store, durably.

Everything read comes from the store or from the run itself. The store is read by its
readers (:mod:`arena.runs.readers`: read-only connections in threads of their own),
never by its writer thread nor on the game loop: a bot's page reads the bot's running
totals (a row per version, :meth:`Store.bot_totals`), a list of games the small tables
(:meth:`Store.game_rows`), and the parsing is done in the reader's thread. From the run:
the live ratings, the games in progress (the public state at every decision: each seat is
watched as it is asked, :class:`arena.league.runner.GameWatcher`), and the stderr log of
each bot's process in each game (kept for the games of this run).

A game's cards reach no client while another rotation of its duplicate set (the same
deal) is still to be played (:func:`arena.league.sets.cards_open`, the one rule): its
replay is withheld (:meth:`RunnerBackend.record`), and its live state, which every event
and page is made from (:func:`public_state`), carries the bids, the tricks won and the
scores but no card until it is the last rotation of its set still to be played.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import trio

from arena.league import inbox
from arena.league.config import LeagueConfig
from arena.league.runner import GameWatcher, League
from arena.league.sets import cards_open, rotations_to_come
from arena.league.store import (
    Answer,
    FieldRow,
    SeasonRow,
    entry_json,
    field_rows,
    season_rows,
)
from arena.league_service.checks import sdk_env
from arena.league_service.service import Broadcast
from arena.model.job import GameOutcome
from arena.model.league_api import (
    ACTIVE,
    BOT_JOINED,
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
from arena.model.limits import Confinement
from arena.model.spec import BotSpec
from arena.play.players import RemotePlayer
from arena.play.referee import Player
from arena.rules import View
from arena.rules.cards import format_card, format_suit
from arena.runs.config import BotEntry
from arena.runs.schedule import ScheduledGame
from arena.runs.store import BotTotals, Store

ORGANISER = "organiser"
"""The author shown for the league file's bots (and the house bots)."""
ANSWER_WAIT_S = 300.0
"""How long a submission waits for the run to take it in (its hand-shake included)."""
HISTORY = 500
"""Rating points kept per bot for its chart."""
LOGS_KEPT = 50_000
"""(game, bot) -> log entries kept in memory (the oldest are forgotten first)."""


class ReplayWithheld(LeagueError):
    """A finished game whose replay is not shown yet: a rotation of its duplicate set is
    still to be played (one line: :func:`withheld_text`)."""


def withheld_text(game_id: str, left: int) -> str:
    """Why the replay of ``game_id`` is not shown (``left`` rotations of its set to go)."""
    return (f"the replay of {game_id} is withheld until its deal's set is complete: "
            f"{left} more rotation{'s' if left != 1 else ''} of the same deal "
            f"{'are' if left != 1 else 'is'} still to be played, by bots that must not "
            f"know its hands")


def public_state(view: View, seats: Sequence[str], to_move: int, shown: bool,
                 to_come: int) -> dict[str, Any]:
    """What a spectator may see of a game, from the view of the seat to move: never a hand
    (the cards not yet played); and unless its cards are ``shown``
    (:func:`arena.league.sets.cards_open`: no other rotation of its duplicate set is still
    to be played; ``to_come`` of them are), no card at all.

    Shown always: the seats, the round, the dealer, the bids, whose turn it is, who led
    and who won each trick, the tricks won, the scores and how many cards each seat
    holds and has played. Shown only when ``shown`` (``cards_shown``): the turned
    trump card and the trump suit (the turned card's suit, or the dealer's choice on a
    turned Wizard), and the cards played; before, each card played is ``None`` (the count
    stays), and the trump card and the trump are ``None`` (``trump_turned`` says whether a
    card was turned; when none was, the trump, fixed or none, is the league file's and the
    round's, no card's, and is shown)."""
    played = len(view.trick.cards)

    def cards(played_cards: Sequence[int]) -> list[str | None]:
        return [format_card(c) if shown else None for c in played_cards]

    return {
        "game": view.game, "seats": list(seats), "round": view.round, "rounds": view.rounds,
        "dealer": view.dealer, "trump_turned": view.trump_card is not None,
        "trump_card": None if view.trump_card is None or not shown
        else format_card(view.trump_card),
        "trump": format_suit(view.trump) if shown or view.trump_card is None else None,
        "bids": list(view.bids),
        "trick": {"leader": view.trick.leader, "cards": cards(view.trick.cards)},
        "tricks": [{"leader": t.leader, "cards": cards(t.cards), "winner": t.winner}
                   for t in view.tricks],
        "won": list(view.won), "scores": list(view.scores),
        "cards_left": [view.tricks_in_round - len(view.tricks)
                       - (1 if (s - view.trick.leader) % view.players < played else 0)
                       for s in range(view.players)],
        "to_move": to_move, "over": False,
        "cards_shown": shown, "rotations_to_come": to_come,
    }


class _WatchedRemote(RemotePlayer):
    """A bot's seat that tells the backend the public state each time it is asked (a
    RemotePlayer still: the game's figures read its connection)."""

    def __init__(self, inner: RemotePlayer, seen: Any, seat: int) -> None:
        super().__init__(inner.connection, inner.name)
        self._seen = seen
        self._seat = seat

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        self._seen(view, self._seat)
        return await super().decide(view, game_id, table_id, deadline_ms, bank_ms)


class _Watched:
    """Any other seat (a built-in, an unreachable bot), watched the same way."""

    def __init__(self, inner: Player, seen: Any, seat: int) -> None:
        self._inner = inner
        self.name = inner.name
        self._seen = seen
        self._seat = seat

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        self._seen(view, self._seat)
        return await self._inner.decide(view, game_id, table_id, deadline_ms, bank_ms)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class RunnerBackend(GameWatcher):
    """The :class:`arena.league_service.service.LeagueBackend` of a running league: made before
    the run, given the run by :meth:`attach` (in ``run_league``'s ``on_start``)."""

    def __init__(self, config: LeagueConfig, *, sandbox: bool = True) -> None:
        self.config = config
        self.out = config.output
        self.sandbox = sandbox
        self.league: League | None = None
        self.broadcast = Broadcast()
        self.live: dict[str, LiveGame] = {}
        self.logs: dict[tuple[str, str], Path] = {}
        self.history: dict[str, list[RatingPoint]] = {}
        self.started_at = time.time()

    # -- the run's side -------------------------------------------------------------

    def attach(self, league: League) -> None:
        self.league = league
        league.watcher = self

    def on_event(self, text: str) -> None:
        """The run's one-line events (bots joined and retired, seasons) as events."""
        kind = BOT_JOINED if text.startswith("added ") else "league"
        self._publish(LeagueEvent(kind, time.time(), text))

    def started(self, scheduled: ScheduledGame, players: list[Player]) -> list[Player]:
        game_id, seats = scheduled.id, tuple(scheduled.bots)
        now = time.time()
        self.live[game_id] = LiveGame(game_id, self.config.base.game, seats, now, {})
        for player in players:
            conn = getattr(player, "connection", None)
            path = getattr(conn, "log_path", None)
            if isinstance(path, Path):
                self.logs[(game_id, player.name)] = path
        while len(self.logs) > LOGS_KEPT:
            del self.logs[next(iter(self.logs))]
        self._publish(LeagueEvent(GAME_STARTED, now, f"{game_id} started", game_id, seats))

        def seen(view: View, seat: int) -> None:
            # decided at every move: the game's last rotation still to be played shows
            # its cards from the move after the others finished
            state = public_state(view, seats, seat, *self.cards_of(scheduled))
            self.live[game_id] = LiveGame(game_id, self.config.base.game, seats,
                                          self.live[game_id].started if game_id in self.live
                                          else now, state)
            self._publish(LeagueEvent(GAME_PROGRESS, time.time(), f"{game_id}: a move",
                                      game_id, seats, data=state))

        return [_WatchedRemote(p, seen, i) if isinstance(p, RemotePlayer)
                else _Watched(p, seen, i) for i, p in enumerate(players)]

    def finished(self, scheduled: ScheduledGame, outcome: GameOutcome | None) -> None:
        self.live.pop(scheduled.id, None)
        if outcome is None or self.league is None:
            return
        now = time.time()
        ratings = self.league.live.ratings()
        for name in scheduled.bots:
            r = ratings.get(name)
            points = self.history.setdefault(name, [])
            # the ratings move once a set is whole (arena.league.sets.WholeSets): a
            # point for each whole set, not one a game
            if r is not None and r.games and (not points or points[-1].games != r.games):
                points.append(RatingPoint(r.games, r.elo, r.sigma, now))
                del points[:-HISTORY]
        record = outcome.record
        totals = ", ".join(f"{s} {t}" for s, t in zip(scheduled.bots, record["totals"],
                                                      strict=True))
        self._publish(LeagueEvent(GAME_FINISHED, now, f"{scheduled.id} finished: {totals}",
                                  scheduled.id, tuple(scheduled.bots),
                                  data={"totals": record["totals"],
                                        "places": record["places"]}))
        self._publish(LeagueEvent(STANDINGS, now, "the standings changed"))

    def cards_of(self, scheduled: ScheduledGame) -> tuple[bool, int]:
        """May the cards of ``scheduled``, in play, be shown now
        (:func:`arena.league.sets.cards_open`), and how many rotations of its duplicate set,
        other than itself, are still to be played (queued or in flight): from the run's
        count of each set's finished rotations (by set number: a league's table number);
        before the run is attached, none is finished."""
        seats = self.config.base.seats
        league = self.league
        done = 0 if league is None else league.done_in_set.get(scheduled.table_no, 0)
        return (cards_open(seats, done, over=False),
                rotations_to_come(seats, done, over=False))

    def _publish(self, event: LeagueEvent) -> None:
        self.broadcast.publish(event)

    # -- the store ------------------------------------------------------------------

    def _league(self) -> League:
        if self.league is None:
            raise LeagueError("the league is not running yet")
        return self.league

    async def _read(self, fn: Any) -> Any:
        """``fn(store)`` on one of the store's readers (never the writer thread)."""
        league = self._league()
        if league.readers is None:
            raise LeagueError("the league's store has no readers")
        return await league.readers.call(fn)

    async def _rows(self) -> list[FieldRow]:
        rows: list[FieldRow] = await self._read(field_rows)
        return rows

    @staticmethod
    def _author(row: FieldRow) -> str:
        return str(row.request.get("author") or ORGANISER)

    def _authors(self, rows: list[FieldRow]) -> dict[str, str]:
        """Each base name's author (that of its first version) and each version's."""
        by_base: dict[str, str] = {}
        for row in rows:
            by_base.setdefault(row.base, self._author(row))
        return {**by_base, **{row.name: by_base[row.base] for row in rows}}

    async def field(self) -> list[FieldBot]:
        """One entry per bot (its base name), as its latest version stands."""
        latest: dict[str, FieldRow] = {}
        for row in await self._rows():
            if row.house:
                continue
            latest[row.base] = row
        authors = self._authors(list(latest.values()))
        return [FieldBot(authors[b], b, str(r.request.get("manifest_version", "")),
                         ACTIVE if r.status == "active" else RETIRED,
                         str(r.request.get("bundle", ""))) for b, r in latest.items()]

    async def _change(self, request: dict[str, Any]) -> Answer:
        """Hand ``request`` to the run through memory (:meth:`League.submit`) and wait
        for its answer; no file is written."""
        league = self._league()
        request = {"id": inbox.new_id(), "at": time.time(), **request}
        with trio.move_on_after(ANSWER_WAIT_S):
            return await league.submit(request)
        raise LeagueError(f"the league did not take the request in {ANSWER_WAIT_S:.0f} s")

    def _entry(self, name: str, spec: str, folder: Path) -> str:
        limits = self.config.base.limits
        entry = BotEntry(name, BotSpec.parse(spec), None,
                         Confinement(self.sandbox, limits, read_only=(folder,), within=folder,
                                     env=sdk_env()))
        return entry_json(entry, folder)

    async def _join(self, kind: str, author: str, name: str, spec: str, folder: Path,
                    version: str) -> FieldBot:
        answer = await self._change({
            "kind": kind, "name": name, "entry": self._entry(name, spec, folder),
            "keep": False, "author": author, "manifest_version": version,
            "bundle": folder.name})
        if not answer.ok:
            raise LeagueError(answer.message)
        return FieldBot(author, name, version, ACTIVE, folder.name)

    async def add(self, author: str, name: str, spec: str, folder: Path,
                  version: str) -> FieldBot:
        return await self._join("add", author, name, spec, folder, version)

    async def update(self, author: str, name: str, spec: str, folder: Path,
                     version: str) -> FieldBot:
        return await self._join("update", author, name, spec, folder, version)

    async def retire(self, author: str, name: str) -> FieldBot:
        rows = [r for r in await self._rows() if r.base == name]
        active = [r for r in rows if r.status == "active"]
        if not active:
            raise LeagueError(f"{name} is retired already")
        for row in active:
            answer = await self._change({"kind": "retire", "name": row.name,
                                         "reason": f"retired by its author {author}"})
            if not answer.ok:
                raise LeagueError(answer.message)
        last = rows[-1]
        return FieldBot(author, name, str(last.request.get("manifest_version", "")), RETIRED,
                        str(last.request.get("bundle", "")))

    # -- reading ----------------------------------------------------------------------

    async def standings(self) -> list[Standing]:
        league = self._league()
        rows = await self._rows()
        authors = self._authors(rows)
        versions = {r.name: str(r.request.get("manifest_version", "")) for r in rows}
        status = {r.name: ACTIVE if r.status == "active" else RETIRED for r in rows}
        return [Standing(i, name, authors.get(name, ORGANISER), versions.get(name, ""), elo,
                         sigma, games, status.get(name, ACTIVE))
                for i, (name, elo, sigma, games) in enumerate(league.ranking(), start=1)]

    async def _games(self, limit: int, bots: set[str] | None = None) -> list[GameSummary]:
        game = self.config.base.game

        def read(store: Store) -> list[GameSummary]:
            rows = store.game_rows(limit, None if bots is None else sorted(bots))
            return [GameSummary(r.id, game, r.bots, r.totals, r.places, r.faults, r.ended_at)
                    for r in rows]

        games: list[GameSummary] = await self._read(read)
        return games

    async def recent_games(self, n: int) -> list[GameSummary]:
        return await self._games(n) if n > 0 else []

    async def _names_of(self, author: str) -> set[str]:
        rows = await self._rows()
        authors = self._authors(rows)
        return {r.name for r in rows if authors.get(r.name) == author and not r.house}

    async def games_of(self, author: str) -> list[GameSummary]:
        return await self._games(1000, await self._names_of(author))

    async def log_path(self, author: str, game_id: str) -> Path | None:
        for name in await self._names_of(author):
            path = self.logs.get((game_id, name))
            if path is not None and path.is_file():
                return path
        return None

    async def live_games(self) -> list[LiveGame]:
        return list(self.live.values())

    async def record(self, game_id: str) -> dict[str, object] | None:
        """A finished game's record; None if there is none. Withheld (:class:`LeagueError`,
        one line) while a rotation of its duplicate set is still to be played: the record
        holds every hand and the deal's seed, which a bot still to play that deal must
        not be told. (:class:`ReplayWithheld`, a :class:`LeagueError`, as the service's
        protocol knows no other refusal.)"""
        seats = self.config.base.seats

        def read(store: Store) -> tuple[dict[str, object], int] | None:
            return store.finished_record(game_id)

        found: tuple[dict[str, object], int] | None = await self._read(read)
        if found is None:
            return None
        record, done = found
        if not cards_open(seats, done, over=True):
            raise ReplayWithheld(withheld_text(game_id,
                                               rotations_to_come(seats, done, over=True)))
        return record

    async def bot(self, name: str) -> BotDetail | None:
        def read(store: Store) -> tuple[list[FieldRow], BotTotals | None]:
            rows = field_rows(store)
            mine = [r for r in rows if r.name == name or r.base == name]
            if not mine:
                return rows, None
            line = tuple(r.name for r in rows if r.base == mine[0].base)
            return rows, store.bot_totals(line)

        rows, totals = await self._read(read)
        if totals is None:
            return None
        base = next(r for r in rows if r.name == name or r.base == name).base
        authors = self._authors(rows)
        line = [r for r in rows if r.base == base]
        latest = line[-1]
        names = tuple(r.name for r in line)
        bot = FieldBot(authors.get(base, ORGANISER), base,
                       str(latest.request.get("manifest_version", "")),
                       ACTIVE if latest.status == "active" else RETIRED,
                       str(latest.request.get("bundle", "")))
        versions = tuple(VersionEntry(str(r.request.get("manifest_version", r.name)),
                                      str(r.request.get("bundle", "")), r.added_at)
                         for r in line)
        history = tuple((v.version or n, tuple(self.history.get(n, [])))
                        for n, v in zip(names, versions, strict=True)
                        if self.history.get(n))
        return BotDetail(bot, versions, totals.games, totals.faults, totals.fault_kinds,
                         totals.decisions,
                         totals.cpu_ms / totals.cpu_decisions if totals.cpu_decisions
                         else None,
                         totals.wall_ms / totals.decisions if totals.decisions else None,
                         history)

    async def seasons(self) -> list[SeasonInfo]:
        """Every season, the one under way last: its start, its own games, its seed
        (revealed once it closed) or the commitment to it."""
        rows: list[SeasonRow] = await self._read(season_rows)
        return [SeasonInfo(r.season, r.started_at, r.commitment, r.games, r.seed, r.closed_at)
                for r in rows]

    async def season(self) -> SeasonInfo:
        seasons = await self.seasons()
        if not seasons:
            return SeasonInfo(0, self.started_at, "", 0)
        return seasons[-1]

    def events(self) -> AsyncIterator[LeagueEvent]:
        return self._subscription()

    async def _subscription(self) -> AsyncIterator[LeagueEvent]:
        async with self.broadcast.subscribe() as receive:
            async for event in receive:
                yield event
