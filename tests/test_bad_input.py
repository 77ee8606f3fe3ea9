"""Bad input, as a careless or hostile user gives it: every command either works or prints
ONE short line naming the file, key, game or line at fault and exits non-zero, never a
traceback, and never harms a store it could not read.

One test per class of bad input: tournament files, stores (empty, truncated, damaged,
foreign, odd rows), ``arena verify`` input, and the last-resort guard of ``main``. The
stores are copies of a real store made once by a tiny tournament of built-in bots.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import tournament_toml

from arena import cli
from arena.cli import main
from arena.files import MARKER
from arena.model.errors import MAX_MESSAGE
from arena.model.record import MAX_RECORD_BYTES, game_record
from arena.rules import new_game
from arena.runs.config import MAX_GAMES, load_config
from arena.runs.store import STORE_NAME

REPO = Path(__file__).resolve().parent.parent
ARENA = REPO / ".venv" / "bin" / "arena"
GUARD = "internal error"

TINY_BOTS = [("heuristic", "heuristic"), ("random", "random"), ("random2", "random")]
TINY = tournament_toml("tiny", "trumps", 2, 7, 2, TINY_BOTS)
TINY_GAMES = 3 * 2 * 2  # tables x deals x rotations


def one_error_line(err: str, *expected: str) -> str:
    """The single error line in ``err``; checks it is short, specific and names what is
    expected."""
    lines = err.splitlines()
    assert len(lines) == 1, err[:2000]
    line = lines[0]
    assert len(line) <= MAX_MESSAGE, line
    assert GUARD not in line and "Traceback" not in line, line
    for text in expected:
        assert text in line, line
    return line


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real store: a finished tournament of 12 games between built-in bots."""
    base = tmp_path_factory.mktemp("tiny")
    (base / "tiny.toml").write_text(TINY)
    rc = main(["tournament", str(base / "tiny.toml"), "--out", str(base / "out"),
               "--resamples", "5"])
    assert rc == 0
    with sqlite3.connect(base / "out" / STORE_NAME) as db:
        assert db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'").fetchone() == (
            TINY_GAMES,)
    db.close()
    return base


