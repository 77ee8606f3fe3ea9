"""The referee's own logic with in-process players: faults, default actions, the time
bank, forfeits and notifications. Fake players stand in for misbehaving bots here; the
same faults over real gRPC with real processes are in test_grpc_games.py."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing
from conftest import decisions_of, replay

from arena.bots import make_bot
from arena.model.faults import Fault
from arena.model.record import round_record, verify_record
from arena.model.results import GameResult, RoundResult
from arena.play.players import LocalPlayer
from arena.play.referee import (
    GRACE_S,
    GameReport,
    Player,
    TimeControl,
    default_action,
    describe_action,
    play_game,
)
from arena.rules import Decision, IllegalAction, View, new_game
from arena.rules.cards import JESTER, WIZARD, parse_card

DEFAULT_CLOCK = TimeControl()
Behaviour = Callable[[View, int], Any]
"""What a fake player does on its n-th decision call (1-based): returns the action."""


class Fake:
    """A seat that does what ``behaviour`` says and remembers every call."""

    def __init__(self, behaviour: Behaviour, name: str = "fake",
                 notify: Callable[[], Any] | None = None) -> None:
        self.behaviour = behaviour
        self.name = name
        self.notify = notify
        self.calls: list[tuple[View, int, int]] = []
        self.rounds_ended: list[RoundResult] = []
        self.games_ended: list[GameResult] = []

    async def decide(self, view: View, game_id: str, table_id: str,
                     deadline_ms: int, bank_ms: int) -> int:
        self.calls.append((view, deadline_ms, bank_ms))
        result = self.behaviour(view, len(self.calls))
        if isinstance(result, float):  # think for that many seconds, then answer lowest
            await trio.sleep(result)
            return min(view.legal)
        return result  # type: ignore[no-any-return]

    async def round_ended(self, result: RoundResult, deadline_ms: int) -> None:
        self.rounds_ended.append(result)
        if self.notify is not None:
            await self.notify()

    async def game_ended(self, result: GameResult, deadline_ms: int) -> None:
        self.games_ended.append(result)
        if self.notify is not None:
            await self.notify()


def lowest(view: View, call: int) -> int:
    return min(view.legal)


def builtins(game: str, n: int) -> list[Player]:
    return [LocalPlayer(make_bot("heuristic" if s % 2 else "random", s)) for s in range(n)]


def play(game_name: str, options: dict[str, Any], seed: int, players: list[Any],
         clock: TimeControl = DEFAULT_CLOCK, **kwargs: Any) -> GameReport:
    """Play with trio's mock clock: sleeping players cost no real time."""
    game = new_game(game_name, options, seed)
    report: GameReport = trio.run(
        lambda: play_game(game, players, clock, **kwargs),
        clock=trio.testing.MockClock(autojump_threshold=0))
    verify_record(report.record)
    return report


def check_defaults_after_forfeit(record: dict[str, Any], seat: int) -> None:
    """Every decision of ``seat`` from its forfeiting fault on is the default action."""
    forfeit = next(f for f in record["faults"] if f["seat"] == seat and f.get("forfeited"))
    steps = decisions_of(record, seat)
    start = next(i for i, s in enumerate(steps)
                 if s.where == (forfeit["round"], forfeit["trick"])
                 and describe_action(s.decision, s.action) == forfeit["action"])
    assert steps[start:]
    for step in steps[start:]:
        assert step.action == default_action(step.view)


# -- default actions ------------------------------------------------------------------


def test_default_bid_is_the_smallest_legal_bid_even_under_the_hook_rule() -> None:
    game = new_game("wizard", {"players": 3, "hook_rule": True}, 4)
    while game.decision is not Decision.BID:
        game.apply(default_action(game.view(game.to_move)))  # type: ignore[arg-type]
    game.apply(1)  # seat 1 bids the one trick of round 1
    game.apply(0)
    dealer = game.view(game.to_move)  # type: ignore[arg-type]
    assert dealer.seat == dealer.dealer and dealer.legal == (1,)  # 0 would make it even
    assert default_action(dealer) == 1
    fresh = new_game("wizard", {"players": 3}, 4)
    while fresh.decision is not Decision.BID:
        fresh.apply(default_action(fresh.view(fresh.to_move)))  # type: ignore[arg-type]
    assert default_action(fresh.view(fresh.to_move)) == 0  # type: ignore[arg-type]


