"""``arena check-bot``: a conformance check for a bot written in any language.

It starts (or reaches) the bot, checks its health and hand-shake, then puts it in
scripted situations taken from real games — a led Jester, a led Wizard, a forced
follow-suit, a void hand, the hook rule, a turned Wizard, the last round without trump,
the Trumps announcement — and lets it play a few complete games against the built-in
bots. A bot that did not decline ``RoundEnded`` must answer one; a ``cmd:`` bot's
process must exit promptly on SIGTERM. Every question goes through
:class:`~arena.players.RemotePlayer`, so deadlines and faults are exactly those of a
real game. Each check passes or fails with its reason; the
answer latencies close the report.

The situations are positions of real :mod:`arena.rules` games: a seed found by search
and a list of actions played from the deal, replayed to build the game. Nothing is set
by hand, so the view the bot receives is one a real game produces.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import trio
from rich.console import Console
from rich.text import Text

from arena.botproc import BotSpec, BotSpecError, add_remote_flags, remote_from_args
from arena.bots import make_bot
from arena.files import FolderError, private_dir, temp_dir
from arena.interrupt import sigterm_as_ctrl_c
from arena.names import clean
from arena.players import BotConnection, HandshakeError, LocalPlayer, RemotePlayer
from arena.record import RecordError, verify_record
from arena.referee import GRACE_S, Fault, Player, TimeControl, describe_action, play_game
from arena.rules import GAMES, Decision, Game, IllegalAction, View, new_game
from arena.rules.cards import JESTER, SUIT_LETTERS, WIZARD, format_card
from arena.sandbox import Confinement, SandboxError, add_sandbox_flags, confinement_from_args
from arena.trio_grpc import rpc_code, rpc_details
from arena.wire import PROTOCOL_VERSION, BotInfo, GameResult, RoundResult, round_result

PROG = "arena check-bot"
TABLE_ID = "check-bot"
SEARCH_SEEDS = 2000
"""How many seeds a situation's search tries before giving up (a bug if it ever does)."""


# -- situations --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Position:
    """A decision in a real game: ``actions`` played from the deal of (game, options, seed)."""

    game: str
    options: Mapping[str, Any]
    seed: int
    actions: tuple[int, ...]
    note: str
    """What the seat to move faces, for the report."""

    def replay(self) -> Game:
        g = new_game(self.game, dict(self.options), self.seed)
        for action in self.actions:
            g.apply(action)
        if g.to_move is None:
            raise RuntimeError(f"position {self.note!r} is past the end of the game")
        return g


@dataclass(frozen=True, slots=True)
class Situation:
    """A scripted check: the positions it asks the bot about, built on demand."""

    game: str
    title: str
    build: Callable[[], list[Position]]


class _Script:
    """A game being driven to a position, remembering the actions for the replay."""

    def __init__(self, game: str, options: Mapping[str, Any], seed: int) -> None:
        self.options = dict(options)
        self.seed = seed
        self.g = new_game(game, self.options, seed)
        self.actions: list[int] = []

    def apply(self, action: int) -> None:
        self.g.apply(action)
        self.actions.append(action)

    def to_round(self, r: int) -> None:
        """Play the smallest legal actions until round ``r`` is dealt."""
        while self.g.log[-1].number < r:
            self.apply(self.g.legal_actions()[0])

    def to_first_trick(self, bids: Sequence[int] = ()) -> int:
        """Choose clubs if asked, bid ``bids`` then the smallest legal; return the leader."""
        k = 0
        while self.g.decision is not Decision.PLAY:
            if self.g.decision is Decision.TRUMP:
                self.apply(0)
            else:
                self.apply(bids[k] if k < len(bids) else self.g.legal_actions()[0])
                k += 1
        assert self.g.to_move is not None
        return self.g.to_move

    def hand(self, seat: int) -> tuple[int, ...]:
        return self.g.view(seat % self.g.players).hand

    def position(self, note: str) -> Position:
        return Position(self.g.name, self.options, self.seed, tuple(self.actions), note)


