"""The league service's domain side: what it needs from the running league
(:class:`LeagueBackend`), and its logic (:class:`LeagueService`): who is calling, what they
may do, a submission from its first byte to its verdict, and the events.

The gRPC edge (:mod:`arena.wire.league`) turns calls into these methods and their values
(:mod:`arena.model.league_api`) into messages; :func:`arena.league_service.server.serve_league`
puts the two together with the check (check-bot in the sandbox, :mod:`arena.league_service.checks`)
and the live page. A submission:

1. the caller is an author (a token of the store, :mod:`arena.league.authors`), has no
   other submission under way, and is under their hourly limit (the attempt is counted,
   durably, on a thread, before a byte is read);
2. the archive is received into the store's ``.incoming/``, counted as it arrives: past the
   author's ``max_bundle_bytes`` it is refused at once, and what was written is removed;
3. it is unpacked, checked and made read-only under ``bots/<sha256>/``
   (:func:`arena.league.bundle.store_bundle`), and its manifest read;
4. the name must be free or the author's own bot, and the version new;
5. check-bot runs on it in the sandbox (one check at a time by default: they are CPU-bound),
   its report sent line by line;
6. only a bot that passes joins, through :meth:`LeagueBackend.add` or
   :meth:`LeagueBackend.update`, which return once durable; then the verdict ACCEPTED.

Who is calling (:meth:`LeagueService.authenticate`, for the gRPC service and the live
page's ``/api/`` alike) is decided in memory, on the trio thread, without file I/O: the
authors are loaded once and looked at again on a thread (a ``stat``; a read only when the
file changed) every :data:`AUTHORS_POLL_S` and whenever a token is not known (an author
``arena league author add`` made a moment ago, in another terminal). Wrong tokens are
limited per client (:class:`WrongTokens`): a few at once, then a few a second; past that
every call of that client is refused, RESOURCE_EXHAUSTED, until it waits.

Errors are :class:`~arena.model.league_api.ServiceError`: a code the wire maps to a
gRPC status, and one line.
"""

from __future__ import annotations

import hashlib
import math
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import trio

from arena.league import authors as authorship
from arena.league.authors import Author, AuthorError, AuthorStore, token_digest
from arena.league.bundle import BundleError, Caps, incoming, mib, store_bundle, sweep_incoming
from arena.league.manifest import DEFAULT_RUNTIMES, ManifestError, check_runtimes
from arena.model.errors import one_line
from arena.model.league_api import (
    ACCEPTED,
    ACTIVE,
    CHECK,
    DONE,
    FAILED_CHECKS,
    FAILED_PRECONDITION,
    INVALID_ARGUMENT,
    NOT_FOUND,
    PERMISSION_DENIED,
    RECEIVED,
    REFUSED,
    RESOURCE_EXHAUSTED,
    SUBMISSION,
    UNAUTHENTICATED,
    UNPACKED,
    AuthorStatus,
    BotDetail,
    FieldBot,
    GameSummary,
    LeagueError,
    LeagueEvent,
    LiveGame,
    SeasonInfo,
    ServiceError,
    Standing,
    SubmitStep,
)


class LeagueBackend(Protocol):
    """What the service needs from the running league. Every method takes and returns
    domain values; those that change the field are durable when they return and raise
    :class:`~arena.model.league_api.LeagueError` (one line) to refuse."""

    async def field(self) -> Sequence[FieldBot]:
        """Every bot, active and retired."""
        ...

    async def add(self, author: str, name: str, spec: str, folder: Path,
                  version: str) -> FieldBot:
        """A new bot ``name`` of ``author``: ``spec`` (``cmd:...``) run in ``folder``."""
        ...

    async def update(self, author: str, name: str, spec: str, folder: Path,
                     version: str) -> FieldBot:
        """A new version of ``author``'s bot ``name`` (active again if it was retired)."""
        ...

    async def retire(self, author: str, name: str) -> FieldBot:
        """``author``'s bot ``name`` plays no more games."""
        ...

    async def standings(self) -> Sequence[Standing]:
        """The live ratings with their intervals, best first."""
        ...

    async def recent_games(self, n: int) -> Sequence[GameSummary]:
        """The last ``n`` finished games, newest first."""
        ...

    async def games_of(self, author: str) -> Sequence[GameSummary]:
        """The finished games in which a bot of ``author`` sat, newest first."""
        ...

    async def log_path(self, author: str, game_id: str) -> Path | None:
        """The stderr log of ``author``'s bot in that game; None if no bot of theirs sat
        in it (or it has no log)."""
        ...

    async def live_games(self) -> Sequence[LiveGame]:
        """The games in progress, public state only."""
        ...

    async def record(self, game_id: str) -> dict[str, object] | None:
        """A finished game's record (for its replay), or None."""
        ...

    async def bot(self, name: str) -> BotDetail | None:
        """What the bot's page shows, or None for an unknown name."""
        ...

    async def season(self) -> SeasonInfo:
        """The season under way (the last one)."""
        ...

    async def seasons(self) -> Sequence[SeasonInfo]:
        """Every season, in order: its start, its games, its seed or commitment."""
        ...

    def events(self) -> AsyncIterator[LeagueEvent]:
        """A new subscription: the league's events from now on (games started and
        finished, game progress, standings, bots joined and retired)."""
        ...


