"""The ``arena`` command line: play, verify, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arena.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_play_prints_every_round_and_the_standings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "play", "--game", "wizard", "--players", "4", "--seed", "5",
                       "--bots", "heuristic,random,random,heuristic")
    assert code == 0
    for r in range(1, 16):
        assert f"Round {r} of 15" in out
    assert "bids:" in out and "trick  1:" in out and "Final standings" in out
    # round 2 of seed 5 shows both special cards by name: Jesters in hands and tricks, a
    # turned Wizard and the dealer's choice of trump
    round_2 = out[out.index("Round 2 of 15"):out.index("Round 3 of 15")]
    assert round_2 == """Round 2 of 15  dealer 1:random
  0:heuristic  10♥ 8♠
  1:random     2♥ Jester
  2:random     K♦ 9♥
  3:heuristic  3♠ Jester
  trump card Wizard  trump ♠ spades (chosen by the dealer, 1:random)
  bids: 2:random 0, 3:heuristic 1, 0:heuristic 1, 1:random 2
  trick  1: 2:K♦  3:3♠  0:8♠  1:2♥  → 0:heuristic
  trick  2: 0:10♥  1:Jester  2:9♥  3:Jester  → 0:heuristic
  0:heuristic  bid 1, won 2  -10  total 10
  1:random     bid 2, won 0  -20  total 0
  2:random     bid 0, won 0  +20  total 40
  3:heuristic  bid 1, won 0  -10  total 20