def _search(what: str, attempt: Callable[[int], list[Position] | None]) -> list[Position]:
    for seed in range(SEARCH_SEEDS):
        found = attempt(seed)
        if found:
            return found
    raise RuntimeError(f"check-bot: no deal found for the situation {what!r}")


def _suited(hand: Sequence[int]) -> list[int]:
    return [c for c in hand if c < WIZARD]


def _suits(hand: Sequence[int]) -> set[int]:
    return {c >> 4 for c in _suited(hand)}


def _count(hand: Sequence[int], suit: int) -> int:
    return sum(1 for c in _suited(hand) if c >> 4 == suit)


def _lead_fits(second: Sequence[int], suit: int, follow: bool) -> bool:
    """Whether the seat after the leader (``second``) suits a lead of ``suit``: with
    ``follow``, two cards or more of it and another suit (a real choice, and a card the
    rules forbid); else none of it and two other suits."""
    others = len(_suits(second) - {suit})
    if follow:
        return _count(second, suit) >= 2 and others >= 1
    return _count(second, suit) == 0 and others >= 2


def _cards(cards: Sequence[int]) -> str:
    return " ".join(format_card(c) for c in cards)


_WIZARD_ROUNDS = range(3, 7)
"""The 4-player Wizard rounds the play situations are looked for in."""


def _wizard_led_jester() -> list[Position]:
    def attempt(seed: int) -> list[Position] | None:
        for r in _WIZARD_ROUNDS:
            s = _Script("wizard", {}, seed)
            s.to_round(r)
            leader = s.to_first_trick()
            second, third = s.hand(leader + 1), s.hand(leader + 2)
            if JESTER not in s.hand(leader) or len(_suits(second)) < 2:
                continue
            for card in _suited(second):
                suit = card >> 4
                if _count(third, suit) >= 2 and _suits(third) - {suit}:
                    s.apply(JESTER)
                    first = s.position("after a led Jester (no led suit yet)")
                    s.apply(card)
                    return [first, s.position(f"after J {format_card(card)} (the "
                                              f"{format_card(card)} sets the led suit)")]
        return None

    return _search("led Jester", attempt)


def _wizard_led_wizard() -> list[Position]:
    def attempt(seed: int) -> list[Position] | None:
        for r in _WIZARD_ROUNDS:
            s = _Script("wizard", {}, seed)
            s.to_round(r)
            leader = s.to_first_trick()
            if WIZARD in s.hand(leader) and len(_suits(s.hand(leader + 1))) >= 2:
                s.apply(WIZARD)
                return [s.position("after a led Wizard (no led suit)")]
        return None

    return _search("led Wizard", attempt)


def _wizard_lead_then(follow: bool) -> list[Position]:
    def attempt(seed: int) -> list[Position] | None:
        for r in _WIZARD_ROUNDS:
            s = _Script("wizard", {}, seed)
            s.to_round(r)
            leader = s.to_first_trick()
            second = s.hand(leader + 1)
            for card in _suited(s.hand(leader)):
                if _lead_fits(second, card >> 4, follow):
                    s.apply(card)
                    return [s.position(f"after {format_card(card)} led")]
        return None

    return _search("follow suit" if follow else "void hand", attempt)


def _wizard_hook() -> list[Position]:
    s = _Script("wizard", {"hook_rule": True}, 0)
    s.to_round(3)
    if s.g.decision is Decision.TRUMP:
        s.apply(0)
    bids = (1, 0, 0)
    for bid in bids:
        s.apply(bid)
    return [s.position(f"the dealer's bid in round 3 after bids {' '.join(map(str, bids))} "
                       f"({3 - sum(bids)} is forbidden)")]


def _wizard_turned() -> list[Position]:
    def attempt(seed: int) -> list[Position] | None:
        for r in range(1, 9):
            s = _Script("wizard", {}, seed)
            s.to_round(r)
            if s.g.decision is Decision.TRUMP:
                return [s.position(f"round {r}, a Wizard turned: the dealer names trump")]
        return None

    return _search("Wizard turned", attempt)


