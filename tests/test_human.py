"""A seat played by a person in the terminal (``arena play --bots human,...``).

The reasons given for an illegal action from a seat's view must be the engine's own
(compared with :meth:`Game.check` over random games). The terminal seat is driven as a
person would: a real ``arena play`` subprocess, whose prompts are read and answered on
its standard input, through whole games, with refused answers on the way; end of input,
Ctrl-C and a time limit end or continue the game as documented (docs/playing.md).
"""

from __future__ import annotations

import json
import os
import random
import re
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

import pytest
import trio
import trio.testing
from conftest import (
    REPO,
    SAMPLE_BOTS,
    Sandbox,
    arena_command,
    arena_in_process,
    bot_cmd,
    decisions_of,
    examples,
    gone,
    read_line,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.bots import make_bot
from arena.cli.common import split_bots
from arena.human.terminal import AnswerError, parse_answer
from arena.model.record import verify_record
from arena.play.players import LocalPlayer
from arena.play.referee import Abandon, TimeControl, play_game
from arena.rules import Decision, IllegalAction, new_game
from arena.rules.cards import JESTER, WIZARD, format_card, format_suit, parse_card
from arena.rules.reasons import illegal_reason

CONFIGS = ([("wizard", {"players": n, "hook_rule": h}) for n in (3, 4, 6) for h in (False, True)]
           + [("trumps", {"players": n, "announce": a, "draw": d})
              for n in (2, 4, 7) for a in (False, True) for d in (False, True)])


# -- the reasons ------------------------------------------------------------------------


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=st.sampled_from(CONFIGS), seed=st.integers(0, 2**32),
       moves_seed=st.integers(0, 2**32))
def test_reasons_from_the_view_are_the_engines(config: tuple[str, dict[str, Any]], seed: int,
                                               moves_seed: int) -> None:
    """At every decision of a random game, every action the seat might name (each card it
    holds and a few it does not, each bid and suit, and some that are none) is refused
    from the view alone exactly when the engine refuses it, with the engine's reason."""
    name, options = config
    game = new_game(name, options, seed)
    moves = random.Random(moves_seed)
    deck = sorted(set(range(16, 64)) | {WIZARD, JESTER})
    while not game.is_over:
        seat = game.to_move
        assert seat is not None
        view = game.view(seat)
        if view.decision is Decision.PLAY:
            candidates = sorted(set(view.hand)) + moves.sample(
                [c for c in deck if c not in view.hand], 3)
        elif view.decision is Decision.BID:
            candidates = list(range(-1, view.tricks_in_round + 3))
        else:
            candidates = [-1, 0, 1, 2, 3, 4]
        other = game.view((seat + 1) % game.players)
        for action in candidates:
            reason = illegal_reason(view, action)
            assert illegal_reason(other, action) == "it is not your turn"
            if action in view.legal:
                assert reason is None
                continue
            with pytest.raises(IllegalAction) as refused:
                game.check(action)
            assert str(refused.value) == f"seat {seat}: {reason}"
        game.apply(moves.choice(view.legal))


