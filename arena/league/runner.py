"""Running a league: tables chosen as games finish, a field that changes while it runs.

The tournament's machinery plays every game (bot pools, the sandbox and its limits, one
deal per process, the fair clock, :func:`arena.play.host.host_game`, the store
and its writer thread, the results chain); what differs is where the games come from:

- **Sets.** Whenever a worker (``concurrency`` of them) wants a game and none is queued,
  :func:`arena.league.matchmaking.choose_tables` chooses one table from the live ratings,
  and the table is played as one duplicate set: its deal (the season's master seed and the
  set number, :func:`arena.league.store.set_deal_seed`) in every rotation. The decision
  (set number, season, derivation index, table, reason) is stored before its games. A set
  started is always finished whole: by this run, or by the next one after a stop or a
  kill -9 (its missing rotations are queued first). A bot retired while a set of it is in
  flight plays that set to its end and no new one.
- **Live ratings.** :class:`arena.league.live.LiveRatings` with ``compare="cards"``: the
  bots that held the same seat's cards in a set's rotations are compared, so the deal's
  luck cancels. A set counts once it is whole (:class:`~arena.league.sets.WholeSets`: its
  last rotation stored, then one full Newton step), as on the published board
  (:func:`arena.report.board.whole_sets`, :func:`arena.stats.ratings.same_cards`): the
  live and the published ratings always rate the same games. They are rebuilt from the
  store's results when a run starts (a set a stopped run left unfinished is held until
  this run finishes it). House bots with a rating are its fixed anchors.
- **The field.** A change of the field is a request (add, update, retire, close) handed
  to the run's one request task: through memory (:meth:`League.submit`, the league
  service of the same process), or from the inbox (:mod:`arena.league.inbox`, commands
  from another terminal), read every half second off the game loop. Each request is
  applied in one store transaction with its id, then takes effect at once: an added
  bot's pool is opened (its hand-shake: a bot that fails is retired with the reason) and
  it joins the next tables; a retired bot joins none, and its pool is closed once its
  last set is finished.
- **Seasons.** The first run draws a master seed (or takes the file's) and stores it with
  its SHA-256 commitment; ``arena league close`` (through the inbox while a run goes on)
  stops new sets, lets the sets in flight finish, reveals the seed and starts the next
  season.
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any

import trio

from arena.league import inbox
from arena.league.config import LeagueConfig
from arena.league.matchmaking import BotState, choose_tables
from arena.league.sets import add_met, game_of, met_counts, rebuild_sets, season_seed
from arena.league.store import (
    Answer,
    LeagueBot,
    Season,
    SetDecision,
    apply_request,
    close_season,
    decide,
    load_bots,
    load_sets,
    retire,
    seasons,
    set_bot_info,
    set_deal_seed,
    start_season,
)
from arena.model.job import GameOutcome, SeatJob
from arena.model.spec import command_args
from arena.play.bound import IdleBound
from arena.play.host import host_game
from arena.play.pool import (
    DEALS_FOREVER,
    BotPool,
    DealsInFlight,
    RefusedPool,
    prepare_pools,
)
from arena.play.referee import Player
from arena.proc.connection import HandshakeError
from arena.proc.gate import own_folders
from arena.runs.field import job_of
from arena.runs.preamble import stop_on_signal
from arena.runs.readers import StoreReaders, store_readers
from arena.runs.schedule import ScheduledGame
from arena.runs.store import Store
from arena.runs.writer import StoreWriter, store_writer
from arena.stats.ratings import GameScores


@dataclass(slots=True)
class LeagueSummary:
    played: int = 0
    faults: int = 0
    sets: int = 0
    """Sets decided by this run."""
    interrupted: bool = False
    seconds: float = 0.0
    requests: int = 0
    update_ms: list[float] = field(default_factory=list)
    """The live ratings' update time after each whole set (its last game), milliseconds."""


Event = Callable[[str], None]
Reply = Callable[[Answer], Awaitable[None]]
"""How a request's answer goes back to whoever asked (a file of the inbox, or memory)."""