def _wizard_last_round() -> list[Position]:
    s = _Script("wizard", {"players": 3}, 0)
    s.to_round(20)
    first = s.position("3 players, round 20, no trump card: the first bid")
    s.to_first_trick()
    return [first, s.position("round 20, no trump: the lead with 20 cards")]


def _trumps_announce() -> list[Position]:
    s = _Script("trumps", {"announce": True}, 0)
    tricks = s.g.view(0).tricks_in_round
    first = s.position(f"the first announcement (0..{tricks} tricks)")
    for _ in range(s.g.players - 1):
        s.apply(s.g.legal_actions()[0])
    return [first, s.position("the dealer's announcement, after the others'")]


def _trumps_lead_then(follow: bool) -> list[Position]:
    def attempt(seed: int) -> list[Position] | None:
        s = _Script("trumps", {}, seed)
        leader = s.to_first_trick()
        second = s.hand(leader + 1)
        for card in s.hand(leader):
            if _lead_fits(second, card >> 4, follow):
                s.apply(card)
                return [s.position(f"after {format_card(card)} led")]
        return None

    return _search("trumps follow suit" if follow else "trumps void hand", attempt)


SITUATIONS: tuple[Situation, ...] = (
    Situation("wizard", "led Jester", _wizard_led_jester),
    Situation("wizard", "led Wizard", _wizard_led_wizard),
    Situation("wizard", "follow suit", lambda: _wizard_lead_then(follow=True)),
    Situation("wizard", "void in the led suit", lambda: _wizard_lead_then(follow=False)),
    Situation("wizard", "hook rule", _wizard_hook),
    Situation("wizard", "Wizard turned", _wizard_turned),
    Situation("wizard", "last round, no trump", _wizard_last_round),
    Situation("trumps", "announce", _trumps_announce),
    Situation("trumps", "follow suit", lambda: _trumps_lead_then(follow=True)),
    Situation("trumps", "void in the led suit", lambda: _trumps_lead_then(follow=False)),
)
"""Every scripted situation, in the order they are checked."""

GAME_OPTIONS: dict[str, tuple[dict[str, Any], ...]] = {
    "wizard": ({}, {"players": 5, "hook_rule": True}, {"players": 3},
               {"players": 6, "hook_rule": True}),
    "trumps": ({}, {"players": 3, "announce": True}, {"players": 2, "draw": False, "trump": "S"},
               {"players": 7, "announce": True}),
}
"""The options of the complete games, in turn (game i uses entry i mod 4)."""
GAME_SEED = 7001
SIGTERM_LIMIT_S = 3.0
"""How soon after SIGTERM a ``cmd:`` bot's process must have exited. The arena itself
sends SIGKILL 1 s after SIGTERM; this leaves room for a busy machine."""


# -- running the checks -----------------------------------------------------------------


@dataclass(slots=True)
class CheckResult:
    """One check: its name, the game it belongs to (None for the bot as a whole), verdict."""

    name: str
    ok: bool
    reason: str
    game: str | None = None


@dataclass(slots=True)
class Report:
    """Everything check-bot found out about one bot."""

    spec: str
    info: BotInfo | None = None
    checks: list[CheckResult] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    log_path: Path | None = None
    pid: int | None = None
    """The bot process's id, for a ``cmd:`` bot (ended when the checks are done)."""

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile of ``values`` (non-empty)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _legal_text(decision: Decision | None, legal: Sequence[int]) -> str:
    if len(legal) > 8:
        return f"{len(legal)} legal"
    if decision is Decision.PLAY:
        return "legal " + _cards(legal)
    if decision is Decision.TRUMP:
        return "legal " + " ".join(SUIT_LETTERS[s] for s in legal)
    return "legal " + " ".join(map(str, legal))