def test_default_trump_is_the_suit_held_most_with_ties_in_suit_order() -> None:
    game = new_game("wizard", {"players": 3}, 1)  # round 1 turns a Wizard: dealer 0 picks
    assert game.decision is Decision.TRUMP
    view = game.view(0)
    hand = tuple(parse_card(c) for c in ("C5", "H2", "S9", "H12", "S3", "W", "W", "J"))

    def pick(cards: tuple[int, ...]) -> int:
        return default_action(dataclasses.replace(view, hand=cards))

    assert pick(hand) == 2  # hearts and spades two each, Wizards and Jesters no suit
    assert pick((*hand, parse_card("S4"))) == 3
    assert pick((WIZARD, JESTER)) == 0  # no suit held: clubs
    assert pick((parse_card("D1"),)) == 1


@pytest.mark.parametrize(("legal", "expected"), [
    (("H7", "C7", "S2"), "S2"),  # the lowest rank
    (("H7", "C7"), "C7"),  # equal ranks: suit order C, D, H, S
    (("W", "H13"), "H13"),  # a Wizard is above every suited card
    (("J", "C2", "W"), "J"),  # a Jester below them
    (("W",), "W"),
])
def test_default_play_is_the_lowest_legal_card(legal: tuple[str, ...], expected: str) -> None:
    game = new_game("wizard", {"players": 3}, 2)
    while game.decision is not Decision.PLAY:
        game.apply(default_action(game.view(game.to_move)))  # type: ignore[arg-type]
    view = game.view(game.to_move)  # type: ignore[arg-type]
    cards = tuple(parse_card(c) for c in legal)
    assert default_action(dataclasses.replace(view, legal=cards, hand=cards)) == \
        parse_card(expected)


def test_describe_action() -> None:
    assert describe_action(Decision.BID, 2) == "bid 2"
    assert describe_action(Decision.TRUMP, 2) == "trump H"
    assert describe_action(Decision.PLAY, parse_card("S14")) == "play S14"
    assert describe_action(Decision.PLAY, WIZARD) == "play W"
    assert describe_action(Decision.PLAY, "x") == "'x'"
    assert describe_action(Decision.TRUMP, 9) == "9"


# -- games without faults -------------------------------------------------------------


@pytest.mark.parametrize(("game", "options"), [
    ("wizard", {"players": 4}),
    ("trumps", {"players": 3, "announce": True}),
])
def test_a_game_of_builtins_has_no_faults(game: str, options: dict[str, Any]) -> None:
    rounds: list[dict[str, Any]] = []
    report = play(game, options, 11, builtins(game, options["players"]),
                  game_id="g1", table_id="t1", on_round=rounds.append)
    record = report.record
    assert record["faults"] == [] and record["forfeited"] == [False] * options["players"]
    assert record["game_id"] == "g1" and record["table_id"] == "t1"
    assert rounds == record["rounds"]
    decisions = [0] * options["players"]
    for step in replay(record):
        decisions[step.seat] += 1
    assert [len(lat) for lat in report.latencies_ms] == decisions


def test_on_round_may_be_async_and_sees_each_round_as_it_ends() -> None:
    seen: list[int] = []
    game = new_game("wizard", {"players": 3}, 5)

    async def on_round(rnd: dict[str, Any]) -> None:
        await trio.sleep(0)
        assert rnd == round_record(game.log[rnd["number"] - 1])
        seen.append(rnd["number"])

    trio.run(lambda: play_game(game, builtins("wizard", 3), on_round=on_round))
    assert seen == list(range(1, 21))


def test_wrong_number_of_players_is_refused() -> None:
    game = new_game("wizard", {"players": 3}, 1)
    with pytest.raises(ValueError, match="2 players for 3 seats"):
        trio.run(lambda: play_game(game, builtins("wizard", 2)))


