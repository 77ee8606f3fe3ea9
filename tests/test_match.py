"""``arena match``: the statistics (against fishtest's figures, and by simulation), the
match's schedule, usage errors, and real matches between real bots."""

from __future__ import annotations

import json
import math
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import REPO, SAMPLE_BOTS, Sandbox, arena_in_process, bot_cmd, done_games

from arena.match.schedule import Tally, compared_seats, deal_games, pair_score
from arena.runs.store import Store
from arena.stats.sprt import (
    VALUES,
    Sprt,
    bounds,
    elo_of,
    estimate,
    llr,
    mle,
    model,
    regularized,
    score_of,
    simulate,
)

# -- the statistics ---------------------------------------------------------------------

FISHTEST = [
    # counts, elo0, elo1, LLRcalc.LLR_logistic(elo0, elo1, counts), computed with
    # official-stockfish/fishtest server/fishtest/stats/LLRcalc.py (scipy's brentq)
    ([10789, 19328, 33806, 19402, 10543], -3, 1, 2.1310678117940807),
    ([0, 0, 50, 0, 0], 0, 20, -2.952647096227049),
    ([1, 3, 10, 6, 2], 0, 20, 0.44790266204697854),
    ([0, 0, 3, 10, 40], 0, 20, 2.963140996620124),
    ([2, 0, 0, 0, 1], -10, 30, -0.12517176322998866),
    ([5, 12, 30, 14, 6], 0, 5, 0.0836398446491961),
]

GET_ELO = [
    # counts, stat_util.get_elo(counts): (elo, half the 95% interval's width, LOS)
    ([10789, 19328, 33806, 19402, 10543], -0.7735773359165423, 1.2775798957280218,
     0.1176588580327751),
    ([1, 3, 10, 6, 2], 39.652589200805735, 70.883988693248, 0.8690400928801758),
    ([5, 12, 30, 14, 6], 10.374293637759944, 42.69688473859034, 0.6839983316646658),
]


@pytest.mark.parametrize(("counts", "elo0", "elo1", "expected"), FISHTEST)
def test_llr_is_fishtests_llr_logistic(counts: list[int], elo0: float, elo1: float,
                                       expected: float) -> None:
    assert llr(counts, elo0, elo1) == pytest.approx(expected, abs=1e-9)
    assert Sprt(elo0, elo1).llr(counts) == pytest.approx(expected, abs=1e-9)
    # many at once give the same as one at a time
    many = llr(np.array([counts, counts[::-1]], dtype=float), elo0, elo1)
    assert many[0] == pytest.approx(expected, abs=1e-9)
    assert many[1] == pytest.approx(llr(counts[::-1], elo0, elo1), abs=1e-12)


def test_llr_by_hand() -> None:
    # the bounds: log(beta / (1 - alpha)) and log((1 - beta) / alpha)
    assert bounds(0.05, 0.05) == pytest.approx((math.log(0.05 / 0.95), math.log(0.95 / 0.05)))
    assert bounds(0.05, 0.1) == pytest.approx((math.log(0.1 / 0.95), math.log(0.9 / 0.05)))
    # logistic Elo: 0 is an even score, 400 Elo is odds of 10 to 1
    assert score_of(0) == 0.5
    assert score_of(400) == pytest.approx(10 / 11)
    assert elo_of(10 / 11) == pytest.approx(400)
    assert elo_of(1.0) == pytest.approx(-400 * math.log10(1 / 0.999 - 1))  # clamped
    # symmetric counts favour neither of two symmetric hypotheses, and swapping the
    # hypotheses turns the ratio round
    assert llr([3, 5, 9, 5, 3], -20, 20) == pytest.approx(0, abs=1e-12)
    assert llr([1, 3, 10, 6, 2], 20, 0) == pytest.approx(-llr([1, 3, 10, 6, 2], 0, 20))
    # the MLE under a mean constraint keeps the mean it is given and sums to one
    pdf = regularized([1, 0, 10, 6, 2])
    pdf = pdf / pdf.sum()
    for s in (0.3, 0.5, 0.61):
        p = mle(pdf, s)
        assert float(p.sum()) == pytest.approx(1)
        assert float((p * VALUES).sum()) == pytest.approx(s)
    # when the observed mean is s0 the MLE at s0 is the observation itself, and the LLR
    # is N times the Kullback-Leibler sum of it against the MLE at s1, written out here
    counts = [4.0, 6.0, 12.0, 6.0, 4.0]
    n = sum(counts)
    p = np.array(counts) / n
    p1 = mle(p, score_of(30))
    assert np.allclose(mle(p, 0.5), p)
    by_hand = n * sum(p[i] * math.log(p1[i] / p[i]) for i in range(5))
    assert llr(counts, 0, 30) == pytest.approx(by_hand, abs=1e-9)
    # with many pairs and close hypotheses, fishtest's Brownian approximation (LLR_alt2:
    # N (s1 - s0) (2 s - s0 - s1) / var / 2) is close to the exact ratio
    counts = [10789, 19328, 33806, 19402, 10543]
    n = sum(counts)
    p = np.array(counts) / n
    mu = float((p * VALUES).sum())
    var = float((p * (VALUES - mu) ** 2).sum())
    s0, s1 = score_of(-3), score_of(1)
    approx = n * (s1 - s0) * (2 * mu - s0 - s1) / var / 2
    assert llr(counts, -3, 1) == pytest.approx(approx, rel=0.01)