"""
    assert any(s in out for s in "♣♦♥♠")


@pytest.mark.parametrize(("options", "trump"), [
    ((), "trump=clubs (turned 4♣)"),  # seed 3 turns the 4 of clubs
    (("--option", "trump=H"), "trump=hearts (fixed)"),
])
def test_a_trumps_header_names_the_trump_in_force(
        capsys: pytest.CaptureFixture[str], options: tuple[str, ...], trump: str) -> None:
    code, out, _ = run(capsys, "play", "--game", "trumps", "--players", "3", "--seed", "3",
                       *options)
    assert code == 0
    header = out.splitlines()[0]
    assert header.startswith(f"Trumps  seed 3  (players=3, {trump}, draw=true, ")
    assert "none" not in header


def test_play_writes_a_record_that_verifies(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "game.json"
    code, _, _ = run(capsys, "play", "--game", "trumps", "--players", "3", "--seed", "9",
                     "--option", "announce=true", "--option", "trump=H",
                     "--record", str(path), "--quiet")
    assert code == 0
    record = json.loads(path.read_text())
    assert record["options"] == {"players": 3, "trump": "H", "draw": True, "announce": True}
    assert record["seed"] == 9
    code, out, _ = run(capsys, "verify", str(path))
    assert code == 0 and "ok (1 record)" in out


def test_same_seed_same_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for p in paths:
        assert run(capsys, "play", "--game", "wizard", "--players", "3", "--seed", "77",
                   "--record", str(p), "--quiet")[0] == 0
    first, second = (json.loads(p.read_text()) for p in paths)
    # the timing is measured, not dealt: everything else is the same
    assert len(first.pop("timing")["wall_ms"]) == len(second.pop("timing")["wall_ms"]) == 3
    assert first == second


def test_verify_names_the_first_discrepancy(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.json"
    run(capsys, "play", "--game", "wizard", "--players", "4", "--seed", "1",
        "--record", str(good), "--quiet")
    record = json.loads(good.read_text())
    trick = record["rounds"][2]["tricks"][1]
    trick["winner"] = (trick["winner"] + 1) % 4
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text() + json.dumps(record) + "\n")
    code, out, err = run(capsys, "verify", str(good), str(bad))
    assert code == 1
    assert "ok (1 record)" in out
    assert err.startswith(f"{bad}:2: round 3, trick 2, seat ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(("argv", "expected"), [
    (["play", "--game", "chess"], "unknown game 'chess'; allowed: wizard, trumps"),
    (["play", "--game", "wizard", "--players", "7"], "expected an integer 3..6"),
    (["play", "--game", "wizard", "--option", "hook=true"], "allowed: players, hook_rule"),
    (["play", "--game", "wizard", "--option", "hook_rule=yes"], "expected true or false"),
    (["play", "--game", "trumps", "--option", "trump=X"], "one of C, D, H, S or none"),
    (["play", "--game", "wizard", "--bots", "random,random"], "2 bots for 4 players"),
    (["play", "--game", "wizard", "--bots", "random,random,alphago,random"],
     "unknown bot 'alphago'; allowed: random, heuristic"),
    (["play"], "the following arguments are required: --game"),
    (["verify", "/nonexistent/record.json"], "cannot read"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], expected: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(capsys, *argv)
    assert code == 2
    assert expected in err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err


def test_console_script_runs() -> None:
    done = subprocess.run([sys.executable, "-m", "arena", "play", "--game", "trumps",
                           "--seed", "3", "--quiet"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "Final standings" in done.stdout


def test_an_unreachable_bot_stops_the_game_before_it_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = f"unix:{tmp_path}/nobody.sock"
    code, out, err = run(capsys, "play", "--game", "trumps", "--startup-ms", "300",
                         "--bots", f"{spec},random,random,random",
                         "--record", str(tmp_path / "r.json"))
    assert code == 1 and out == ""
    assert err.startswith(f"arena play: bot seat0 ({spec}): not serving after the start-up")
    assert err.count("\n") == 1
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("command", ["play", "leaderboard"])
def test_output_an_ascii_terminal_cannot_hold_is_escaped_not_an_error(
        command: str, tmp_path: Path) -> None:
    """A suit symbol or a name on an ASCII stdout (an old locale, a pipe with
    PYTHONIOENCODING=ascii) is written as an escape, never an internal error."""
    env = {"PYTHONIOENCODING": "ascii", "PATH": "/usr/bin:/bin"}
    if command == "play":
        argv = ["play", "--game", "wizard", "--seed", "3", "--bots",
                "heuristic,random,heuristic,random"]
    else:
        record = tmp_path / "t.toml"
        record.write_text('name = "ascii ♠"\ngame = "trumps"\nseats = 2\nseed = 1\n'
                          '[options]\ndraw = false\n[schedule]\ndeals = 1\n'
                          '[[bots]]\nname = "a"\nspec = "random"\n'
                          '[[bots]]\nname = "b"\nspec = "heuristic"\n')
        assert main(["tournament", str(record), "--out", str(tmp_path / "out"),
                     "--resamples", "10"]) == 0
        argv = ["leaderboard", str(tmp_path / "out")]
    done = subprocess.run([sys.executable, "-m", "arena", *argv], capture_output=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert b"internal error" not in done.stderr
    assert b"\\u" in done.stdout or b"\\x" in done.stdout  # the symbols, escaped


def test_each_subcommands_help_line_is_its_own_parsers() -> None:
    """``arena --help`` lists the subcommands from a table (their modules are imported only
    when one runs); each line must be the one the subcommand's own parser gives."""
    from arena import cli

    def help_lines(parser: object) -> dict[str, str]:
        action = next(a for a in parser._actions  # type: ignore[attr-defined]
                      if a.dest == "command")
        return {choice.dest: choice.help for choice in action._choices_actions}

    full = cli._parser([], full=True)
    assert help_lines(full) == cli._HELP
    assert set(cli._HELP) == set(cli.COMMANDS)
    for name in cli._HELP:  # the chosen one built in full, the others by name and help
        assert help_lines(cli._parser([name])) == cli._HELP


def test_help_imports_no_subcommand() -> None:
    """``arena --help`` and a command's start import only the command chosen: not trio,
    grpc, numpy or the league for ``--help``, not the league for ``verify``."""
    probe = ("import sys, runpy; sys.argv = ['arena', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('arena', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('trio', 'grpc', 'numpy', 'arena'))), file=sys.stderr)")

    def imported(*argv: str) -> set[str]:
        done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True,
                              text=True, timeout=60)
        return set(done.stderr.splitlines()[-1].split())

    shown = imported("--help")
    assert not shown & {"trio", "grpc", "numpy", "arena.league", "arena.cli.checkbot"}
    verify = imported("verify", "/nonexistent")
    assert "arena.cli.records" in verify
    assert not verify & {"arena.league", "arena.cli.league", "arena.cli.checkbot", "grpc"}
