"""A field in one step: a tournament or league file's ``[[folders]]`` makes every bot
folder under a path a bot, named after it, its command from a pattern or from its
``bot.toml``, run in its own folder (``cwd``); ``arena league add`` takes several bots at
once (NAME SPEC pairs, or ``--folders PATH``). Real files, a real tournament of real bot
processes, real league commands."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
from conftest import REPO, Sandbox, arena_in_process, tournament_toml

from arena.runs.config import ConfigError, load_config

RANDOM_BOT = REPO / "sample_bots" / "python" / "random_bot.py"


def bot_folders(root: Path, names: list[str], manifest: bool = True) -> Path:
    """``root/bots/NAME/bot.py`` for each name (the random sample), with a ``bot.toml``
    whose command is relative to the folder."""
    bots = root / "bots"
    for name in names:
        folder = bots / name
        folder.mkdir(parents=True)
        shutil.copy(RANDOM_BOT, folder / "bot.py")
        if manifest:
            (folder / "bot.toml").write_text(
                f'name = "{name}"\nversion = "1"\nruntime = "python3"\n'
                f'command = "{sys.executable} bot.py"\n')
    return bots


def head(seats: int = 3) -> str:
    return tournament_toml("field", "trumps", seats, 5, 1, [], options={"draw": False})


def test_every_folder_under_a_path_is_a_bot_named_after_it(tmp_path: Path) -> None:
    bot_folders(tmp_path, ["alpha", "beta", "gamma"])
    (tmp_path / "bots" / ".hidden").mkdir()
    path = tmp_path / "t.toml"
    path.write_text(head() + '\n[[folders]]\npath = "bots"\nprefix = "x-"\nview = "system"\n')
    config = load_config(path)
    assert [b.name for b in config.bots] == ["x-alpha", "x-beta", "x-gamma"]
    alpha = config.bots[0]
    assert alpha.cwd == tmp_path / "bots" / "alpha"
    assert alpha.spec.value == f"{sys.executable} bot.py"  # its bot.toml's, run in its folder
    assert alpha.confinement.view == "system"


def test_a_pattern_gives_each_folder_its_command_and_a_folder_without_one_is_left_out(
        tmp_path: Path) -> None:
    bot_folders(tmp_path, ["one", "two"], manifest=False)
    path = tmp_path / "t.toml"
    path.write_text(head(2) + '\n[[folders]]\npath = "bots"\n')
    with pytest.raises(ConfigError, match="folders: no bot: every folder was left out"):
        load_config(path)
    path.write_text(head(2) + '\n[[folders]]\npath = "bots"\n'
                    f'command = "{sys.executable} {{folder}}/bot.py --name {{name}}"\n')
    config = load_config(path)
    assert [b.spec.value for b in config.bots] == [
        f"{sys.executable} {tmp_path}/bots/{n}/bot.py --name {n}" for n in ("one", "two")]
    bot_folders(tmp_path / "more", ["three"])
    (tmp_path / "more" / "bots" / "bare").mkdir()
    path.write_text(head(2) + '\n[[folders]]\npath = "more/bots"\n'
                    '\n[[bots]]\nname = "h"\nspec = "heuristic"\n')
    config = load_config(path)
    assert [b.name for b in config.bots] == ["h", "three"]
    assert list(config.skipped) == [("bare", f"{tmp_path}/more/bots/bare has no bot.toml "
                                             f"and folders[0] gives no command")]


@pytest.mark.parametrize(("table", "message"), [
    ('path = "nowhere"', "folders[0].path: "),
    ('path = "bots"\ncolour = "red"', "folders[0].colour: unknown key"),
    ('path = "empty"', "holds no folder"),
])
def test_a_bad_folders_table_is_one_line(tmp_path: Path, table: str, message: str) -> None:
    bot_folders(tmp_path, ["a", "b", "c"])
    (tmp_path / "empty").mkdir()
    path = tmp_path / "t.toml"
    path.write_text(head() + "\n[[folders]]\n" + table + "\n")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert str(path) in str(refused.value)


def test_a_field_of_folders_plays_each_bot_in_its_own_folder(
        tmp_path: Path, arena_sandbox: Sandbox) -> None:
    """Three folders whose bot.toml commands are relative to their folders (``python3
    bot.py``): a real tournament, sandboxed where it can be, every game finished."""
    bot_folders(tmp_path, ["alpha", "beta", "gamma"])
    path = tmp_path / "t.toml"
    path.write_text(head() + '\n[[folders]]\npath = "bots"\n')
    done = arena_in_process("tournament", str(path), "--out", str(tmp_path / "out"),
                            "--resamples", "10", cwd=tmp_path, env=arena_sandbox.env)
    assert done.returncode == 0, done.stderr
    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    assert {b["name"] for b in board["bots"]} == {"alpha", "beta", "gamma"}
    assert board["games"] == 3


def test_league_add_takes_several_bots_and_a_folder_of_them(
        tmp_path: Path, arena_sandbox: Sandbox) -> None:
    league = tmp_path / "league.toml"
    league.write_text('name = "lf"\ngame = "trumps"\nseats = 3\nseed = 3\noutput = "out"\n'
                      '[options]\ndraw = false\n[[bots]]\nname = "h"\nspec = "heuristic"\n')
    pairs = arena_in_process("league", "add", str(league), "r1", "random", "r2", "heuristic",
                             cwd=tmp_path, env=arena_sandbox.env)
    assert pairs.returncode == 0, pairs.stderr
    odd = arena_in_process("league", "add", str(league), "r3", "random", "r4",
                           cwd=tmp_path, env=arena_sandbox.env)
    assert odd.returncode == 2 and "'r4' has no spec: give NAME SPEC pairs" in odd.stderr
    bot_folders(tmp_path, ["alpha", "beta"])
    folders = arena_in_process("league", "add", str(league), "--folders", "bots",
                               "--no-sandbox", cwd=tmp_path, env=arena_sandbox.env)
    assert folders.returncode == 0, folders.stderr
    with sqlite3.connect(f"file:{tmp_path / 'out' / 'tournament.sqlite'}?mode=ro",
                         uri=True) as db:
        rows = dict(db.execute("SELECT name, entry FROM league_bots").fetchall())
    assert {"r1", "r2", "alpha", "beta"} <= set(rows)
    assert json.loads(rows["alpha"])["cwd"] == str(tmp_path / "bots" / "alpha")