def _option_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _WatchedPlayer(RemotePlayer):
    """A remote seat that remembers failed notifications (which the referee ignores)."""

    def __init__(self, connection: BotConnection) -> None:
        super().__init__(connection)
        self.notice_errors: list[str] = []

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None:
        await self._watch("RoundEnded", super().round_ended(result, deadline_ms))

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None:
        await self._watch("GameEnded", super().game_ended(result, deadline_ms))

    async def _watch(self, call: str, notification: Any) -> None:
        try:
            await notification
        except Fault as f:
            self.notice_errors.append(f"{call}: {f.kind}: {f.detail}")
            raise
        except grpc.RpcError as e:
            code = rpc_code(e)
            self.notice_errors.append(
                f"{call} failed: {code.name if code else 'UNKNOWN'} {rpc_details(e)}".rstrip())
            raise


class Checker:
    """Runs the checks against one connected bot, collecting results into ``report``."""

    def __init__(self, connection: BotConnection, report: Report, move_ms: int) -> None:
        self.connection = connection
        self.player = RemotePlayer(connection)
        self.report = report
        self.move_ms = move_ms

    def add(self, name: str, ok: bool, reason: str, game: str | None = None) -> None:
        self.report.checks.append(CheckResult(name, ok, reason, game))

    async def ask(self, view: View, game_id: str) -> int:
        """The bot's answer to ``view``, timed; raises :class:`Fault` as a real game would."""
        started = time.perf_counter()
        action: int | None = None
        fault: Fault | None = None
        with trio.move_on_after(self.move_ms / 1000 + GRACE_S) as scope:
            try:
                action = await self.player.decide(view, game_id, TABLE_ID, self.move_ms, 0)
            except Fault as f:
                fault = f
            except Exception as e:  # never let one check end the run
                fault = Fault("crash", f"{type(e).__name__}: {e}"[:300])
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.report.latencies_ms.append(elapsed_ms)
        if scope.cancelled_caught or (fault is None and elapsed_ms > self.move_ms):
            # as the referee: an answer after the deadline is late, grace or not
            raise Fault("timeout", f"no answer within {self.move_ms} ms")
        if fault is not None:
            raise fault
        assert action is not None
        return action

    async def situation(self, situation: Situation) -> None:
        notes: list[str] = []
        for index, position in enumerate(situation.build()):
            game = position.replay()
            seat = game.to_move
            assert seat is not None
            view = game.view(seat)
            slug = situation.title.replace(",", "").replace(" ", "-")
            game_id = f"check-bot/{situation.game}/{slug}/{index + 1}"
            where = f"{position.note}: "
            try:
                action = await self.ask(view, game_id)
            except Fault as f:
                self.add(situation.title, False, f"{where}{f.kind}: {f.detail}", situation.game)
                return
            shown = describe_action(view.decision, action)
            if action not in view.legal:
                try:
                    game.check(action)
                    why = "not one of the legal actions"
                except IllegalAction as e:
                    why = str(e)
                self.add(situation.title, False,
                         f"{where}illegal: {shown}: {why} "
                         f"({_legal_text(view.decision, view.legal)})", situation.game)
                return
            notes.append(f"{where}{shown} ({_legal_text(view.decision, view.legal)})")
        self.add(situation.title, True, "; ".join(notes), situation.game)

    async def round_ended(self, name: str) -> None:
        """Unless the bot declined them, a RoundEnded notification (the first round of a
        real game of ``name``) must be answered, and in time."""
        info = self.connection.info
        if info is not None and info.skip_round_ended:
            self.add("RoundEnded", True, "declined in the hand-shake (skip_round_ended): "
                                         "not sent")
            return
        game = new_game(name, {}, GAME_SEED)
        while len(game.log) < 2 and not game.is_over:  # to the end of round 1
            game.apply(game.legal_actions()[0])
        result = round_result(game, 1, 0, f"check-bot/{name}/round-ended", TABLE_ID)
        problem = ""
        started = time.perf_counter()
        with trio.move_on_after(self.move_ms / 1000 + GRACE_S) as scope:
            try:
                await self.player.round_ended(result, self.move_ms)
            except grpc.RpcError as e:
                code = rpc_code(e)
                problem = (f"no answer within {self.move_ms} ms"
                           if code is grpc.StatusCode.DEADLINE_EXCEEDED else
                           f"answered with status {code.name if code else 'UNKNOWN'}: "
                           f"{rpc_details(e)}".rstrip(": "))
            except Exception as e:  # never let one check end the run
                problem = f"{type(e).__name__}: {e}"[:300]
        if scope.cancelled_caught:
            problem = f"no answer within {self.move_ms} ms"
        where = f"{name} seed {GAME_SEED}, round 1, seat 0: "
        if problem:
            self.add("RoundEnded", False,
                     f"{where}{problem}; the bot did not decline RoundEnded "
                     f"(skip_round_ended in its hand-shake), so it gets one after every round")
        else:
            took_ms = (time.perf_counter() - started) * 1000
            self.add("RoundEnded", True, f"{where}answered in {took_ms:.1f} ms")

    async def sigterm(self) -> None:
        """A ``cmd:`` bot's process must exit within :data:`SIGTERM_LIMIT_S` of SIGTERM
        (the arena's way of ending it). Not checked when no process is running."""
        process = self.connection.process
        if process is None or process.returncode is not None:
            return
        took = await process.terminate(SIGTERM_LIMIT_S)
        if took is None:
            self.add("SIGTERM", False,
                     f"still running {SIGTERM_LIMIT_S:g} s after SIGTERM; a bot must exit "
                     f"promptly on SIGTERM (the arena sends SIGKILL 1 s after it)")
            return
        note = ""
        if not process.signals_reach_bot:
            note = ("; here without cgroups the signal reaches the sandbox, which ends the "
                    "bot itself: run with --no-sandbox to check the bot's own handling")
        elif took > 1.0:
            note = " (over the arena's 1 s: in a game it would have been killed)"
        self.add("SIGTERM", True, f"exited {took:.2f} s after SIGTERM{note}")

    async def complete_game(self, name: str, index: int) -> None:
        options = GAME_OPTIONS[name][index % len(GAME_OPTIONS[name])]
        seed = GAME_SEED + index
        game = new_game(name, options, seed)
        n = game.players
        seat = index % n
        me = _WatchedPlayer(self.connection)
        players: list[Player] = []
        for s in range(n):
            if s == seat:
                players.append(me)
            else:
                builtin = "heuristic" if (s + index) % 2 == 0 else "random"
                players.append(LocalPlayer(make_bot(builtin, f"{seed}/{s}")))
        described = ", ".join(f"{k}={_option_text(v)}" for k, v in game.options.items())
        title = f"game {index + 1}"
        head = f"seed {seed}, {described}, seat {seat}: "
        report = await play_game(game, players, TimeControl(self.move_ms), table_id=TABLE_ID,
                                 game_id=f"check-bot/{name}/game-{index + 1}")
        latencies = report.latencies_ms[seat]
        self.report.latencies_ms.extend(latencies)
        problems: list[str] = []
        faults = report.faults
        if faults:
            first = faults[0]
            where = f"round {first['round']}" + (
                f" trick {first['trick']}" if first["trick"] is not None else "")
            forfeited = " (forfeited)" if report.record["forfeited"][seat] else ""
            problems.append(f"{len(faults)} fault{'s' if len(faults) > 1 else ''}{forfeited}; "
                            f"first: {where}: {first['kind']}: {first['detail']}")
        if me.notice_errors:
            problems.append(me.notice_errors[0])
        try:
            verify_record(report.record)
        except RecordError as e:
            problems.append(f"the record does not verify: {e}")
        if problems:
            self.add(title, False, head + "; ".join(problems), name)
            return
        outcome = game.outcome()
        self.add(title, True,
                 f"{head}{len(latencies)} decisions, no faults, record verified; "
                 f"place {outcome.places[seat]} of {n} ({outcome.totals[seat]} points)", name)