class GameWatcher:
    """What a watcher of the games is told (the league service's live page): a game whose
    players are seated (it may wrap them, e.g. to see each decision's public state), and a
    game finished and stored. The default sees nothing."""

    def started(self, scheduled: ScheduledGame, players: list[Player]) -> list[Player]:
        return players

    def finished(self, scheduled: ScheduledGame, outcome: GameOutcome | None) -> None:
        """``outcome`` None: the game was not finished (the run stops)."""


class League:
    """A running league: its field, ratings, sets and pools (one run)."""

    def __init__(self, config: LeagueConfig, store: Store, writer: StoreWriter,
                 pools_nursery: trio.Nursery, summary: LeagueSummary,
                 on_event: Event | None, on_game: Callable[[League], None] | None,
                 max_games: int | None, readers: StoreReaders | None = None) -> None:
        self.config = config
        self.base = config.base
        self.store = store
        self.writer = writer
        self.readers = readers
        """Read-only connections for what the league's pages and service read (off the
        game loop and off the writer: :mod:`arena.runs.readers`)."""
        self.nursery = pools_nursery
        self.summary = summary
        self.on_event = on_event or (lambda text: None)
        self.on_game = on_game
        self.max_games = max_games
        self.seats = self.base.seats
        self.bound = IdleBound(self.base.pool.idle_bytes)
        """The machine's memory bound, shared by every bot's pool (:class:`IdleBound`)."""
        self.bots: dict[str, LeagueBot] = load_bots(store)
        self.rated = rebuild_sets(store, self.bots, self.seats)
        self.live = self.rated.live
        self.games_stored = store.count_done()
        self.sets: dict[int, SetDecision] = {s.set_no: s for s in load_sets(store)}
        self.met = met_counts(list(self.sets.values()))
        self.next_set = max(self.sets, default=-1) + 1
        done = store.done_ids()
        self.done_in_set: dict[int, int] = {}
        self.queue: deque[ScheduledGame] = deque()
        self.flight = DealsInFlight(
            (lambda name: False) if self.base.isolation == "shared" else
            (lambda name: name not in self.seat_jobs or self.seat_jobs[name].kind != "builtin"))
        """No two games in flight share a deal and a bot (:class:`DealsInFlight`)."""
        for s in sorted(self.sets.values(), key=lambda d: d.set_no):
            missing = [r for r in range(self.seats) if game_of(s, r).id not in done]
            self.done_in_set[s.set_no] = self.seats - len(missing)
            self.queue.extend(game_of(s, r) for r in missing)
        self.open_sets = {n for n, k in self.done_in_set.items() if k < self.seats}
        self.season_list = seasons(store)
        self.seeds = {s.season: s.seed for s in self.season_list}
        self.season: Season | None = next((s for s in reversed(self.season_list)
                                           if not s.closed), None)
        self.pools: dict[str, BotPool] = {}
        self.ready: set[str] = set()
        """Bots that may be seated: built-ins, and external bots whose pool is open."""
        self.seat_jobs: dict[str, SeatJob] = {}
        self._closers: dict[str, trio.Event] = {}
        self._decide_lock = trio.Lock()
        self._changed = trio.Event()
        self._busy: set[str] = set()
        """Inbox requests handed to the request task and not answered yet: not read
        again."""
        self._requests_in, self._requests = trio.open_memory_channel[
            tuple[dict[str, Any], Reply]](0)
        """The run's requests, taken one at a time by :meth:`take_requests`."""
        self.closing: tuple[dict[str, Any], Reply] | None = None
        self.planned = 0
        """Games of the sets this run decided."""
        self.stop = False
        self.cores = sorted(os.sched_getaffinity(0))
        self.watcher = GameWatcher()
        """Set by whoever watches the games (before they start: in ``on_start``)."""

    # -- the field ------------------------------------------------------------------

    def house_names(self) -> set[str]:
        return {b.name for b in self.bots.values() if b.house}

    def _seat_job(self, bot: LeagueBot) -> SeatJob:
        hide = (self.base.output.absolute(), *self._folders())
        own = self._folders(bot.name)
        c, remote = bot.entry.confinement, bot.entry.spec.remote
        read_only = tuple(str(p if p.is_absolute() else bot.cwd / p) for p in c.read_only)
        limits = tuple(sorted((k, int(v)) for k, v in asdict(c.limits).items()))
        return SeatJob(bot.name, bot.entry.spec.kind, bot.entry.spec.value, c.sandbox,
                       limits, read_only, c.env,
                       tuple(str(h) for h in hide if h not in own),
                       None if remote.tls_ca is None else remote.tls_ca.decode(),
                       remote.server_name, remote.token, remote.insecure, c.view,
                       None if c.within is None else str(c.within))

    def _folders(self, only: str | None = None) -> list[Path]:
        folders: list[Path] = []
        for bot in self.bots.values():
            if bot.entry.spec.kind == "cmd" and (only is None or bot.name == only):
                folders += own_folders(command_args(bot.entry.spec.value)[1:], bot.cwd,
                                       bot.entry.confinement.within)
        return folders

    def in_open_sets(self, name: str) -> bool:
        return any(name in self.sets[n].bots for n in self.open_sets)

    async def join(self, bot: LeagueBot, done: Callable[[str | None], Awaitable[None]]
                   | None = None) -> None:
        """Make ``bot`` playable: a built-in at once, an external bot once its pool's first
        process has answered the hand-shake (in a task of its own, which holds the pool
        until the bot leaves). ``done(error)`` is awaited after (None: joined)."""
        self.seat_jobs[bot.name] = self._seat_job(bot)
        if bot.entry.spec.kind == "builtin":
            self.ready.add(bot.name)
            await self.writer.call(lambda s: set_bot_info(
                s, bot.name, {"version": "", "author": "trick-arena",
                              "games": ("wizard", "trumps")}, self.base.isolation))
            self._changed.set()
            if done is not None:
                await done(None)
            return
        closer = trio.Event()
        self._closers[bot.name] = closer
        self.nursery.start_soon(self._pool_task, bot, closer, done)

    async def _pool_task(self, bot: LeagueBot, closer: trio.Event,
                         done: Callable[[str | None], Awaitable[None]] | None) -> None:
        base = self.base
        hide = tuple(Path(h) for h in self.seat_jobs[bot.name].hide)
        spares, max_idle, _ = base.pool.resolved(base.concurrency)
        async with BotPool(bot.name, bot.entry.spec, base.output / "logs",
                           base.startup_ms / 1000, bot.entry.confinement, base.isolation,
                           DEALS_FOREVER, hide=hide, spares=spares,
                           max_idle=max_idle, cwd=bot.cwd, bound=self.bound) as pool:
            try:
                info = await pool.open(base.game)
            except HandshakeError as e:
                reason = f"failed to start in the run: {e}"
                self.pools[bot.name] = RefusedPool(bot.name, str(e))
                await self.writer.call(lambda s: retire(s, bot.name, reason))
                self._retired(bot.name, reason)
                self.on_event(f"bot {bot.name} retired: {reason}")
                if done is not None:
                    await done(reason)
                return
            self.pools[bot.name] = pool
            await self.writer.call(lambda s: set_bot_info(
                s, bot.name, {"version": info.version, "author": info.author,
                              "protocol_version": info.protocol_version,
                              "games": tuple(info.games)}, base.isolation))
            if self.bots[bot.name].active:
                self.ready.add(bot.name)
            self._changed.set()
            if done is not None:
                await done(None)
            await closer.wait()
            self.ready.discard(bot.name)
        self.pools.pop(bot.name, None)

    def _retired(self, name: str, reason: str | None = None) -> None:
        old = self.bots[name]
        self.bots[name] = LeagueBot(old.name, old.base, old.version_no, old.previous,
                                    old.entry, old.cwd, old.house, old.rating, "retired",
                                    reason)
        self.ready.discard(name)
        self._release(name)

    def _release(self, name: str) -> None:
        """Close a retired bot's pool once no unfinished set needs it."""
        bot = self.bots.get(name)
        if bot is not None and not bot.active and not self.in_open_sets(name):
            closer = self._closers.pop(name, None)
            if closer is not None:
                closer.set()

    async def open_field(self) -> None:
        """At the start: every active bot joins, and every retired bot that an unfinished
        set still needs (it plays that set and no new one)."""
        waiting = [b for b in self.bots.values() if b.active or self.in_open_sets(b.name)]
        left = [len(waiting)]
        all_done = trio.Event()

        async def started(error: str | None) -> None:
            left[0] -= 1
            if left[0] == 0:
                all_done.set()

        for bot in waiting:
            await self.join(bot, started)
        if waiting:
            await all_done.wait()

    # -- the requests ---------------------------------------------------------------

    async def submit(self, request: dict[str, Any]) -> Answer:
        """Hand ``request`` (with its ``id``) to the run through memory and wait for its
        answer: an added bot's once its first process answered the hand-shake. What the
        league service of this process calls; no file is written."""
        send, receive = trio.open_memory_channel[Answer](1)

        async def reply(answer: Answer) -> None:
            try:
                send.send_nowait(answer)
            except trio.BrokenResourceError:
                pass  # the asker gave up waiting: the request was carried out all the same

        async with receive:
            await self._requests_in.send((request, reply))
            return await receive.receive()

    async def take_requests(self) -> None:
        """Carry out the run's requests, one at a time, from memory and from the inbox."""
        async for request, reply in self._requests:
            await self._request(request, reply)

    async def read_inbox(self) -> None:
        """Hand the inbox's requests (from another terminal) to :meth:`take_requests`,
        every :data:`arena.league.inbox.POLL_S` seconds; close the season when asked and
        its sets are finished."""
        out = self.base.output
        while True:
            close_handed = False
            for path, request in await trio.to_thread.run_sync(inbox.pending, out):
                if path.stem in self._busy:
                    continue
                if request is not None and request.get("kind") == "close" and (
                        close_handed or self.closing is not None):
                    continue  # one close at a time: the next waits in the inbox
                close_handed = close_handed or (request is not None
                                                and request.get("kind") == "close")
                if request is None:
                    await trio.to_thread.run_sync(inbox.answer, path, Answer(
                        False, f"{path.name}: not a request of this arena").to_json())
                    continue
                self._busy.add(path.stem)
                await self._requests_in.send((request, self._file_reply(path)))
            if self.closing is not None:
                await self._try_close()
            await trio.sleep(inbox.POLL_S)

    def _file_reply(self, path: Path) -> Reply:
        async def reply(answer: Answer) -> None:
            await trio.to_thread.run_sync(inbox.answer, path, answer.to_json())
            self._busy.discard(path.stem)

        return reply

    async def _request(self, request: dict[str, Any], reply: Reply) -> None:
        kind = request.get("kind")
        if kind == "close":
            if self.closing is not None:
                await reply(Answer(False, "a close of the season is under way already"))
                return
            self.closing = (request, reply)
            self.on_event("close requested: no new set; the sets in flight finish first")
            return
        house = {n: b.rating for n, b in self.bots.items() if b.house}
        answer, new = await self.writer.call(lambda s: apply_request(s, request, house))
        self.summary.requests += new
        if not (answer.ok and new):
            await reply(answer)
            return
        self.on_event(answer.message)
        fresh = await self.writer.call(load_bots)
        for name, bot in fresh.items():
            old = self.bots.get(name)
            self.bots[name] = bot
            if old is not None and old.active and not bot.active:
                self._retired(name, bot.reason)
        if kind == "retire" or answer.name is None:
            await reply(answer)
            self._changed.set()
            return
        joined = self.bots[answer.name]

        async def done(error: str | None) -> None:
            await reply(answer if error is None else Answer(
                False, f"{joined.name} was added, then retired: {error}", joined.name))

        await self.join(joined, done)

    async def _try_close(self) -> None:
        """Close the season once no set of it is unfinished (then start the next)."""
        assert self.closing is not None
        if self.open_sets or self.queue:
            return
        request, reply = self.closing
        async with self._decide_lock:
            # a set being decided when the close came is stored before it is open here:
            # look again once the decision is whole, or the store refuses the close
            if self.open_sets or self.queue:
                return
            answer = await self.writer.call(lambda s: close_season(s, str(request["id"])))
            if answer.ok:
                self.on_event(answer.message)
                await self._new_season()
                if self.season is not None:  # a run holds the league: the next starts now
                    answer = replace(answer, message=answer.message.replace(
                        f"the next run starts season {self.season.season}",
                        f"season {self.season.season} started at once (seed commitment "
                        f"{self.season.commitment})"))
                answer.extra["next_commitment"] = self.season.commitment if self.season \
                    else None
            self.closing = None
            await reply(answer)
            self._changed.set()

    async def _new_season(self) -> None:
        number = len(self.season_list) + 1
        seed = season_seed(self.config.seed, number)
        season = await self.writer.call(lambda s: start_season(s, seed, self.next_set))
        self.season_list.append(season)
        self.seeds[season.season] = season.seed
        self.season = season
        self.on_event(f"season {season.season} starts; seed commitment (SHA-256 of the "
                      f"master seed's decimal string): {season.commitment}")

    # -- the games ------------------------------------------------------------------

    def _states(self) -> tuple[list[BotState], list[BotState]]:
        ratings = self.live.ratings()
        active: list[BotState] = []
        house: list[BotState] = []
        for name in sorted(self.ready):
            bot = self.bots[name]
            if not bot.active:
                continue
            r = ratings.get(name)
            if r is None:
                self.live.add_bot(name)
                r = self.live.rating(name)
            state = BotState(name, r.elo, 0.0 if r.house else r.sigma, r.games)
            (house if bot.house else active).append(state)
        return active, house

    async def next_game(self) -> ScheduledGame | None:
        """The next game to play: a queued rotation, else the first of a new set; None
        when this run is to stop deciding sets and none is left."""
        while True:
            # never a game that meets one in flight on its deal and a bot
            if (game := self.flight.take(self.queue)) is not None:
                prepare_pools(self.pools, [game, *islice(
                    self.queue, self.base.pool.resolved(self.base.concurrency)[2])])
                return game
            if self.stop and not self.queue:
                return None
            if self.stop:  # what is queued waits for the games in flight
                await self.flight.changed()
                continue
            if (self.closing is None and (self.max_games is None
                                          or self.planned < self.max_games)):
                async with self._decide_lock:
                    if any(not self.flight.clashes(g.deal_seed, g.bots) for g in self.queue):
                        continue  # a game became free meanwhile
                    if await self._decide():
                        continue
            elif self.max_games is not None and self.planned >= self.max_games \
                    and not self.open_sets:
                self.stop = True
                return None
            self._changed = trio.Event()
            with trio.move_on_after(1.0 if not self.queue else 0.05):
                await self._changed.wait()

    async def _decide(self) -> bool:
        """Choose, store and queue one set; False when the field cannot fill a table."""
        if self.season is None:
            return False
        active, house = self._states()
        if not active or len(active) + len(house) < self.seats:
            return False
        mm = self.config.matchmaking
        set_no = self.next_set
        choice = choose_tables(active, house, self.met, self.seats, 1,
                               seed=set_no ^ (self.season.seed & 0xFFFFFFFF),
                               new_games=mm.new_games, candidates=mm.candidates,
                               top=mm.top, top_weight=mm.top_weight,
                               met_weight=mm.met_weight)[0]
        decision = SetDecision(set_no, self.season.season, set_no, choice.table,
                               choice.reason, set_deal_seed(self.season.seed, set_no))
        await self.writer.call(lambda s: decide(s, decision))
        self.next_set += 1
        self.sets[set_no] = decision
        self.open_sets.add(set_no)
        self.done_in_set[set_no] = 0
        add_met(self.met, decision.bots)
        self.queue.extend(game_of(decision, r) for r in range(self.seats))
        self.planned += self.seats
        self.summary.sets += 1
        return True

    async def worker(self, slot: int) -> None:
        core = self.cores[slot % len(self.cores)] if self.base.isolation != "shared" else None
        while True:
            scheduled = await self.next_game()
            if scheduled is None:
                self._changed.set()  # wake the others: they stop too
                return
            await trio.lowlevel.checkpoint()
            while not all(b in self.pools or self.seat_jobs[b].kind == "builtin"
                          for b in scheduled.bots):  # a pool still opening
                await trio.sleep(0.05)
            seed = self.seeds[scheduled.deal_no]
            job = job_of(self.base, seed, scheduled, self.seat_jobs)
            try:
                outcome = await host_game(self.pools, job, scheduled, core, self.writer,
                                          self.flight, self.watcher)
            finally:
                self._changed.set()
            self._finished(scheduled, outcome)

    def _finished(self, scheduled: ScheduledGame, outcome: GameOutcome) -> None:
        started = time.perf_counter()
        if self.rated.add(GameScores(scheduled.unit, scheduled.bots,
                                     tuple(float(t) for t in outcome.record["totals"]))):
            self.summary.update_ms.append(1000 * (time.perf_counter() - started))
        self.summary.played += 1
        self.summary.faults += len(outcome.faults)
        self.games_stored += 1
        n = scheduled.table_no
        self.done_in_set[n] = self.done_in_set.get(n, 0) + 1
        if self.done_in_set[n] >= self.seats:
            self.open_sets.discard(n)
            for name in self.sets[n].bots:
                self._release(name)
            self._changed.set()
        self.watcher.finished(scheduled, outcome)
        if self.on_game is not None:
            self.on_game(self)

    def ranking(self) -> list[tuple[str, float, float, int]]:
        """The ranked bots by live rating (house bots left out): (name, elo, sigma,
        games)."""
        house = self.house_names()
        ratings = self.live.ratings()
        ranked = [r for r in ratings.values() if r.name not in house and r.games]
        ranked.sort(key=lambda r: (-round(r.elo, 9), r.name))
        return [(r.name, r.elo, r.sigma, r.games) for r in ranked]