@pytest.mark.parametrize(("counts", "elo", "half", "los"), GET_ELO)
def test_the_estimate_is_fishtests_get_elo(counts: list[int], elo: float, half: float,
                                           los: float) -> None:
    e = estimate(counts)
    assert e.elo == pytest.approx(elo, abs=1e-9)
    # fishtest gives half the width of the interval in Elo; ours is the interval itself
    assert (e.high - e.low) / 2 == pytest.approx(half, abs=1e-9)
    assert e.low < e.elo < e.high
    assert e.los == pytest.approx(los, abs=1e-9)
    assert e.pairs_of_pairs == sum(counts)


def test_the_verdict_and_the_design_checks() -> None:
    sprt = Sprt(0, 20, 0.05, 0.05)
    assert sprt.verdict(sprt.upper) == "H1"
    assert sprt.verdict(sprt.lower) == "H0"
    assert sprt.verdict(0.0) is None
    assert sprt.problem() is None
    assert "--elo1" in str(Sprt(5, 5).problem())
    assert "--alpha" in str(Sprt(alpha=0.5).problem())
    assert "--beta" in str(Sprt(beta=0).problem())
    assert "--elo0" in str(Sprt(elo0=float("nan")).problem())


BASE = [0.05, 0.2, 0.5, 0.2, 0.05]
"""A pentanomial shape for the simulation: pairs of pairs mostly split or even."""


def test_the_model_has_the_score_it_is_built_for() -> None:
    for elo in (-100, 0, 20, 50, 300):
        p = model(elo, BASE)
        assert float(p.sum()) == pytest.approx(1)
        assert float((p * VALUES).sum()) == pytest.approx(score_of(elo), abs=1e-9)


def test_simulated_error_rates_are_alpha_and_beta() -> None:
    """1000 tests drawn at elo0 and 1000 at elo1 of a known model: the share that ends
    in H1 at elo0 is alpha, the share that ends in H0 at elo1 is beta, each within three
    binomial standard errors (the seed is fixed, so the figures are too; the tolerance
    is what another seed could move them by)."""
    runs, alpha, beta = 1000, 0.05, 0.1
    sprt = Sprt(0, 50, alpha, beta)
    rng = np.random.default_rng(20261130)
    at0 = simulate(sprt, model(0, BASE), runs, 5000, rng)
    at1 = simulate(sprt, model(50, BASE), runs, 5000, rng)
    assert at0.undecided == at1.undecided == 0
    false_positive, false_negative = at0.h1 / runs, at1.h0 / runs
    for rate, nominal in ((false_positive, alpha), (false_negative, beta)):
        se = math.sqrt(nominal * (1 - nominal) / runs)
        assert abs(rate - nominal) <= 3 * se, (rate, nominal, se)
    print(f"simulated: false positives {false_positive:.3f} (alpha {alpha}), false "
          f"negatives {false_negative:.3f} (beta {beta}); mean pairs of pairs "
          f"{at0.mean_length:.1f} at elo0, {at1.mean_length:.1f} at elo1")
    # a test ends well before a fixed-size one of the same power would (docs/match.md)
    assert 20 < at0.mean_length < 120 and 20 < at1.mean_length < 120