async def run_checks(spec: BotSpec, spec_text: str, games: Sequence[str] | None, move_ms: int,
                     games_per_kind: int, log_dir: Path,
                     confinement: Confinement | None = None) -> Report:
    """Run every check on the bot ``spec``; :class:`HandshakeError` when it cannot play.

    ``games`` None means every game the bot claims. Every process started is ended.
    """
    report = Report(spec_text)
    connection = BotConnection(spec_text, spec, log_dir, confinement=confinement)
    try:
        started = time.perf_counter()
        info = await connection.open()
        report.log_path = connection.log_path
        ready_s = time.perf_counter() - started
        report.info = info
        report.pid = connection.pid
        for wanted in games or ():
            if wanted not in info.games:
                raise HandshakeError(f"bot {info.name} ({spec_text}): does not play {wanted} "
                                     f"(it plays {', '.join(info.games)})")
        checker = Checker(connection, report, move_ms)
        checker.add("health", True, f"SERVING; started and answered the hand-shake "
                                    f"in {ready_s:.2f} s")
        checker.add("hand-shake", True,
                    f"{info.name} {info.version or '(no version)'}, protocol "
                    f"{info.protocol_version} (the referee speaks 1..{PROTOCOL_VERSION}), "
                    f"plays {', '.join(info.games)}")
        kinds = [g for g in GAMES if g in (games or info.games)]
        for kind in kinds:
            for situation in SITUATIONS:
                if situation.game == kind:
                    await checker.situation(situation)
            for index in range(games_per_kind):
                await checker.complete_game(kind, index)
        if kinds:
            await checker.round_ended(kinds[0])
        if spec.kind == "cmd":
            restarts = connection.restarts
            checker.add("process", restarts == 0,
                        "never crashed or restarted" if restarts == 0 else
                        f"crashed and was restarted {restarts} time"
                        f"{'s' if restarts > 1 else ''}")
            await checker.sigterm()
    finally:
        await connection.aclose()
    return report


