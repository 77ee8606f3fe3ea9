"""The leaderboard, from real games: built-in bots play a real round-robin schedule in
process, the records come from ``game_record`` (one game through the referee with a bot
that crashes, then answers illegally and forfeits), and the games reach
``build_leaderboard`` as ``StoredGame`` objects, the way ``Store.iter_games`` yields them.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import gc
import io
import json
import math
import os
import random
import subprocess
import sys
import time
import tracemalloc
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import trio
from rich.console import Console

from arena.bots import make_bot
from arena.model.faults import FAULT_KINDS
from arena.model.record import game_record, verify_record
from arena.play.players import LocalPlayer
from arena.play.referee import TimeControl, play_game
from arena.report.board import (
    BOT_KINDS,
    FORMAT,
    ISOLATION_MODES,
    PROVISIONAL_GAMES,
    PROVISIONAL_HALF_WIDTH,
    LatencyHistogram,
    build_leaderboard,
)
from arena.report.text import (
    CSV_COLUMNS,
    FILES,
    print_table,
    render_csv,
    render_json,
    render_markdown,
    write_leaderboard,
)
from arena.rules import View, new_game
from arena.runs.schedule import ScheduledGame, schedule, seed_commitment
from arena.runs.store import StoredGame

FIELD = {"heur-a": "heuristic", "heur-b": "heuristic",
         "rand-a": "random", "rand-b": "random", "rand-c": "random"}
"""The tournament's bots: name -> built-in bot."""
SEED = 2026
TRUMPS = {"players": 4, "draw": False}
BROKEN = "rand-c"
"""The bot that crashes and answers illegally in the faulty game."""

Board = dict[str, Any]


def meta_for(game: str, options: dict[str, Any], deals: int, seats: int = 4,
             seed: int = SEED) -> dict[str, str]:
    return {"name": "test cup", "game": game, "options": json.dumps(options),
            "seats": str(seats), "format": "round-robin", "deals": str(deals),
            "seed": str(seed), "seed_commitment": seed_commitment(seed),
            "move_ms": "1000", "bank_ms": "0", "max_faults": "2",
            "arena_version": "0.1.0", "tournament_hash": "ab" * 32}


BOTS: list[dict[str, Any]] = [
    {"name": n, "spec": kind, "version": "1.0" if kind == "heuristic" else "", "author": "",
     "protocol_version": None, "games": []} for n, kind in FIELD.items()]


def play(game: str, options: dict[str, Any], sg: ScheduledGame,
         ) -> tuple[dict[str, Any], tuple[tuple[float, ...], ...]]:
    """Play one scheduled game in process; its record and answer latencies by seat."""
    g = new_game(game, options, sg.deal_seed)
    bots = [make_bot(FIELD[name], f"{sg.seq}/{seat}") for seat, name in enumerate(sg.bots)]
    latencies: list[list[float]] = [[] for _ in sg.bots]
    while not g.is_over:
        seat = g.to_move
        assert seat is not None
        started = time.perf_counter()
        action = bots[seat].act(g.view(seat))
        latencies[seat].append((time.perf_counter() - started) * 1000)
        g.apply(action)
    record = game_record(g, sg.bots, forfeited=[False] * len(sg.bots), game_id=sg.id,
                         table_id=sg.table_id)
    return record, tuple(tuple(ms) for ms in latencies)


class Broken:
    """Crashes on its first call, then answers with a card nobody holds."""

    name = BROKEN

    def __init__(self) -> None:
        self.calls = 0

    def act(self, view: View) -> int:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("out of cheese")
        return 99


def play_faulty(game: str, options: dict[str, Any], sg: ScheduledGame,
                ) -> tuple[dict[str, Any], tuple[tuple[float, ...], ...]]:
    """Play one scheduled game through the referee with :class:`Broken` in BROKEN's seat."""
    players = [LocalPlayer(Broken() if name == BROKEN else make_bot(FIELD[name], sg.seq), name)
               for name in sg.bots]
    report = trio.run(play_game, new_game(game, options, sg.deal_seed), players,
                      TimeControl(max_faults=2), sg.id, sg.table_id)
    return report.record, tuple(tuple(ms) for ms in report.latencies_ms)


def stored(sg: ScheduledGame, record: dict[str, Any],
           latencies: tuple[tuple[float, ...], ...]) -> StoredGame:
    return StoredGame(sg.id, sg.seq, sg.table_no, sg.deal_no, sg.rotation, sg.deal_seed,
                      sg.bots, 0.0, 0.0, record, latencies)


def stream(game: str, options: dict[str, Any], deals: int, faulty: int | None = None,
           ) -> Iterator[StoredGame]:
    """Play the round-robin of FIELD lazily, one game per step (``faulty``: that seq goes
    through the referee with a broken bot)."""
    for sg in schedule("round-robin", list(FIELD), 4, deals, SEED):
        if sg.seq == faulty:
            record, latencies = play_faulty(game, options, sg)
        else:
            record, latencies = play(game, options, sg)
        yield stored(sg, record, latencies)


@functools.cache
def trumps_games() -> tuple[StoredGame, ...]:
    """80 Trumps games: 5 tables x 4 deals x 4 rotations; game 5 has BROKEN faulting."""
    return tuple(stream("trumps", TRUMPS, 4, faulty=FAULTY_SEQ))