CheckReport = Callable[[SubmitStep], Awaitable[None]]


class BundleChecker(Protocol):
    """Checks an unpacked bundle: runs ``command`` in ``folder`` under check-bot, sends
    each line of the report through ``report``, and says whether it passed, with a
    one-line summary. Bot logs go under ``log_dir``."""

    async def __call__(self, folder: Path, command: str, log_dir: Path,
                       report: CheckReport) -> tuple[bool, str]: ...


EVENT_BUFFER = 256
"""Events a subscriber may fall behind by before it is dropped (its stream ends)."""


class Broadcast:
    """Events to every subscriber, each through a bounded channel: a subscriber that does
    not keep up is dropped rather than slowing the league."""

    def __init__(self) -> None:
        self._subscribers: set[trio.MemorySendChannel[LeagueEvent]] = set()

    def publish(self, event: LeagueEvent) -> None:
        for channel in list(self._subscribers):
            try:
                channel.send_nowait(event)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                self._subscribers.discard(channel)
                channel.close()

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[trio.MemoryReceiveChannel[LeagueEvent]]:
        send, receive = trio.open_memory_channel[LeagueEvent](EVENT_BUFFER)
        self._subscribers.add(send)
        try:
            yield receive
        finally:
            self._subscribers.discard(send)
            send.close()
            receive.close()


@dataclass(frozen=True, slots=True)
class SubmitRules:
    """What a league accepts (its file's settings)."""

    runtimes: tuple[str, ...] = DEFAULT_RUNTIMES
    check_slots: int = 1
    """Checks run at once (each is CPU-bound: a bot playing games)."""
    chunk_timeout_s: float = 60.0
    """The longest wait for the next chunk of an upload."""


@dataclass
class _Flight:
    authors: set[str] = field(default_factory=set)


AUTHORS_POLL_S = 1.0
"""How often the running service looks at the authors' store for changes made elsewhere
(a token revoked or rotated, limits changed)."""


class WrongTokens:
    """A token bucket per client for wrong tokens (an unknown or revoked one): ``burst``
    at once, then ``per_s`` a second. A client with none left is refused every call,
    whatever token it gives (a right guess must not get through either), until one has
    come back. At most ``clients`` are remembered, the least recently wrong dropped first.
    Used on the trio thread only."""

    def __init__(self, per_s: float = 2.0, burst: int = 10,
                 clock: Callable[[], float] = time.monotonic, clients: int = 10_000) -> None:
        if not per_s > 0 or burst < 1 or clients < 1:
            raise ValueError("wrong tokens: per_s must be positive, burst and clients at "
                             "least 1")
        self.per_s = per_s
        self.burst = burst
        self.clock = clock
        self.clients = clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def _level(self, client: str, now: float) -> float:
        left, at = self._buckets.get(client, (float(self.burst), now))
        return min(float(self.burst), left + (now - at) * self.per_s)

    def wait_s(self, client: str) -> float:
        """How long ``client`` must wait before its next call is heard (0: now)."""
        level = self._level(client, self.clock())
        return 0.0 if level >= 1 else (1 - level) / self.per_s

    def wrong(self, client: str) -> None:
        """``client`` gave a wrong token."""
        now = self.clock()
        self._buckets[client] = (self._level(client, now) - 1, now)
        self._buckets.move_to_end(client)
        while len(self._buckets) > self.clients:
            self._buckets.popitem(last=False)


