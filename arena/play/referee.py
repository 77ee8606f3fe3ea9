"""The referee: runs one game between players it does not trust.

It holds the game (the deck and the rules); each player sees only its seat's view and
answers under a deadline. A late, illegal, malformed or failed answer is a **fault**: it
is recorded, the referee takes the documented default action instead, and the game goes
on. After ``max_faults`` faults in one game a seat is forfeited: the defaults play for
it for the rest of the game and no more calls are made to it. A seat whose bot escaped
the stop between calls (it did not stop within its ``stop_ms``, or it ran while stopped)
is forfeited at its first such fault: its process has been killed.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from arena.model.faults import FAULT_KINDS as FAULT_KINDS
from arena.model.faults import Fault
from arena.model.record import game_record, round_record
from arena.model.results import GameResult, RoundResult, game_result, round_result
from arena.rules import Decision, Game, IllegalAction, View
from arena.rules.cards import JESTER, WIZARD, format_card, format_suit, most_held_suit

GRACE_S = 0.25
"""How long past a call's deadline the referee waits before abandoning it itself.

An answer that comes in this grace is still a timeout: it only lets the transport report
its own deadline first."""


@dataclass(frozen=True, slots=True)
class TimeControl:
    """Per-call deadline ``move_ms``, a per-game bank a slow answer draws down, fault limit."""

    move_ms: int = 1000
    bank_ms: int = 0
    max_faults: int = 3


class Abandon(Exception):
    """Raised by a player to end the game unfinished: a person who left the table (end of
    input, a closed session). The referee lets it through; no record is made."""


class Player(Protocol):
    """One seat's connection to a bot, as the referee uses it."""

    name: str
    last_cpu_ms: float | None
    """The bot's own CPU time for its last :meth:`decide`, where it can be measured."""
    # A player may also have ``last_call_ms``: how long its last :meth:`decide` call took
    # on the wire (start to answer), the bot's clock where the player can measure it; and
    # ``move_ms``: its own time per decision instead of the clock's (a person's seat), None
    # for no limit (its :meth:`decide` is then given ``deadline_ms`` 0); and
    # ``ran_while_stopped_ms()``: after another seat's call, the CPU time its bot got while
    # stopped (its processes then killed), or None (see :func:`play_game`).

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        """The bot's action for ``view``; raises :class:`Fault` when it fails."""
        ...

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None: ...

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None: ...


def default_action(view: View) -> int:
    """The action the referee takes for a seat that faulted (documented in docs/protocol.md).

    The smallest legal bid; the suit the seat holds most of (ties: the first in C, D, H, S
    order); the lowest legal card (a Jester below every suited card, a Wizard above; ties
    in rank by suit order C, D, H, S).
    """
    legal = view.legal
    if view.decision is Decision.BID:
        return min(legal)
    if view.decision is Decision.TRUMP:
        return most_held_suit(view.hand, legal)
    return min(legal, key=_card_order)


def _card_order(card: int) -> tuple[int, int, int]:
    if card == JESTER:
        return (0, 0, 0)
    if card == WIZARD:
        return (2, 0, 0)
    return (1, card & 15, card >> 4)


def describe_action(decision: Decision | None, action: Any) -> str:
    """An action for people and fault records: ``bid 2``, ``trump H``, ``play H7``."""
    try:
        if decision is Decision.BID:
            return f"bid {int(action)}"
        if decision is Decision.TRUMP:
            return f"trump {format_suit(int(action))}"
        return f"play {format_card(int(action))}"
    except (TypeError, ValueError, IndexError):
        return repr(action)


@dataclass(slots=True)
class GameReport:
    """A finished game: its record, and each seat's answer latencies and the bot's own
    CPU time per decision, in milliseconds (None where not measured)."""

    record: dict[str, Any]
    latencies_ms: list[list[float]] = field(default_factory=list)
    cpu_ms: list[list[float | None]] = field(default_factory=list)

    @property
    def faults(self) -> list[dict[str, Any]]:
        return self.record["faults"]  # type: ignore[no-any-return]