FAULTY_SEQ = next(sg.seq for sg in schedule("round-robin", list(FIELD), 4, 4, SEED)
                  if BROKEN in sg.bots)


@functools.cache
def trumps_board() -> str:
    """The leaderboard of :func:`trumps_games`, as JSON (callers get a fresh copy)."""
    lb = build_leaderboard(iter(trumps_games()), meta_for("trumps", TRUMPS, 4), BOTS)
    return render_json(lb)


@functools.cache
def wizard_text() -> str:
    """A 4-player Wizard round-robin of one deal (20 games), as JSON."""
    lb = build_leaderboard(stream("wizard", {"players": 4}, 1),
                           meta_for("wizard", {"players": 4}, 1), BOTS, resamples=200)
    return render_json(lb)


def wizard_board() -> Board:
    result: Board = json.loads(wizard_text())
    return result


def board() -> Board:
    result: Board = json.loads(trumps_board())
    return result


# -- ranking ------------------------------------------------------------------------------


def test_one_entry_per_bot_in_rating_order() -> None:
    lb = board()
    names = [b["name"] for b in lb["bots"]]
    assert sorted(names) == sorted(FIELD)
    assert [b["rank"] for b in lb["bots"]] == [1, 2, 3, 4, 5]
    elos = [b["elo"] for b in lb["bots"]]
    assert elos == sorted(elos, reverse=True)
    assert math.isclose(sum(elos) / len(elos), 1500, abs_tol=0.5)
    for b in lb["bots"]:
        assert b["elo_low"] <= b["elo"] <= b["elo_high"]
    assert [b["p_above_next"] is None for b in lb["bots"]] == [False] * 4 + [True]
    assert lb["games"] == 80
    assert all(b["games"] == 64 for b in lb["bots"])  # each bot sits at 4 of the 5 tables


def test_heuristic_ranks_above_random() -> None:
    """In Wizard the heuristic bids and plays far better than chance (in Trumps, without
    bids, the gap is small)."""
    lb = wizard_board()
    assert [FIELD[b["name"]] for b in lb["bots"]] == ["heuristic"] * 2 + ["random"] * 3
    by_name = {b["name"]: b for b in lb["bots"]}
    worst_heuristic = min(by_name["heur-a"], by_name["heur-b"], key=lambda b: b["elo"])
    best_random = max((by_name[n] for n in ("rand-a", "rand-b", "rand-c")),
                      key=lambda b: b["elo"])
    assert worst_heuristic["elo_low"] > best_random["elo_high"]
    assert worst_heuristic["elo_incremental"] > best_random["elo_incremental"]
    assert worst_heuristic["mean_place"] < best_random["mean_place"]


def test_counts_match_the_games() -> None:
    """Games, wins, shared wins, mean score and place recomputed directly from the records."""
    lb = board()
    for b in lb["bots"]:
        rows = [(g.record["totals"][s], g.record["places"][s], g.record["places"])
                for g in trumps_games() for s, n in enumerate(g.bots) if n == b["name"]]
        assert b["games"] == len(rows)
        assert b["wins"] == sum(1 for _, p, _ in rows if p == 1)
        assert b["shared_wins"] == sum(1 for _, p, ps in rows if p == 1 and ps.count(1) > 1)
        assert b["mean_score"] == pytest.approx(sum(t for t, _, _ in rows) / len(rows), abs=1e-3)
        assert b["mean_place"] == pytest.approx(sum(p for _, p, _ in rows) / len(rows), abs=1e-3)
        assert 0 < b["mean_score_se"] < 5
    assert sum(b["wins"] for b in lb["bots"]) >= lb["games"]
    assert sum(b["shared_wins"] for b in lb["bots"]) > 0  # Trumps has tied winners


def test_elo_history_and_classic_elo() -> None:
    lb = board()
    assert list(lb["elo_history"]) == [b["name"] for b in lb["bots"]]
    for b in lb["bots"]:
        history = lb["elo_history"][b["name"]]
        assert len(history) == b["games"]
        assert history[-1] == b["elo_incremental"]
    # Classic Elo is zero-sum: the pool keeps its mean of 1500.
    assert sum(b["elo_incremental"] for b in lb["bots"]) == pytest.approx(1500 * 5, abs=0.5)


# -- schema ---------------------------------------------------------------------------------

TOP = {"format": str, "tournament": str, "game": str, "options": dict, "seed": int,
       "seed_commitment": str, "chain_head": (str, type(None)), "games": int,
       "schedule": dict, "time_control": dict,
       "isolation": str, "arena_version": str, "tournament_hash": str, "rating": dict, "bots": list,
       "head_to_head": list, "elo_history": dict}
NUMBER = (int, float)
BOT = {"rank": int, "name": str, "version": (str, type(None)), "kind": (str, type(None)),
       "sandboxed": bool,
       "insecure": bool, "elo": NUMBER,
       "elo_low": NUMBER, "elo_high": NUMBER, "p_above_next": (*NUMBER, type(None)),
       "elo_incremental": NUMBER, "games": int, "mean_score": NUMBER,
       "mean_score_se": NUMBER, "mean_place": NUMBER, "wins": int, "shared_wins": int,
       "faults": dict, "forfeits": int, "latency_ms": (dict, type(None)),
       "cpu_ms": (dict, type(None)),
       "bid_accuracy": (*NUMBER, type(None)), "bid_error": (*NUMBER, type(None)),
       "bid_bias": (*NUMBER, type(None)), "bid_accuracy_by_hand": (dict, type(None)),
       "provisional": bool}