def test_every_seat_hears_every_round_and_the_end() -> None:
    fakes = [Fake(lowest, f"f{s}") for s in range(3)]
    report = play("wizard", {"players": 3}, 3, fakes, game_id="g", table_id="t")
    # the bots hear one opaque random id for the game; the record keeps the schedule's
    wire_id = fakes[0].rounds_ended[0].game_id
    assert wire_id != "g" and re.fullmatch(r"[0-9a-f]{16}", wire_id)
    for seat, fake in enumerate(fakes):
        assert [r.round for r in fake.rounds_ended] == list(range(1, 21))
        assert all(r.seat == seat and r.game_id == wire_id for r in fake.rounds_ended)
        (end,) = fake.games_ended
        assert end.totals == tuple(report.record["totals"]) and not end.forfeited
        assert end.game_id == wire_id
    assert report.record["seats"] == ["f0", "f1", "f2"]
    assert (report.record["game_id"], report.record["table_id"]) == ("g", "t")
    again = play("wizard", {"players": 3}, 3, [Fake(lowest) for _ in range(3)], game_id="g",
                 table_id="t")
    assert again.record["game_id"] == "g"


def test_the_ids_sent_to_bots_are_new_for_every_game() -> None:
    seen = set()
    for _ in range(3):
        fakes = [Fake(lowest) for _ in range(3)]
        play("wizard", {"players": 3}, 3, fakes, game_id="same", table_id="same")
        seen.add((fakes[0].games_ended[0].game_id, fakes[0].games_ended[0].table_id))
    assert len(seen) == 3


# -- faults ---------------------------------------------------------------------------


def raise_fault(view: View, call: int) -> int:
    raise Fault("protocol", "PlayResponse has no card")


def test_a_fault_is_recorded_and_the_default_action_applied() -> None:
    def second_call_faults(view: View, call: int) -> int:
        return raise_fault(view, call) if call == 2 else min(view.legal)

    report = play("trumps", {"players": 4, "draw": False}, 8,
                  [Fake(lowest), Fake(second_call_faults), Fake(lowest), Fake(lowest)])
    (fault,) = report.faults
    step = decisions_of(report.record, 1)[1]  # seat 1's second decision
    assert fault == {"seat": 1, "round": 1, "trick": step.where[1], "kind": "protocol",
                     "detail": "PlayResponse has no card",
                     "action": describe_action(Decision.PLAY, default_action(step.view))}
    assert step.action == default_action(step.view)
    assert report.record["forfeited"] == [False] * 4


def test_an_illegal_answer_is_a_fault_saying_why() -> None:
    answers: list[tuple[View, int]] = []

    def too_many(view: View, call: int) -> int:
        if view.decision is Decision.BID and call == 1:
            answers.append((view, len(view.hand) + 1))
            return len(view.hand) + 1
        return min(view.legal)

    fakes = [Fake(lowest), Fake(lowest), Fake(too_many)]
    report = play("wizard", {"players": 3}, 6, fakes)
    (fault,) = report.faults
    ((view, answer),) = answers
    assert (fault["seat"], fault["round"], fault["trick"]) == (2, 1, None)
    for step in replay(report.record):
        if step.seat == 2:
            with pytest.raises(IllegalAction) as why:
                step.game.check(answer)
            break
    assert fault["kind"] == "illegal"
    assert fault["detail"] == f"bid 2: {why.value}"
    assert "bid 2 is outside 0..1" in fault["detail"]
    assert fault["action"] == "bid 0"
    assert view.seat == 2


@pytest.mark.parametrize(("answer", "detail"), [
    ("H7", "'H7': seat 0: 'H7' is not an action"),
    (None, "None: seat 0: None is not an action"),
    ([2], "[2]: seat 0: [2] is not an action"),
])
def test_an_answer_that_is_no_action_is_illegal(answer: Any, detail: str) -> None:
    report = play("trumps", {"players": 2, "draw": False}, 1,
                  [Fake(lambda v, c: answer if c == 1 else min(v.legal)), Fake(lowest)])
    (fault,) = report.faults
    assert fault["kind"] == "illegal" and fault["detail"] == detail