def store_copy(tiny_store: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the tiny tournament (folder, store file) to damage: an output folder the
    arena made (its mark copied too), whose store was then damaged."""
    folder = tmp_path / "out"
    folder.mkdir()
    shutil.copy(tiny_store / "out" / STORE_NAME, folder / STORE_NAME)
    shutil.copy(tiny_store / "out" / MARKER, folder / MARKER)
    return folder, folder / STORE_NAME


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sql(store: Path, statement: str) -> None:
    with sqlite3.connect(store) as db:
        db.execute(statement)
    db.close()


# -- tournament files -----------------------------------------------------------------

BOTS = '[[bots]]\nname = "a"\nspec = "random"\n[[bots]]\nname = "b"\nspec = "random"\n'
HEAD = 'name = "t"\ngame = "trumps"\nseats = 2\n'

BAD_FILES: list[tuple[str, bytes, str]] = [
    ("binary", b"\xff\xfe\x00garbage", "not UTF-8 text: byte 0 (line 1)"),
    ("latin-1 on line 3", (HEAD + 'output = "caf\xe9"\n').encode("latin-1"),
     "(line 4) is not valid UTF-8"),
    ("deep arrays", b"a = " + b"[" * 100_000 + b"]" * 100_000, "nested more than 16"),
    ("deep but parseable", (HEAD + "x = " + "[" * 20 + "]" * 20 + "\n" + BOTS).encode(),
     "nested more than 16 levels deep"),
    ("deep inline tables", ("x = " + "{a = " * 300 + "1" + "}" * 300).encode(),
     "nested more than 16"),
    ("100,000-digit number", (HEAD + "seed = " + "9" * 100_000 + "\n").encode(),
     "a number is too long"),
    ("seed abc", (HEAD + 'seed = "abc"\n' + BOTS).encode(), "seed: expected an integer"),
    ("seed negative", (HEAD + "seed = -1\n" + BOTS).encode(), "seed: expected an integer"),
    ("seed float", (HEAD + "seed = 1.5\n" + BOTS).encode(), "got 1.5"),
    ("seed bool", (HEAD + "seed = true\n" + BOTS).encode(), "got True"),
    ("seed hex too big", (HEAD + f'seed = "0x{"f" * 65}"\n' + BOTS).encode(),
     "seed: expected an integer 0..2^256-1"),
    ("seed 2^256", (HEAD + f'seed = "{2**256}"\n' + BOTS).encode(), "seed:"),
    ("NUL in text", b'name = "a\x00b"\n', "not valid TOML"),
    ("not TOML", b"this is not toml", "not valid TOML"),
    ("empty file", b"", "name: missing"),
    ("huge key", (HEAD + "k" * 20_000 + " = 1\n").encode(), "unknown key in the top level"),
    ("huge game name", f'name = "t"\ngame = "{"w" * 50_000}"\n'.encode(), "is not a game"),
    ("NUL in spec", (HEAD + '[[bots]]\nname = "a"\nspec = "cmd:x\\u0000y"\n').encode(),
     "bots[0].spec: holds a NUL character"),
    ("NUL in read_only", (HEAD + BOTS + 'read_only = ["/tmp\\u0000x"]\n').encode(),
     "bots[1].read_only: '/tmp\\x00x' does not exist"),
    ("long read_only", (HEAD + BOTS + f'read_only = ["/{"x" * 5000}"]\n').encode(),
     "bots[1].read_only:"),
    ("NUL in output", (HEAD + 'output = "o\\u0000"\n' + BOTS).encode(),
     "output: 'o\\x00' holds a NUL character"),
    ("candidates twice", (HEAD + '[schedule]\nformat = "gauntlet"\ncandidates = ["a", "a"]\n'
                          + BOTS).encode(), "schedule.candidates: a bot is listed twice"),
    ("deals a string", (HEAD + '[schedule]\ndeals = "many"\n' + BOTS).encode(),
     "schedule.deals: expected an integer 1..1000000, got 'many'"),
    ("bots a table", (HEAD + "[bots]\nname = 1\n").encode(), "bots: expected a list"),
]


@pytest.mark.parametrize(("case", "content", "expected"), BAD_FILES,
                         ids=[c[0] for c in BAD_FILES])
def test_a_bad_tournament_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           case: str, content: bytes, expected: str) -> None:
    path = tmp_path / "t.toml"
    path.write_bytes(content)
    rc, out, err = run(capsys, "tournament", path, "--out", tmp_path / "out")
    assert rc == 2 and out == ""
    assert one_error_line(err, expected).startswith(f"{path}: ")
    assert not (tmp_path / "out").exists()  # refused before anything was made


def test_an_oversized_tournament_file_is_refused_unread(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        ) -> None:
    path = tmp_path / "t.toml"
    path.write_bytes(HEAD.encode() + b"#" * (2 << 20) + b"\n")
    rc, _, err = run(capsys, "tournament", path)
    assert rc == 2
    one_error_line(err, str(path), "larger than 1048576 bytes")


def test_a_folder_given_as_the_tournament_file(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "tournament", tmp_path)
    assert rc == 2
    one_error_line(err, str(tmp_path), "cannot read")


@pytest.mark.parametrize(("text", "seed"), [("1" * 70, int("1" * 70)), ("0xff", 255),
                                            ("007", 7), (2**63 - 1, 2**63 - 1)])
def test_a_seed_may_be_a_string_of_a_big_integer(tmp_path: Path, text: Any, seed: int) -> None:
    path = tmp_path / "t.toml"
    path.write_text(HEAD + f"seed = {json.dumps(text)}\n" + BOTS)
    assert load_config(path).seed == seed


def test_a_huge_schedule_is_refused_before_it_is_built(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       ) -> None:
    """The issue's ``deals = 1000000`` built 60 million games in memory first."""
    bots = "".join(f'[[bots]]\nname = "b{i}"\nspec = "random"\n' for i in range(12))
    path = tmp_path / "t.toml"
    path.write_text('name = "t"\ngame = "wizard"\nseats = 4\n[schedule]\ndeals = 1000000\n'
                    + bots)
    start = time.perf_counter()
    rc, _, err = run(capsys, "tournament", path, "--out", tmp_path / "out")
    assert time.perf_counter() - start < 5
    assert rc == 2
    one_error_line(err, f"{path}: schedule: 495 tables × 1000000 deals × 4 rotations = "
                   f"1980000000 games; a tournament may have at most {MAX_GAMES}")
    # a gauntlet is counted by its own rule: 2 candidates x C(10, 3) tables
    path.write_text('name = "t"\ngame = "wizard"\nseats = 4\n[schedule]\ndeals = 1000\n'
                    'format = "gauntlet"\ncandidates = ["b0", "b1"]\n' + bots)
    rc, _, err = run(capsys, "tournament", path, "--out", tmp_path / "out")
    assert rc == 2
    one_error_line(err, "240 tables × 1000 deals × 4 rotations = 960000 games")
    # at the limit it is accepted
    path.write_text('name = "t"\ngame = "wizard"\nseats = 4\n[schedule]\n'
                    f'deals = {MAX_GAMES // (495 * 4)}\n' + bots)
    assert load_config(path).deals == MAX_GAMES // (495 * 4)


# -- stores ---------------------------------------------------------------------------


def _empty(store: Path) -> None:
    store.write_bytes(b"")


def _text(store: Path) -> None:
    store.write_text("these are my notes, not a database\n")


def _foreign(store: Path) -> None:
    store.unlink()
    with sqlite3.connect(store) as db:
        db.execute("CREATE TABLE accounts (id INTEGER, balance REAL)")
        db.execute("INSERT INTO accounts VALUES (1, 100.0)")
    db.close()


def _no_version(store: Path) -> None:
    sql(store, "DELETE FROM meta")


def _truncated(store: Path) -> None:
    data = store.read_bytes()
    store.write_bytes(data[:len(data) // 3])


def _flipped(store: Path) -> None:
    data = bytearray(store.read_bytes())
    for i in range(100, 4096, 3):  # the schema page
        data[i] ^= 0x5A
    store.write_bytes(bytes(data))


def _a_folder(store: Path) -> None:
    store.unlink()
    store.mkdir()


STORE_CLASSES: list[tuple[str, Callable[[Path], None], str]] = [
    ("empty file", _empty, "not a trick-arena store (an empty file)"),
    ("text file", _text, "not a trick-arena store (file is not a database)"),
    ("foreign database", _foreign, "an SQLite database without its tables"),
    ("no schema version", _no_version, "not a trick-arena store (no schema version)"),
    ("truncated", _truncated, "damaged or not a trick-arena store"),
    ("flipped bytes", _flipped, "damaged or not a trick-arena store"),
    ("a folder", _a_folder, "not a trick-arena store (not a file)"),
]


@pytest.mark.parametrize(("case", "damage", "expected"), STORE_CLASSES,
                         ids=[c[0] for c in STORE_CLASSES])
def test_a_store_that_is_not_one_is_refused_and_left_alone(
        tiny_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str,
        damage: Callable[[Path], None], expected: str) -> None:
    folder, store = store_copy(tiny_store, tmp_path)
    damage(store)
    before = digest(store) if store.is_file() else None
    commands: list[list[str | Path]] = [
        ["leaderboard", folder], ["export", folder],
        ["publish", folder, "--out", tmp_path / "site"],
        ["tournament", tiny_store / "tiny.toml", "--out", folder]]
    for args in commands:
        rc, _, err = run(capsys, *args)
        assert rc == 2, (args, err)
        one_error_line(err, f"{store}: ", expected)
    assert (digest(store) if store.is_file() else None) == before  # nothing lost
    assert not (folder / "games.jsonl").exists()
    assert not (tmp_path / "site").exists()
    if store.is_file():
        assert not (folder / f"{STORE_NAME}-wal").exists() or case == "no schema version"


ODD_ROWS: list[tuple[str, str, str]] = [
    ("record not JSON", "UPDATE games SET record = '{\"totals\": [1,' WHERE seq = 3",
     "game 't0-d1-r1': record is not JSON"),
    ("record a list", "UPDATE games SET record = '[1, 2]' WHERE seq = 0",
     "game 't0-d0-r0': record: not a JSON object"),
    ("record deeply nested", "UPDATE games SET record = '" + "[" * 50_000 + "]" * 50_000
     + "' WHERE seq = 1", "game 't0-d0-r1': record is not JSON"),
    ("record with a 5000-digit total", "UPDATE games SET record = replace(record,"
     " '\"totals\":[', '\"totals\":[" + "7" * 5000 + "') WHERE seq = 2",
     "game 't0-d1-r0': record is not JSON (Exceeds the limit (4300 digits)"),
    ("record without totals", "UPDATE games SET record = json_remove(record, '$.totals')"
     " WHERE seq = 2", "game 't0-d1-r0': record: totals is not a list of 2 integers"),
    ("places out of range", "UPDATE games SET record = json_set(record, '$.places[1]', 9)"
     " WHERE seq = 4", "game 't1-d0-r0': record: places are not 1..2"),
    ("a fault of seat 7", "UPDATE games SET record = json_set(record, '$.faults',"
     " json('[{\"seat\": 7, \"kind\": \"timeout\"}]')) WHERE seq = 5",
     "game 't1-d0-r1': record: faults[0] is not a fault of a seat 0..1"),
    ("a hand of non-cards", "UPDATE games SET record = json_set(record,"
     " '$.rounds[0].hands[0][0]', 'Z9') WHERE seq = 6",
     "game 't1-d1-r0': record: rounds[0]: not a card: 'Z9'"),
    ("bids of text", "UPDATE games SET record = json_set(record, '$.rounds[0].bids',"
     " json('[\"x\", 1]')) WHERE seq = 6",
     "game 't1-d1-r0': record: rounds[0]: bids is not null or a list of 2 integers"),
    ("bots not JSON", "UPDATE games SET bots = 'heuristic,random' WHERE seq = 7",
     "game 't1-d1-r1': bots is not JSON"),
    ("bots empty", "UPDATE games SET bots = '[]' WHERE seq = 7",
     "game 't1-d1-r1': bots is not a list of bot names"),
    ("deal seed text", "UPDATE games SET deal_seed = 'abc' WHERE seq = 8",
     "game 't2-d0-r0': deal_seed 'abc' is not an integer"),
    ("seq text", "UPDATE games SET seq = 'first' WHERE seq = 9",
     "game 't2-d0-r1': seq 'first' is not an integer"),
    ("timing of text", "UPDATE games SET record = json_set(record, '$.timing.wall_ms[0]',"
     " json('[\"1\"]')) WHERE seq = 10",
     "game 't2-d1-r0': record: timing.wall_ms is not a list of 2 lists of numbers"),
    ("timing of one seat", "UPDATE games SET record = json_remove(record,"
     " '$.timing.cpu_ms[1]') WHERE seq = 11",
     "game 't2-d1-r1': record: timing.cpu_ms is not a list of 2 lists of numbers or nulls"),
    ("meta seed abc", "UPDATE meta SET value = 'abc' WHERE key = 'seed'",
     "meta seed: 'abc' is not an integer"),
    ("meta deals of 5000 digits", "UPDATE meta SET value = '" + "9" * 5000
     + "' WHERE key = 'deals'", "meta deals: '99999999"),
    ("meta options not JSON", "UPDATE meta SET value = '{' WHERE key = 'options'",
     "meta: options is not JSON"),
    ("meta bots an object", "UPDATE meta SET value = '{}' WHERE key = 'bots'",
     "meta bots: not a JSON list"),
    ("meta value a blob", "UPDATE meta SET value = x'00ff' WHERE key = 'name'",
     "meta 'name': not text"),
    ("bot protocol a word", "UPDATE bots SET protocol_version = 'one' WHERE name = 'random'",
     "bot 'random': column 5 holds 'one', not what the arena writes"),
    ("schema version other", "UPDATE meta SET value = 'v2;DROP' WHERE key = 'schema_version'",
     "store schema version v2;DROP; this arena reads version 3"),
]


@pytest.mark.parametrize(("case", "statement", "expected"), ODD_ROWS,
                         ids=[c[0] for c in ODD_ROWS])
def test_a_store_row_the_arena_did_not_write_is_named(
        tiny_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str,
        statement: str, expected: str) -> None:
    folder, store = store_copy(tiny_store, tmp_path)
    sql(store, statement)
    before = digest(store)
    commands: list[list[str | Path]] = [["leaderboard", folder, "--format", "json"],
                                        ["publish", folder, "--out", tmp_path / "site"]]
    if not case.startswith("bot "):  # an export has no use for the bots table
        commands.append(["export", folder])
    for args in commands:
        rc, out, err = run(capsys, *args)
        assert rc == 2, (args, err)
        one_error_line(err, f"{store}: ", expected)
        assert out == ""
    assert digest(store) == before  # read, refused, not written
    assert not (folder / "games.jsonl").exists()
    assert not (tmp_path / "site").exists()


def test_resume_of_a_store_with_a_bad_record_keeps_its_games(
        tiny_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, store = store_copy(tiny_store, tmp_path)
    sql(store, "UPDATE games SET record = 'null' WHERE seq = 11")
    rc, _, err = run(capsys, "tournament", tiny_store / "tiny.toml", "--out", folder)
    assert rc == 2
    assert err.splitlines()[0].startswith("isolation: deal")  # what a run tells first
    one_error_line(err.splitlines()[-1], f"{store}: game 't2-d1-r1': record: not a JSON object")
    assert "Traceback" not in err and GUARD not in err
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'").fetchone() == (
            TINY_GAMES,)
    db.close()


def test_the_untouched_store_still_reads(tiny_store: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The control: the copies above fail because of the damage, not the copying."""
    folder, _ = store_copy(tiny_store, tmp_path)
    rc, out, err = run(capsys, "leaderboard", folder, "--format", "json", "--resamples", "5")
    assert rc == 0, err
    board = json.loads(out)
    assert board["games"] == TINY_GAMES and board["seed"] == 7
    rc, out, _ = run(capsys, "export", folder)
    assert rc == 0 and out.startswith(f"{TINY_GAMES} records written")
    rc, out, _ = run(capsys, "verify", folder / "games.jsonl")
    assert rc == 0 and f"ok ({TINY_GAMES} records)" in out


# -- arena verify ---------------------------------------------------------------------


def a_record(seed: int = 3) -> dict[str, Any]:
    game = new_game("trumps", {}, seed)
    rng = random.Random(seed)
    while not game.is_over:
        game.apply(rng.choice(game.legal_actions()))
    record: dict[str, Any] = json.loads(json.dumps(game_record(
        game, [f"bot{i}" for i in range(game.players)])))
    return record


def _huge_totals() -> bytes:
    record = a_record()
    record["totals"] = list(range(1_000_000))  # the 6 MB error line
    return json.dumps(record).encode()


BAD_RECORDS: list[tuple[str, Callable[[], bytes], str]] = [
    ("binary", lambda: bytes(range(255, 0, -1)) * 4, ": not UTF-8 text: byte 0"),
    ("deep nesting", lambda: b"[" * 1_000_000, ": nested more than 32 levels deep"),
    ("nesting of 40", lambda: b"[" * 40 + b"]" * 40, ": nested more than 32 levels deep"),
    ("100,000-digit number", lambda: b"9" * 100_000,
     ": a number of 100000 characters; at most 40"),
    ("long float", lambda: b"0." + b"1" * 1000, ": a number of 1002 characters"),
    ("NaN", lambda: b'{"seed": NaN}', ": not JSON: NaN is not a JSON number"),
    ("a 6 MB error line", _huge_totals, ": record: totals [0, 1, 2,"),
    ("a list", lambda: b"[1, 2, 3]", ": record: expected an object"),
    ("JSON lines, line 3 broken",
     lambda: b"\n".join([json.dumps(a_record()).encode()] * 2 + [b"{oops"]),
     ":3: not JSON: Expecting property name enclosed in double quotes at column 2"),
    ("line 2 binary", lambda: json.dumps(a_record()).encode() + b"\n\xc3\x28\n",
     ":2: not UTF-8 text: byte 0"),
    ("wrong types", lambda: json.dumps({**a_record(), "seed": "7"}).encode(),
     ": record: 'seed' has the wrong type (str)"),
]


@pytest.mark.parametrize(("case", "make", "expected"), BAD_RECORDS,
                         ids=[c[0] for c in BAD_RECORDS])
def test_verify_of_bad_input_is_one_short_line(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str], case: str,
                                               make: Callable[[], bytes], expected: str) -> None:
    path = tmp_path / "records.jsonl"
    path.write_bytes(make())
    rc, _, err = run(capsys, "verify", path)
    assert rc == 1
    assert one_error_line(err, expected).startswith(str(path))


def test_verify_refuses_a_line_over_the_size_limit(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.jsonl"
    good = json.dumps(a_record()).encode()
    with path.open("wb") as f:
        f.write(good + b"\n")
        f.write(b'{"pad": "' + b"x" * MAX_RECORD_BYTES + b'"}\n')
    rc, _, err = run(capsys, "verify", path)
    assert rc == 1
    one_error_line(err, f"{path}:2: a line longer than {MAX_RECORD_BYTES} bytes")


def test_verify_still_reads_good_records(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    one = tmp_path / "one.json"
    one.write_text(json.dumps(a_record(), indent=2))  # one document over many lines
    lines = tmp_path / "lines.jsonl"
    lines.write_text("".join(json.dumps(a_record(s)) + "\n\n" for s in range(3)))
    rc, out, err = run(capsys, "verify", one, lines)
    assert rc == 0, err
    assert out.splitlines() == [f"{one}: ok (1 record), no chain",
                                f"{lines}: ok (3 records), no chain"]


def test_verify_of_a_folder_or_a_missing_file(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "verify", tmp_path / "nope.jsonl")
    assert rc == 2
    one_error_line(err, f"{tmp_path / 'nope.jsonl'}: cannot read: No such file")


# -- the last resort, and real processes ----------------------------------------------


def test_an_unexpected_error_is_one_line_with_exit_70(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Only for bugs: each bad input above has its own message, never this one."""
    def broken(_: Any) -> int:
        raise KeyError("x" * 10_000)

    monkeypatch.setitem(cli.COMMANDS, "verify", broken)
    assert main(["verify", "f"]) == 70
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and len(err) <= MAX_MESSAGE
    assert err.startswith("arena: internal error: KeyError: 'xxx")
    assert err.rstrip().endswith("(please report; ARENA_DEBUG=1 shows the traceback)")
    # from a trio nursery: the error inside, not the group's own words
    def in_a_task(_: Any) -> int:
        async def fail() -> None:
            raise OSError("the thing inside")

        async def run() -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(fail)
                nursery.start_soon(fail)
        trio.run(run)
        return 0

    monkeypatch.setitem(cli.COMMANDS, "verify", in_a_task)
    assert main(["verify", "f"]) == 70
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert err.startswith("arena: internal error: OSError: the thing inside (in a task, and "
                          "1 more) (please report"), err
    monkeypatch.setitem(cli.COMMANDS, "verify", broken)
    monkeypatch.setenv("ARENA_DEBUG", "1")
    with pytest.raises(KeyError):
        main(["verify", "f"])


def test_no_traceback_reaches_a_real_terminal(tiny_store: Path, tmp_path: Path) -> None:
    """The installed ``arena`` command, as a user runs it."""
    folder, store = store_copy(tiny_store, tmp_path)
    _empty(store)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(bytes(range(255, 0, -1)))
    deep = tmp_path / "deep.toml"
    deep.write_bytes(b"a = " + b"[" * 200_000)
    for args, code, expected in (
            (["leaderboard", str(folder)], 2, "not a trick-arena store (an empty file)"),
            (["verify", str(binary)], 1, "not UTF-8 text"),
            (["tournament", str(deep)], 2, "nested more than 16 levels deep")):
        done = subprocess.run([str(ARENA), *args], capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == code, done.stderr
        one_error_line(done.stderr, expected)
    assert store.read_bytes() == b""


def test_a_store_failing_while_games_run_is_one_line_and_keeps_the_games(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A write refused by SQLite itself (here a trigger, as a full disk would) while games
    run in trio's nursery: one line naming the store, and the finished games are kept for
    a resume."""
    from arena.runs.store import Store

    toml = tmp_path / "tiny.toml"
    toml.write_text(TINY.replace("concurrency = 2", "concurrency = 1"))
    folder = tmp_path / "out"
    Store.open(folder).close()
    sql(folder / STORE_NAME, "CREATE TRIGGER full BEFORE UPDATE ON games WHEN NEW.seq = 5"
        " AND NEW.status = 'done' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    rc, _, err = run(capsys, "tournament", toml, "--out", folder, "--resamples", "5")
    assert rc == 2
    one_error_line(err.splitlines()[-1], f"{folder / STORE_NAME}: damaged or not a "
                   "trick-arena store (database or disk is full)")
    assert "Traceback" not in err and GUARD not in err
    with sqlite3.connect(folder / STORE_NAME) as db:
        done = db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'").fetchone()[0]
        db.execute("DROP TRIGGER full")
    db.close()
    assert done == 6  # one at a time, lane by lane: the six before game seq 5 (t1-d0-r1)
    rc, out, err = run(capsys, "tournament", toml, "--out", folder, "--resamples", "5")
    assert rc == 0, err
    assert f"resuming: {done} of {TINY_GAMES} games already played" in out


def test_a_leaderboard_that_cannot_be_written_is_one_line(
        tiny_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, _ = store_copy(tiny_store, tmp_path)
    (folder / "leaderboard.json").mkdir()  # in the way of the file
    rc, _, err = run(capsys, "leaderboard", folder, "--resamples", "5")
    assert rc == 2
    one_error_line(err, f"{folder}: cannot write the leaderboard: Is a directory")


def test_resume_without_the_stored_seed_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file without a seed: drawing a new one would deal the remaining games from
    another seed than the stored ones."""
    toml = tmp_path / "tiny.toml"
    toml.write_text(tournament_toml("tiny", "trumps", 2, None, 2, TINY_BOTS))
    folder = tmp_path / "out"
    rc, _, err = run(capsys, "tournament", toml, "--out", folder, "--resamples", "5")
    assert rc == 0, err
    store = folder / STORE_NAME
    sql(store, "DELETE FROM meta WHERE key = 'seed'")
    sql(store, "DELETE FROM games WHERE seq = 11")
    rc, _, err = run(capsys, "tournament", toml, "--out", folder)
    assert rc == 2
    one_error_line(err, f"{store}: 11 games are stored but not the seed they were dealt from")
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM games").fetchone() == (11,)
    db.close()
