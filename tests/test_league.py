"""``arena league`` end to end: real processes, real SQLite.

A run with its field changed from other processes while it plays, a kill -9 and the
resume (no game lost or doubled, no field change lost or applied twice, verify passes), a
bad add refused while the league goes on, seasons closed and verified with the revealed
seed (and a tampered decision or seed caught), house bots anchoring the published fit,
the live and the published order of a settled league (both comparing the bots that held
the same cards, whole sets only, a set left unfinished counted once finished), bad input
in one line. Built-in
bots where a test is not about processes; no timing is asserted.
"""

from __future__ import annotations

import html
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SAMPLE_BOTS, TEST_BOTS, arena_in_process

from arena.league import inbox
from arena.league.sets import rebuild_ratings, rebuild_sets
from arena.league.store import apply_request, entry_json, load_bots
from arena.model.limits import Confinement
from arena.model.spec import BotSpec
from arena.report.board import build_leaderboard
from arena.runs.config import BotEntry
from arena.runs.store import Store
from arena.stats.ratings import GameScores, rate, same_cards

ENV = dict(os.environ, PYTHONPATH=str(REPO))


def league_toml(folder: Path, *, house: str = "", bots: int = 5, seed: int = 11,
                extra: str = "") -> Path:
    lines = ['name = "lt"', 'game = "wizard"', "seats = 4", f"seed = {seed}",
             "concurrency = 2", 'output = "out"', extra, "[time]", "move_ms = 500", house]
    for i in range(bots):
        lines += ["[[bots]]", f'name = "b{i}"',
                  f'spec = "{"heuristic" if i % 2 else "random"}"']
    path = folder / "league.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def arena(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``arena ARGV`` in this process (the tests read its exit code and output); a league
    that runs while others change it, or is killed, is a real process: :func:`start`."""
    return arena_in_process(*argv, cwd=cwd, env=ENV)


def start(*argv: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "arena", *argv], cwd=cwd, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def query(out: Path, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    path = out / "tournament.sqlite"
    if not path.exists():
        return []
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return db.execute(sql, params).fetchall()
    except sqlite3.OperationalError:
        return []


def done(out: Path) -> int:
    rows = query(out, "SELECT COUNT(*) FROM games WHERE status = 'done'")
    return int(rows[0][0]) if rows else 0


def wait_for(predicate: Any, proc: subprocess.Popen[str] | None, timeout: float = 120,
             ) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended: {proc.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.1)


def games_of(out: Path, bot: str) -> int:
    rows = query(out, "SELECT COUNT(*) FROM results WHERE bot = ?", (bot,))
    return int(rows[0][0]) if rows else 0


def stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    if proc.poll() is None:
        proc.kill()
    return proc.communicate(timeout=30)


def no_unfinished_sets(out: Path, season: int | None = None) -> bool:
    """Every set (of ``season``, if given) has its 4 games done."""
    where = "" if season is None else f" WHERE season = {int(season)}"
    sets = {r[0] for r in query(out, "SELECT set_no FROM league_sets" + where)}
    counts: dict[int, int] = {}
    for (seq,) in query(out, "SELECT seq FROM games WHERE status = 'done'"):
        counts[seq // 4] = counts.get(seq // 4, 0) + 1
    return all(counts.get(s, 0) == 4 for s in sets)


# -- the field changes while the league runs, and a kill -9 ------------------------------


def test_field_changes_while_running_then_kill_9_and_resume(tmp_path: Path) -> None:
    path = league_toml(tmp_path)
    out = tmp_path / "out"
    proc = start("league", "run", str(path), cwd=tmp_path)
    try:
        wait_for(lambda: done(out) >= 4, proc)
        # a sandboxed process bot, checked by check-bot first, joins the running league
        added = arena("league", "add", str(path), "py-random",
                      f"cmd:python {SAMPLE_BOTS / 'random_bot.py'}", cwd=tmp_path)
        assert added.returncode == 0, added.stderr
        assert "added py-random" in added.stdout
        # a new version of a bot: rated apart, linked, the old one retired
        updated = arena("league", "update", str(path), "b1", "heuristic", cwd=tmp_path)
        assert updated.returncode == 0, updated.stderr
        assert "b1@2" in updated.stdout and "b1 is retired" in updated.stdout
        retired = arena("league", "retire", str(path), "b0", "--reason", "test",
                        cwd=tmp_path)
        assert retired.returncode == 0, retired.stderr
        # a bot that cannot start is refused with its reason; the league goes on
        before = done(out)
        bad = arena("league", "add", str(path), "crash",
                    f"cmd:python {TEST_BOTS / 'crasher.py'}", cwd=tmp_path)
        assert bad.returncode == 1
        assert "bot crash refused: cannot start" in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
        assert not query(out, "SELECT 1 FROM league_bots WHERE name = 'crash'")
        wait_for(lambda: games_of(out, "py-random") >= 4 and games_of(out, "b1@2") >= 4
                 and done(out) > before, proc)
        status = arena("league", "status", str(path), "--json", cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        data = json.loads(status.stdout)
        by_name = {b["name"]: b for b in data["bots"]}
        assert by_name["b0"]["status"] == "retired" and by_name["b0"]["reason"] == "test"
        assert by_name["b1"]["status"] == "retired"
        assert by_name["b1@2"]["previous"] == "b1"
        assert data["run_pid"] == proc.pid
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        stop(proc)
    kept = done(out)
    retired_at = query(out, "SELECT retired_at FROM league_bots WHERE name = 'b0'")[0][0]
    # every request applied once
    kinds = sorted(r[0] for r in query(out, "SELECT kind FROM league_requests"))
    assert kinds == ["add", "retire", "update"]
    resumed = arena("league", "run", str(path), "--games", "8", "--resamples", "50",
                    cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert done(out) >= kept + 8
    rows = query(out, "SELECT COUNT(*), COUNT(DISTINCT id) FROM games WHERE status = 'done'")
    assert rows[0][0] == rows[0][1] == done(out)
    assert no_unfinished_sets(out)  # the set in flight at the kill was finished
    # the retired bot joined no set decided after its retirement
    late = query(out, "SELECT bots FROM league_sets WHERE decided_at > ?", (retired_at,))
    assert late and all("b0" not in json.loads(r[0]) for r in late)
    assert sorted(r[0] for r in query(out, "SELECT kind FROM league_requests")) == kinds
    checked = arena("verify", str(out), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "not yet revealed" in checked.stdout
    board = json.loads((out / "leaderboard.json").read_text())
    entries = {b["name"]: b for b in board["bots"]}
    assert entries["b1@2"]["previous_version"] == "b1"
    assert entries["b0"]["retired"] and entries["b0"]["games"] > 0


def test_a_request_applied_before_a_kill_is_not_applied_twice(tmp_path: Path) -> None:
    """The run applies a request in one transaction with its id, then answers and removes
    the file: killed in between, the next run finds the id and only answers."""
    path = league_toml(tmp_path)
    out = tmp_path / "out"
    first = arena("league", "run", str(path), "--games", "4", "--resamples", "10",
                  cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    request = {"id": inbox.new_id(), "kind": "add", "name": "late",
               "entry": entry_json(BotEntry("late", BotSpec.parse("random"), None,
                                            Confinement()), tmp_path)}
    with Store.open(out) as store:
        answer, new = apply_request(store, request, {})
        assert answer.ok and new
    inbox.post(out, request)  # as a run killed before it answered would leave it
    again = arena("league", "run", str(path), "--games", "4", "--resamples", "10",
                  cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert not (out / "inbox" / f"{request['id']}.json").exists()
    assert json.loads((out / "inbox" / f"{request['id']}.answer.json").read_text())["ok"]
    assert query(out, "SELECT COUNT(*) FROM league_bots WHERE name = 'late'")[0][0] == 1
    assert query(out, "SELECT COUNT(*) FROM league_requests")[0][0] == 1


def test_a_request_of_the_same_process_reaches_the_run_in_memory(tmp_path: Path) -> None:
    """``League.submit`` (what the league service of ``arena league serve`` calls): the
    request goes to the run's request task through memory and its answer comes back the
    same way: no file in the inbox, ever. Sent again with the same id, it is answered from
    the store and not applied twice."""
    import trio

    from arena.cli.league_store import claim, open_store
    from arena.league.config import load_league
    from arena.league.runner import League, run_league
    from arena.runs.lock import RunLock

    config = load_league(league_toml(tmp_path), None)
    claim(config)
    store = open_store(config, RunLock.take(config.output, "league"))
    request = {"id": inbox.new_id(), "kind": "add", "name": "late",
               "entry": entry_json(BotEntry("late", BotSpec.parse("random"), None,
                                            Confinement()), tmp_path)}
    answers = []
    joined: list[bool] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            def on_start(league: League) -> None:
                async def ask() -> None:
                    with trio.fail_after(60):
                        answers.append(await league.submit(dict(request)))
                        joined.append("late" in league.ready)
                        answers.append(await league.submit(dict(request)))
                nursery.start_soon(ask)

            await run_league(config, store, on_start=on_start, max_games=8)

    try:
        trio.run(main)
    finally:
        store.close()
    assert [a.ok for a in answers] == [True, True], answers
    assert joined == [True]  # answered once the bot can be seated
    assert not (config.output / "inbox").exists()
    assert query(config.output, "SELECT COUNT(*) FROM league_bots WHERE name = 'late'"
                 )[0][0] == 1
    assert query(config.output, "SELECT COUNT(*) FROM league_requests")[0][0] == 1


def test_an_authors_limits_change_and_the_token_stays(tmp_path: Path) -> None:
    """``arena league author limits`` (docs/league.md: limits are per author): the new
    limits are stored, what is not given is kept, the token still works; an unknown
    author and a limit out of range are one line, exit 2."""
    from arena.league.authors import AuthorFile, token_digest

    league_toml(tmp_path)
    added = arena_in_process("league", "author", "add", "league.toml", "alice",
                             "--max-bundle-mib", "2", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    changed = arena_in_process("league", "author", "limits", "league.toml", "alice",
                               "--submissions-per-hour", "7", cwd=tmp_path)
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.startswith("alice: 7 submissions/hour, bundles up to 2 MiB")
    alice = AuthorFile.in_folder(tmp_path / "out").by_digest(token_digest(token))
    assert alice is not None and alice.name == "alice"
    assert alice.limits.submissions_per_hour == 7 and alice.limits.max_bundle_bytes == 2 << 20
    listed = arena_in_process("league", "author", "list", "league.toml", cwd=tmp_path)
    assert "alice: active; 7 submissions/hour, bundles up to 2 MiB" in listed.stdout
    unknown = arena_in_process("league", "author", "limits", "league.toml", "bob",
                               "--submissions-per-hour", "7", cwd=tmp_path)
    assert unknown.returncode == 2
    assert unknown.stderr == "arena league author limits: no author 'bob'\n"
    wrong = arena_in_process("league", "author", "limits", "league.toml", "alice",
                             "--submissions-per-hour", "0", cwd=tmp_path)
    assert wrong.returncode == 2 and "--submissions-per-hour must be 1..10000" in wrong.stderr


def test_field_changes_without_a_run_are_applied_at_once(tmp_path: Path) -> None:
    path = league_toml(tmp_path, bots=3)
    added = arena("league", "add", str(path), "extra", "heuristic", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert "no run holds the league" in added.stdout
    again = arena("league", "add", str(path), "extra", "random", cwd=tmp_path)
    assert again.returncode == 1
    assert again.stderr.strip() == ("arena league: refused: add: extra is in the league "
                                    "already; a new version is 'arena league update FILE "
                                    "extra SPEC'")
    unknown = arena("league", "retire", str(path), "nobody", cwd=tmp_path)
    assert unknown.returncode == 1
    assert "no bot 'nobody' in the league" in unknown.stderr
    ran = arena("league", "run", str(path), "--games", "8", "--resamples", "10",
                cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert games_of(tmp_path / "out", "extra") > 0


# -- seasons, verify -------------------------------------------------------------------


def test_season_close_reveals_the_seed_and_verify_checks_the_deals(tmp_path: Path) -> None:
    path = league_toml(tmp_path, seed=424242)
    out = tmp_path / "out"
    ran = arena("league", "run", str(path), "--games", "8", "--resamples", "10",
                cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    before = arena("verify", str(out), cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    assert "season 1: open; its master seed is not yet revealed" in before.stdout
    closed = arena("league", "close", str(path), "--resamples", "10", cwd=tmp_path)
    assert closed.returncode == 0, closed.stderr
    assert "season 1 closed; its master seed is 424242" in closed.stdout
    meta = dict(query(out, "SELECT key, value FROM meta"))
    assert meta["seed"] == "424242"
    after = arena("verify", str(out), cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    assert "not yet revealed" not in after.stdout
    # the next run starts season 2, with a commitment of its own
    second = arena("league", "run", str(path), "--games", "4", "--resamples", "10",
                   cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "season 2: seed commitment" in second.stdout
    assert arena("verify", str(out), cwd=tmp_path).returncode == 0
    # a tampered decision is caught, naming the set
    copy = tmp_path / "tampered"
    subprocess.run(["cp", "-r", str(out), str(copy)], check=True)
    with sqlite3.connect(copy / "tournament.sqlite") as db:
        bots = json.loads(db.execute("SELECT bots FROM league_sets WHERE set_no = 0")
                          .fetchone()[0])
        db.execute("UPDATE league_sets SET bots = ? WHERE set_no = 0",
                   (json.dumps(bots[::-1]),))
    bad = arena("verify", str(copy), cwd=tmp_path)
    assert bad.returncode == 1
    assert "set 0" in bad.stderr
    # a revealed seed that is not the committed one is caught
    copy2 = tmp_path / "tampered2"
    subprocess.run(["cp", "-r", str(out), str(copy2)], check=True)
    with sqlite3.connect(copy2 / "tournament.sqlite") as db:
        db.execute("UPDATE league_seasons SET seed = '424243' WHERE season = 1")
    bad2 = arena("verify", str(copy2), cwd=tmp_path)
    assert bad2.returncode == 1
    assert "season 1" in bad2.stderr and "commitment" in bad2.stderr
    # a deal seed changed with its decision (a set dealt from elsewhere) is caught too
    copy3 = tmp_path / "tampered3"
    subprocess.run(["cp", "-r", str(out), str(copy3)], check=True)
    with sqlite3.connect(copy3 / "tournament.sqlite") as db:
        db.execute("UPDATE league_sets SET deal_seed = '12345' WHERE set_no = 1")
    bad3 = arena("verify", str(copy3), cwd=tmp_path)
    assert bad3.returncode == 1
    assert "set 1" in bad3.stderr
    # export, verify of the export, leaderboard and publish work on a league's folder
    assert arena("export", str(out), cwd=tmp_path).returncode == 0
    assert arena("verify", str(out / "games.jsonl"), cwd=tmp_path).returncode == 0
    board = arena("leaderboard", str(out), "--format", "md", "--resamples", "10",
                  cwd=tmp_path)
    assert board.returncode == 0, board.stderr
    site = arena("publish", str(out), "--out", str(tmp_path / "site"), cwd=tmp_path)
    assert site.returncode == 0, site.stderr


def test_close_while_running_finishes_the_sets_then_reveals(tmp_path: Path) -> None:
    path = league_toml(tmp_path)
    out = tmp_path / "out"
    proc = start("league", "run", str(path), cwd=tmp_path)
    try:
        wait_for(lambda: done(out) >= 2, proc)
        closed = arena("league", "close", str(path), "--resamples", "10", cwd=tmp_path)
        assert closed.returncode == 0, closed.stderr
        assert "season 1 closed" in closed.stdout
        # a run holds the league: season 2 starts at once, and the answer says so
        assert "season 2 started at once (seed commitment " in closed.stdout, closed.stdout
        assert "the next run starts" not in closed.stdout
        # every set of season 1 was finished first (season 2's may already be under way)
        assert no_unfinished_sets(out, season=1)
        wait_for(lambda: bool(query(out, "SELECT 1 FROM league_sets WHERE season = 2")), proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
    finally:
        stop(proc)
    checked = arena("verify", str(out), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "season 2: open" in checked.stdout
    status = arena("league", "status", str(path), cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    first = next(line for line in lines if line.startswith("season 1 (closed): "))
    second = next(line for line in lines if line.startswith("season 2 (open): "))
    assert first.endswith(", seed 11") and second.endswith(", seed sealed")
    assert sum(int(line.split(": ")[1].split()[0]) for line in (first, second)) == done(out)


# -- ratings ---------------------------------------------------------------------------


HOUSE = """
[[house]]
name = "house-heuristic"
spec = "heuristic"
rating = 1600
[[house]]
name = "house-random"
spec = "random"
rating = 900
"""


@pytest.mark.timeout(600)
def test_house_bots_anchor_the_scale_and_the_live_order_is_the_published_one(
        tmp_path: Path) -> None:
    path = league_toml(tmp_path, house=HOUSE, bots=6)
    out = tmp_path / "out"
    ran = arena("league", "run", str(path), "--games", "48", "--resamples", "50",
                cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    board = json.loads((out / "leaderboard.json").read_text())
    entries = {b["name"]: b for b in board["bots"]}
    assert entries["house-heuristic"]["house"] and entries["house-heuristic"]["rank"] is None
    assert entries["house-heuristic"]["elo"] == 1600.0
    assert entries["house-random"]["elo"] == 900.0
    ranked = [b["name"] for b in board["bots"] if not b["house"]]
    assert [b["rank"] for b in board["bots"] if not b["house"]] == list(
        range(1, len(ranked) + 1))
    # heuristic copies above random copies, on the anchors' scale
    assert all(entries[f"b{i}"]["elo"] > 1200 for i in (1, 3, 5))
    assert all(entries[f"b{i}"]["elo"] < 1200 for i in (0, 2, 4))
    # the settled live ratings (rebuilt from the store) give the published order
    with Store.open_readonly(out) as store:
        live, count = rebuild_ratings(store, load_bots(store))
        assert count == board["games"]
        assert [r.name for r in live.ranking()] == ranked
        for name, entry in entries.items():
            assert live.rating(name).elo == pytest.approx(entry["elo"], abs=0.1)
        md = arena("leaderboard", str(out), "--format", "md", "--resamples", "10",
                   cwd=tmp_path)
        assert "house-heuristic (house)" in md.stdout
        # a set in flight is not counted on the board: only whole sets
        games = list(store.iter_games())
        lb = build_leaderboard(games[:-1], store.meta(), store.bots(), resamples=10)
        assert lb["games"] == len(games) - 4
        # the same games as a tournament's: rated as before, by the seats of each game
        tour = build_leaderboard(games, {**store.meta(), "format": "round-robin"},
                                 store.bots(), resamples=10)
    # both compare the bots that held the same cards (the published fit of same_cards),
    # not the seats of each game, which would rate otherwise
    assert board["rating"]["compare"] == "cards"
    scores = [GameScores(g.unit, tuple(g.bots), tuple(float(t) for t in g.record["totals"]))
              for g in games]
    fixed = {"house-heuristic": 1600.0, "house-random": 900.0}
    cards = {r.name: r.elo for r in rate(same_cards(scores), resamples=10, fixed=fixed)}
    by_game = {r.name: r.elo for r in rate(scores, resamples=10, fixed=fixed)}
    for name, entry in entries.items():
        assert entry["elo"] == pytest.approx(cards[name], abs=0.1)
    assert max(abs(cards[n] - by_game[n]) for n in ranked) > 1.0
    assert tour["rating"]["compare"] == "games"
    site = arena("publish", str(out), "--out", str(tmp_path / "site"), "--resamples", "10",
                 cwd=tmp_path)
    assert site.returncode == 0, site.stderr
    page = (tmp_path / "site" / "tournament.html").read_text()
    assert "held the same seat's cards" in page
    assert "set by the house bots' fixed ratings (house-heuristic 1600, house-random 900)" \
        in page and "pool averages 1500" not in page
    for entry in tour["bots"]:
        assert entry["elo"] == pytest.approx(by_game[entry["name"]], abs=0.1)
    # a run stopped with a set unfinished: the rebuilt live ratings hold its games back,
    # as the board does, and count them once the next run stores its last rotation
    cut = tmp_path / "cut"
    cut.mkdir()
    with sqlite3.connect(out / "tournament.sqlite") as src, \
            sqlite3.connect(cut / "tournament.sqlite") as dst:
        src.backup(dst)
        dst.execute("UPDATE games SET status = 'running' WHERE id = ?", (games[-1].id,))
    with Store.open_readonly(cut) as store:
        sets = rebuild_sets(store, load_bots(store))
    assert [g.unit for g in next(iter(sets.held.values()))] == [games[-1].unit] * 3
    partial = {b["name"]: b["elo"] for b in lb["bots"]}
    for name, elo in partial.items():
        assert sets.live.rating(name).elo == pytest.approx(elo, abs=0.1)
    assert sets.add(scores[-1])
    sets.live.settle()
    for name, entry in entries.items():
        assert sets.live.rating(name).elo == pytest.approx(entry["elo"], abs=0.1)


# -- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "expected"), [
    ("speed = 1", "speed: unknown key in the top level"),
    ('[schedule]\nformat = "balanced"', "schedule: a league has no schedule"),
    ('[[house]]\nname = "h"\nspec = "heuristic"\nrating = "high"',
     "house[0].rating: expected an Elo number"),
    ("[matchmaking]\ntop_weight = -1", "matchmaking.top_weight: expected a number 0..100"),
    ("[matchmaking]\nfast = true", "matchmaking.fast: unknown key in [matchmaking]"),
    ('[[house]]\nname = "b0"\nspec = "random"', "bots[0].name: 'b0' is used twice"),
])
def test_bad_league_files_get_one_line(tmp_path: Path, body: str, expected: str) -> None:
    house = body.startswith("[[house")
    path = league_toml(tmp_path, bots=2, extra="" if house else body,
                       house=body if house else "")
    got = arena("league", "status", str(path), cwd=tmp_path)
    assert got.returncode == 2
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1, got.stderr
    assert lines[0].startswith(str(path)), lines
    assert expected in lines[0]


def test_bad_commands_get_one_line(tmp_path: Path) -> None:
    path = league_toml(tmp_path, bots=3)
    cases = [
        (["league", "add", str(path), "x\ty", "random"], "has U+0009"),
        (["league", "add", str(path), "ok", "cmd:./nothing-here"], "cannot start"),
        (["league", "add", str(path), "ok", "nonsense"], "bot"),
        (["league", "run", str(path), "--games", "0"], "--games must be"),
        (["league", "run", str(path), "--ray"], "does not run on Ray yet"),
        (["league", "status", str(tmp_path / "missing.toml")], "cannot read"),
        (["league", "status", str(path)], "no league here yet"),
    ]
    for argv, expected in cases:
        got = arena(*argv, cwd=tmp_path)
        assert got.returncode == 2, (argv, got.stderr)
        lines = got.stderr.strip().splitlines()
        assert len(lines) == 1, (argv, got.stderr)
        assert expected in lines[0], (argv, lines[0])


def test_a_league_refuses_to_run_on_a_damaged_store(tmp_path: Path) -> None:
    path = league_toml(tmp_path, bots=4)
    out = tmp_path / "out"
    ran = arena("league", "run", str(path), "--games", "4", "--resamples", "10", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    store = out / "tournament.sqlite"
    with sqlite3.connect(store) as db:
        page_size = int(db.execute("PRAGMA page_size").fetchone()[0])
        root = int(db.execute("SELECT rootpage FROM sqlite_master WHERE name = "
                              "'sqlite_autoindex_games_2'").fetchone()[0])
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(store, "r+b") as f:  # an index's page: no record lives there
        f.seek((root - 1) * page_size)
        head = f.read(16)
        f.seek((root - 1) * page_size)
        f.write(bytes(b ^ 0x5A for b in head))
    again = arena("league", "run", str(path), "--games", "4", "--resamples", "10",
                  cwd=tmp_path)
    assert again.returncode == 2, again.stderr
    assert "the store file is damaged" in again.stderr and "not run" in again.stderr
    assert again.stderr.count("\n") == 1


def _text(page: Path) -> str:
    """A page's words, its markup and scripts left out."""
    raw = re.sub(r"<script.*?</script>|<svg.*?</svg>", " ", page.read_text(), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def test_a_leagues_site_says_what_is_true_of_it(tmp_path: Path) -> None:
    """Two seasons, a house bot, a retired bot, a bot of an author's: the published site
    ranks the house bot nowhere (no 'None'), marks it and the retired bot, counts games
    per season (a league schedules no total), shows season 1's revealed seed and keeps
    season 2's sealed (its seed fixes season 1's deals only), and names the league's
    author of a submitted bot beside what the bot says of itself."""
    path = league_toml(tmp_path, house='[[house]]\nname = "anchor"\nspec = "heuristic"\n'
                                       'rating = 1550', bots=4, seed=777)
    out = tmp_path / "out"
    assert arena("league", "run", str(path), "--games", "8", "--resamples", "10",
                 cwd=tmp_path).returncode == 0
    assert arena("league", "close", str(path), cwd=tmp_path).returncode == 0
    request = {"id": "r-alice", "kind": "add", "name": "alices", "author": "alice",
               "entry": entry_json(BotEntry("alices", BotSpec.parse("heuristic"), None,
                                            Confinement()), tmp_path)}
    with Store.open(out) as store:  # as the league service adds a submitted bot
        answer, _ = apply_request(store, request, {})
        assert answer.ok, answer.message
    assert arena("league", "retire", str(path), "b1", cwd=tmp_path).returncode == 0
    ran = arena("league", "run", str(path), "--games", "8", "--resamples", "10", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    site = tmp_path / "site"
    assert arena("publish", str(out), "--out", str(site), cwd=tmp_path).returncode == 0
    index, statement = _text(site / "index.html"), _text(site / "tournament.html")
    assert "None" not in index and "None" not in statement
    assert "anchor house" in index and "b1 ? retired" in index.replace(" ? ?", " ?")
    assert "scheduled" not in statement
    rows = re.findall(r"<tr data-season=\"(\d+)\">(.*?)</tr>",
                      (site / "tournament.html").read_text())
    numbers = [re.findall(r'<td class="num">(\d+)</td>', row) for _, row in rows]
    assert [int(n) for n, _ in rows] == [1, 2] and [int(n[0]) for n in numbers] == [1, 2]
    assert sum(int(n[1]) for n in numbers) == done(out) == 16  # each season's own games
    assert "in 2 seasons" in statement
    assert "it fixes every deal" not in statement
    assert re.search(r"commitment \(SHA-256\) Master seed 1 .*? 777 2 .*? sealed until the "
                     r"season ends", statement), statement
    assert "alices – alice (it says: trick-arena) active" in statement
    assert "b1 – the organiser (it says: trick-arena) retired" in statement
    assert "b0 – the organiser (it says: trick-arena) active" in statement
    assert "anchor – the organiser (it says: trick-arena) house" in statement
    bot = _text(site / "bots" / "anchor.html")
    assert "a house bot, not ranked: its rating is fixed at 1550" in bot