def test_an_exception_in_a_player_is_a_crash_fault() -> None:
    def broken(view: View, call: int) -> int:
        if call == 3:
            raise ZeroDivisionError("division by zero")
        return min(view.legal)

    report = play("trumps", {"players": 3, "draw": False}, 2,
                  [Fake(lowest), Fake(lowest), Fake(broken)])
    (fault,) = report.faults
    assert (fault["seat"], fault["kind"]) == (2, "crash")
    assert fault["detail"] == "ZeroDivisionError: division by zero"


def test_a_fault_of_the_trump_choice_has_no_trick() -> None:
    def bad_trump(view: View, call: int) -> int:
        if view.decision is Decision.TRUMP:
            raise Fault("protocol", "ChooseTrumpResponse: no suit given (SUIT_UNSPECIFIED)")
        return min(view.legal)

    report = play("wizard", {"players": 3}, 1, [Fake(bad_trump), Fake(lowest), Fake(lowest)])
    first = report.faults[0]
    step = decisions_of(report.record, 0)[0]
    assert step.decision is Decision.TRUMP
    assert first["round"] == 1 and first["trick"] is None
    assert first["action"] == describe_action(Decision.TRUMP, default_action(step.view))
    assert report.record["rounds"][0]["trump"] == first["action"].split()[1]


def test_a_player_that_never_answers_times_out_after_the_deadline_and_grace() -> None:
    def hang(view: View, call: int) -> float:
        return 3600.0 if call == 1 else 0.0

    fakes = [Fake(hang), Fake(lowest)]
    report = play("trumps", {"players": 2, "draw": False}, 3, fakes,
                  TimeControl(move_ms=200))
    (fault,) = report.faults
    assert fault["kind"] == "timeout" and fault["detail"] == "no answer within 200 ms"
    assert report.latencies_ms[0][0] == pytest.approx(200 + GRACE_S * 1000)


@pytest.mark.parametrize("late_ms", [1, 120, GRACE_S * 1000 - 1])
def test_an_answer_after_the_deadline_but_within_the_grace_is_a_timeout(
        late_ms: float) -> None:
    fakes = [Fake(lambda view, call: (200 + late_ms) / 1000), Fake(lowest)]
    report = play("trumps", {"players": 2, "draw": False}, 3, fakes,
                  TimeControl(move_ms=200, max_faults=99))
    seat0 = [f for f in report.faults if f["seat"] == 0]
    assert len(seat0) == len(fakes[0].calls) == 7
    assert {(f["kind"], f["detail"]) for f in seat0} == {("timeout", "no answer within 200 ms")}
    # the late answer (the lowest legal card) was not used: the default action was played
    assert report.latencies_ms[0] == [pytest.approx(200 + late_ms)] * 7
    for step in decisions_of(report.record, 0):
        assert step.action == default_action(step.view)


def test_an_answer_exactly_at_the_deadline_is_in_time() -> None:
    fakes = [Fake(lambda view, call: 0.25), Fake(lowest)]  # exact in binary: no rounding
    report = play("trumps", {"players": 2, "draw": False}, 3, fakes, TimeControl(move_ms=250))
    assert report.faults == []
    assert report.latencies_ms[0] == [250.0] * 7


# -- forfeits -------------------------------------------------------------------------


def test_after_max_faults_the_seat_is_forfeited_and_never_asked_again() -> None:
    bad = Fake(raise_fault, "bad")
    fakes = [Fake(lowest), bad, Fake(lowest)]
    report = play("wizard", {"players": 3}, 9, fakes, TimeControl(max_faults=2))
    record = report.record
    assert len(bad.calls) == 2
    assert [(f["seat"], f["kind"], f.get("forfeited")) for f in record["faults"]] == \
        [(1, "protocol", None), (1, "protocol", True)]
    assert record["forfeited"] == [False, True, False]
    check_defaults_after_forfeit(record, 1)
    # the forfeited seat hears no more rounds, but hears the end and why
    last_asked = bad.calls[-1][0].round
    assert [r.round for r in bad.rounds_ended] == list(range(1, last_asked))
    (end,) = bad.games_ended
    assert end.forfeited
    assert end.forfeit_reason == ("2 faults (the limit is 2); the last: protocol: "
                                  "PlayResponse has no card")
    assert not fakes[0].games_ended[0].forfeited
    assert len(fakes[0].rounds_ended) == 20