# -- output -----------------------------------------------------------------------------


def _latency(report: Report) -> dict[str, Any]:
    values = report.latencies_ms
    if not values:
        return {"calls": 0}
    return {"calls": len(values), "p50": round(percentile(values, 50), 3),
            "p95": round(percentile(values, 95), 3), "max": round(max(values), 3)}


def report_json(report: Report) -> dict[str, Any]:
    """The report as JSON-ready data (the ``--json`` output)."""
    info = report.info
    return {
        "spec": report.spec,
        "bot": None if info is None else {
            "name": info.name, "version": info.version, "author": info.author,
            "protocol_version": info.protocol_version, "games": list(info.games)},
        "ok": report.ok,
        "checks": [{"name": c.name, "game": c.game, "ok": c.ok, "reason": c.reason}
                   for c in report.checks],
        "latency_ms": _latency(report),
        "log": str(report.log_path) if report.log_path else None,
    }


def print_report(report: Report, console: Console) -> None:
    """The report for people: the bot, each check PASS/FAIL with its reason, latencies."""
    info = report.info
    assert info is not None
    rows = [("bot", report.spec), ("name", info.name), ("version", info.version or "-"),
            ("author", info.author or "-"), ("protocol", str(info.protocol_version)),
            ("games", ", ".join(info.games))]
    for label, value in rows:
        console.print(Text.assemble((f"{label:<9}", "bold"), clean(value)))
    console.print()
    names = [c.name if c.game is None else f"{c.game}: {c.name}" for c in report.checks]
    width = max(map(len, names), default=0)
    for check, name in zip(report.checks, names, strict=True):
        verdict = ("PASS", "bold green") if check.ok else ("FAIL", "bold red")
        console.print(Text.assemble(verdict, "  ", f"{name:<{width}}", "  ",
                                    clean(check.reason)))
    console.print()
    lat = _latency(report)
    if lat["calls"]:
        console.print(f"latency over {lat['calls']} decision calls: p50 {lat['p50']:.1f} ms, "
                      f"p95 {lat['p95']:.1f} ms, max {lat['max']:.1f} ms")
    failed = sum(1 for c in report.checks if not c.ok)
    if failed:
        console.print(Text(f"{failed} of {len(report.checks)} checks failed", "bold red"))
        log = report.log_path
        if log is not None and log.exists() and log.stat().st_size:
            console.print(f"bot log: {log}", markup=False)
    else:
        console.print(Text(f"all {len(report.checks)} checks passed", "bold green"))


