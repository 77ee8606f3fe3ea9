"""The built-in ``pimc`` bot (arena/bots/pimc.py) and its SDK sample: legal, deterministic,
on time; over real gRPC through ``arena play``."""

from __future__ import annotations

import json
import random
import subprocess
import time
from typing import Any

import pytest
from conftest import REPO, SAMPLE_BOTS, Sandbox, arena_in_process, bot_cmd

from arena.bots import make_bot
from arena.bots.heuristic import HeuristicBot
from arena.bots.pimc import MARGIN_MS, MIN_SAMPLES, PimcBot, choose, planned_samples, survivors
from arena.model.record import verify_record
from arena.model.spec import BotSpec, BotSpecError
from arena.rules import Decision, Game, new_game
from arena.rules.cards import WIZARD

PIMC_PY = bot_cmd(SAMPLE_BOTS / "pimc_bot.py")


def _play(game: Game, bots: dict[int, PimcBot], deadline_ms: int = 1000,
          rounds: int | None = None) -> list[int]:
    """Play ``game`` (``rounds`` rounds of it), ``bots`` in their seats and the heuristic
    elsewhere; every pimc action is checked legal. The actions in order."""
    heuristic = HeuristicBot()
    actions: list[int] = []
    while not game.is_over and (rounds is None or game.log[-1].number <= rounds):
        seat = game.to_move
        assert seat is not None
        view = game.view(seat)
        if seat in bots:
            action = bots[seat].act_within(view, deadline_ms)
            assert action in view.legal
        else:
            action = heuristic.act(view)
        game.apply(action)
        actions.append(action)
    return actions


def test_make_bot_builds_pimc() -> None:
    bot = make_bot("pimc", seed="7/1")
    assert isinstance(bot, PimcBot) and bot.name == "pimc" and bot.ms is None
    timed = make_bot("pimc:ms=200", seed="7/1")
    assert isinstance(timed, PimcBot) and timed.ms == 200 and timed.name == "pimc:ms=200"


@pytest.mark.parametrize(("text", "message"), [
    ("pimc:colour=1", "pimc has no setting 'colour' (its settings: ms=N)"),
    ("heuristic:ms=5", "heuristic has no setting 'ms' (it takes none)"),
    ("pimc:ms=0", "ms must be a whole number in 1..600000"),
    ("pimc:ms=fast", "ms must be a whole number in 1..600000"),
])
def test_a_builtin_bots_settings_are_checked_in_one_line(text: str, message: str) -> None:
    with pytest.raises(BotSpecError) as refused:
        BotSpec.parse(text)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_pimc_with_a_time_of_its_own_plans_on_it_whatever_the_move_allows() -> None:
    """``pimc:ms=N``: the search plans on N ms (a 1 s move or a 10 s one alike), never on
    more than the move's own time."""
    game = new_game("wizard", {}, 4)
    _play(game, {}, rounds=6)
    view = game.view(game.to_move or 0)
    own = make_bot("pimc:ms=100", seed=3)
    assert isinstance(own, PimcBot)
    plain = PimcBot(seed=3)
    candidates = len(plain.candidates(view))
    for move_ms in (1000, 10_000):
        own.act_within(view, move_ms)
        assert own.last_planned == planned_samples(view, candidates, 100 + MARGIN_MS)
    plain.act_within(view, 1000)
    assert plain.last_planned == planned_samples(view, candidates, 1000) > own.last_planned
    own.act_within(view, 60)  # a move shorter than its own time: the move's
    assert own.last_planned == planned_samples(view, candidates, 60)


@pytest.mark.parametrize(("name", "options"), [
    ("wizard", {"players": 3, "hook_rule": True}),
    ("trumps", {"players": 4, "announce": True}),
    ("trumps", {"players": 3, "draw": False}),
])
def test_pimc_plays_legally_and_replays_identically(name: str, options: dict[str, Any]) -> None:
    runs = []
    for _ in range(2):
        game = new_game(name, options, 21)
        runs.append(_play(game, {0: PimcBot(seed=5, samples=6), 2: PimcBot(seed=6, samples=6)},
                          rounds=4))
    assert runs[0] == runs[1]


def test_pimc_chooses_a_trump_when_a_wizard_is_turned() -> None:
    for seed in range(200):
        game = new_game("wizard", {}, seed)
        if game.decision is Decision.TRUMP:
            view = game.view(game.to_move or 0)
            assert view.trump_card == WIZARD
            assert PimcBot(samples=4).act_within(view, 1000) in range(4)
            return
    pytest.fail("no turned Wizard in 200 deals")


def test_the_seed_and_the_position_choose_the_deals() -> None:
    # the same view gives the same action however many other decisions came between
    game = new_game("wizard", {}, 3)
    _play(game, {}, rounds=5)
    view = game.view(game.to_move or 0)
    bot = PimcBot(seed=1, samples=8)
    first = bot.act_within(view, 1000)
    other = new_game("trumps", {}, 9)
    bot.act_within(other.view(other.to_move or 0), 1000)
    assert bot.act_within(view, 1000) == first