async def play_game(game: Game, players: Sequence[Player], clock: TimeControl = TimeControl(),
                    game_id: str = "", table_id: str = "",
                    on_round: Callable[[dict[str, Any]], Awaitable[None] | None] | None = None,
                    wire_ids: tuple[str, str] | None = None,
                    ) -> GameReport:
    """Play ``game`` to the end between ``players`` (by seat) and return its report.

    ``game_id`` and ``table_id`` go into the record. The bots are sent ``wire_ids``
    instead, by default fresh random ones: an id on the wire must reveal nothing (not
    the seed, the deal or the rotation).

    After each call the bots of the other seats are looked at: one that got CPU time
    while stopped (a process of it escaped the stop) took it from the seat asked; it is
    faulted (``resource``), its processes killed and its seat forfeited at once (as a
    seat whose bot did not stop within its ``stop_ms``: :attr:`Fault.forfeit`), and a
    timeout of the seat
    asked in that call is recorded with ``excused_by`` (the culprits' names; its detail
    names them too) and does not count towards that seat's forfeit, nor does its slow
    answer draw its bank.

    ``on_round`` is called with each finished round's record. No bot behaviour can make
    this raise or hang: a call is abandoned :data:`GRACE_S` after its deadline at most,
    except that restarting a crashed bot process (bounded by its start-up limit) is not
    cut short, so that no half-started process is left behind.
    """
    n = game.players
    if len(players) != n:
        raise ValueError(f"{len(players)} players for {n} seats")
    faults: list[dict[str, Any]] = []
    fault_counts = [0] * n
    forfeit_reasons = [""] * n
    bank = [clock.bank_ms] * n
    latencies: list[list[float]] = [[] for _ in range(n)]
    cpu: list[list[float | None]] = [[] for _ in range(n)]
    record_ids = (game_id, table_id)
    game_id, table_id = wire_ids or (secrets.token_hex(8), secrets.token_hex(8))
    rounds_done = 0

    def fault(seat: int, view: View, kind: str, detail: str, replacement: int | None,
              excused_by: Sequence[str] = (), forfeit: bool = False) -> None:
        """Record a fault of ``seat`` in ``view``; ``replacement`` is the action the
        referee applies instead of the bot's (the record's ``action``), None if none."""
        entry: dict[str, Any] = {
            "seat": seat, "round": view.round,
            "trick": len(view.tricks) + 1 if view.decision is Decision.PLAY else None,
            "kind": kind, "detail": detail,
            "action": ("none" if replacement is None
                       else describe_action(view.decision, replacement)),
        }
        faults.append(entry)
        if excused_by:  # another bot's doing: recorded, not counted towards a forfeit
            entry["excused_by"] = list(excused_by)
            return
        fault_counts[seat] += 1
        if forfeit and not forfeit_reasons[seat]:  # it escaped the stop: out at once
            forfeit_reasons[seat] = f"{kind}: {detail}"
            entry["forfeited"] = True
        if fault_counts[seat] >= clock.max_faults and not forfeit_reasons[seat]:
            forfeit_reasons[seat] = (f"{fault_counts[seat]} faults (the limit is "
                                     f"{clock.max_faults}); the last: {kind}: {detail}")
            entry["forfeited"] = True

    def ran_while_stopped(view: View) -> list[str]:
        """After a call of seat ``view.seat``: the bots of the other seats that got CPU
        while stopped meanwhile (the call's core, taken from the seat asked), each
        faulted, its processes killed (by its player); their names."""
        found = []
        for other, player in enumerate(players):
            look = getattr(player, "ran_while_stopped_ms", None) if other != view.seat \
                else None
            ran_ms = look() if look is not None else None
            if ran_ms is not None:
                found.append(player.name)
                fault(other, view, "resource",
                      f"used CPU while stopped ({ran_ms:.1f} ms since it stopped, found "
                      f"after the call of seat {view.seat}, {players[view.seat].name}); "
                      f"its process was killed", None, forfeit=True)
        return found

    while not game.is_over:
        seat: int = game.to_move  # type: ignore[assignment]
        view = game.view(seat)
        if forfeit_reasons[seat]:
            game.apply(default_action(view))
        else:
            game.apply(await _ask(players[seat], view, game, clock, bank, latencies[seat],
                                  game_id, table_id, fault, ran_while_stopped))
            cpu[seat].append(getattr(players[seat], "last_cpu_ms", None))
        finished = len(game.log) - (0 if game.is_over else 1)
        while rounds_done < finished:
            entry = game.log[rounds_done]
            rounds_done += 1
            await _notify_round(players, entry.number, game, forfeit_reasons, clock,
                                game_id, table_id)
            if on_round is not None:
                result = on_round(round_record(entry))
                if result is not None:
                    await result
    async with trio.open_nursery() as nursery:
        for seat, player in enumerate(players):
            reason = forfeit_reasons[seat]
            nursery.start_soon(_quietly, player.game_ended(game_result(
                game, seat, game_id, table_id, forfeited=bool(reason), forfeit_reason=reason),
                clock.move_ms))
    record = game_record(game, [p.name for p in players], faults,
                         forfeited=[bool(r) for r in forfeit_reasons],
                         game_id=record_ids[0], table_id=record_ids[1],
                         timing={"wall_ms": [[round(x, 3) for x in seat] for seat in latencies],
                                 "cpu_ms": [[None if x is None else round(x, 3) for x in seat]
                                            for seat in cpu]})
    return GameReport(record, latencies, cpu)


@dataclass(frozen=True, slots=True)
class Answer:
    """What came of asking a player once: its action, or a fault (``kind`` and
    ``detail``; ``action`` is then what it answered, if anything), and how long it took
    by the referee's rule, in milliseconds."""

    action: Any
    kind: str
    detail: str
    elapsed_ms: float
    forfeit: bool = False
    """The fault forfeits the seat at once (:attr:`Fault.forfeit`)."""