class LeagueService:
    """The service's logic over ``backend``, ``authors`` and the league folder ``out``
    (bundles in ``out/bots/``, check logs in ``out/checks/``)."""

    def __init__(self, backend: LeagueBackend, authors: AuthorStore, out: Path,
                 checker: BundleChecker, rules: SubmitRules = SubmitRules(),
                 clock: Callable[[], float] = time.time,
                 wrong_tokens: WrongTokens | None = None) -> None:
        check_runtimes(rules.runtimes)
        self.backend = backend
        self.authors = authors
        self.out = out
        self.bots = out / "bots"
        self.checks = out / "checks"
        self.checker = checker
        self.rules = rules
        self.clock = clock
        self.wrong_tokens = wrong_tokens or WrongTokens()
        self.broadcast = Broadcast()
        self._flight = _Flight()
        self._slots = trio.Semaphore(rules.check_slots)
        self._by_digest: dict[str, Author] = {}
        self._by_name: dict[str, Author] = {}
        self._authors_problem: str | None = "the authors have not been read yet"
        self._looking = trio.Lock()
        self._looks_started = 0
        self._looks_done = 0

    def prepare(self) -> list[str]:
        """Make the store's folders, remove what a crash left half done (uploads and
        unpacks never acknowledged) and read the authors; returns what was removed. It
        blocks: call it from a thread."""
        self.bots.mkdir(parents=True, exist_ok=True)
        self.checks.mkdir(parents=True, exist_ok=True)
        self._learn(self._read_authors())
        return sweep_incoming(self.bots)

    async def run(self) -> None:
        """Relay the backend's events to the subscribers, and look at the authors' store
        every :data:`AUTHORS_POLL_S`, until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_authors)
            async for event in self.backend.events():
                self.broadcast.publish(event)
            nursery.cancel_scope.cancel()

    # -- who is calling -----------------------------------------------------------------

    def _read_authors(self) -> Sequence[Author] | str:
        """The authors (on a thread), or why they cannot be read."""
        try:
            return self.authors.all()
        except AuthorError as e:
            return str(e)

    def _learn(self, authors: Sequence[Author] | str) -> None:
        """Keep ``authors`` in memory; a problem keeps the last good copy and is said to
        callers whose token is not in it."""
        if isinstance(authors, str):
            self._authors_problem = authors
            return
        self._authors_problem = None
        self._by_digest = {a.token_sha256: a for a in authors}
        self._by_name = {a.name: a for a in authors}

    def _remember(self, author: Author) -> None:
        """``author`` as just stored by this service."""
        old = self._by_name.get(author.name)
        if old is not None:
            self._by_digest.pop(old.token_sha256, None)
        self._by_name[author.name] = author
        self._by_digest[author.token_sha256] = author

    async def look_at_authors(self) -> None:
        """Bring the authors in memory up to date with their store (on a thread: a
        ``stat``, and a read only if the file changed). Callers that arrive while a look
        is under way wait for the next one, which starts after they arrived; there is
        never more than one at a time."""
        arrived = self._looks_started
        async with self._looking:
            if self._looks_done > arrived:
                return  # one that started after we arrived has finished
            self._looks_started += 1
            number = self._looks_started
            self._learn(await trio.to_thread.run_sync(self._read_authors))
            self._looks_done = number

    async def _watch_authors(self) -> None:
        while True:
            await trio.sleep(AUTHORS_POLL_S)
            await self.look_at_authors()

    def _known(self, token: str) -> Author | None:
        author = self._by_digest.get(token_digest(token))
        if author is None or author.revoked or not authorship.matches(author, token):
            return None
        return author

    async def authenticate(self, token: str | None, client: str = "") -> Author:
        """The author whose token this is. ``client`` names where the call comes from
        (the gRPC peer's address, the web client's): past :class:`WrongTokens`' limit
        for it, every call is refused (RESOURCE_EXHAUSTED, saying how long to wait). No
        file I/O on this (trio's) thread: the authors are in memory, and an unknown token
        has them looked at again on a thread before it is refused."""
        wait = self.wrong_tokens.wait_s(client)
        if wait > 0:
            raise ServiceError(RESOURCE_EXHAUSTED, f"too many wrong tokens from this "
                                                   f"client; wait {math.ceil(wait)} s")
        if not token:
            raise ServiceError(UNAUTHENTICATED, "no token given")
        author = self._known(token)
        if author is None:
            await self.look_at_authors()
            author = self._known(token)
        if author is None:
            if self._authors_problem is not None:
                raise ServiceError(FAILED_PRECONDITION, self._authors_problem)
            self.wrong_tokens.wrong(client)
            raise ServiceError(UNAUTHENTICATED, "this token is not one of the league's "
                                                "authors'")
        return author

    def name_of(self, author: Author) -> str:
        return author.name

    # -- reading ------------------------------------------------------------------------

    async def status(self, author: Author) -> AuthorStatus:
        field_ = tuple(await self.backend.field())
        current = self._by_name.get(author.name) or author
        return AuthorStatus(author.name, current.limits,
                            len(authorship.recent(current, self.clock())), self.rules.runtimes,
                            field_)

    async def standings(self) -> Sequence[Standing]:
        return await self.backend.standings()

    async def games_of(self, author: Author, limit: int = 100) -> Sequence[GameSummary]:
        games = await self.backend.games_of(author.name)
        return list(games)[:max(1, min(limit or 100, 1000))]

    async def log_file(self, author: Author, game_id: str) -> Path:
        if not game_id or len(game_id) > 200:
            raise ServiceError(INVALID_ARGUMENT, "a game id is needed")
        path = await self.backend.log_path(author.name, game_id)
        if path is None:
            raise ServiceError(NOT_FOUND, f"no log of a bot of yours in game {game_id!r}")
        return path

    @asynccontextmanager
    async def events(self, caller: Author | None) -> AsyncIterator[AsyncIterator[LeagueEvent]]:
        """The events from now on for ``caller`` (None: a spectator): every public event,
        and the progress of their own submissions only."""
        author = caller.name if caller is not None else None
        async with self.broadcast.subscribe() as receive:
            async def mine() -> AsyncIterator[LeagueEvent]:
                async for event in receive:
                    if event.kind != SUBMISSION or (author and event.author == author):
                        yield event
            yield mine()

    # -- changing the field -------------------------------------------------------------

    async def _owned(self, author: Author, name: str) -> FieldBot | None:
        for bot in await self.backend.field():
            if bot.name == name:
                if bot.author != author.name:
                    raise ServiceError(PERMISSION_DENIED,
                                       f"the bot {name!r} is not yours (it is {bot.author}'s)")
                return bot
        return None

    async def retire(self, author: Author, name: str) -> FieldBot:
        if await self._owned(author, name) is None:
            raise ServiceError(NOT_FOUND, f"no bot {name!r} in the league")
        try:
            return await self.backend.retire(author.name, name)
        except LeagueError as e:
            raise ServiceError(FAILED_PRECONDITION, one_line(str(e))) from None

    async def submit(self, author: Author, size: int, chunks: AsyncIterator[bytes],
                     report: CheckReport) -> SubmitStep:
        """One submission, from the header's ``size`` and the archive's ``chunks`` to its
        verdict (also the return value); every step goes through ``report`` and, as an
        event, to the author's event streams. Limits reached are ServiceErrors
        (RESOURCE_EXHAUSTED), before anything is read."""
        if author.name in self._flight.authors:
            raise ServiceError(RESOURCE_EXHAUSTED, "a submission of yours is under way: wait "
                                                   "for its verdict")
        self._flight.authors.add(author.name)
        try:
            try:  # durable before a byte is read; the write and its fsyncs on a thread
                counted = await trio.to_thread.run_sync(
                    authorship.take_submission, self.authors, author.name, self.clock())
            except AuthorError as e:
                raise ServiceError(RESOURCE_EXHAUSTED, str(e)) from None
            self._remember(counted)
            return await self._submit(counted, size, chunks, report)
        finally:
            self._flight.authors.discard(author.name)

    async def _submit(self, author: Author, size: int, chunks: AsyncIterator[bytes],
                      report: CheckReport) -> SubmitStep:
        state = {"name": "", "version": "", "bundle": ""}

        async def step(stage: str, text: str, verdict: str = "", ok: bool = False) -> SubmitStep:
            done = SubmitStep(stage, one_line(text), verdict, state["name"], state["version"],
                              state["bundle"], ok)
            self.broadcast.publish(LeagueEvent(SUBMISSION, self.clock(), done.text,
                                               bots=(state["name"],) if state["name"] else (),
                                               author=author.name))
            await report(done)
            return done

        caps = Caps.of(author.limits)
        if size > caps.max_bundle_bytes:
            return await step(DONE, f"refused: the archive is {mib(size)}, over your limit "
                                    f"of {mib(caps.max_bundle_bytes)}", REFUSED)
        spool = incoming(self.bots) / f"upload-{secrets.token_hex(8)}.part"
        try:
            try:
                sha, received = await self._receive(spool, chunks, caps)
            except BundleError as e:
                return await step(DONE, f"refused: {e}", REFUSED)
            state["bundle"] = sha
            await step(RECEIVED, f"received {received} bytes, SHA-256 {sha}")
            try:
                folder, manifest = await trio.to_thread.run_sync(
                    store_bundle, spool, self.bots, sha, caps, self.rules.runtimes)
            except (BundleError, ManifestError) as e:
                return await step(DONE, f"refused: {e}", REFUSED)
        finally:
            spool.unlink(missing_ok=True)
        state["name"], state["version"] = manifest.name, manifest.version
        await step(UNPACKED, f"unpacked into the bot store: {manifest.name} "
                             f"{manifest.version}, runtime {manifest.runtime}, command "
                             f"{manifest.command}")
        try:
            current = await self._owned(author, manifest.name)
        except ServiceError as e:
            return await step(DONE, f"refused: {e}", REFUSED)
        if current is not None and current.version == manifest.version \
                and current.status == ACTIVE:
            return await step(DONE, f"refused: version {manifest.version} of "
                                    f"{manifest.name} is in the league already; give the "
                                    f"new one another version in bot.toml", REFUSED)
        if self._slots.value == 0:
            await step(CHECK, "waiting for a free check slot", ok=True)
        async with self._slots:
            await step(CHECK, "check-bot: starting the bot in the sandbox", ok=True)
            log_dir = self.checks / f"{sha[:16]}-{secrets.token_hex(4)}"

            async def relay(line: SubmitStep) -> None:
                await step(CHECK, line.text, ok=line.ok)

            try:
                passed, summary = await self.checker(folder, manifest.command, log_dir, relay)
            except Exception as e:  # a check that breaks is a failed check, said in a line
                passed, summary = False, f"the check could not run: {type(e).__name__}: {e}"
        if not passed:
            return await step(DONE, f"did not join: {summary}", FAILED_CHECKS)
        try:
            if current is None:
                bot = await self.backend.add(author.name, manifest.name, manifest.spec, folder,
                                             manifest.version)
            else:
                bot = await self.backend.update(author.name, manifest.name, manifest.spec,
                                                folder, manifest.version)
        except LeagueError as e:
            return await step(DONE, f"refused: {e}", REFUSED)
        what = "joined the league" if current is None else "is the new version in the league"
        return await step(DONE, f"accepted: {bot.name} {bot.version} {what} ({summary})",
                          ACCEPTED, ok=True)

    async def _receive(self, spool: Path, chunks: AsyncIterator[bytes],
                       caps: Caps) -> tuple[str, int]:
        """Write the chunks to ``spool``, never more than the cap; (SHA-256, bytes)."""
        digest = hashlib.sha256()
        received = 0
        fd = await trio.to_thread.run_sync(
            os.open, spool, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600)
        try:
            while True:
                with trio.move_on_after(self.rules.chunk_timeout_s) as waited:
                    chunk = await anext(chunks, None)
                if waited.cancelled_caught:
                    raise BundleError(f"no data for {self.rules.chunk_timeout_s:g} s; the "
                                      f"upload was given up")
                if chunk is None:
                    break
                received += len(chunk)
                if received > caps.max_bundle_bytes:
                    raise BundleError(f"the archive is over your limit of "
                                      f"{mib(caps.max_bundle_bytes)}")
                digest.update(chunk)
                await trio.to_thread.run_sync(_write_all, fd, chunk)
        finally:
            os.close(fd)
        if received == 0:
            raise BundleError("the archive is empty")
        return digest.hexdigest(), received


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def interval(standing: Standing) -> tuple[float, float]:
    """The interval the standings show: ``elo ± 2 sigma``."""
    half = 2 * standing.sigma if math.isfinite(standing.sigma) else 0.0
    return standing.elo - half, standing.elo + half
