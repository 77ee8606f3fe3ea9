"""Safe output folders: the arena writes only in folders it made (marked with
``.trick-arena``) or that are empty, ``--fresh`` removes only what it made, and log and
temporary folders are private, unpredictable and never followed through a symlink."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from conftest import SAMPLE_BOTS, Sandbox, bot_cmd

from arena.cli import main
from arena.files import MARKER, FolderError, private_dir, temp_dir
from arena.proc.logs import log_stem

PY_BOT = bot_cmd(SAMPLE_BOTS / "random_bot.py")


def tournament(bots: str = "") -> str:
    """A cheap tournament: four built-in bots (and ``bots``), one deal per table."""
    return f"""
name = "folders"
game = "trumps"
seats = 4
seed = 99

[options]
draw = false

[schedule]
format = "round-robin"
deals = 1

[[bots]]
name = "h"
spec = "heuristic"

[[bots]]
name = "r1"
spec = "random"

[[bots]]
name = "r2"
spec = "random"

[[bots]]
name = "r3"
spec = "random"
{bots}"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def toml(tmp_path: Path, text: str | None = None) -> Path:
    path = tmp_path / "t.toml"
    path.write_text(text or tournament())
    return path


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and len(err) < 300, err
    return err


# -- the tournament's output folder ---------------------------------------------------------


def test_an_unrelated_folder_is_refused_and_left_untouched(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "important.txt").write_text("keep me")
    for extra in ((), ("--fresh",)):
        code, stdout, err = run(capsys, "tournament", str(toml(tmp_path)), "--out", str(out),
                                *extra)
        assert code == 2 and stdout == ""
        assert one_line(err).startswith(f"{out}: exists, holds files and was not made by "
                                        "trick-arena")
        assert "--out" in err and "empty it" in err
        assert [p.name for p in out.iterdir()] == ["important.txt"]
        assert (out / "important.txt").read_text() == "keep me"


def test_a_new_or_empty_folder_is_made_private_and_marked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for out in (tmp_path / "new" / "deep", empty):
        code, _, err = run(capsys, "tournament", str(toml(tmp_path)), "--out", str(out),
                           "--resamples", "20")
        assert code == 0, err
        marker = json.loads((out / MARKER).read_text())
        assert marker["kind"] == "tournament" and marker["arena"] and marker["created"]
        assert stat.S_IMODE(out.stat().st_mode) == 0o700
        assert stat.S_IMODE((out / "tournament.sqlite").stat().st_mode) == 0o600


def test_a_site_folder_is_not_a_tournament_output(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t"
    assert run(capsys, "tournament", str(toml(tmp_path)), "--out", str(out),
               "--resamples", "20")[0] == 0
    site = tmp_path / "site"
    assert run(capsys, "publish", str(out), "--out", str(site), "--resamples", "20")[0] == 0
    code, _, err = run(capsys, "tournament", str(toml(tmp_path)), "--out", str(site))
    assert code == 2
    assert one_line(err).startswith(f"{site}: is a trick-arena site folder, not a tournament")
    assert not (site / "tournament.sqlite").exists()


def test_fresh_removes_what_the_arena_made_and_keeps_the_rest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], arena_sandbox: Sandbox) -> None:
    # one process for the Python bot ("shared"): the logs are what matters here
    text = tournament(f'\n[[bots]]\nname = "py"\nspec = "{PY_BOT}"\n')
    file = toml(tmp_path, text.replace("seats = 4\n", 'seats = 4\nisolation = "shared"\n'))
    out = tmp_path / "out"
    code, stdout, err = run(capsys, "tournament", str(file), "--out", str(out),
                            "--resamples", "20")
    assert code == 0, err
    total = int(stdout.split(" of ")[-1].split()[0])
    assert run(capsys, "export", str(out))[0] == 0
    made = {"tournament.sqlite", "leaderboard.md", "leaderboard.csv", "leaderboard.json",
            "games.jsonl", "logs", MARKER}
    assert made <= {p.name for p in out.iterdir()}
    assert (out / "logs" / "py.log").is_file()
    assert stat.S_IMODE((out / "logs").stat().st_mode) == 0o700
    for log in (out / "logs").iterdir():
        with log.open("a") as f:
            f.write("OLD RUN\n")
    (out / "important.txt").write_text("keep me")
    (out / "logs" / "notes.md").write_text("mine too")
    code, stdout, err = run(capsys, "tournament", str(file), "--out", str(out), "--fresh",
                            "--resamples", "20")
    assert code == 0, err
    assert "resuming" not in stdout and f"played {total} games" in stdout
    note = [line for line in err.splitlines() if "--fresh" in line]
    assert note == [f"note: --fresh left 2 file(s) the arena did not make in {out}: "
                    "important.txt, logs/notes.md"]
    assert (out / "important.txt").read_text() == "keep me"
    assert (out / "logs" / "notes.md").read_text() == "mine too"
    assert not (out / "games.jsonl").exists(), "the export of the forgotten games is gone"
    logs = {p.name: p.read_text() for p in (out / "logs").iterdir()}
    assert logs.pop("notes.md") == "mine too"
    assert logs and all(name.startswith("py.") for name in logs)
    assert not [name for name, text in logs.items() if "OLD RUN" in text], "old logs removed"