H2H = {"a": str, "b": str, "games": int, "score": NUMBER, "wins": int, "losses": int,
       "draws": int}


def check_keys(obj: dict[str, Any], spec: dict[str, Any], where: str) -> None:
    assert list(obj) == list(spec), where
    for key, kind in spec.items():
        assert isinstance(obj[key], kind), f"{where}: {key} = {obj[key]!r}"
        assert not isinstance(obj[key], bool) or kind is bool, f"{where}: {key} is a bool"


def test_fields_and_types_follow_the_schema() -> None:
    lb = board()
    check_keys(lb, TOP, "top level")
    assert lb["format"] == FORMAT
    assert lb["tournament"] == "test cup"
    assert lb["game"] == "trumps"
    assert lb["options"] == TRUMPS
    assert lb["seed"] == SEED
    assert lb["seed_commitment"] == seed_commitment(SEED)
    assert lb["schedule"] == {"format": "round-robin", "deals": 4, "seats": 4}
    assert lb["time_control"] == {"move_ms": 1000, "bank_ms": 0, "max_faults": 2}
    assert lb["isolation"] == "shared"  # the metadata does not say
    assert lb["rating"]["resamples"] == 1000
    for b in lb["bots"]:
        check_keys(b, BOT, b["name"])
        assert list(b["faults"]) == list(FAULT_KINDS)
        assert list(b["latency_ms"]) == ["p50", "p95", "max"]
        assert b["cpu_ms"] is None  # no CPU time was measured
        assert b["sandboxed"] is True
        assert b["kind"] == "builtin"  # the field's bots are the arena's own (FIELD)
        assert 0 <= b["latency_ms"]["p50"] <= b["latency_ms"]["p95"] <= b["latency_ms"]["max"]
        assert b["version"] == ("1.0" if FIELD[b["name"]] == "heuristic" else None)
        # Trumps without announcements has no bids.
        assert b["bid_accuracy"] is b["bid_error"] is b["bid_bias"] is None
        assert b["bid_accuracy_by_hand"] is None
    for h in lb["head_to_head"]:
        check_keys(h, H2H, f"{h['a']} vs {h['b']}")


def test_missing_metadata_gives_nulls_and_no_games_an_empty_board() -> None:
    lb = build_leaderboard(iter(trumps_games()[:8]), {}, [])
    assert lb["tournament"] is None
    assert lb["game"] == "trumps"  # from the records
    assert lb["options"] == {}
    assert lb["seed"] is None
    assert lb["schedule"] == {"format": None, "deals": None, "seats": None}
    assert all(b["version"] is None for b in lb["bots"])
    empty = build_leaderboard(iter(()), meta_for("trumps", TRUMPS, 4), BOTS)
    assert empty["games"] == 0
    assert empty["bots"] == empty["head_to_head"] == []
    assert empty["elo_history"] == {}
    assert "No finished games" in render_markdown(empty)
    assert render_csv(empty).strip() == ",".join(CSV_COLUMNS)


def test_faults_and_forfeits_are_counted_by_kind() -> None:
    faulty = trumps_games()[FAULTY_SEQ]
    verify_record(faulty.record)
    assert [f["kind"] for f in faulty.record["faults"]] == ["crash", "illegal"]
    assert faulty.record["forfeited"] == [name == BROKEN for name in faulty.bots]
    lb = board()
    for b in lb["bots"]:
        if b["name"] == BROKEN:
            assert b["faults"] == {"timeout": 0, "illegal": 1, "protocol": 0, "crash": 1,
                                   "resource": 0}
            assert b["forfeits"] == 1
        else:
            assert b["faults"] == dict.fromkeys(FAULT_KINDS, 0)
            assert b["forfeits"] == 0


def test_a_fault_another_bot_caused_is_not_counted_against_its_victim() -> None:
    """A timeout excused because another seat's bot ran while stopped during the call
    (``excused_by``, :func:`arena.play.referee.play_game`) is in the record but not in
    the victim's fault counts; the culprit's own fault is. Control: the same fault
    without ``excused_by`` is counted."""
    games = [dataclasses.replace(g, record=json.loads(json.dumps(g.record)))
             for g in trumps_games()[:4]]
    victim, culprit = games[0].bots[0], games[0].bots[1]
    games[0].record["faults"] = [
        {"seat": 1, "round": 1, "trick": 1, "kind": "resource", "action": "none",
         "detail": "used CPU while stopped (9.0 ms ...); its process was killed",
         "forfeited": True},
        {"seat": 0, "round": 1, "trick": 1, "kind": "timeout", "action": "play S2",
         "detail": f"no answer within 1000 ms; not this bot's fault: {culprit} used CPU "
                   "while stopped during the call", "excused_by": [culprit]}]

    def faults(of: str) -> dict[str, int]:
        lb = build_leaderboard(iter(games), meta_for("trumps", TRUMPS, 4), BOTS,
                               resamples=50)
        return next(b["faults"] for b in lb["bots"] if b["name"] == of)

    assert faults(victim)["timeout"] == 0 and faults(culprit)["resource"] == 1
    del games[0].record["faults"][1]["excused_by"]
    assert faults(victim)["timeout"] == 1


