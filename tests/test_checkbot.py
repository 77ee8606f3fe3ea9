"""``arena check-bot``: the scripted situations are what they claim, well-behaved bots pass,
misbehaving ones fail the right check for the right reason. Real bot processes throughout;
the misbehaving bots are in tests/checkbot_bots/."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import REPO, bot_processes, children, wait_until

from arena.checkbot.checker import (
    SIGTERM_BUSY_S,
    SIGTERM_LIMIT_S,
    percentile,
    report_json,
    run_checks,
)
from arena.checkbot.situations import SITUATIONS, Position, Situation
from arena.cli.checkbot import add_parser, cmd_check_bot
from arena.model.spec import BotSpec
from arena.proc.cgroup import limit_mechanism
from arena.proc.tasks import describe_processes, on_the_way
from arena.rules import Decision, View
from arena.rules.cards import JESTER, WIZARD

BOTS = Path(__file__).resolve().parent / "checkbot_bots"


def python_bot(path: Path) -> str:
    return f"cmd:python {shlex.quote(str(path))}"


RANDOM_BOT = python_bot(REPO / "sample_bots/python/random_bot.py")
HEURISTIC_BOT = python_bot(REPO / "sample_bots/python/heuristic_bot.py")


@pytest.fixture
def sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private temporary folder for bot sockets and logs; afterwards no bot process the
    checks started may be left (running or unreaped), nor its socket folder."""
    tmp = Path(tempfile.mkdtemp(prefix="cb-", dir="/tmp"))  # short: unix socket paths
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    try:
        yield tmp
        left = bot_processes(tmp)
        assert not left, f"bot processes left running: {left}"
        assert not children(os.getpid()), "unreaped children"
        assert not list(tmp.glob("arena-bot-*")), "bot socket folders left"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_bot(capsys: pytest.CaptureFixture[str], folder: Path,
              *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="arena")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["check-bot", *argv, "--log-dir", str(folder / "logs")])
    code = cmd_check_bot(args)
    out, err = capsys.readouterr()
    return code, out, err