def test_an_unmarked_folder_of_an_earlier_arena_resumes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "old"
    code, stdout, err = run(capsys, "tournament", str(toml(tmp_path)), "--out", str(out),
                            "--resamples", "20")
    assert code == 0, err
    total = int(stdout.split(" of ")[-1].split()[0])
    (out / MARKER).unlink()  # as made before the arena marked its folders
    code, stdout, err = run(capsys, "tournament", str(toml(tmp_path)), "--out", str(out),
                            "--resamples", "20")
    assert code == 0, err
    assert f"resuming: {total} of {total} games already played" in stdout
    assert json.loads((out / MARKER).read_text())["kind"] == "tournament"
    # a file that only looks like a store does not make a folder ours
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "tournament.sqlite").write_text("not SQLite")
    code, _, err = run(capsys, "tournament", str(toml(tmp_path)), "--out", str(fake))
    assert code == 2 and "was not made by trick-arena" in one_line(err)
    assert [p.name for p in fake.iterdir()] == ["tournament.sqlite"]
    assert (fake / "tournament.sqlite").read_text() == "not SQLite"


# -- the published site ------------------------------------------------------------------


def test_publish_refuses_an_unrelated_folder_and_replaces_its_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t"
    assert run(capsys, "tournament", str(toml(tmp_path)), "--out", str(out),
               "--resamples", "20")[0] == 0
    site = tmp_path / "site"
    site.mkdir()
    (site / "important.txt").write_text("keep me")
    (site / "index.html").write_text("my own page")
    code, _, err = run(capsys, "publish", str(out), "--out", str(site))
    assert code == 2
    assert one_line(err) == (f"{site.resolve()}: exists and is not an earlier trick-arena "
                             f"site (no {MARKER} file); choose an empty or new folder\n")
    assert sorted(p.name for p in site.iterdir()) == ["important.txt", "index.html"]
    assert (site / "important.txt").read_text() == "keep me"

    own = tmp_path / "own"
    for _ in range(2):  # publishing again into its own folder works
        assert run(capsys, "publish", str(out), "--out", str(own), "--resamples", "20")[0] == 0
    assert json.loads((own / MARKER).read_text())["kind"] == "site"
    # a file the user put into the site is not deleted by the next publish
    (own / "assets" / "important.txt").write_text("keep me")
    code, _, err = run(capsys, "publish", str(out), "--out", str(own), "--resamples", "20")
    assert code == 2 and "(assets/important.txt is not a site file)" in one_line(err)
    assert (own / "assets" / "important.txt").read_text() == "keep me"
    (own / "assets" / "important.txt").unlink()
    # a site from before the marker (only site files) is still replaced
    (own / MARKER).unlink()
    assert run(capsys, "publish", str(out), "--out", str(own), "--resamples", "20")[0] == 0
    assert (own / MARKER).is_file()
    # a folder marked for something else is no site
    other = tmp_path / "other"
    other.mkdir()
    (other / MARKER).write_text('{"kind": "tournament"}')
    code, _, err = run(capsys, "publish", str(out), "--out", str(other))
    assert code == 2 and "(a trick-arena tournament folder)" in one_line(err)
    assert [p.name for p in other.iterdir()] == [MARKER]