# -- the schedule ---------------------------------------------------------------------

def test_a_deal_is_two_game_pairs_in_two_seats() -> None:
    for seats in (2, 3, 4):
        for d in range(2 * seats):
            games = deal_games(d, seats, 7)
            assert [g.id for g in games] == [
                f"t{t}-d{d}-r{s}" for s in compared_seats(d, seats) for t in (0, 1)]
            assert len({g.deal_seed for g in games}) == 1
            assert [g.seq for g in games] == [4 * d + i for i in range(4)]
            for a, b in (games[0:2], games[2:4]):
                seat = a.rotation
                assert (a.bots[seat], b.bots[seat]) == ("candidate", "baseline")
                # the same opponents in the same places, and the same random numbers
                assert [x for i, x in enumerate(a.bots) if i != seat] == \
                       [x for i, x in enumerate(b.bots) if i != seat]
                # (the same deal and seat: built-in bots seeded alike, see test_seats)
                assert (a.deal_seed, a.rotation) == (b.deal_seed, b.rotation)
                assert a.bots[(seat + 1) % seats] == "opponent1"
            assert games[0].rotation != games[2].rotation
        # the compared seats rotate: every seat twice in ``seats`` deals
        seen = [s for d in range(seats) for s in compared_seats(d, seats)]
        assert sorted(seen) == sorted(list(range(seats)) * 2)


def test_the_tally_counts_deals_in_order() -> None:
    assert (pair_score(10, 3), pair_score(3, 3), pair_score(-5, 3)) == (1.0, 0.5, 0.0)
    tally = Tally(seats=3, limit=10)

    def add(d: int, seat: int, cand: int, base: int) -> None:
        for table, total in ((0, cand), (1, base)):
            totals = [0, 0, 0]
            totals[seat] = total
            tally.add(f"t{table}-d{d}-r{seat}", seat, {"totals": totals})

    add(1, 1, 5, 5)  # deal 1: seats 1 and 2, a draw and a win
    add(1, 2, 9, 1)
    assert not tally.advance()  # deal 0 is not in: nothing counted
    add(0, 0, 1, 9)  # deal 0: seats 0 and 1, two losses
    assert not tally.advance()
    add(0, 1, 0, 2)
    assert tally.advance() and tally.advance() and not tally.advance()
    assert tally.pentanomial == [1, 0, 0, 1, 0]
    assert tally.trinomial == [2, 1, 1]


# -- the command ----------------------------------------------------------------------