def test_the_number_of_deals_depends_on_the_deadline_not_the_clock() -> None:
    game = new_game("wizard", {}, 4)
    _play(game, {}, rounds=6)
    view = game.view(game.to_move or 0)
    counts = [planned_samples(view, len(view.legal), ms) for ms in (50, 200, 1000, 5000)]
    assert counts == sorted(counts) and counts[0] < counts[-1]
    assert planned_samples(view, len(view.legal), 5000) == counts[-1]  # a function
    bot = PimcBot()
    bot.act_within(view, 5)
    assert bot.last_samples == 0  # too short to search: the heuristic's move
    bot.act_within(view, 200)
    assert bot.last_samples >= MIN_SAMPLES


def test_each_stage_keeps_the_better_half_and_the_heuristics_move() -> None:
    # deals x actions; action 3 is the default (the heuristic's move)
    results = [[5.0, 1.0, 4.0, 0.0, 3.0], [7.0, 2.0, 6.0, -1.0, 2.0]]
    assert survivors(results, [0, 1, 2, 3, 4], default=3) == [0, 2, 3]
    assert survivors(results, [0, 2, 3], default=3) == [0, 3]
    assert survivors(results, [0, 3], default=3) == [0, 3]  # never fewer than two
    assert survivors(results, [0, 1, 2, 3, 4], default=0) == [0, 2, 4]
    # the choice is among the live actions only: a pruned column's zeros do not count
    late = [[0.0, 9.0, 1.0], [0.0, 9.0, 2.0], [0.0, 9.0, 3.0]]
    assert choose(late, 0, 1.0, live=[0, 2]) == 2
    assert choose(late, 0, 1.0) == 1


def test_the_search_spends_its_deals_on_the_contenders() -> None:
    # successive halving: more deals than a flat search of the same playouts would play
    game = new_game("trumps", {"announce": True}, 5)
    view = game.view(game.to_move or 0)
    assert view.decision is Decision.BID
    bot = PimcBot(seed=2, samples=12)
    action = bot.act_within(view, 1000)
    assert action in view.legal
    assert bot.last_samples > 12
    assert PimcBot(seed=2, samples=12).act_within(view, 1000) == action


def test_pimc_answers_within_its_deadline() -> None:
    # whatever the cost model says, the clock stops the search well inside the deadline
    rng = random.Random(0)
    game = new_game("trumps", {"announce": True}, 8)
    bot = PimcBot(seed=0)
    slowest = 0.0
    while not game.is_over:
        view = game.view(game.to_move or 0)
        if game.to_move == 1:
            started = time.perf_counter()
            action = bot.act_within(view, 500)
            slowest = max(slowest, time.perf_counter() - started)
        else:
            action = rng.choice(view.legal)
        game.apply(action)
    assert slowest < 0.5


def arena_play(sandbox: Sandbox, *argv: str) -> subprocess.CompletedProcess[str]:
    """``arena play`` in this process (the test reads its output and exit code)."""
    return arena_in_process("play", "--no-sandbox", *argv, env=sandbox.env, cwd=REPO)


def test_the_sample_and_the_builtin_play_a_whole_game_over_grpc(
        arena_sandbox: Sandbox) -> None:
    record_path = arena_sandbox.tmp / "game.json"
    done = arena_play(arena_sandbox, "--game", "trumps", "--option", "announce=true",
                      "--seed", "3", "--move-ms", "400", "--bank-ms", "30000", "--quiet",
                      "--bots", f"{PIMC_PY},pimc,heuristic,heuristic",
                      "--record", str(record_path))
    assert done.returncode == 0, done.stderr
    record = json.loads(record_path.read_text())
    verify_record(record)
    assert record["faults"] == []  # no illegal move, no crash (the bank absorbs the load)
    assert record["seats"][1] == "pimc"


def test_the_search_bot_in_the_docs_runs() -> None:
    text = (REPO / "docs/writing-a-bot.md").read_text()
    start = text.index("```python\nimport random\n\nfrom arena.bots.heuristic")
    code = text[start + len("```python\n"):text.index("```", start + 10)]
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(code, "writing-a-bot.md", "exec"), namespace)
    searcher = namespace["Searcher"]()
    for name, options, steps in (("wizard", {}, 10), ("trumps", {"announce": True}, 40)):
        game = new_game(name, options, 2)
        rng = random.Random(2)
        for _ in range(steps):
            game.apply(rng.choice(game.legal_actions()))
        view = game.view(game.to_move or 0)
        first = searcher.decide(view)
        assert first in view.legal
        assert searcher.decide(view) == first


def test_the_sdk_tells_a_bot_its_deadline_and_bank() -> None:
    from arena.sdk import Bot, _Servicer
    from arena.wire.serde import decision_request

    seen: list[tuple[int, int]] = []

    class Clocked(Bot):
        def play(self, view: Any) -> int:
            seen.append((self.deadline_ms, self.bank_ms))
            return int(view.legal[0])

        def bid(self, view: Any) -> int:
            return self.play(view)

    game = new_game("trumps", {}, 1)
    view = game.view(game.to_move or 0)
    _Servicer(Clocked()).Play(decision_request(view, "g", "t", 700, 200), None)
    assert seen == [(700, 200)]