# -- log and temporary folders --------------------------------------------------------------


def play_py(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    return run(capsys, "play", "--game", "wizard", "--players", "3", "--seed", "7", "--quiet",
               "--bots", f"{PY_BOT},random,random", *argv)


def test_the_default_log_folder_is_private_unpredictable_and_ignores_a_planted_symlink(
        capsys: pytest.CaptureFixture[str], arena_sandbox: Sandbox) -> None:
    tmp = arena_sandbox.tmp
    victim = tmp / "victim"
    victim.mkdir()
    (victim / "important.txt").write_text("keep me")
    planted = tmp / "trick-arena" / "play-7"  # the old, predictable name
    planted.parent.mkdir()
    planted.symlink_to(victim)
    for _ in range(2):
        code, _, err = play_py(capsys)
        assert code == 0, err
    assert [p.name for p in victim.iterdir()] == ["important.txt"]
    assert (victim / "important.txt").read_text() == "keep me"
    folders = sorted(tmp.glob("trick-arena-play-7-*"))
    assert len(folders) == 2, "one new folder with a random name per game"
    for folder in folders:
        assert len(folder.name) >= len("trick-arena-play-7-") + 8
        assert stat.S_IMODE(folder.lstat().st_mode) == 0o700 and not folder.is_symlink()
        [log] = folder.iterdir()
        assert log.name.endswith(".log") and stat.S_IMODE(log.stat().st_mode) == 0o600
        assert "serving on" in log.read_text()
    # with built-in bots only nothing is written: no folder is left behind
    assert run(capsys, "play", "--game", "wizard", "--seed", "8", "--quiet")[0] == 0
    assert not list(tmp.glob("trick-arena-play-8-*"))


def test_a_planted_symlink_in_a_log_dir_is_not_followed(
        capsys: pytest.CaptureFixture[str], arena_sandbox: Sandbox) -> None:
    tmp = arena_sandbox.tmp
    victim = tmp / "important.txt"
    victim.write_text("keep me")
    logs = tmp / "logs"
    logs.mkdir()
    stem = log_stem(f"seat0 ({PY_BOT})")
    (logs / f"{stem}.log").symlink_to(victim)
    code, _, err = play_py(capsys, "--log-dir", str(logs))
    assert code == 0, err
    assert victim.read_text() == "keep me"
    assert (logs / f"{stem}.log").is_symlink()
    log = logs / f"{stem}.2.log"  # the planted name is skipped
    assert log.is_file() and not log.is_symlink()
    assert "serving on" in log.read_text(), "the bot wrote its log: into its own file"


def test_a_log_dir_that_is_a_symlink_or_not_ours_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    code, out, err = play_py(capsys, "--log-dir", str(link))
    assert code == 2 and out == ""
    assert one_line(err) == f"arena play: {link}: is a symlink; give the folder itself\n"
    if os.geteuid() == 0:
        others = tmp_path / "others"
        others.mkdir()
        os.chown(others, 65534, 65534)
    else:
        others = Path("/")  # owned by root
    code, out, err = play_py(capsys, "--log-dir", str(others))
    assert code == 2
    assert one_line(err).startswith(f"arena play: {others}: belongs to another user")
    assert list(real.iterdir()) == []


def test_helpers_make_private_folders(tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    first, second = temp_dir("trick-arena-x-"), temp_dir("trick-arena-x-")
    assert first != second and first.parent == second.parent == tmp_path
    assert stat.S_IMODE(first.stat().st_mode) == stat.S_IMODE(second.stat().st_mode) == 0o700
    made = private_dir(tmp_path / "a" / "b")
    assert made.is_dir() and stat.S_IMODE(made.stat().st_mode) == 0o700
    (tmp_path / "file").write_text("")
    with pytest.raises(FolderError, match="exists and is not a folder"):
        private_dir(tmp_path / "file")