def test_faults_of_any_kind_count_toward_the_limit() -> None:
    def mixed(view: View, call: int) -> Any:
        if call == 1:
            return 3600.0
        if call == 2:
            raise RuntimeError("bot bug")
        if call == 3:
            return -1
        return min(view.legal)

    fake = Fake(mixed)
    report = play("trumps", {"players": 2, "announce": True}, 5, [Fake(lowest), fake],
                  TimeControl(move_ms=100, max_faults=3))
    assert [f["kind"] for f in report.faults] == ["timeout", "crash", "illegal"]
    assert report.faults[-1]["forfeited"] is True
    assert len(fake.calls) == 3
    assert report.record["forfeited"] == [False, True]
    check_defaults_after_forfeit(report.record, 1)


def test_two_seats_can_be_forfeited() -> None:
    fakes = [Fake(raise_fault), Fake(lowest), Fake(raise_fault)]
    report = play("trumps", {"players": 3, "draw": False}, 4, fakes, TimeControl(max_faults=1))
    assert report.record["forfeited"] == [True, False, True]
    assert [len(f.calls) for f in fakes] == [1, 7, 1]
    for seat in (0, 2):
        check_defaults_after_forfeit(report.record, seat)


# -- the time bank --------------------------------------------------------------------


def test_a_slow_answer_draws_on_the_bank_until_it_runs_out() -> None:
    slow = Fake(lambda view, call: 0.5)  # 400 ms over move_ms on every call
    report = play("trumps", {"players": 2, "draw": False}, 7, [slow, Fake(lowest)],
                  TimeControl(move_ms=100, bank_ms=1200, max_faults=3))
    banks = [bank for _, _, bank in slow.calls]
    deadlines = [deadline for _, deadline, _ in slow.calls]
    assert banks == [1200, 800, 400, 0, 0, 0]
    assert deadlines == [1300, 900, 500, 100, 100, 100]
    faults = report.faults
    assert [f["kind"] for f in faults] == ["timeout"] * 3
    steps = decisions_of(report.record, 0)
    assert [(f["round"], f["trick"]) for f in faults] == [s.where for s in steps[3:6]]
    assert faults[0]["detail"] == "no answer within 100 ms"
    assert report.latencies_ms[0][:3] == [pytest.approx(500)] * 3


def test_a_quick_answer_keeps_the_bank_and_a_slow_one_within_it_is_no_fault() -> None:
    def mostly_quick(view: View, call: int) -> float:
        return 0.25 if call == 3 else 0.0625

    fake = Fake(mostly_quick)
    report = play("trumps", {"players": 2, "draw": False}, 7, [Fake(lowest), fake],
                  TimeControl(move_ms=100, bank_ms=200))
    assert report.faults == []
    assert [bank for _, _, bank in fake.calls] == [200, 200, 200] + [50] * 4


def test_the_bank_is_per_seat() -> None:
    slow = Fake(lambda view, call: 0.25)
    other = Fake(lambda view, call: 0.0)
    play("trumps", {"players": 2, "draw": False}, 7, [slow, other],
         TimeControl(move_ms=100, bank_ms=1000))
    assert [b for _, _, b in slow.calls] == [1000, 850, 700, 550, 400, 250, 100]
    assert [b for _, _, b in other.calls] == [1000] * 7


# -- notifications --------------------------------------------------------------------


def test_failed_or_hanging_notifications_are_no_faults() -> None:
    async def fail() -> None:
        raise Fault("crash", "connection failed")

    async def hang() -> None:
        await trio.sleep(3600)

    fakes = [Fake(lowest, notify=fail), Fake(lowest, notify=hang), Fake(lowest)]
    report = play("wizard", {"players": 3}, 12, fakes)
    assert report.faults == [] and report.record["forfeited"] == [False] * 3
    assert len(fakes[1].rounds_ended) == 20 and len(fakes[1].games_ended) == 1