def test_provisional_follows_the_rule() -> None:
    few = build_leaderboard(stream("trumps", TRUMPS, 1), meta_for("trumps", TRUMPS, 1), BOTS,
                            resamples=200)
    boards = [board(), few]
    marks = []
    for lb in boards:
        for b in lb["bots"]:
            wide = (b["elo_high"] - b["elo_low"]) / 2 > PROVISIONAL_HALF_WIDTH
            assert b["provisional"] == (b["games"] < PROVISIONAL_GAMES or wide), b
            marks.append(b["provisional"])
    assert all(b["games"] == 16 and b["provisional"] for b in few["bots"])
    assert False in marks  # the rule is not trivially true


# -- head to head -------------------------------------------------------------------------


def test_head_to_head_is_complementary() -> None:
    lb = board()
    rows = {(h["a"], h["b"]): h for h in lb["head_to_head"]}
    assert len(rows) == 5 * 4  # every pair meets in 3 of the 5 tables
    for (a, b), h in rows.items():
        back = rows[b, a]
        assert h["score"] + back["score"] == pytest.approx(1.0, abs=1e-4)
        assert (h["wins"], h["losses"], h["draws"]) == (back["losses"], back["wins"],
                                                       back["draws"])
        shared = [g for g in trumps_games() if a in g.bots and b in g.bots]
        assert h["games"] == back["games"] == len(shared) == 48
        ta = [g.record["totals"][g.bots.index(a)] for g in shared]
        tb = [g.record["totals"][g.bots.index(b)] for g in shared]
        assert h["wins"] == sum(x > y for x, y in zip(ta, tb, strict=True))
        assert h["draws"] == sum(x == y for x, y in zip(ta, tb, strict=True))
        assert h["score"] == pytest.approx((h["wins"] + h["draws"] / 2) / h["games"], abs=1e-4)
    assert rows["heur-a", "rand-a"]["score"] > 0.5
    # Rows come in rating order.
    order = [b["name"] for b in lb["bots"]]
    assert [order.index(h["a"]) for h in lb["head_to_head"]] == sorted(
        order.index(h["a"]) for h in lb["head_to_head"])


# -- bidding --------------------------------------------------------------------------------


def hand_made(seq: int, bots: Sequence[str], rounds: list[tuple[list[int], list[int]]],
              totals: list[int], latencies: tuple[tuple[float, ...], ...]) -> StoredGame:
    """A Wizard game of 3 seats with the given (bids, won) per round; round r deals r cards."""
    places = [1 + sum(u > t for u in totals) for t in totals]
    record = {"format": "trick-arena.record/1", "game": "wizard",
              "options": {"players": 3, "hook_rule": False}, "seed": seq,
              "seats": list(bots), "totals": totals, "places": places, "faults": [],
              "forfeited": [False] * 3,
              "rounds": [{"number": r, "hands": [["C1"] * r] * 3, "bids": bids, "won": won}
                         for r, (bids, won) in enumerate(rounds, start=1)]}
    return StoredGame(f"g{seq}", seq, 0, seq, 0, seq, tuple(bots), 0.0, 0.0, record,
                      latencies)


def test_bid_statistics_on_a_hand_made_record() -> None:
    games = [
        hand_made(0, ("x", "y", "z"), [([1, 0, 0], [1, 0, 0]), ([0, 2, 1], [1, 0, 1])],
                  [40, 20, 10], ((1.0,), (2.0,), ())),
        hand_made(1, ("y", "z", "x"), [([0, 1, 1], [0, 0, 1]), ([2, 2, 0], [0, 2, 0])],
                  [30, 30, 50], ((3.0,), (), (2.0,))),
    ]
    lb = build_leaderboard(iter(games), {"game": "wizard"}, [], resamples=50)
    by = {b["name"]: b for b in lb["bots"]}
    # x: (1,1) (0,1) | (1,1) (0,0): 3 of 4 exact, |errors| 0+1+0+0, bias (0-1)/4.
    assert by["x"]["bid_accuracy"] == 0.75
    assert by["x"]["bid_error"] == 0.25
    assert by["x"]["bid_bias"] == -0.25
    assert by["x"]["bid_accuracy_by_hand"] == {"1": 1.0, "2": 0.5}
    # y: (0,0) (2,0) | (0,0) (2,0): 2 of 4 exact, errors 0+2+0+2, bias +1.
    assert (by["y"]["bid_accuracy"], by["y"]["bid_error"], by["y"]["bid_bias"]) == (0.5, 1, 1)
    assert by["y"]["bid_accuracy_by_hand"] == {"1": 1.0, "2": 0.0}
    # z: (0,0) (1,1) | (1,0) (2,2).
    assert (by["z"]["bid_accuracy"], by["z"]["bid_error"], by["z"]["bid_bias"]) == (
        0.75, 0.25, 0.25)
    assert by["x"]["wins"] == 2 and by["y"]["shared_wins"] == 0
    # Latencies: x answered in 1.0 and 2.0 ms, y in 2.0 and 3.0, z never.
    assert by["x"]["latency_ms"] == {"p50": pytest.approx(1.0, rel=0.01),
                                     "p95": pytest.approx(2.0, rel=0.01), "max": 2.0}
    assert by["y"]["latency_ms"]["p50"] == pytest.approx(2.0, rel=0.01)
    assert by["z"]["latency_ms"] is None