# -- the command ------------------------------------------------------------------------


def add_parser(subparsers: Any) -> None:
    """Add the ``check-bot`` sub-command to ``subparsers`` (argparse's add_subparsers())."""
    p = subparsers.add_parser(
        "check-bot", help="check that a bot speaks the protocol and plays legally",
        description="Start or reach a bot, check its health and hand-shake, ask it about "
                    "scripted situations of every game it plays, and let it play complete "
                    "games against the built-in bots. Exit code 1 if any check fails.")
    p.add_argument("spec", metavar="SPEC",
                   help="the bot: cmd:COMMAND, grpc://HOST:PORT, grpcs://HOST:PORT or "
                   "unix:PATH")
    p.add_argument("--game", choices=list(GAMES),
                   help="check only this game (default: every game the bot claims)")
    p.add_argument("--move-ms", type=int, default=1000, metavar="MS",
                   help="time per decision in milliseconds (default 1000)")
    p.add_argument("--games", type=int, default=2, metavar="N",
                   help="complete games per game kind (default 2)")
    p.add_argument("--log-dir", type=Path, metavar="DIR",
                   help="where the bot's stderr goes (default: a temporary folder)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_sandbox_flags(p)
    add_remote_flags(p)


def _usage(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def cmd_check_bot(args: argparse.Namespace) -> int:
    """Run ``arena check-bot``: 0 when every check passes, 1 if any fails, 2 for bad usage."""
    try:
        (spec,) = remote_from_args([BotSpec.parse(args.spec)], args)
    except BotSpecError as e:
        return _usage(str(e))
    if spec.kind == "builtin":
        return _usage(f"{args.spec!r} is a built-in bot; give cmd:COMMAND, grpc://HOST:PORT, "
                      "grpcs://HOST:PORT or unix:PATH")
    if spec.plain_remote:
        print(f"{PROG}: warning: {spec} without TLS (--insecure): its moves and token "
              f"travel unencrypted", file=sys.stderr)
    if args.game is not None and args.game not in GAMES:
        return _usage(f"unknown game {args.game!r}; allowed: {', '.join(GAMES)}")
    if args.move_ms < 1:
        return _usage("--move-ms must be positive")
    if args.games < 0:
        return _usage("--games must be 0 or more")
    games = [args.game] if args.game else None
    try:
        confinement = confinement_from_args(args, spec.kind == "cmd")
    except SandboxError as e:
        return _usage(str(e))
    try:
        log_dir = (private_dir(args.log_dir) if args.log_dir
                   else temp_dir("trick-arena-check-bot-"))
    except FolderError as e:
        return _usage(str(e))
    try:
        with sigterm_as_ctrl_c():
            report = trio.run(run_checks, spec, args.spec, games, args.move_ms, args.games,
                              log_dir, confinement)
    except HandshakeError as e:
        print(f"{PROG}: {clean(str(e))}", file=sys.stderr)
        if args.json:
            print(json.dumps({"spec": args.spec, "bot": None, "ok": False, "error": str(e)}))
        return 1
    finally:
        if not args.log_dir:  # a temporary folder no bot wrote in (grpc:// and unix:)
            with contextlib.suppress(OSError):
                log_dir.rmdir()
    if args.json:
        print(json.dumps(report_json(report), indent=2))
    else:
        print_report(report, Console(highlight=False, soft_wrap=True, emoji=False))
    return 0 if report.ok else 1


__all__ = [
    "GAME_OPTIONS",
    "SITUATIONS",
    "CheckResult",
    "Position",
    "Report",
    "Situation",
    "add_parser",
    "cmd_check_bot",
    "percentile",
    "print_report",
    "report_json",
    "run_checks",
]