def test_answers_name_cards_bids_and_suits() -> None:
    game = new_game("trumps", {"players": 3, "announce": True, "draw": False}, 5)
    view = game.view(1)
    assert parse_answer(view, " 3 ") == 3
    with pytest.raises(AnswerError, match=r"announcement 8 is outside 0\.\.7"):
        parse_answer(view, "8")
    with pytest.raises(AnswerError, match="is not a number: type your announcement"):
        parse_answer(view, "H7")
    for _ in range(3):  # every seat announces 1
        game.apply(1)
    view = game.view(1)  # to lead: every card is playable
    hand = view.hand
    assert parse_answer(view, "1") == hand[0]
    assert parse_answer(view, str(len(hand))) == hand[-1]
    first = format_card(hand[0])
    assert parse_answer(view, first.lower()) == hand[0]
    with pytest.raises(AnswerError, match="there is no card 8"):
        parse_answer(view, "8")
    with pytest.raises(AnswerError, match="not a card"):
        parse_answer(view, "hearts")
    faces = [c for c in hand if c & 15 > 10]
    for card in faces:
        short = format_card(card)[0] + "?JQKA"[(card & 15) - 10]
        assert parse_answer(view, short) == card
    missing = next(c for c in range(18, 63) if (c & 15) >= 2 and c not in hand
                   and c & 15 <= 14)
    with pytest.raises(AnswerError, match="does not hold"):
        parse_answer(view, format_card(missing))
    # a card the game's deck does not have is refused saying what the letters mean
    with pytest.raises(AnswerError, match=r"^Trumps has no 1♠: its suits run 2\.\.14, with "
                                          r"J, Q, K, A for 11\.\.14 \(A highest\)$"):
        parse_answer(view, "S1")
    with pytest.raises(AnswerError, match=r"^Trumps has no Wizard: its deck is the standard"):
        parse_answer(view, "W")
    wizard = new_game("wizard", {"players": 3}, 1)
    while wizard.decision is not Decision.PLAY:
        wizard.apply(wizard.legal_actions()[0])
    view = wizard.view(wizard.to_move)  # type: ignore[arg-type]
    for answer in ("SA", "sa", "S14"):
        with pytest.raises(AnswerError, match=r"^Wizard has no A♠: its suits run 1\.\.13, "
                                              r"with J, Q, K for 11, 12, 13 \(K highest\), "
                                              r"and no ace$"):
            parse_answer(view, answer)
    king = next((c for c in view.hand if c & 15 == 13), None)
    if king is not None and king in view.legal:
        assert parse_answer(view, format_card(king)[0] + "K") == king
    # Wizard: the specials by name, and the dealer's trump suit by letter or name
    wizard = next(g for s in range(200)
                  if (g := new_game("wizard", {"players": 3}, s)).decision is Decision.TRUMP)
    view = wizard.view(wizard.to_move)  # type: ignore[arg-type]
    assert parse_answer(view, "h") == 2 and parse_answer(view, "Spades") == 3
    with pytest.raises(AnswerError, match="not a suit"):
        parse_answer(view, "W")
    with pytest.raises(AnswerError, match="not your turn"):
        parse_answer(wizard.view((view.seat + 1) % 3), "H")


def test_the_terminal_colours_cards_and_marks_the_card_now_winning() -> None:
    """Cards in the game printer's colours (rich styles, shown where the output is a
    terminal); in a trick in progress the card the rules say is winning is marked; Enter
    alone answers a decision with one legal action, and only such a one."""
    from arena.human.terminal import view_lines
    from arena.rules.wizard import wizard_trick_winner

    checked = 0
    for seed in range(40):
        game = new_game("wizard", {"players": 4}, seed)
        rng = random.Random(seed)
        while not game.is_over and checked < 25:
            seat = game.to_move
            assert seat is not None
            view = game.view(seat)
            if view.decision is Decision.PLAY and view.trick.cards:
                lines = dict(view_lines(view, ["a", "b", "c", "d"]))
                trick = lines["trick"]
                winner = wizard_trick_winner(view.trick.cards, view.trump)
                parts = trick.plain.split(": ", 1)[1].split(", ")
                assert [i for i, part in enumerate(parts) if "◀ winning" in part] == [winner]
                styles = {str(span.style) for span in trick.spans}
                assert styles & {"red", "green", "yellow", "blue", "bold magenta", "dim cyan"}
                checked += 1
            only = set(view.legal)
            if len(only) == 1:
                assert parse_answer(view, "") == next(iter(only))
            elif view.decision is not None:
                with pytest.raises(AnswerError, match="Enter alone takes an answer only"):
                    parse_answer(view, "  ")
            game.apply(rng.choice(game.legal_actions()))
        if checked >= 25:
            break
    assert checked == 25


# -- the terminal -------------------------------------------------------------------------

PROMPT = re.compile(r"(Your announcement|Your bid|Trump suit|Your card)[^\n]*: $")