def test_bid_statistics_on_real_games() -> None:
    """Wizard: accuracy by hand size 1..15; Trumps with announcements: bids but no hands."""
    wizard = wizard_board()
    for b in wizard["bots"]:
        by_hand = b["bid_accuracy_by_hand"]
        assert list(by_hand) == [str(h) for h in range(1, 16)]
        # Every game has each hand size once, so the overall accuracy is their mean.
        assert b["bid_accuracy"] == pytest.approx(sum(by_hand.values()) / 15, abs=1e-3)
        assert b["bid_error"] >= 1 - b["bid_accuracy"] - 1e-9
        assert abs(b["bid_bias"]) <= b["bid_error"]
    kinds = {b["name"]: FIELD[b["name"]] for b in wizard["bots"]}
    acc = {b["name"]: b["bid_accuracy"] for b in wizard["bots"]}
    assert min(acc[n] for n in kinds if kinds[n] == "heuristic") > max(
        acc[n] for n in kinds if kinds[n] == "random")
    options = {**TRUMPS, "announce": True}
    trumps = build_leaderboard(stream("trumps", options, 1), meta_for("trumps", options, 1),
                               BOTS, resamples=100)
    for b in trumps["bots"]:
        assert 0 <= b["bid_accuracy"] <= 1
        assert b["bid_error"] is not None and b["bid_bias"] is not None
        assert b["bid_accuracy_by_hand"] is None


# -- determinism, renderers, files -----------------------------------------------------------


def test_building_twice_gives_identical_output() -> None:
    again = build_leaderboard(iter(trumps_games()), meta_for("trumps", TRUMPS, 4), BOTS)
    assert render_json(again) == trumps_board()
    other = build_leaderboard(iter(trumps_games()), meta_for("trumps", TRUMPS, 4), BOTS,
                              rating_seed=1)
    assert [b["elo"] for b in other["bots"]] == [b["elo"] for b in board()["bots"]]


SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import test_leaderboard as t
import dataclasses
# Latencies are wall-clock times; everything else in the input is the same in every run.
games = (dataclasses.replace(g, latencies_ms=((1.0, 2.5),) * 4)
         for g in t.stream("trumps", t.TRUMPS, 1))
