"""A game as a job: GameJob/GameOutcome survive JSON unchanged, bad JSON is refused naming
the field, and a job played by a Ray node's game host (its own pools, :class:`WorkerPools`)
stores the same game as the local runner with its pooled processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, bot_processes, examples, tournament_toml
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.model.job import GameJob, GameOutcome, JobError, SeatJob
from arena.play.worker import WorkerPools
from arena.proc.connection import BotConnection
from arena.runs.config import load_config
from arena.runs.field import job_of, seat_jobs
from arena.runs.store import Store
from arena.tournament.runner import games_of

text = st.text(max_size=12)
json_scalars = st.none() | st.booleans() | st.integers(-2**53, 2**53) | text
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(text, inner, max_size=3), max_leaves=8)

seats = st.builds(
    SeatJob, name=text, kind=st.sampled_from(["builtin", "cmd", "grpc", "grpcs", "unix"]),
    value=text, sandbox=st.booleans(),
    limits=st.lists(st.tuples(text, st.integers(0, 10**6)), max_size=3).map(tuple),
    read_only=st.lists(text, max_size=2).map(tuple),
    env=st.lists(st.tuples(text, text), max_size=2).map(tuple),
    hide=st.lists(text, max_size=2).map(tuple), tls_ca=st.none() | text,
    server_name=text, token=text, insecure=st.booleans(),
    view=st.sampled_from(["runtime", "system"]))

jobs = st.builds(
    GameJob, game=st.sampled_from(["wizard", "trumps"]),
    options=st.dictionaries(text, json_values, max_size=3),
    deal_seed=st.integers(0, 2**128), game_id=text, table_id=text,
    wire_ids=st.tuples(text, text), seats=st.lists(seats, min_size=1, max_size=6).map(tuple),
    move_ms=st.integers(1, 10**6), bank_ms=st.integers(0, 10**6),
    max_faults=st.integers(0, 100), startup_ms=st.integers(1, 10**6),
    isolation=st.sampled_from(["deal", "game", "shared"]), log_dir=text, cwd=text,
    deals=st.integers(0, 10**6))

outcomes = st.builds(
    GameOutcome, game_id=text,
    record=st.dictionaries(text, json_values, max_size=4),
    bot_infos=st.dictionaries(text, st.dictionaries(text, json_values, max_size=3),
                              max_size=2),
    restarts=st.dictionaries(text, st.integers(0, 100), max_size=2))


@settings(max_examples=examples(200), deadline=None)
@given(jobs)
def test_job_round_trips_through_json(job: GameJob) -> None:
    assert GameJob.from_json(job.to_json()) == job


@settings(max_examples=examples(200), deadline=None)
@given(outcomes)
def test_outcome_round_trips_through_json(outcome: GameOutcome) -> None:
    assert GameOutcome.from_json(outcome.to_json()) == outcome


def _job_data() -> dict[str, Any]:
    import json
    job = GameJob("trumps", {}, 7, "t0-d0-r0", "t0", ("a", "b"),
                  (SeatJob("r", "builtin", "random"),))
    return dict(json.loads(job.to_json()))


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.pop("deal_seed"), "missing field 'deal_seed'"),
    (lambda d: d.update(deal_seed="7"), "field 'deal_seed': expected int, got str"),
    (lambda d: d.update(deal_seed=True), "field 'deal_seed': expected int, got bool"),
    (lambda d: d["seats"][0].pop("kind"), "missing field 'kind'"),
    (lambda d: d.update(seats=[3]), "job: "),
])
def test_bad_job_json_names_the_field(change: Any, message: str) -> None:
    import json
    data = _job_data()
    change(data)
    with pytest.raises(JobError) as info:
        GameJob.from_json(json.dumps(data))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_not_an_object_is_refused() -> None:
    with pytest.raises(JobError, match="job: expected a JSON object, got list"):
        GameJob.from_json("[]")
    with pytest.raises(JobError, match="outcome: not JSON"):
        GameOutcome.from_json("{")


def tournament(bot: str) -> str:
    """Trumps for four: a bot process, the built-in heuristic and two random ones."""
    return tournament_toml("job-test", "trumps", 4, 31337, 2, [
        ("py-random", f"cmd:python {bot}"), ("heuristic", "heuristic"),
        ("random", "random"), ("random2", "random")], move_ms=3000)


def test_a_node_s_pools_play_the_same_games_as_the_local_runner(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The local runner and a Ray node's game host (:class:`WorkerPools`: the same
    :class:`~arena.play.pool.BotPool`, kept in the host's own loop) store identical
    records for every game: under ``game`` isolation with a process for each game, and
    under ``deal`` with processes kept between games, never on a deal twice and
    reclaimed after each game they are kept for, as a local run's pool does."""
    sockets = Path(tempfile.mkdtemp(prefix="arena-j-"))
    request.addfinalizer(lambda: shutil.rmtree(sockets, ignore_errors=True))
    env = dict(os.environ, TMPDIR=str(sockets))
    file = tmp_path / "t.toml"
    file.write_text(tournament(str(REPO / "sample_bots/python/random_bot.py")))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "arena", "tournament", str(file),
                           "--out", str(out)], cwd=REPO, text=True,
                          capture_output=True, timeout=240, check=False, env=env)
    assert done.returncode == 0, done.stderr
    store = Store.open_readonly(out)
    stored = {g.id: g.record for g in store.iter_games()}
    seed = int(store.meta()["seed"])
    store.close()
    assert len(stored) == 8

    cwd = Path.cwd()
    os.chdir(REPO)  # the bots' commands are relative to the repository
    old_tmp = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(sockets)
    reclaimed: list[str] = []
    held: list[str] = []
    real_reclaim = BotConnection.reclaim

    async def counted(self: BotConnection) -> str | None:
        reclaimed.append(self.name)
        found = await real_reclaim(self)
        if found is not None:
            held.append(found)
        return found

    try:
        config = load_config(file, out)
        by_name = seat_jobs(config)

        def play_all(isolation: str, logs: Path) -> None:
            host = WorkerPools()
            try:
                for scheduled in games_of(config, seed):
                    job = GameJob.from_json(job_of(config, seed, scheduled, by_name).to_json())
                    assert job.deals == 2
                    outcome = host.play(replace(job, isolation=isolation, log_dir=str(logs)))
                    assert outcome.game_id == scheduled.id
                    # the same game move for move; only the measured times differ
                    assert ({**outcome.record, "timing": None}
                            == {**stored[scheduled.id], "timing": None}), scheduled.id
                    assert outcome.bot_infos["py-random"]["name"] == "random-py"
                    assert outcome.restarts == {}
                    assert len(outcome.record["timing"]["wall_ms"]) == 4
            finally:
                host.close()

        BotConnection.reclaim = counted  # type: ignore[method-assign]
        play_all("game", tmp_path / "game-logs")
        # a process for each game, ended after it (none kept, so none reclaimed to keep)
        assert len(list((tmp_path / "game-logs").glob("py-random*.log"))) == 8
        assert reclaimed == []
        play_all("deal", tmp_path / "deal-logs")
        # 8 games over 2 deals, in the schedule's order (each deal's 4 rotations): 4
        # processes, each kept after its game of the first deal (reclaimed then), ended
        # after its game of the second (it has seen every deal); and one more for each
        # the reclaim found still holding pages (ended, as a local pool ends it: the
        # kernel may leave a page it could not drop on a loaded machine; an honest bot
        # holds none)
        assert len(list((tmp_path / "deal-logs").glob("py-random*.log"))) == 4 + len(held), held
        assert reclaimed == ["py-random"] * 4
    finally:
        BotConnection.reclaim = real_reclaim  # type: ignore[method-assign]
        os.chdir(cwd)
        if old_tmp is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = old_tmp
    assert bot_processes(sockets) == []


def test_a_log_name_taken_meanwhile_gets_the_next_number(tmp_path: Path) -> None:
    """Bot processes of several Ray workers share one log folder: a name another process
    created first is skipped, never opened twice."""
    from arena.proc.logs import open_new_log

    (tmp_path / "bot.log").write_text("another process's")
    (tmp_path / "bot.2.log").write_text("another process's")
    fd, path = open_new_log(tmp_path / "bot.log")
    os.close(fd)
    assert path == tmp_path / "bot.3.log"
    fd, path = open_new_log(tmp_path / "bot.7.log")
    os.close(fd)
    assert path == tmp_path / "bot.7.log"
    assert (tmp_path / "bot.log").read_text() == "another process's"
    (tmp_path / "other.txt").write_text("x")
    with pytest.raises(FileExistsError):
        open_new_log(tmp_path / "other.txt")
