"""Tournament files: a good file loads; every mistake is one line naming file and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, bot_cmd

from arena.cli import main
from arena.model.limits import Limits
from arena.proc.tasks import usable_cores
from arena.runs.config import ConfigError, load_config

GOOD = """
name = "t"
game = "wizard"
seats = 3
seed = 7
concurrency = 2

[options]
hook_rule = true

[time]
move_ms = 500
bank_ms = 1000
max_faults = 2

[schedule]
format = "round-robin"
deals = 2

[[bots]]
name = "h"
spec = "heuristic"

[[bots]]
name = "r"
spec = "random"

[[bots]]
name = "py"
spec = "{PY_BOT}"
""".replace("{PY_BOT}", bot_cmd(REPO / "sample_bots/python/random_bot.py"))
PY = f'spec = "{bot_cmd(REPO / "sample_bots/python/random_bot.py")}"'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.toml"
    path.write_text(text)
    return path


def test_a_good_file_loads(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    assert config.game == "wizard" and config.seats == 3
    assert config.options == {"players": 3, "hook_rule": True}
    assert (config.move_ms, config.bank_ms, config.max_faults) == (500, 1000, 2)
    assert config.field_names == ["h", "r", "py"]
    assert config.output == tmp_path / "out" / "t"  # from the file's folder
    assert config.seed == 7 and config.deals == 2 and config.concurrency == 2
    assert len(config.digest) == 64


def test_isolation_limits_and_trust_per_bot(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    assert config.isolation == "deal" and config.limits == Limits()
    assert all(b.confinement.sandbox for b in config.bots)
    text = GOOD.replace("concurrency = 2\n", 'isolation = "shared"\n[limits]\nmemory_mb = 512\n')
    (tmp_path / "model").mkdir()
    assert all(b.confinement.view == "runtime" for b in config.bots)
    text = text.replace(PY, PY + '\nsandbox = false\nread_only = ["model"]\n'
                        'env = { MODEL = "big" }\nlimits = { processes = 8, stop_ms = 20 }\n'
                        'view = "system"')
    config = load_config(write(tmp_path, text))
    py = config.bots[2].confinement
    assert config.isolation == "shared" and config.limits.memory_mb == 512
    assert config.bots[0].confinement.limits.memory_mb == 512
    assert not py.sandbox and py.read_only == (tmp_path / "model",)
    assert py.env == (("MODEL", "big"),) and py.view == "system"
    assert (py.limits.memory_mb, py.limits.processes, py.limits.stop_ms) == (512, 8, 20)
    assert config.limits.stop_ms == 5  # the default: 5 ms of CPU to stop after a call
    # without 'concurrency', one game per usable core: one thinking bot per core
    assert config.concurrency == usable_cores() and not config.concurrency_given


def test_the_cluster_table(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    assert (config.engine, config.address, config.retries) == ("local", "", 3)
    text = GOOD.replace("concurrency = 2", 'concurrency = 2\n[cluster]\nengine = "ray"\n'
                        'address = "ray://head:10001"\nretries = 5')
    config = load_config(write(tmp_path, text))
    assert (config.engine, config.address, config.retries) == ("ray", "ray://head:10001", 5)
    assert config.working_dir is None
    (tmp_path / "bots").mkdir()
    config = load_config(write(tmp_path, text.replace(
        "retries = 5", 'retries = 5\nworking_dir = "bots"')))
    assert config.working_dir == (tmp_path / "bots").absolute()


def test_the_demo_file_loads() -> None:
    config = load_config(Path("tournaments/demo.toml"))
    assert config.game == "wizard" and config.seats == 4
    assert len(config.bots) + len(config.skipped) == 5


@pytest.mark.parametrize(("change", "expected"), [
    (('seats = 3', 'seats = 9'), "seats: expected an integer 3..6, got 9"),
    (('move_ms = 500', 'move_ms = "fast"'), "time.move_ms: expected an integer"),
    (('name = "r"', 'name = "h"'), "bots[1].name: 'h' is used twice"),
    (('seats = 3', 'seats = 4'), "bots: 3 bots for 4 seats"),
    (('hook_rule = true', 'hook_rule = true\ntrump = "H"'), "options.trump: unknown option"),
    (('hook_rule = true', 'hook_rule = "yes"'), "option hook_rule: 'yes' is not allowed"),
    (('deals = 2', 'deals = 2\nspeed = 3'), "schedule.speed: unknown key in [schedule]"),
    (('concurrency = 2', 'concurrency = 2\ncolour = "red"'), "colour: unknown key"),
    (('game = "wizard"', 'game = "chess"'), "game: 'chess' is not a game"),
    (('spec = "random"', 'spec = "randomm"'), "bots[1].spec: unknown bot 'randomm'"),
    ((PY, 'spec = "cmd:no-such-program --x"'), "bot py: cannot start: 'no-such-program' not found"),
    (('format = "round-robin"', 'format = "swiss"'), "schedule.format: 'swiss'"),
    (('format = "round-robin"', 'format = "gauntlet"'), "a gauntlet needs at least one"),
    (('deals = 2', 'deals = 2\ncandidates = ["zz"]'), "'zz' is not a bot"),
    (('seed = 7', 'seed = -1'), "seed: expected an integer"),
    (('name = "t"', 'name = "t"\n[[[broken'), "not valid TOML"),
    (('hook_rule = true', 'players = 3'), "options.players: set the number of players"),
    (('concurrency = 2', 'isolation = "none"'), "isolation: 'none'; expected one of deal, game"),
    (('concurrency = 2', 'concurrency = 2\n[limits]\nmemory = 5'),
     "limits.memory: unknown key in [limits]; expected one of"),
    (('concurrency = 2', 'concurrency = 2\n[limits]\nmemory_mb = -1'),
     "limits.memory_mb: expected an integer 0.."),
    (('concurrency = 2', 'concurrency = 2\n[limits]\nstop_ms = 1e3'),
     "limits.stop_ms: expected an integer 0..60000"),
    ((PY, PY + '\nsandbox = "no"'), "bots[2].sandbox: expected true or false, got 'no'"),
    ((PY, PY + '\nview = "full"'), "bots[2].view: expected one of runtime, system, got 'full'"),
    ((PY, PY + '\nread_only = ["no/such/model.bin"]'),
     "bots[2].read_only: 'no/such/model.bin' does not exist"),
    ((PY, PY + '\nread_only = "proto"'), "bots[2].read_only: expected a list of paths"),
    ((PY, PY + '\nenv = { ARENA_BOT_LISTEN = "tcp" }'),
     "bots[2].env.ARENA_BOT_LISTEN: ARENA_ variables are the arena's own"),
    ((PY, PY + '\nenv = { "A B" = "x" }'), "bots[2].env.A B: expected NAME"),
    ((PY, PY + '\nlimits = { cpu_s = "lots" }'), "bots[2].limits.cpu_s: expected an integer"),
    (('concurrency = 2', 'concurrency = 2\n[cluster]\nengine = "spark"'),
     "cluster.engine: 'spark'; expected one of local, ray"),
    (('concurrency = 2', 'concurrency = 2\n[cluster]\naddress = 6379'),
     "cluster.address: expected a string, got 6379"),
    (('concurrency = 2', 'concurrency = 2\n[cluster]\nretries = -1'),
     "cluster.retries: expected an integer 0..100, got -1"),
    (('concurrency = 2', 'concurrency = 2\n[cluster]\nnodes = 3'),
     "cluster.nodes: unknown key in [cluster]"),
    (('concurrency = 2', 'concurrency = 2\n[cluster]\nworking_dir = "no/such/dir"'),
     "cluster.working_dir: '"),
])
def test_mistakes_are_one_line_naming_file_and_key(tmp_path: Path, change: tuple[str, str],
                                                   expected: str) -> None:
    old, new = change
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message


def test_a_missing_file_and_the_command_exit_2(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tournament", str(tmp_path / "nope.toml")]) == 2
    err = capsys.readouterr().err
    assert "nope.toml: cannot read" in err and err.count("\n") == 1
    bad = write(tmp_path, GOOD.replace("deals = 2", "deals = 0"))
    assert main(["tournament", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "schedule.deals: expected an integer 1.." in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_required_bots_left_out_where_missing(tmp_path: Path) -> None:
    text = GOOD + '\n[[bots]]\nname = "ghost"\nspec = "cmd:ghost-bot"\nrequires = "ghost-bot"\n'
    config = load_config(write(tmp_path, text))
    assert config.skipped == (("ghost", "ghost-bot is not installed"),)
    assert "ghost" not in config.field_names


MODEL_BOT = '''"""Plays randomly, after reading its model from ../model/weights.txt (read_only)."""
from pathlib import Path

from arena.bots import RandomBot
from arena.sdk import Bot, View, serve

WEIGHTS = (Path(__file__).resolve().parent.parent / "model" / "weights.txt").read_text()


class Model(Bot):
    name = "model-bot"

    def __init__(self) -> None:
        self.strategy = RandomBot(WEIGHTS)

    def bid(self, view: View) -> int:
        return self.strategy.act(view)

    def play(self, view: View) -> int:
        return self.strategy.act(view)


serve(Model())
'''


def test_relative_paths_are_taken_from_the_files_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # cup/cup.toml names ../bots/model_bot.py, ../model (read_only) and an output "results";
    # the arena runs from elsewhere (/), in the sandbox: the bot starts, sees its model
    # and plays, and the results land next to the file
    (tmp_path / "cup").mkdir()
    (tmp_path / "bots").mkdir()
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "weights.txt").write_text("7")
    (tmp_path / "bots" / "model_bot.py").write_text(MODEL_BOT)
    path = tmp_path / "cup" / "cup.toml"
    path.write_text('name = "cup"\ngame = "trumps"\nseats = 2\nseed = 3\nconcurrency = 1\n'
                    'output = "results"\n[options]\ndraw = false\n'
                    '[[bots]]\nname = "model"\nspec = "cmd:python ../bots/model_bot.py"\n'
                    'read_only = ["../model"]\n'
                    '[[bots]]\nname = "h"\nspec = "heuristic"\n'
                    '[[bots]]\nname = "sock"\nspec = "unix:sockets/bot.sock"\n')
    monkeypatch.chdir("/")
    config = load_config(path)
    assert config.folder == tmp_path / "cup"
    assert config.output == tmp_path / "cup" / "results"
    assert config.bots[0].confinement.read_only == (tmp_path / "model",)
    assert str(config.bots[2].spec) == f"unix:{tmp_path / 'cup' / 'sockets' / 'bot.sock'}"
    # what is not there is named with the folder it was looked for in
    missing = path.with_name("missing.toml")
    missing.write_text(path.read_text().replace("python ../bots/model_bot.py",
                                                "../bots/model_bot"))
    with pytest.raises(ConfigError, match=r"bots\[0\]\.spec: bot model: cannot start: "
                                          rf"'../bots/model_bot' not found in {tmp_path}/cup$"):
        load_config(missing)
    # the run itself, without the unix: bot (nobody serves it)
    path.write_text(path.read_text().split('[[bots]]\nname = "sock"')[0])
    code = main(["tournament", str(path), "--resamples", "20"])
    _, err = capsys.readouterr()
    assert code == 0, err
    board = json.loads((tmp_path / "cup" / "results" / "leaderboard.json").read_text())
    assert {b["name"]: sum(b["faults"].values()) for b in board["bots"]} == {"model": 0, "h": 0}
    assert not (tmp_path / "results").exists() and not Path("/results").exists()