lb = t.build_leaderboard(games, t.meta_for("trumps", t.TRUMPS, 1), t.BOTS, resamples=100)
sys.stdout.write(t.render_json(lb))
"""


def test_identical_across_processes_and_hash_seeds() -> None:
    code = SCRIPT.format(tests=str(Path(__file__).parent))
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, timeout=60, check=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0])["games"] == 20


def test_markdown() -> None:
    lb = board()
    text = render_markdown(lb)
    lines = text.splitlines()
    assert lines[0] == "# test cup: leaderboard"
    assert "trumps" in lines[2] and "80 games" in lines[2]
    assert seed_commitment(SEED) in lines[2] and f"seed {SEED}" in lines[2]
    rows = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert [row.split("|")[2].strip().rstrip("?") for row in rows] == [
        b["name"] for b in lb["bots"]]
    for row, b in zip(rows, lb["bots"], strict=True):
        assert row.split("|")[2].strip().endswith("?") == b["provisional"]
    assert ("? provisional" in text) == any(b["provisional"] for b in lb["bots"])
    matrix = lines[lines.index("## Head to head"):]
    body = [line for line in matrix if line.startswith("| ") and not line.startswith("| |")]
    assert len(body) == 5
    assert all(row.count("—") == 1 for row in body)  # the diagonal
    few = build_leaderboard(stream("trumps", TRUMPS, 1), meta_for("trumps", TRUMPS, 1), BOTS,
                            resamples=50)
    assert "? provisional" in render_markdown(few)
    assert "heur-a?" in render_markdown(few)


def test_csv_has_one_row_per_bot() -> None:
    lb = board()
    rows = list(csv.DictReader(io.StringIO(render_csv(lb))))
    assert [r["name"] for r in rows] == [b["name"] for b in lb["bots"]]
    assert list(rows[0]) == list(CSV_COLUMNS)
    for row, b in zip(rows, lb["bots"], strict=True):
        assert float(row["elo"]) == b["elo"]
        assert int(row["games"]) == b["games"]
        for kind in FAULT_KINDS:
            assert int(row[f"faults_{kind}"]) == b["faults"][kind]
        assert float(row["latency_p95_ms"]) == b["latency_ms"]["p95"]
        assert row["bid_accuracy"] == ""
        assert row["provisional"] == str(b["provisional"]).lower()
    assert rows[-1]["p_above_next"] == ""


def test_json_round_trips() -> None:
    lb = board()
    text = render_json(lb)
    assert json.loads(text) == lb
    assert text.startswith('{\n  "format": "trick-arena.leaderboard/1"')


def test_write_leaderboard_writes_three_files(tmp_path: Path) -> None:
    lb = board()
    folder = tmp_path / "out"
    paths = write_leaderboard(folder, lb)
    assert paths == [folder / name for name in FILES]
    assert paths[0].read_text(encoding="utf-8") == render_markdown(lb)
    assert paths[1].read_text(encoding="utf-8") == render_csv(lb)
    assert json.loads(paths[2].read_text(encoding="utf-8")) == lb
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)  # no temp files left
    write_leaderboard(folder, lb)  # replaces
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)


def test_print_table() -> None:
    lb = board()
    out = io.StringIO()
    print_table(lb, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    for b in lb["bots"]:
        assert b["name"] in text
        assert f"{b['elo']:.0f}±" in text
    assert " 2 (1) " in text  # BROKEN: two faults, one forfeit


def test_latency_percentiles_within_one_percent() -> None:
    rng = random.Random(5)
    values = [rng.lognormvariate(0, 2) for _ in range(5000)] + [0.0, 0.0005]
    histogram = LatencyHistogram()
    for v in values:
        histogram.add(v)
    ordered = sorted(values)
    for q in (0.01, 0.5, 0.9, 0.95, 0.99, 1.0):
        exact = ordered[math.ceil(q * len(values)) - 1]
        assert histogram.quantile(q) == pytest.approx(exact, rel=0.01)
    assert histogram.quantile(0.0) == 0.0
    assert histogram.max == max(values)
    assert len(histogram.counts) < 2000
    assert LatencyHistogram().quantile(0.5) is None


# -- CPU time, sandbox and isolation ------------------------------------------------------

SHARED_LINE = ("isolation: shared — bot processes may play several games at once and see a "
               "deal more than once; trusted bots only")
NO_CPU = "rand-b"
"""The bot whose CPU time is never measured in :func:`games_with_cpu`."""
TRUSTED = "rand-a"
"""The bot that runs without the sandbox in :func:`unsandboxed_bots`."""


def games_with_cpu(seed: int = 9) -> tuple[list[StoredGame], dict[str, list[float]]]:
    """:func:`trumps_games` with a CPU time per decision (lognormal, rounded to 0.001 ms as
    the store does, a quarter of them not measured; NO_CPU never measured), and the measured
    values by bot."""
    rng = random.Random(seed)
    games: list[StoredGame] = []
    measured: dict[str, list[float]] = {}
    for g in trumps_games():
        cpu = []
        for seat, name in enumerate(g.bots):
            values = [None if name == NO_CPU or rng.random() < 0.25
                      else round(rng.lognormvariate(0.5, 1.2), 3)
                      for _ in g.latencies_ms[seat]]
            measured.setdefault(name, []).extend(v for v in values if v is not None)
            cpu.append(tuple(values))
        games.append(dataclasses.replace(g, cpu_ms=tuple(cpu)))
    return games, measured


def unsandboxed_bots() -> list[dict[str, Any]]:
    return [{**b, "sandboxed": b["name"] != TRUSTED, "isolation": "shared"} for b in BOTS]


def test_cpu_percentiles_match_a_direct_computation() -> None:
    games, measured = games_with_cpu()
    lb = build_leaderboard(iter(games), meta_for("trumps", TRUMPS, 4), BOTS, resamples=20)
    plain = {b["name"]: b for b in board()["bots"]}
    for b in lb["bots"]:
        # the answer times are untouched by the CPU times
        assert b["latency_ms"] == plain[b["name"]]["latency_ms"]
        if b["name"] == NO_CPU:
            assert b["cpu_ms"] is None
            continue
        values = measured[b["name"]]
        assert len(values) > 200
        p50, p95 = np.percentile(values, [50, 95], method="inverted_cdf")  # nearest rank
        assert list(b["cpu_ms"]) == ["p50", "p95", "max"]
        assert b["cpu_ms"]["p50"] == pytest.approx(p50, rel=0.01)
        assert b["cpu_ms"]["p95"] == pytest.approx(p95, rel=0.01)
        assert b["cpu_ms"]["max"] == max(values)
        assert b["cpu_ms"]["p50"] != pytest.approx(b["latency_ms"]["p50"], rel=0.1)
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(render_csv(lb)))}
    for b in lb["bots"]:
        cells = [rows[b["name"]][f"cpu_{k}_ms"] for k in ("p50", "p95", "max")]
        if b["cpu_ms"] is None:
            assert cells == ["", "", ""]
        else:
            assert [float(c) for c in cells] == [b["cpu_ms"][k] for k in ("p50", "p95", "max")]
    text = render_markdown(lb)
    head = next(line for line in text.splitlines() if line.startswith("| # |"))
    assert head.rstrip(" |").endswith("CPU p50/p95 ms")
    for line in text.splitlines():
        if line.startswith("| ") and line[2].isdigit():
            name = line.split("|")[2].strip()
            cpu_cell = line.rstrip(" |").rsplit("|", 1)[1].strip()
            entry = next(b for b in lb["bots"] if b["name"] == name)
            if name == NO_CPU:
                assert cpu_cell == "–"
                continue
            shown = [float(x) for x in cpu_cell.split(" / ")]
            for value, key in zip(shown, ("p50", "p95"), strict=True):
                exact = entry["cpu_ms"][key]
                assert value == pytest.approx(exact, abs=0.006 if exact < 10 else 0.51)


def test_unmeasured_cpu_is_null_everywhere() -> None:
    lb = board()
    assert all(b["cpu_ms"] is None for b in lb["bots"])
    rows = list(csv.DictReader(io.StringIO(render_csv(lb))))
    assert all(r["cpu_p50_ms"] == r["cpu_p95_ms"] == r["cpu_max_ms"] == "" for r in rows)


def table_text(lb: Board, width: int = 250) -> str:
    out = io.StringIO()
    print_table(lb, Console(file=out, width=width, color_system=None))
    return out.getvalue()


def test_unsandboxed_bots_and_shared_isolation_are_marked_in_every_format() -> None:
    games, _ = games_with_cpu()
    meta = meta_for("trumps", TRUMPS, 4)  # no "isolation": a store from before it existed
    lb = build_leaderboard(iter(games), meta, unsandboxed_bots(), resamples=50)
    assert lb["isolation"] == "shared"
    assert {b["name"]: b["sandboxed"] for b in lb["bots"]} == {n: n != TRUSTED for n in FIELD}
    assert json.loads(render_json(lb))["bots"] == lb["bots"]
    assert list(lb)[list(lb).index("time_control") + 1] == "isolation"

    text = render_markdown(lb)
    lines = text.splitlines()
    rows = [i for i, line in enumerate(lines) if line.startswith("| ") and line[2].isdigit()
            and not line.startswith("| |")][:5]
    for i in rows:
        cell = lines[i].split("|")[2].strip()
        assert cell.endswith("(no sandbox)") == cell.startswith(TRUSTED), cell
    assert "isolation: shared" in lines[2]
    assert lines.index(SHARED_LINE) > max(rows)  # under the table
    assert any(line.startswith("(no sandbox): ") for line in lines)

    rows_csv = list(csv.DictReader(io.StringIO(render_csv(lb))))
    assert {r["name"]: r["sandboxed"] for r in rows_csv} == {
        n: "false" if n == TRUSTED else "true" for n in FIELD}

    out = table_text(lb)
    for b in lb["bots"]:
        line = next(line for line in out.splitlines() if f" {b['name']}" in line)
        assert ("(no sandbox)" in line) == (b["name"] == TRUSTED), line
    assert SHARED_LINE in out
    assert "CPU p50/p95 ms" in out
    assert out.index(SHARED_LINE) > out.index(" 5 ")


def test_insecure_remote_bots_are_marked_in_every_format() -> None:
    far = "rand-b"
    bots = [{**b, "sandboxed": b["name"] != far, "insecure": b["name"] == far} for b in BOTS]
    lb = build_leaderboard(iter(trumps_games()), meta_for("trumps", TRUMPS, 4), bots,
                           resamples=50)
    assert {b["name"]: b["insecure"] for b in lb["bots"]} == {n: n == far for n in FIELD}
    assert json.loads(render_json(lb))["bots"] == lb["bots"]

    lines = render_markdown(lb).splitlines()
    rows = [line for line in lines if line.startswith("| ") and line[2].isdigit()
            and not line.startswith("| |")][:5]
    for line in rows:
        cell = line.split("|")[2].strip()
        assert cell.endswith("(no sandbox) (insecure)") == cell.startswith(far), cell
    assert any(line.startswith("(insecure): reached by plain grpc://") for line in lines)

    rows_csv = list(csv.DictReader(io.StringIO(render_csv(lb))))
    assert {r["name"]: r["insecure"] for r in rows_csv} == {
        n: "true" if n == far else "false" for n in FIELD}

    out = table_text(lb)
    for b in lb["bots"]:
        line = next(line for line in out.splitlines() if f" {b['name']}" in line)
        assert ("(insecure)" in line) == (b["name"] == far), line
    assert "(insecure) plain grpc:// over the network" in " ".join(out.split())


def test_each_bot_says_what_kind_it_is_in_json_and_csv() -> None:
    """A built-in bot is marked built-in (it is the arena's own code: its ``sandboxed``
    stays true, and never means a process was confined); a cmd: bot is a process, a bot
    served from elsewhere remote; a store that does not say gives null."""
    specs = {"heur-a": "heuristic", "heur-b": "cmd:python bots/heur.py",
             "rand-a": "grpcs://bots.example.org:50051", "rand-b": "unix:/tmp/r.sock"}
    bots = [{**b, "spec": specs.get(b["name"], b["spec"]),
             "sandboxed": not specs.get(b["name"], "").startswith(("grpc", "unix"))}
            if b["name"] != "rand-c" else {k: v for k, v in b.items() if k != "spec"}
            for b in BOTS]
    lb = build_leaderboard(iter(trumps_games()), meta_for("trumps", TRUMPS, 4), bots,
                           resamples=20)
    kinds = {b["name"]: b["kind"] for b in lb["bots"]}
    assert kinds == {"heur-a": "builtin", "heur-b": "process", "rand-a": "remote",
                     "rand-b": "remote", "rand-c": None}
    assert set(kinds.values()) - {None} <= set(BOT_KINDS)
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(render_csv(lb)))}
    assert {n: r["kind"] for n, r in rows.items()} == {
        n: k or "" for n, k in kinds.items()}
    header = render_csv(lb).splitlines()[0].split(",")
    assert header[header.index("version") + 1] == "kind"


@pytest.mark.parametrize("isolation", ["game", "deal"])
def test_isolated_processes_and_sandboxed_bots_carry_no_warning(isolation: str) -> None:
    meta = {**meta_for("trumps", TRUMPS, 4), "isolation": isolation}
    lb = build_leaderboard(iter(trumps_games()), meta, BOTS, resamples=50)
    assert lb["isolation"] == isolation and isolation in ISOLATION_MODES
    assert all(b["sandboxed"] for b in lb["bots"])
    text = render_markdown(lb)
    assert f"isolation: {isolation}." in text.splitlines()[2]
    assert "isolation: shared" not in text and "(no sandbox)" not in text
    assert "(insecure)" not in text and not any(b["insecure"] for b in lb["bots"])
    out = table_text(lb)
    assert "isolation: shared" not in out and "(no sandbox)" not in out
    assert "(insecure)" not in out
    assert {r["sandboxed"] for r in csv.DictReader(io.StringIO(render_csv(lb)))} == {"true"}
    assert {r["insecure"] for r in csv.DictReader(io.StringIO(render_csv(lb)))} == {"false"}


def test_fault_kinds_come_from_a_module_without_trio_or_grpc() -> None:
    assert FAULT_KINDS == ("timeout", "illegal", "protocol", "crash", "resource")
    code = ("import sys, arena.report.board, arena.publish.build; "
            "print(sorted({m.split('.')[0] for m in sys.modules "
            "if m.split('.')[0] in ('trio', 'grpc')} | "
            "({'arena.play.referee'} if 'arena.play.referee' in sys.modules else set())))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_isolation_falls_back_to_the_bots_then_to_shared() -> None:
    games = trumps_games()[:8]
    meta = meta_for("trumps", TRUMPS, 4)
    same = [{**b, "isolation": "game"} for b in BOTS]
    mixed = [{**b, "isolation": "game" if i else "deal"} for i, b in enumerate(BOTS)]
    assert build_leaderboard(iter(games), meta, same, resamples=5)["isolation"] == "game"
    assert build_leaderboard(iter(games), meta, mixed, resamples=5)["isolation"] == "shared"
    assert build_leaderboard(iter(games), {**meta, "isolation": "deal"}, same,
                             resamples=5)["isolation"] == "deal"


def test_the_cpu_column_is_dropped_first_when_narrow() -> None:
    games, _ = games_with_cpu()
    lb = build_leaderboard(iter(games), meta_for("trumps", TRUMPS, 4), BOTS, resamples=20)
    wide = table_text(lb, 250)
    assert "CPU p50/p95 ms" in wide and "Classic" in wide and "ms p50/p95" in wide
    widths = range(60, 250, 5)
    without_cpu = next(w for w in reversed(widths) if "CPU p50/p95" not in table_text(lb, w))
    narrower = table_text(lb, without_cpu)
    assert "Classic" in narrower and "ms p50/p95" in narrower


# -- streaming ------------------------------------------------------------------------------


class Record(dict[str, Any]):
    """A record that can be weakly referenced, to see whether anyone keeps it."""


def test_records_are_not_kept() -> None:
    refs: list[weakref.ref[Record]] = []
    most_alive = 0

    def games() -> Iterator[StoredGame]:
        nonlocal most_alive
        for g in stream("trumps", TRUMPS, 2):
            # Records hold no cycles: one nobody references is freed at once, without gc.
            most_alive = max(most_alive, sum(r() is not None for r in refs))
            record = Record(g.record)
            refs.append(weakref.ref(record))
            yield stored(ScheduledGame(g.seq, g.table_no, g.deal_no, g.rotation,
                                       g.deal_seed, g.bots), record, g.latencies_ms)

    lb = build_leaderboard(games(), meta_for("trumps", TRUMPS, 2), BOTS, resamples=20)
    gc.collect()
    assert lb["games"] == len(refs) == 40
    assert most_alive <= 1  # at most the game the loop is on
    assert all(r() is None for r in refs)


def peak_bytes(deals: int) -> int:
    """Peak memory allocated while building the leaderboard of a lazily played round-robin."""
    records = [json.dumps(g.record) for g in trumps_games()[:20]]

    def games() -> Iterator[StoredGame]:
        for i, sg in enumerate(schedule("round-robin", list(FIELD), 4, deals, SEED)):
            record = json.loads(records[i % len(records)])  # a fresh copy, as from SQLite
            record["seats"] = list(sg.bots)
            yield stored(sg, record, ((1.0, 2.0),) * 4)

    gc.collect()
    tracemalloc.start()
    try:
        lb = build_leaderboard(games(), meta_for("trumps", TRUMPS, deals), BOTS, resamples=10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lb["games"] == 20 * deals
    return peak


def test_memory_stays_flat_with_the_number_of_games() -> None:
    """200 vs 800 games: the extra memory per game must stay well below one record's.

    Holding the records would cost at least a parsed record (about 8 KB here) a game; what
    does grow is small: the per-game rating inputs and the Elo histories."""
    text = json.dumps(trumps_games()[0].record)
    tracemalloc.start()
    try:
        parsed = json.loads(text)
        record_bytes = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert parsed["game"] == "trumps"
    peak_bytes(10)  # the first run pays for one-time allocations
    small, large = peak_bytes(10), peak_bytes(40)
    per_game = (large - small) / 600
    assert per_game < record_bytes / 2, (per_game, record_bytes)