class Terminal:
    """``arena play`` with a human seat: its output read up to each prompt, answers
    written to its standard input."""

    def __init__(self, sandbox: Sandbox, *argv: str) -> None:
        self.proc = subprocess.Popen(
            arena_command("play", "--no-sandbox", *argv), cwd=REPO,
            env=dict(sandbox.env, PYTHONUNBUFFERED="1"), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.out = ""

    def until_prompt(self, timeout: float = 30) -> str | None:
        """The output up to the next prompt (its text), or None when the program ended."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        start = len(self.out)
        while True:
            if PROMPT.search(self.out[start:]):
                text = self.out[start:]
                self.out += "\n"  # the next search starts after this prompt
                return text
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no prompt within {timeout} s: {self.out[-2000:]}"
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.out += chunk.decode()

    def answer(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{text}\n".encode())
        self.proc.stdin.flush()

    def finish(self, timeout: float = 30) -> tuple[int, str, str]:
        """Close the standard input and wait for the end: exit code, output, errors."""
        out, err = self.proc.communicate(timeout=timeout)
        self.out += out.decode()
        return self.proc.returncode, self.out, err.decode()

    def wait(self, timeout: float) -> tuple[int, str, str]:
        """Wait for the end with the standard input left open (nothing typed)."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self.out += chunk.decode()
        code = self.proc.wait(max(0.1, deadline - time.monotonic()))
        return code, self.out, self.proc.stderr.read().decode()

    def kill(self) -> None:
        """End the program if it still runs, and close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
        self.proc.wait(10)


def _hand(screen: str) -> list[str]:
    line = screen[screen.rindex("your hand:"):].splitlines()[0]
    return re.findall(r"\d+\) \S+ (\S+)", line)


def _playable(screen: str) -> list[str]:
    return screen[screen.rindex("playable:"):].split(":", 1)[1].strip(" :)\n").split()


@pytest.mark.parametrize(("game", "options"), [
    ("trumps", ["--players", "3", "--option", "announce=true", "--option", "draw=false"]),
    ("wizard", ["--players", "6", "--option", "hook_rule=true"]),
])
def test_a_whole_game_in_the_terminal(arena_sandbox: Sandbox, game: str,
                                      options: list[str]) -> None:
    """Every decision of the human seat is prompted with the state and answered; wrong
    answers (a bid out of range, a card not held, a card that does not follow suit,
    words that name nothing) are refused with the rules' reason and asked again; the
    record holds exactly the answers taken."""
    path = arena_sandbox.tmp / "game.json"
    bots = ["human", "heuristic", "random"] + (["heuristic", "random", "heuristic"]
                                               if game == "wizard" else [])
    term = Terminal(arena_sandbox, "--game", game, *options, "--seed", "11", "--bots",
                    ",".join(bots), "--record", str(path))
    taken: list[str] = []
    refusals: list[str] = []
    followed = False

    def step(answer: str) -> str | None:
        term.answer(answer)
        return term.until_prompt()

    shown_rounds: list[int] = []
    compact = 0
    forced = 0
    try:
        screen = term.until_prompt()
        while screen is not None:
            prompt = screen.splitlines()[-1]
            assert "your hand:" in screen
            head = re.search(r"^== (Round (\d+) of \d+|The hand) · dealer ", screen, re.M)
            if head:  # a round's first decision: the whole state
                assert "scores:" in screen
                shown_rounds.append(int(head.group(2) or 1))
            elif not screen.startswith("refused: "):  # within a round: only what changed
                assert "scores:" not in screen
                assert len(screen.splitlines()) <= 4, screen
                compact += 1
            if prompt.startswith(("Your bid", "Your announcement")):
                top = int(re.search(r"0\.\.(\d+)", prompt).group(1))  # type: ignore[union-attr]
                if not refusals:
                    again = step(str(top + 1))
                    assert again is not None and again.startswith("refused: "), again
                    refusals.append(again.splitlines()[0])
                screen = step("0")
                if screen is not None and screen.startswith("refused: "):
                    refusals.append(screen.splitlines()[0])  # the hook rule
                    taken.append("1")
                    screen = step("1")
                else:
                    taken.append("0")
                continue
            if prompt.startswith("Trump suit"):
                again = step("X")
                assert again is not None and again.startswith("refused: 'X' is not a suit")
                taken.append("S")
                screen = step("spades")
                continue
            hand = _hand(screen)
            enter = re.search(r"\(Enter: (\S+), the only one you may play\)", prompt)
            if enter:  # a forced card: Enter alone plays it
                forced += 1
                taken.append(enter.group(1))
                screen = step("")
                continue
            playable = _playable(screen)
            assert playable and set(playable) <= set(hand)
            if len(playable) > 1 and re.search(r"^   trick \d+ of \d+: \d", screen, re.M):
                assert screen.count("◀ winning") == 1  # the card now winning the trick
            unplayable = [c for c in hand if c not in playable]
            if unplayable and not followed:
                followed = True
                again = step(unplayable[0])
                assert again is not None and again.startswith("refused: must follow"), again
            card = playable[-1]
            taken.append(card)
            # by number in the hand, else by name (in lower case)
            screen = step(str(hand.index(card) + 1) if len(taken) % 2 else card.lower())
        code, out, err = term.finish()
    finally:
        term.kill()
    assert code == 0, err
    assert followed, "no decision where a card had to follow suit: choose another seed"
    assert compact and forced, (compact, forced)
    # the whole state once a round: 10 rounds of Wizard for 6 players, one hand of Trumps
    assert shown_rounds == list(range(1, (10 if game == "wizard" else 1) + 1)), shown_rounds
    assert refusals and "is outside 0.." in refusals[0]
    assert "Final standings" in out and f"record written to {path}" in out
    record = json.loads(path.read_text())
    verify_record(record)
    assert record["seats"][0] == "human" and not record["faults"]
    mine = []
    for step in decisions_of(record, 0):
        if step.decision is Decision.PLAY:
            mine.append(format_card(step.action))
        elif step.decision is Decision.TRUMP:
            mine.append(str(format_suit(step.action)))
        else:
            mine.append(str(step.action))
    assert mine == taken


def test_the_hand_is_shown_sorted_with_trump_bids_trick_and_scores(
        arena_sandbox: Sandbox) -> None:
    term = Terminal(arena_sandbox, "--game", "trumps", "--players", "3", "--option",
                    "announce=true", "--seed", "5", "--bots", "human,heuristic,random")
    try:
        screen = term.until_prompt()
        assert screen is not None
        hand = [parse_card(c) for c in _hand(screen)]
        assert hand == sorted(hand) and len(hand) == 7
        assert re.search(r"trump [♣♦♥♠] \w+ \(turned: ", screen)
        assert "announced: 0:human (you) -, 1:heuristic " in screen
        assert "scores: 0:human (you) 0, 1:heuristic 0, 2:random 0" in screen
        term.answer("2")
        screen = term.until_prompt()
        assert screen is not None
        trick = re.search(r"^   trick 1 of 17 \(stock: 31\): 1:heuristic .*$", screen, re.M)
        assert trick, screen
        assert trick.group(0).count("◀ winning") == 1
        assert "scores:" not in screen and "== " not in screen  # said once a round
    finally:
        term.kill()


def test_end_of_input_ends_the_game_in_one_line(arena_sandbox: Sandbox) -> None:
    """Input ends mid-game: one line, exit 1, no record, and the bot process is ended."""
    path = arena_sandbox.tmp / "game.json"
    term = Terminal(arena_sandbox, "--game", "wizard", "--players", "3", "--seed", "3",
                    "--bots", f"human,{bot_cmd(SAMPLE_BOTS / 'random_bot.py')},heuristic",
                    "--record", str(path))
    try:
        assert term.until_prompt() is not None
        code, _, err = term.finish()  # closes the standard input
    finally:
        term.kill()
    assert code == 1
    assert err.strip() == ("arena play: the human seat's input ended; the game was left "
                           "unfinished, no record written")
    assert not path.exists()


def test_ctrl_c_at_the_prompt_ends_cleanly(arena_sandbox: Sandbox) -> None:
    term = Terminal(arena_sandbox, "--game", "wizard", "--players", "3", "--seed", "3",
                    "--bots", f"{bot_cmd(SAMPLE_BOTS / 'random_bot.py')},human,heuristic")
    try:
        assert term.until_prompt() is not None
        pids = _children_of(term.proc.pid)
        assert pids, "the bot process was not found"
        os.killpg(term.proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        code, _, err = term.finish()
    finally:
        term.kill()
    assert code == 130
    assert err.strip() == "arena: interrupted"
    assert all(gone(p) for p in pids)


def _children_of(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                out.append(int(entry))
    return out


def test_a_time_limit_for_the_human_is_kept_by_the_referee(arena_sandbox: Sandbox) -> None:
    """With --human-ms, a person who does not answer is timed out like a bot: the
    referee plays the default action, and after max-faults the seat is forfeited."""
    path = arena_sandbox.tmp / "game.json"
    term = Terminal(arena_sandbox, "--game", "trumps", "--players", "3", "--option",
                    "draw=false", "--seed", "5", "--bots", "heuristic,human,random",
                    "--human-ms", "150", "--record", str(path), "--quiet")
    try:
        code, out, err = term.wait(60)  # nothing is typed
    finally:
        term.kill()
    assert code == 0, err
    assert "time is up" in out
    record = json.loads(path.read_text())
    verify_record(record)
    faults = record["faults"]
    assert [f["seat"] for f in faults] == [1, 1, 1]
    assert {f["kind"] for f in faults} == {"timeout"}
    assert faults[-1]["forfeited"] and faults[0]["detail"] == "no answer within 150 ms"


def test_human_is_a_seat_of_its_own_in_bots() -> None:
    assert split_bots("cmd:python bot.py --weights=1,2,human,random") == [
        "cmd:python bot.py --weights=1,2", "human", "random"]


def test_bad_human_flags_are_one_line_errors() -> None:
    for argv, message in [
        (["--bots", "human,human,random"], "2 human seats (seats 0, 1)"),
        (["--bots", "random,heuristic,random", "--web"], "--web needs a human seat"),
        (["--bots", "human,heuristic,random", "--human-ms", "0"], "--human-ms must be"),
        (["--bots", "human,heuristic,random", "--web", "--port", "70000"], "--port must"),
        (["--bots", "human,heuristic,random", "--port", "8080"], "it needs --web"),
    ]:
        done = arena_in_process("play", "--game", "wizard", "--players", "3", *argv,
                                cwd=REPO)
        assert done.returncode == 2
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


# -- the browser seat's server, without a browser (tests/test_play_browser.py has one) ---


def _start_web(sandbox: Sandbox, *argv: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        arena_command("play", "--no-sandbox", "--game", "trumps", "--players", "3",
                      "--option", "draw=false", "--seed", "5", "--web", *argv),
        cwd=REPO, env=dict(sandbox.env, PYTHONUNBUFFERED="1"), text=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while line := read_line(proc, deadline):
        found = re.search(r"play in your browser: (http://127\.0\.0\.1:\d+/\S+/)", line)
        if found:
            return proc, found.group(1)
    proc.kill()
    pytest.fail(f"no URL printed: {proc.communicate(timeout=10)}")


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except HTTPError as e:
        return e.code, e.read()


def _post(url: str, body: bytes) -> tuple[int, Any]:
    """The status and the answer (JSON, decoded when it is JSON)."""
    try:
        with urlopen(Request(url, data=body, method="POST"), timeout=10) as response:
            code, data = response.status, response.read()
    except HTTPError as e:
        code, data = e.code, e.read()
    try:
        return code, json.loads(data)
    except ValueError:
        return code, data


def test_the_web_seat_answers_only_under_its_token_and_ctrl_c_ends_it(
        arena_sandbox: Sandbox) -> None:
    proc, url = _start_web(arena_sandbox, "--bots", "heuristic,human,random")
    try:
        parts = urlsplit(url)
        root = f"{parts.scheme}://{parts.netloc}/"
        assert _get(root)[0] == 404 and _get(root + "state")[0] == 404
        assert _post(root + "answer", b'{"answer": "1"}')[0] == 404
        assert _get(url + "replay.html")[0] == 404  # not before the game is over
        assert _get(url + "assets/../../etc/passwd")[0] == 404
        code, page = _get(url)
        assert code == 200 and b'src="assets/play.js"' in page
        state: dict[str, Any] = {}
        for _ in range(100):  # the seat is asked once the bot before it has played
            state = json.loads(_get(url + "state")[1])
            if state["status"] == "play":
                break
            time.sleep(0.1)
        view = state["view"]
        assert view["seat"] == 1 and view["decision"] == "play" and len(view["hand"]) == 7
        assert set(state) >= {"names", "rounds", "result", "message", "version"}
        assert _post(url + "answer", b"[1, 2]") == (
            400, {"error": 'expected JSON {"answer": "H7"}'})
        assert _post(url + "answer", b'{"answer": "W"}') == (
            200, {"ok": False, "error": "Trumps has no Wizard: its deck is the standard 52 cards"})
        assert view["hand_sizes"] == [7, 7, 7] and view["leading"] is None  # seat 1 leads
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 130 and err.strip() == "arena: interrupted"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)


def until_over(proc: subprocess.Popen[str], wait_s: float = 60) -> str | None:
    """The line of ``arena play --web`` that says the game is over, once printed (None,
    or "" at the end of its output, if it is not within ``wait_s``)."""
    deadline = time.monotonic() + wait_s
    while (line := read_line(proc, deadline)) and "the game is over" not in line:
        pass
    return line


def test_the_web_seat_keeps_a_time_limit(arena_sandbox: Sandbox) -> None:
    """Nobody opens the page: with --human-ms the referee plays for the seat, the game
    ends and the result stays served until Ctrl-C (exit 0)."""
    path = arena_sandbox.tmp / "game.json"
    proc, url = _start_web(arena_sandbox, "--bots", "human,heuristic,random",
                           "--human-ms", "100", "--record", str(path), "--quiet")
    try:
        line = until_over(proc)
        assert line and url in line
        state = json.loads(_get(url + "state")[1])
        assert state["status"] == "over" and state["view"] is None
        record = json.loads(_get(url + "record.json")[1])
        assert [f["kind"] for f in record["faults"]] == ["timeout"] * 3
        assert b'id="record"' in _get(url + "replay.html")[1]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert out.strip().endswith("stopped")
        assert json.loads(path.read_text()) == record
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)


class _Person:
    """A player with its own clock, as a person's seat is: it thinks ``think_s`` and
    then plays the first legal action, or leaves the table."""

    def __init__(self, move_ms: int | None, think_s: float, leave: bool = False) -> None:
        self.name = "person"
        self.move_ms = move_ms
        self.last_cpu_ms: float | None = None
        self.think_s = think_s
        self.leave = leave
        self.deadlines: list[int] = []

    async def decide(self, view: Any, game_id: str, table_id: str, deadline_ms: int,
                     bank_ms: int) -> int:
        self.deadlines.append(deadline_ms)
        await trio.sleep(self.think_s)
        if self.leave:
            raise Abandon("the person left")
        return int(view.legal[0])

    async def round_ended(self, result: Any, deadline_ms: int) -> None:
        return None

    async def game_ended(self, result: Any, deadline_ms: int) -> None:
        return None


def _referee_game(person: _Person) -> Any:
    game = new_game("trumps", {"players": 3, "draw": False}, 4)
    players = [person, LocalPlayer(make_bot("random", 1)), LocalPlayer(make_bot("random", 2))]
    return trio.run(play_game, game, players, TimeControl(move_ms=100, bank_ms=50),
                    clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_referee_keeps_a_persons_own_clock() -> None:
    """No limit: an hour per answer is no fault (decide is told deadline 0); an own limit
    replaces the clock's move_ms, the seat's bank still added; Abandon goes through."""
    patient = _Person(None, 3600)
    report = _referee_game(patient)
    assert report.faults == [] and set(patient.deadlines) == {0}
    assert min(report.latencies_ms[0]) >= 3600_000
    slow = _Person(5000, 1)  # 1 s: over the clock's 100 ms, within its own 5000
    report = _referee_game(slow)
    assert report.faults == [] and slow.deadlines[0] == 5050
    late = _Person(500, 1)
    report = _referee_game(late)
    assert [f["kind"] for f in report.faults] == ["timeout"] * 3
    assert report.faults[0]["detail"] == "no answer within 550 ms"
    with pytest.raises(Abandon, match="the person left"):
        _referee_game(_Person(None, 0, leave=True))


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_sent_the_moment_the_game_is_over_is_a_clean_stop(
        arena_sandbox: Sandbox, stop: signal.Signals) -> None:
    """The line that says the game is over invites Ctrl-C: one sent the moment it is read
    stops the command cleanly (exit 0, "stopped"), however soon. (Before, the wait for it
    began after the line, and a Ctrl-C that came first was an interruption: exit 130.)"""
    proc, _ = _start_web(arena_sandbox, "--bots", "human,heuristic,random",
                         "--human-ms", "50", "--quiet")
    try:
        assert until_over(proc), "the game did not end"
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert out.strip().endswith("stopped")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