async def ask(player: Player, view: View, game: Game, move_ms: int | None, bank_ms: int,
              game_id: str, table_id: str) -> Answer:
    """Ask ``player`` for its action in ``view`` (the position of ``game``), under the
    referee's rule: the deadline is ``move_ms`` (None: no limit) plus ``bank_ms``; the
    call is abandoned :data:`GRACE_S` after it; the time is the bot's own call time
    where the player measures it (``last_call_ms``), else the referee's; an answer after
    the deadline is a ``timeout``, an action the rules do not allow is ``illegal`` (with
    the rules' reason). ``arena check-bot`` asks with this too, so it judges a bot as a
    game does."""
    deadline_ms = 0 if move_ms is None else move_ms + bank_ms  # 0: no limit
    started = trio.current_time()  # the clock the deadline below is measured on
    detail = ""
    kind = ""
    forfeit = False
    action: Any = None
    with trio.move_on_after(math.inf if move_ms is None else
                            deadline_ms / 1000 + GRACE_S) as scope:
        try:
            action = await player.decide(view, game_id, table_id, deadline_ms, bank_ms)
        except Abandon:
            raise
        except Fault as f:
            kind, detail, forfeit = f.kind, f.detail, f.forfeit
        except Exception as e:  # a broken in-process bot must not stop the game
            kind, detail = "crash", f"{type(e).__name__}: {e}"[:300]
    elapsed_ms = (trio.current_time() - started) * 1000
    # The bot's own time: its call from start to answer, where the player measures it (a
    # gRPC bot), not the arena's work around the call or a wait for the busy trio thread.
    call_ms = getattr(player, "last_call_ms", None)
    if not scope.cancelled_caught and isinstance(call_ms, float):
        elapsed_ms = min(elapsed_ms, call_ms)
    if not forfeit and (scope.cancelled_caught or (not kind and move_ms is not None
                                                   and elapsed_ms > deadline_ms)):
        # the deadline is the deadline: the grace only bounds how long the referee waits
        # for a call to end by itself, it does not lengthen the time to answer
        kind, detail = "timeout", f"no answer within {deadline_ms} ms"
    if not kind and action not in view.legal:
        kind, detail = "illegal", why_illegal(game, view, action)
    return Answer(action, kind, detail, elapsed_ms, forfeit)


def why_illegal(game: Game, view: View, action: Any) -> str:
    """Why ``action``, answered in ``view`` (the position of ``game``), is not one of
    ``view.legal``: the action as people read it, then the rules' reason (``bid 2: bid 2
    is outside 0..1``). The one explanation for a game's fault record and for ``arena
    check-bot``'s report."""
    shown = describe_action(view.decision, action)
    try:
        game.check(action)
    except IllegalAction as e:
        return f"{shown}: {e}"
    return f"{shown}: not one of the legal actions"


async def _ask(player: Player, view: View, game: Game, clock: TimeControl, bank: list[int],
               latencies: list[float], game_id: str, table_id: str,
               fault: Callable[[int, View, str, str, int | None, Sequence[str], bool], None],
               ran_while_stopped: Callable[[View], list[str]]) -> int:
    seat = view.seat
    move_ms: int | None = getattr(player, "move_ms", clock.move_ms)  # a person's seat
    answer = await ask(player, view, game, move_ms, bank[seat], game_id, table_id)
    latencies.append(answer.elapsed_ms)
    # a bot of another seat that ran while stopped took this call's core: the seat's
    # slow answer or timeout is that bot's doing, not charged to this one
    culprits = ran_while_stopped(view)
    if move_ms is not None and answer.elapsed_ms > move_ms and not culprits:
        bank[seat] = max(0, bank[seat] - math.ceil(answer.elapsed_ms - move_ms))
    if answer.kind:
        replacement = default_action(view)
        detail, excused = answer.detail, culprits if answer.kind == "timeout" else []
        if excused:
            detail += (f"; not this bot's fault: {', '.join(excused)} used CPU while "
                       f"stopped during the call")
        fault(seat, view, answer.kind, detail, replacement, excused, answer.forfeit)
        return replacement
    return int(answer.action)


async def _notify_round(players: Sequence[Player], number: int, game: Game,
                        forfeit_reasons: list[str], clock: TimeControl,
                        game_id: str, table_id: str) -> None:
    async with trio.open_nursery() as nursery:
        for seat, player in enumerate(players):
            if not forfeit_reasons[seat]:
                result = round_result(game, number, seat, game_id, table_id)
                nursery.start_soon(_quietly, player.round_ended(result, clock.move_ms))


async def _quietly(notification: Awaitable[None]) -> None:
    """Deliver a notification; a bot that fails one has nothing to lose but the news."""
    with trio.move_on_after(5):
        try:
            await notification
        except Exception:
            pass