def check_bot_json(capsys: pytest.CaptureFixture[str], folder: Path,
                   *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, err = check_bot(capsys, folder, *argv, "--json")
    assert err == ""
    return code, json.loads(out)


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {(f"{c['game']}: " if c["game"] else "") + c["name"]: c for c in report["checks"]}


def situation(game: str, title: str) -> Situation:
    return next(s for s in SITUATIONS if s.game == game and s.title == title)


def views(game: str, title: str) -> list[View]:
    out = []
    for position in situation(game, title).build():
        g = position.replay()
        assert g.to_move is not None
        out.append(g.view(g.to_move))
    return out


# -- the situations, without a bot ------------------------------------------------------


def suits_of(cards: tuple[int, ...]) -> set[int]:
    return {c >> 4 for c in cards if c < WIZARD}


def test_led_jester_frees_the_next_seat_and_its_card_sets_the_suit() -> None:
    after_jester, after_two = views("wizard", "led Jester")
    assert after_jester.trick.cards == (JESTER,)
    assert set(after_jester.legal) == set(after_jester.hand)
    assert len(suits_of(after_jester.hand)) >= 2
    jester, card = after_two.trick.cards
    assert jester == JESTER and card < WIZARD
    led = card >> 4
    assert set(after_two.legal) < set(after_two.hand)
    assert len([c for c in after_two.legal if c < WIZARD]) >= 2
    assert all(c >> 4 == led for c in after_two.legal if c < WIZARD)
    assert {c for c in after_two.hand if c >= WIZARD} <= set(after_two.legal)


def test_led_wizard_allows_anything() -> None:
    (view,) = views("wizard", "led Wizard")
    assert view.trick.cards == (WIZARD,)
    assert set(view.legal) == set(view.hand) and len(suits_of(view.hand)) >= 2


def test_follow_suit_restricts_and_void_frees() -> None:
    (follow,) = views("wizard", "follow suit")
    led = follow.trick.cards[0] >> 4
    assert set(follow.legal) < set(follow.hand)
    assert len(follow.legal) >= 2 and all(c >> 4 == led or c >= WIZARD for c in follow.legal)
    (void,) = views("wizard", "void in the led suit")
    assert void.trick.cards[0] >> 4 not in suits_of(void.hand)
    assert set(void.legal) == set(void.hand) and len(suits_of(void.hand)) >= 2
    (tfollow,) = views("trumps", "follow suit")
    tled = tfollow.trick.cards[0] >> 4
    assert set(tfollow.legal) < set(tfollow.hand) and len(tfollow.legal) >= 2
    assert all(c >> 4 == tled for c in tfollow.legal)
    (tvoid,) = views("trumps", "void in the led suit")
    assert tvoid.trick.cards[0] >> 4 not in suits_of(tvoid.hand)
    assert set(tvoid.legal) == set(tvoid.hand)


def test_hook_rule_leaves_out_the_dealers_forbidden_bid() -> None:
    (view,) = views("wizard", "hook rule")
    assert view.options["hook_rule"] and view.decision is Decision.BID
    assert view.seat == view.dealer
    forbidden = view.round - sum(b for b in view.bids if b is not None)
    assert 0 <= forbidden <= view.round
    assert forbidden not in view.legal and len(view.legal) == view.round


def test_wizard_turned_asks_the_dealer_for_a_suit() -> None:
    (view,) = views("wizard", "Wizard turned")
    assert view.decision is Decision.TRUMP and view.seat == view.dealer
    assert view.trump_card == WIZARD and view.trump is None and view.legal == (0, 1, 2, 3)


def test_last_wizard_round_has_no_trump() -> None:
    bid, lead = views("wizard", "last round, no trump")
    for view in (bid, lead):
        assert view.players == 3 and view.round == view.rounds == 20
        assert view.trump_card is None and view.trump is None
    assert bid.decision is Decision.BID and bid.legal == tuple(range(21))
    assert lead.decision is Decision.PLAY and len(lead.hand) == 20 and not lead.trick.cards


def test_trumps_announce_ranges_over_the_games_tricks() -> None:
    first, dealer = views("trumps", "announce")
    for view in (first, dealer):
        assert view.decision is Decision.BID and view.options["announce"]
        assert view.legal == tuple(range(view.tricks_in_round + 1))
    assert dealer.seat == dealer.dealer
    assert [b is None for b in dealer.bids] == [s == dealer.seat for s in range(4)]


def test_positions_replay_to_the_same_game() -> None:
    for s in SITUATIONS:
        for position in s.build():
            assert isinstance(position, Position)
            a, b = position.replay(), position.replay()
            assert a.to_move == b.to_move and a.view(a.to_move) == b.view(b.to_move)  # type: ignore[arg-type]


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50 and percentile(values, 95) == 95
    assert percentile(values, 100) == 100 and percentile([7.0], 95) == 7


# -- usage errors: no process started ---------------------------------------------------


@pytest.mark.parametrize(("argv", "message"), [
    (["random"], "built-in bot"),
    (["nonsense"], "unknown bot"),
    ([RANDOM_BOT, "--move-ms", "0"], "--move-ms"),
    ([RANDOM_BOT, "--games", "-1"], "--games"),
])
def test_usage_errors_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path, argv: list[str],
                                              message: str) -> None:
    code, out, err = check_bot(capsys, tmp_path, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("arena check-bot: ") and message in err
    assert not (tmp_path / "logs").exists()


def test_wired_into_the_arena_command(capsys: pytest.CaptureFixture[str]) -> None:
    from arena import cli

    assert "check-bot" in cli.COMMANDS
    assert cli.main(["check-bot", "random"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("arena check-bot: 'random' is a built-in bot; give cmd:COMMAND, "
                   "grpc://HOST:PORT, grpcs://HOST:PORT or unix:PATH\n")


# -- real bots --------------------------------------------------------------------------


def test_heuristic_bot_passes_every_check(capsys: pytest.CaptureFixture[str],
                                          sandbox: Path) -> None:
    code, out, err = check_bot(capsys, sandbox, HEURISTIC_BOT)
    assert code == 0, out
    assert err == "" and "FAIL" not in out
    assert "name     heuristic-py" in out and "games    wizard, trumps" in out
    for s in SITUATIONS:
        assert f"PASS  {s.game}: {s.title} " in out
    for game in ("wizard", "trumps"):
        for n in (1, 2):
            assert f"PASS  {game}: game {n} " in out
    for name in ("health", "hand-shake", "process", "SIGTERM"):
        assert f"PASS  {name} " in out
    # the SDK declines RoundEnded for a bot that does not override round_ended
    assert any(line.startswith("PASS  RoundEnded ") and "declined in the hand-shake "
               "(skip_round_ended)" in line for line in out.splitlines())
    assert "latency over" in out and " p50 " in out and " p95 " in out and " max " in out
    assert "all 19 checks passed" in out


def test_random_bot_passes_and_the_json_report(capsys: pytest.CaptureFixture[str],
                                               sandbox: Path) -> None:
    code, report = check_bot_json(capsys, sandbox, RANDOM_BOT, "--games", "1")
    assert code == 0 and report["ok"] is True
    assert report["bot"] == {"name": "random-py", "version": "1.0",
                             "author": "trick-arena samples", "protocol_version": 1,
                             "games": ["wizard", "trumps"]}
    checks = by_name(report)
    assert all(c["ok"] for c in checks.values())
    assert len(checks) == 2 + len(SITUATIONS) + 2 + 3  # RoundEnded, process, SIGTERM
    latency = report["latency_ms"]
    assert latency["calls"] > 100 and 0 < latency["p50"] <= latency["p95"] <= latency["max"]


def node_modules_missing() -> list[str]:
    """The Node sample's dependencies not installed in its node_modules."""
    node = REPO / "sample_bots/node"
    try:
        wanted = json.loads((node / "package.json").read_text()).get("dependencies", {})
    except OSError:
        return ["package.json"]
    return [name for name in wanted if not (node / "node_modules" / name).is_dir()]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(bool(node_modules_missing()),
                    reason="the Node sample's node_modules is incomplete (run npm ci there)")
def test_node_sample_passes(capsys: pytest.CaptureFixture[str], sandbox: Path) -> None:
    spec = f"cmd:node {shlex.quote(str(REPO / 'sample_bots/node/bot.js'))}"
    # it carries its own proto/: its sandbox needs no --read-only
    code, report = check_bot_json(capsys, sandbox, spec, "--games", "1")
    failed = [c for c in report["checks"] if not c["ok"]]
    assert code == 0 and not failed, failed
    assert report["bot"]["games"] == ["wizard", "trumps"]


def test_illegal_card_fails_the_follow_suit_checks(sandbox: Path) -> None:
    spec = python_bot(BOTS / "illegal_bot.py")
    report = trio.run(run_checks, BotSpec.parse(spec), spec, None, 1000, 1, sandbox)
    assert not report.ok
    checks = by_name(report_json(report))
    for name in ("wizard: follow suit", "trumps: follow suit", "wizard: led Jester"):
        assert not checks[name]["ok"]
        # the referee's own explanation (arena.play.referee.why_illegal): the action, then
        # the rules' reason, then the legal actions
        assert re.search(r": illegal: play [A-Z0-9]+: .*must follow.* \(legal ",
                         checks[name]["reason"]), checks[name]["reason"]
    for game in ("wizard", "trumps"):
        assert not checks[f"{game}: game 1"]["ok"]
        assert "faults (forfeited)" in checks[f"{game}: game 1"]["reason"]
        assert "illegal" in checks[f"{game}: game 1"]["reason"]
    for name in ("wizard: led Wizard", "wizard: void in the led suit", "wizard: hook rule",
                 "wizard: Wizard turned", "trumps: announce", "trumps: void in the led suit",
                 "health", "hand-shake", "process"):
        assert checks[name]["ok"], checks[name]
    assert report.pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(report.pid, 0)  # the bot was ended (and reaped)


def test_slow_bot_fails_with_timeout(capsys: pytest.CaptureFixture[str],
                                     sandbox: Path) -> None:
    code, out, _ = check_bot(capsys, sandbox, python_bot(BOTS / "slow_bot.py"),
                             "--game", "wizard", "--move-ms", "200", "--games", "1")
    assert code == 1
    lines = {line.split("  ")[1].strip(): line for line in out.splitlines()
             if line.startswith(("PASS", "FAIL"))}
    assert lines["wizard: follow suit"].startswith("FAIL")
    assert "timeout: no answer within 200 ms" in lines["wizard: follow suit"]
    assert "timeout" in lines["wizard: game 1"] and lines["wizard: game 1"].startswith("FAIL")
    assert lines["wizard: hook rule"].startswith("PASS")  # it bids at once
    assert not any(name.startswith("trumps") for name in lines)
    assert "checks failed" in out and "latency over" in out


def test_a_bot_is_checked_only_in_the_games_it_claims(capsys: pytest.CaptureFixture[str],
                                                      sandbox: Path) -> None:
    spec = python_bot(BOTS / "wizard_only_bot.py")
    code, report = check_bot_json(capsys, sandbox, spec, "--games", "1")
    assert code == 0 and report["bot"]["games"] == ["wizard"]
    assert {c["game"] for c in report["checks"]} == {None, "wizard"}
    code, out, err = check_bot(capsys, sandbox, spec, "--game", "trumps")
    assert code == 1 and out == ""
    assert err.count("\n") == 1
    assert "wizard-only" in err and "does not play trumps (it plays wizard)" in err


def test_a_bot_that_cannot_start_is_one_line_naming_it(capsys: pytest.CaptureFixture[str],
                                                       sandbox: Path) -> None:
    spec = f"cmd:{shlex.quote(sys.executable)} -c 'raise SystemExit(3)'"
    code, out, err = check_bot(capsys, sandbox, spec)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "exited with code 3" in err and "SystemExit(3)" in err
    code, out, err = check_bot(capsys, sandbox, spec, "--json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False and report["bot"] is None
    assert "exited with code 3" in report["error"] and err.count("\n") == 1


def test_a_crashing_bot_fails_with_crash_and_the_process_check(
        capsys: pytest.CaptureFixture[str], sandbox: Path) -> None:
    code, report = check_bot_json(capsys, sandbox, python_bot(BOTS / "crash_bot.py"),
                                  "--game", "trumps", "--games", "1")
    checks = by_name(report)
    assert code == 1 and report["ok"] is False
    assert checks["trumps: announce"]["ok"]  # it bids without dying
    assert not checks["trumps: follow suit"]["ok"]
    # the detail is the exit code, or the broken connection when that is seen first
    assert ": crash: " in checks["trumps: follow suit"]["reason"]
    assert not checks["trumps: game 1"]["ok"] and "crash" in checks["trumps: game 1"]["reason"]
    assert not checks["process"]["ok"] and "restarted" in checks["process"]["reason"]
    assert report["log"] and Path(report["log"]).is_file()


def test_a_failed_notification_fails_the_game_check(capsys: pytest.CaptureFixture[str],
                                                     sandbox: Path) -> None:
    code, report = check_bot_json(capsys, sandbox, python_bot(BOTS / "deaf_bot.py"),
                                  "--game", "trumps", "--games", "1")
    checks = by_name(report)
    assert code == 1
    assert [name for name, c in checks.items() if not c["ok"]] == ["trumps: game 1",
                                                                  "RoundEnded"]
    assert "RoundEnded failed: UNKNOWN" in checks["trumps: game 1"]["reason"]


@pytest.mark.parametrize(("hang", "expected"), [
    (False, "RoundEnded  trumps seed 7001, round 1, seat 0: answered with status UNKNOWN"),
    (True, "RoundEnded  trumps seed 7001, round 1, seat 0: no answer within 300 ms"),
])
def test_a_bot_that_asks_for_round_ended_must_take_it(
        capsys: pytest.CaptureFixture[str], sandbox: Path, hang: bool, expected: str) -> None:
    # no complete games: the RoundEnded check alone finds it, in one line naming it
    spec = python_bot(BOTS / "deaf_bot.py") + (" --hang" if hang else "")
    code, out, _ = check_bot(capsys, sandbox, spec, "--game", "trumps", "--games", "0",
                             "--move-ms", "300")
    assert code == 1
    failed = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1, out
    assert " ".join(failed[0].split()).startswith("FAIL " + " ".join(expected.split()))
    assert "did not decline RoundEnded (skip_round_ended in its hand-shake)" in failed[0]
    assert "1 of 8 checks failed" in out


def sigterm_failure(capsys: pytest.CaptureFixture[str], sandbox: Path, bot: str,
                    confined: bool) -> tuple[int, str]:
    """check-bot on ``bot`` (sandboxed or not), which must fail the SIGTERM check and only
    it: after how many seconds it was judged, and what its processes were doing then."""
    if confined and not limit_mechanism().cgroups:
        pytest.skip("no cgroups here: SIGTERM reaches bubblewrap, which ends the sandbox "
                    "whatever the bot does")
    flags = () if confined else ("--no-sandbox",)
    code, out, _ = check_bot(capsys, sandbox, python_bot(BOTS / bot), "--game", "trumps",
                             "--games", "0", *flags)
    assert code == 1
    failed = [" ".join(line.split()) for line in out.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1, out
    said = re.fullmatch(r"FAIL SIGTERM still running (\d+) s after SIGTERM \((.*)\); a bot "
                        r"must exit promptly on SIGTERM \(the arena sends SIGKILL 1 s after "
                        r"it\)", failed[0])
    assert said is not None, failed[0]
    return int(said.group(1)), said.group(2)


@pytest.mark.parametrize("confined", [False, True])
def test_a_bot_that_ignores_sigterm_fails_the_sigterm_check(
        capsys: pytest.CaptureFixture[str], sandbox: Path, confined: bool) -> None:
    seconds, doing = sigterm_failure(capsys, sandbox, "stubborn_bot.py", confined)
    assert SIGTERM_LIMIT_S <= seconds < SIGTERM_BUSY_S  # asleep: not waited for
    # what its processes were doing says whose the fault is: thawed and asleep, its own
    state = re.fullmatch(r"\d+ process(?:es)?, threads ([A-Za-z] x\d+ ?)+(; freezer (\w+))?",
                         doing)
    assert state is not None and "S x" in doing, doing
    assert state.group(3) in (None, "THAWED"), doing


@pytest.mark.parametrize("confined", [False, True])
def test_a_bot_that_spins_on_sigterm_fails_without_the_busy_machine_wait(
        capsys: pytest.CaptureFixture[str], sandbox: Path, confined: bool) -> None:
    """Runnable at the limit, as a bot on a busy machine is, but using CPU: not given the
    wait for a busy machine (:data:`arena.checkbot.checker.SIGTERM_BUSY_S`), failed once
    it has had a second of CPU since the signal."""
    seconds, doing = sigterm_failure(capsys, sandbox, "spinning_bot.py", confined)
    assert SIGTERM_LIMIT_S <= seconds < SIGTERM_BUSY_S  # judged by its CPU
    assert "R x" in doing, doing  # runnable: it spins


def test_a_process_on_its_way_is_runnable_or_in_the_kernel() -> None:
    """:func:`arena.proc.cgroup.on_the_way`, the busy-machine wait's test, on real
    processes: one asleep is not on its way, one spinning is, one gone is not."""
    asleep = subprocess.Popen(["sleep", "60"])
    spinning = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert wait_until(lambda: describe_processes([asleep.pid]).endswith("S x1"), 10)
        assert not on_the_way([asleep.pid])
        assert wait_until(lambda: on_the_way([spinning.pid]), 10)
        assert on_the_way([asleep.pid, spinning.pid])
    finally:
        for proc in (asleep, spinning):
            proc.kill()
            proc.wait()
    assert not on_the_way([asleep.pid, spinning.pid])  # reaped: no such process


def test_sigterm_stops_the_checks_as_ctrl_c_does(sandbox: Path) -> None:
    """SIGTERM to a running check-bot (what a supervisor sends): ``arena: interrupted``,
    exit 130, and the bot process and its socket folder gone (the fixture checks)."""
    env = dict(os.environ, TMPDIR=str(sandbox))
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena", "check-bot", "--no-sandbox",
         python_bot(BOTS / "slow_bot.py") + " --note", "--game", "wizard",
         "--move-ms", "5000", "--log-dir", str(sandbox / "logs")],
        cwd=REPO, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_until(lambda: bool(bot_processes(sandbox)), 20), "no bot was started"
        # into the checks: the bot has been asked to play (its log says so)
        assert wait_until(lambda: any(
            "asked to play" in log.read_text(errors="replace")
            for log in (sandbox / "logs").rglob("*") if log.is_file()), 20), "never asked"
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert err == "arena: interrupted\n"


def test_a_leagues_options_are_its_first_complete_game(sandbox: Path) -> None:
    """A league checks a submission first with its own game options (6 players and the
    hook rule here); the other complete games keep check-bot's rotation."""
    spec = python_bot(REPO / "sample_bots" / "python" / "random_bot.py")

    async def check() -> Any:
        return await run_checks(BotSpec.parse(spec), spec, ("wizard",), 1000, 2, sandbox,
                                first_options={"wizard": {"players": 6, "hook_rule": True}})

    checks = by_name(report_json(trio.run(check)))
    first, second = checks["wizard: game 1"], checks["wizard: game 2"]
    assert first["ok"] and "players=6" in first["reason"], first
    assert "hook_rule=true" in first["reason"], first
    assert "players=5" in second["reason"], second  # GAME_OPTIONS' second entry


@pytest.mark.parametrize(("argv", "message"), [
    (["--option", "hook_rule=true"], "--option needs --game (or --from)"),
    (["--game", "wizard", "--option", "colour=red"], "unknown option 'colour' for wizard"),
    (["--game", "wizard", "--players", "9"], "players"),
    (["--game", "trumps", "--from", "FILE"], "--game trumps, but"),
])
def test_the_game_the_bot_will_play_is_checked_for_sense_first(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str],
        message: str) -> None:
    league = tmp_path / "league.toml"
    league.write_text('name = "cup"\ngame = "wizard"\nseats = 6\n')
    argv = [str(league) if a == "FILE" else a for a in argv]
    code, out, err = check_bot(capsys, tmp_path, RANDOM_BOT, *argv)
    assert code == 2 and out == "", out
    assert err.count("\n") == 1 and message in err, err


def test_check_bot_plays_the_game_of_a_league_file_first(capsys: pytest.CaptureFixture[str],
                                                         sandbox: Path) -> None:
    """``--from FILE``: the league's game, seats, options and time per move first (as
    the league's own checks of a submission do); ``--players`` and ``--option`` alike."""
    league = sandbox / "league.toml"
    league.write_text('name = "cup"\ngame = "wizard"\nseats = 6\n[options]\nhook_rule = true\n'
                      '[time]\nmove_ms = 1500\n')
    code, report = check_bot_json(capsys, sandbox, RANDOM_BOT, "--games", "2",
                                  "--from", str(league))
    checks = by_name(report)
    assert code == 0 and report["ok"], checks
    assert {c["game"] for c in report["checks"] if c["game"]} == {"wizard"}
    first, second = checks["wizard: game 1"], checks["wizard: game 2"]
    assert "players=6" in first["reason"] and "hook_rule=true" in first["reason"], first
    assert "players=6" not in second["reason"], second  # then check-bot's own rotation
    code, report = check_bot_json(capsys, sandbox, RANDOM_BOT, "--games", "1", "--game",
                                  "trumps", "--players", "6", "--option", "announce=true")
    first = by_name(report)["trumps: game 1"]
    assert code == 0 and "players=6" in first["reason"] and "announce=true" in first["reason"]


def test_a_passing_check_leaves_nothing_in_the_temporary_folder(
        sandbox: Path) -> None:
    """Without --log-dir the logs go to a temporary folder: removed when every check
    passes (an SDK bot always logs a line), kept and named when one fails."""
    env = dict(os.environ, TMPDIR=str(sandbox), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "arena", "check-bot", "--no-sandbox",
                           "--games", "1", "--game", "trumps", RANDOM_BOT], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list(sandbox.glob("trick-arena-check-bot-*"))
    failing = python_bot(BOTS / "illegal_bot.py")
    done = subprocess.run([sys.executable, "-m", "arena", "check-bot", "--no-sandbox",
                           "--games", "1", "--game", "wizard", failing], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    kept = list(sandbox.glob("trick-arena-check-bot-*"))
    assert len(kept) == 1 and f"the bot's log is kept in {kept[0]}" in done.stdout