def arena(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``arena ARGS`` in this process (exit code and output are what the tests read); the
    interrupted match below runs the real ``python -m arena``."""
    return arena_in_process(*args, cwd=REPO, env=env)


FAST = ("--game", "trumps", "--players", "2", "--concurrency", "2")
"""Trumps for two: a game of the built-in bots takes a few milliseconds."""


@pytest.mark.parametrize(("args", "message"), [
    (("--elo0", "10", "--elo1", "5"), "--elo1 (5) must be above --elo0 (10)"),
    (("--alpha", "0.7"), "--alpha must be above 0 and below 0.5"),
    (("--beta", "0"), "--beta must be above 0 and below 0.5"),
    (("--max-games", "3"), "--max-games must be 4..200000"),
    (("--game", "chess"), "--game: 'chess' is not a game"),
    (("--option", "speed=9"), "unknown option 'speed' for trumps"),
    (("--opponents", "random,random"), "--opponents: 2 specs for the 1 other seats"),
    (("--concurrency", "0"), "--concurrency must be 1..256"),
    (("--move-ms", "0"), "--move-ms must be 1 or more"),
    (("--elo1", "many"), "argument --elo1: invalid float value: 'many'"),
    (("--json", "/nonexistent/r.json"), "--json /nonexistent/r.json: no folder"),
])
def test_usage_errors_are_one_line_and_exit_2(args: tuple[str, ...], message: str,
                                              tmp_path: Path) -> None:
    res = arena("match", "heuristic", "random", *FAST, "--out", str(tmp_path / "m"), *args)
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    assert res.stderr.count("\n") == 1 and len(res.stderr) < 300, res.stderr
    assert message in res.stderr
    assert res.stderr.startswith("arena match")
    assert not (tmp_path / "m" / "tournament.sqlite").exists()


def test_bad_bots_and_folders_are_one_line_and_exit_2(tmp_path: Path) -> None:
    res = arena("match", "hero", "random", *FAST, "--out", str(tmp_path / "m"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "hero" in res.stderr
    a_file = tmp_path / "file"
    a_file.write_text("not a folder")
    res = arena("match", "heuristic", "random", *FAST, "--out", str(a_file))
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert f"{a_file}: exists and is not a folder" in res.stderr
    # a bot that does not start: the command says which, before any game
    res = arena("match", "cmd:python -c pass", "random", *FAST, "--out", str(tmp_path / "b"),
                "--no-sandbox", "--startup-ms", "3000")
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "candidate" in res.stderr, res.stderr
    with closing(sqlite3.connect(tmp_path / "b" / "tournament.sqlite")) as db:
        assert db.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 0


def stored(folder: Path) -> dict[str, dict[str, Any]]:
    with closing(sqlite3.connect(folder / "tournament.sqlite")) as db:
        return {game_id: json.loads(text) for game_id, text in db.execute(
            "SELECT id, record FROM games WHERE status = 'done'")}


def test_heuristic_beats_random_h1(tmp_path: Path) -> None:
    out, report = tmp_path / "m", tmp_path / "report.json"
    started = time.monotonic()
    res = arena("match", "heuristic", "random", *FAST, "--seed", "11", "--out", str(out),
                "--json", str(report))
    seconds = time.monotonic() - started
    assert res.returncode == 0, res.stderr
    result = json.loads(report.read_text())
    assert result["verdict"] == "H1"
    assert result["llr"] >= result["upper_bound"] == pytest.approx(math.log(0.95 / 0.05),
                                                                   abs=1e-4)
    counts = result["pentanomial"]
    assert sum(counts) == result["pairs_of_pairs"] == result["pairs"] // 2
    assert result["games"] == 4 * sum(counts) <= result["games_stored"]
    assert result["llr"] == pytest.approx(llr(counts, 0, 20), abs=1e-3)
    # the LLR had not crossed before the last deal
    assert all(-2.9444 < x < 2.9444 for x in result["llr_by_deal"][:-1])
    assert len(result["llr_by_deal"]) == sum(counts)
    assert result["elo_95"][0] > 0 and result["elo_95"][0] < result["elo"]
    assert (result["candidate"], result["baseline"], result["opponents"]) == \
           ("heuristic", "random", ["random"])
    game_pairs = result["game_pairs"]
    assert game_pairs["won"] + game_pairs["drawn"] + game_pairs["lost"] == result["pairs"]
    assert res.stdout.splitlines()[-3].startswith("H1: the candidate is better (LLR +")
    assert f"games: {result['games']} in {result['pairs']} game pairs" in res.stdout
    assert "elo: +" in res.stdout and "95% interval" in res.stdout
    # the store holds the games: the candidate's and the baseline's game of each pair
    records = stored(out)
    assert len(records) == result["games_stored"]
    assert records["t0-d0-r0"]["seats"] == ["candidate", "opponent1"]
    assert records["t1-d0-r0"]["seats"] == ["baseline", "opponent1"]
    assert records["t0-d0-r0"]["seed"] == records["t1-d0-r1"]["seed"]
    # export and verify read the match folder as a tournament's
    res = arena("verify", str(out))
    assert res.returncode == 0 and f"ok ({len(records)} games)" in res.stdout, res.stderr
    res = arena("export", str(out))
    assert res.returncode == 0, res.stderr
    assert len((out / "games.jsonl").read_text().splitlines()) == len(records)
    # running it again plays nothing and gives the same verdict
    again = arena("match", "heuristic", "random", *FAST, "--out", str(out), "--json",
                  str(tmp_path / "again.json"))
    assert again.returncode == 0, again.stderr
    assert "already decided: no game played" in again.stdout
    second = json.loads((tmp_path / "again.json").read_text())
    assert second["games_played_now"] == 0
    assert {k: v for k, v in second.items() if k not in ("games_played_now", "seconds")} \
        == {k: v for k, v in result.items() if k not in ("games_played_now", "seconds")}
    print(f"heuristic vs random: {result['verdict']} after {result['games']} games "
          f"({result['games_stored']} stored) in {seconds:.1f} s; elo {result['elo']} "
          f"{result['elo_95']}; pentanomial {counts}")


def test_opponents_of_other_kinds_sit_in_the_same_places_for_both(tmp_path: Path) -> None:
    """``--opponents`` with one spec per other seat: each is registered under its own
    name with its spec, sits in every game once, and the two games of a pair differ only
    in the tested seat."""
    out, report = tmp_path / "m", tmp_path / "report.json"
    res = arena("match", "heuristic", "random", "--game", "trumps", "--players", "3",
                "--opponents", "random,heuristic", "--max-games", "8", "--seed", "5",
                "--concurrency", "2", "--out", str(out), "--json", str(report))
    assert res.returncode == 1, res.stderr  # no verdict in 8 games
    result = json.loads(report.read_text())
    assert (result["verdict"], result["games"]) == ("inconclusive", 8)
    assert result["opponents"] == ["random", "heuristic"]
    with closing(Store.open_readonly(out)) as store:
        specs = {b["name"]: b["spec"] for b in store.bots()}
    assert specs == {"candidate": "heuristic", "baseline": "random",
                     "opponent1": "random", "opponent2": "heuristic"}
    records = stored(out)
    assert len(records) == 8
    for game_id, record in records.items():
        seats = record["seats"]
        tested = [s for s in seats if s in ("candidate", "baseline")]
        assert len(tested) == 1 and sorted(set(seats) - set(tested)) == \
            ["opponent1", "opponent2"], (game_id, seats)
        if game_id.startswith("t0-"):
            twin = records["t1-" + game_id[3:]]
            assert twin["seats"] == ["baseline" if s == "candidate" else s for s in seats]
            assert twin["seed"] == record["seed"]


def test_heuristic_against_itself_h0(tmp_path: Path) -> None:
    out, report = tmp_path / "m", tmp_path / "report.json"
    res = arena("match", "heuristic", "heuristic", *FAST, "--out", str(out), "--json",
                str(report))
    assert res.returncode == 1, res.stderr
    result = json.loads(report.read_text())
    assert result["verdict"] == "H0"
    assert result["llr"] <= result["lower_bound"]
    assert res.stdout.splitlines()[-3].startswith(
        "H0: the candidate is not better by 20 Elo (LLR -")
    # the same bot in the same seat against the same opponents with the same random
    # numbers plays the same game: every game pair is drawn
    assert result["pentanomial"] == [0, 0, result["pairs_of_pairs"], 0, 0]
    records = stored(out)
    for game_id, record in records.items():
        if game_id.startswith("t0-") and "t1-" + game_id[3:] in records:
            twin = records["t1-" + game_id[3:]]
            assert record["rounds"] == twin["rounds"]
            assert record["totals"] == twin["totals"]
    print(f"heuristic vs heuristic: {result['verdict']} after {result['games']} games")
    # --max-games may be lowered: only the deals within it count, the games beyond stay
    # stored and verified against the match's schedule
    res = arena("match", "heuristic", "heuristic", *FAST, "--out", str(out), "--max-games",
                "8", "--json", str(report))
    assert res.returncode == 1, res.stderr
    assert "every deal up to --max-games is in: no game played" in res.stdout
    lowered = json.loads(report.read_text())
    assert (lowered["verdict"], lowered["games"]) == ("inconclusive", 8)
    assert lowered["games_stored"] == result["games_stored"]
    res = arena("verify", str(out))
    assert res.returncode == 0, res.stderr


def test_an_interrupted_match_resumes_to_the_same_verdict(tmp_path: Path) -> None:
    """Stopped with SIGINT mid-way and run again, a match reaches the verdict an
    uninterrupted one with the same seed reaches, after the same games."""
    args = ("match", "heuristic", "random", *FAST, "--seed", "11")
    whole = arena(*args, "--out", str(tmp_path / "whole"), "--json", str(tmp_path / "w.json"))
    assert whole.returncode == 0, whole.stderr
    out = tmp_path / "cut"
    proc = subprocess.Popen([sys.executable, "-m", "arena", *args, "--out", str(out)],
                            cwd=REPO, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while done_games(out) < 40:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "resume with the same command" in stderr
    kept = len(stored(out))
    assert 40 <= kept < json.loads((tmp_path / "w.json").read_text())["games"]
    res = arena(*args, "--out", str(out), "--json", str(tmp_path / "c.json"))
    assert res.returncode == 0, res.stderr
    assert f"resuming: {kept} games stored" in res.stdout
    cut, full = (json.loads((tmp_path / name).read_text()) for name in ("c.json", "w.json"))
    for key in ("verdict", "games", "pentanomial", "llr", "elo", "elo_95", "llr_by_deal"):
        assert cut[key] == full[key], key
    assert cut["games_played_now"] < full["games_played_now"]
    # a changed setting is refused on that folder, naming it
    res = arena("match", "heuristic", "random", *FAST, "--elo1", "30", "--out", str(out))
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "the match stored here has elo1 20.0, not 30.0" in res.stderr
    # --fresh starts over, with the new settings
    res = arena("match", "heuristic", "random", *FAST, "--elo1", "30", "--out", str(out),
                "--fresh", "--max-games", "8", "--json", str(tmp_path / "f.json"))
    assert res.returncode == 1, res.stderr
    fresh = json.loads((tmp_path / "f.json").read_text())
    assert (fresh["elo1"], fresh["verdict"], fresh["games_stored"]) == (30, "inconclusive", 8)


def test_a_match_with_bot_processes_stops_at_max_games(arena_sandbox: Sandbox,
                                                       tmp_path: Path) -> None:
    """A cmd: bot in its sandbox, against the built-in heuristic; two deals are too few
    for a verdict, so it is inconclusive (exit 1) and every bot process is ended."""
    out, report = tmp_path / "m", tmp_path / "report.json"
    res = arena("match", bot_cmd(SAMPLE_BOTS / "heuristic_bot.py"), "heuristic", *FAST,
                "--max-games", "9", "--out", str(out), "--json", str(report),
                env=arena_sandbox.env)
    assert res.returncode == 1, res.stderr
    result = json.loads(report.read_text())
    assert (result["verdict"], result["games"], result["max_games"]) == ("inconclusive", 8, 8)
    assert result["faults"] == 0
    assert res.stdout.splitlines()[-3].startswith("inconclusive: no decision within 8 games")
    records = stored(out)
    assert len(records) == 8
    with closing(sqlite3.connect(out / "tournament.sqlite")) as db:
        bots = dict(db.execute("SELECT name, spec FROM bots").fetchall())
    assert bots["candidate"].startswith("cmd:python ")
    assert bots["baseline"] == bots["opponent1"] == "heuristic"


def test_a_match_refuses_to_write_into_a_damaged_store(tmp_path: Path) -> None:
    """As a tournament and a league do (``audit.open_for_run``): a store whose file fails
    SQLite's check is named in one line and left as it is, not resumed into."""
    from test_chain import damage_page_of

    out = tmp_path / "m"
    res = arena("match", "heuristic", "random", *FAST, "--max-games", "8", "--seed", "5",
                "--out", str(out))
    assert res.returncode in (0, 1), res.stderr  # a verdict, or none within 8 games
    damage_page_of(out, "sqlite_autoindex_games_2")
    before = (out / "tournament.sqlite").read_bytes()
    res = arena("match", "heuristic", "random", *FAST, "--max-games", "16", "--seed", "5",
                "--out", str(out))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "the store file is damaged" in res.stderr, res.stderr
    assert "not run (arena verify says more)" in res.stderr
    assert (out / "tournament.sqlite").read_bytes() == before  # nothing written