async def run_league(config: LeagueConfig, store: Store, *,
                     on_event: Event | None = None,
                     on_start: Callable[[League], None] | None = None,
                     on_game: Callable[[League], None] | None = None,
                     max_games: int | None = None) -> tuple[LeagueSummary, League | None]:
    """Run the league until stopped (SIGINT/SIGTERM: finished games kept, games in flight
    discarded and played again by the next run), or, with ``max_games``, until this run
    has decided sets of that many games and they are finished."""
    summary = LeagueSummary()
    started = time.monotonic()
    store.reset_unfinished()
    league: League | None = None
    try:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as outer:
                outer.start_soon(stop_on_signal, signals, outer.cancel_scope, summary)
                async with store_writer(store) as writer, \
                        store_readers(store.path.parent) as readers, \
                        trio.open_nursery() as pools:
                    league = League(config, store, writer, pools, summary, on_event,
                                    on_game, max_games, readers)
                    if league.season is None:
                        await league._new_season()
                    await league.open_field()
                    if on_start is not None:
                        on_start(league)
                    async with trio.open_nursery() as work:
                        work.start_soon(league.take_requests)
                        work.start_soon(league.read_inbox)
                        async with trio.open_nursery() as workers:
                            for slot in range(league.base.concurrency):
                                workers.start_soon(league.worker, slot)
                        work.cancel_scope.cancel()
                    pools.cancel_scope.cancel()
                outer.cancel_scope.cancel()
    finally:
        summary.seconds = time.monotonic() - started
    return summary, league
