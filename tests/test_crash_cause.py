"""A dead bot's one-line report names the line of its log that says why
(arena/proc/logs.py: cause_line, log_tail), whatever its language: the crash output of
real runtimes (Python, Node.js, Ruby, Java, Go, and a C++ program), each run here, and
end to end through ``arena check-bot`` with a Node.js bot whose module is missing and a
Ruby bot whose library is."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, Sandbox, arena_command

from arena.proc.logs import _clean_lines, cause_line, log_tail


def crash_output(tmp_path: Path, language: str) -> str:
    """What a crash of ``language`` writes to stderr, run for real here."""
    if language == "python":
        code = "import json\ndef load(text):\n    return json.loads(text)\nload('{')\n"
        args = [sys.executable, "-c", code]
    elif language == "node":
        args = ["node", "-e", "function f() { throw new TypeError('no seat 7'); }\nf();"]
    elif language == "ruby":
        args = ["ruby", "-e", "require 'no_such_gem_for_arena'"]
    elif language == "java":
        source = tmp_path / "Bot.java"
        source.write_text("public class Bot { public static void main(String[] a) {"
                          " try { int[] x = new int[1]; x[2] = 1; } catch (RuntimeException e)"
                          " { throw new IllegalStateException(\"wrapped\", e); } } }")
        args = ["java", str(source)]
    elif language == "go":
        source = tmp_path / "main.go"
        source.write_text('package main\n\nfunc main() {\n\tpanic("no legal card")\n}\n')
        built = subprocess.run(["go", "build", "-o", str(tmp_path / "bot"), str(source)],
                               capture_output=True, text=True, cwd=tmp_path,
                               env={"HOME": str(tmp_path), "GOCACHE": str(tmp_path / "c"),
                                    "PATH": "/usr/bin:/bin", "GO111MODULE": "off"})
        assert built.returncode == 0, built.stderr
        args = [str(tmp_path / "bot")]
    else:  # c++
        source = tmp_path / "bot.cpp"
        source.write_text('#include <stdexcept>\nint main() { throw std::runtime_error('
                          '"bid out of range"); }\n')
        subprocess.run(["g++", "-o", str(tmp_path / "bot"), str(source)], check=True)
        args = [str(tmp_path / "bot")]
    if shutil.which(args[0]) is None and not Path(args[0]).exists():
        pytest.skip(f"{args[0]} is not installed")
    done = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode != 0
    return done.stderr


CAUSES = {
    "python": "json.decoder.JSONDecodeError: Expecting property name enclosed in double "
              "quotes: line 1 column 2 (char 1)",
    "node": "TypeError: no seat 7",
    "ruby": "cannot load such file -- no_such_gem_for_arena (LoadError)",
    "java": "Caused by: java.lang.ArrayIndexOutOfBoundsException: Index 2 out of bounds "
            "for length 1",
    "go": "panic: no legal card",
    "c++": "what():  bid out of range",
}


@pytest.mark.parametrize("language", list(CAUSES))
def test_the_line_that_names_the_error_is_found_in_a_real_crash(
        language: str, tmp_path: Path) -> None:
    text = crash_output(tmp_path, language)
    cause = cause_line(_clean_lines(text))
    assert cause is not None and cause.endswith(CAUSES[language]), (cause, text)


def test_the_report_quotes_the_cause_and_the_last_line_where_the_cause_is_not_last(
        tmp_path: Path) -> None:
    """Ruby's backtrace: the cause on its first line, frames after; the last three lines
    alone were three frames."""
    log = tmp_path / "bot.log"
    log.write_text("serving on unix:/run/arena/bot.sock\n"
                   "x.rb:2:in `require': cannot load such file -- grpc (LoadError)\n"
                   "\tfrom x.rb:2:in `<top (required)>'\n\tfrom bot.rb:1:in `require'\n"
                   "\tfrom bot.rb:1:in `<main>'\n")
    assert log_tail(log) == ("x.rb:2:in `require': cannot load such file -- grpc "
                             "(LoadError) … from bot.rb:1:in `<main>'")
    log.write_text("thinking\nlast words\n")  # no error line: the last lines, as before
    assert log_tail(log) == "thinking | last words"


NODE_BOT = """const missing = require('arena-no-such-module');
"""

RUBY_BOT = """require 'grpc'
require 'no_such_arena_stub_pb'
"""


@pytest.mark.parametrize("language", ["node", "ruby"])
def test_check_bot_names_the_cause_of_a_death_at_start(
        language: str, tmp_path: Path, arena_sandbox: Sandbox) -> None:
    if shutil.which(language) is None:
        pytest.skip(f"{language} is not installed")
    bot = tmp_path / ("bot.js" if language == "node" else "bot.rb")
    bot.write_text(NODE_BOT if language == "node" else RUBY_BOT)
    done = subprocess.run(arena_command("check-bot", f"cmd:{language} {bot}", "--no-sandbox"),
                          cwd=REPO, env=arena_sandbox.env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    want = ("Error: Cannot find module 'arena-no-such-module'" if language == "node" else
            "cannot load such file -- no_such_arena_stub_pb (LoadError)")
    assert want in done.stdout + done.stderr, done.stdout + done.stderr
