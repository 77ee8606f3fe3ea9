"""``arena check-bot``: a conformance check for a bot written in any language.

It starts (or reaches) the bot, checks its health and hand-shake, then puts it in
scripted situations taken from real games — a led Jester, a led Wizard, a forced
follow-suit, a void hand, the hook rule, a turned Wizard, the last round without trump,
the Trumps announcement — and lets it play a few complete games against the built-in
bots. A bot that did not decline ``RoundEnded`` must answer one; a ``cmd:`` bot's
process must exit promptly on SIGTERM. Every question goes through
:class:`~arena.play.players.RemotePlayer`, so deadlines and faults are exactly those of a
real game. Each check passes or fails with its reason; the
answer latencies close the report.

The situations are positions of real :mod:`arena.rules` games: a seed found by search
and a list of actions played from the deal, replayed to build the game. Nothing is set
by hand, so the view the bot receives is one a real game produces.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
from rich.console import Console
from rich.text import Text

from arena.checkbot.situations import GAME_OPTIONS, SITUATIONS, Situation, cards_text
from arena.model.faults import Fault
from arena.model.limits import Confinement
from arena.model.names import clean
from arena.model.record import RecordError, verify_record
from arena.model.results import BotInfo, GameResult, RoundResult, round_result
from arena.model.spec import BotSpec
from arena.play.players import RemotePlayer
from arena.play.referee import (
    GRACE_S,
    Answer,
    Player,
    TimeControl,
    ask,
    describe_action,
    play_game,
)
from arena.play.seats import builtin_player
from arena.proc.connection import BotConnection, HandshakeError
from arena.report.format import option_value
from arena.rules import GAMES, Decision, Game, View, new_game
from arena.rules.cards import SUIT_LETTERS
from arena.wire.client import CallFailed
from arena.wire.serde import PROTOCOL_VERSION

PROG = "arena check-bot"


TABLE_ID = "check-bot"


GAME_SEED = 7001


SIGTERM_LIMIT_S = 3.0
"""How soon after SIGTERM a ``cmd:`` bot's process must have exited. The arena itself
sends SIGKILL 1 s after SIGTERM; this leaves room for a busy machine."""

SIGTERM_BUSY_S = 30.0
"""How long the check waits in all for a bot still on its way out at
:data:`SIGTERM_LIMIT_S` (some thread waiting for a CPU or in the kernel, under a second
of CPU used since the signal): a busy machine, such as a league's server playing games
while it checks a submission, must not fail a bot that exits promptly on an idle one."""


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
        return "legal " + cards_text(legal)
    if decision is Decision.TRUMP:
        return "legal " + " ".join(SUIT_LETTERS[s] for s in legal)
    return "legal " + " ".join(map(str, legal))




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
        except CallFailed as e:
            self.notice_errors.append(f"{call} failed: {e}")
            raise


class Checker:
    """Runs the checks against one connected bot, collecting results into ``report``."""

    def __init__(self, connection: BotConnection, report: Report, move_ms: int,
                 first_options: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.connection = connection
        self.player = RemotePlayer(connection)
        self.report = report
        self.move_ms = move_ms
        self.first_options = dict(first_options or {})
        """Per game, the options its first complete game is played with (a league's);
        the others go through :data:`GAME_OPTIONS`."""

    def add(self, name: str, ok: bool, reason: str, game: str | None = None) -> None:
        self.report.checks.append(CheckResult(name, ok, reason, game))

    async def ask(self, view: View, game: Game, game_id: str) -> Answer:
        """The bot's answer to ``view`` (a position of ``game``), timed by the referee's
        own rule (:func:`arena.play.referee.ask`); raises :class:`Fault` for a late,
        failed or garbled answer as a real game would. An illegal action is returned
        with the referee's explanation (:func:`arena.play.referee.why_illegal`)."""
        answer = await ask(self.player, view, game, self.move_ms, 0, game_id, TABLE_ID)
        self.report.latencies_ms.append(answer.elapsed_ms)
        if answer.kind and answer.kind != "illegal":
            raise Fault(answer.kind, answer.detail)
        return answer

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
                answer = await self.ask(view, game, game_id)
            except Fault as f:
                self.add(situation.title, False, f"{where}{f.kind}: {f.detail}", situation.game)
                return
            if answer.kind == "illegal":
                self.add(situation.title, False,
                         f"{where}illegal: {answer.detail} "
                         f"({_legal_text(view.decision, view.legal)})", situation.game)
                return
            shown = describe_action(view.decision, answer.action)
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
            except Fault as f:  # the process died in it
                problem = f"{f.kind}: {f.detail}"
            except CallFailed as e:
                problem = (f"no answer within {self.move_ms} ms"
                           if e.code == "DEADLINE_EXCEEDED" else
                           f"answered with status {e.code}: {e.details}".rstrip(": "))
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
        started = time.monotonic()
        took = await process.terminate(SIGTERM_LIMIT_S, SIGTERM_BUSY_S)
        if took is None:
            self.add("SIGTERM", False,
                     f"still running {time.monotonic() - started:.0f} s after SIGTERM "
                     f"({process.describe()}); a bot must exit promptly on SIGTERM (the "
                     f"arena sends SIGKILL 1 s after it)")
            return
        note = ""
        if not process.signals_reach_bot:
            note = ("; here without cgroups the signal reaches the sandbox, which ends the "
                    "bot itself: run with --no-sandbox to check the bot's own handling")
        elif took > SIGTERM_LIMIT_S:
            note = (f" (a busy machine: still on its way out at {SIGTERM_LIMIT_S:g} s, "
                    f"waiting for a CPU or in the kernel, with little CPU used)")
        elif took > 1.0:
            note = " (over the arena's 1 s: in a game it would have been killed)"
        self.add("SIGTERM", True, f"exited {took:.2f} s after SIGTERM{note}")

    async def complete_game(self, name: str, index: int) -> None:
        options = (dict(self.first_options[name]) if index == 0 and name in self.first_options
                   else GAME_OPTIONS[name][index % len(GAME_OPTIONS[name])])
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
                players.append(builtin_player(builtin, builtin, seed, s))
        described = ", ".join(f"{k}={option_value(v)}" for k, v in game.options.items())
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
                     confinement: Confinement | None = None, cwd: Path | None = None,
                     first_options: Mapping[str, Mapping[str, Any]] | None = None) -> Report:
    """Run every check on the bot ``spec``; :class:`HandshakeError` when it cannot play.

    ``games`` None means every game the bot claims. A ``cmd:`` bot runs in ``cwd`` (None:
    the arena's working folder). ``first_options``: per game, the options of its first
    complete game (a league checks a submission with its own options first). Every
    process started is ended.
    """
    report = Report(spec_text)
    connection = BotConnection(spec_text, spec, log_dir, confinement=confinement, cwd=cwd)
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
        checker = Checker(connection, report, move_ms, first_options)
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
            process = connection.process
            dead = process is not None and process.returncode is not None
            last = (f"; the last process {connection.last_end}" if connection.last_end
                    else "")
            times = f"{restarts} time{'s' if restarts > 1 else ''}"
            checker.add("process", restarts == 0 and not dead,
                        "crashed" + (f" and was restarted {times}" if restarts else "") + last
                        if restarts or dead else "never crashed or restarted")
            await checker.sigterm()
    finally:
        await connection.aclose()
    return report


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
