"""Fuzzing the parsers of outside input with Hypothesis, bounded in time: tournament
files (bytes, text, TOML-shaped tables), ``arena verify`` input (bytes, JSON-shaped
records), stores with flipped bytes (copies of a real store from a tiny tournament), and
the decoding of bot answers off the wire (arbitrary field values, arbitrary bytes).

Each example asserts the specific outcome: a valid result, checked against an
independent rule, or the module's own error as one line of at most 300 characters naming
the input; never just "no exception".
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from conftest import examples, tournament_toml
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from arena.cli import main
from arena.model.errors import MAX_MESSAGE
from arena.model.names import NameError_, check_hello
from arena.model.record import (
    MAX_DEPTH,
    MAX_NUMBER_CHARS,
    RecordError,
    game_record,
    parse_record,
    verify_record,
)
from arena.rules import new_game
from arena.rules.cards import standard_deck, wizard_deck
from arena.runs.config import MAX_GAMES, MAX_SEED, ConfigError, load_config
from arena.runs.schedule import FORMATS, game_count, schedule
from arena.runs.store import STORE_NAME
from arena.v1 import bot_pb2, game_pb2
from arena.wire.serde import (
    WireError,
    action_from_response,
    bot_info_from_response,
    card_to_message,
)

FUZZ = settings(deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def assert_one_line(message: str, start: str) -> None:
    assert "\n" not in message and len(message) <= MAX_MESSAGE, message
    assert message.startswith(start), message
    assert "internal error" not in message and "Traceback" not in message


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="arena-fuzz-"))
    yield folder
    shutil.rmtree(folder)


def cli(*args: str | Path) -> tuple[int, str, str]:
    """``arena ARGS`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


# -- tournament files -----------------------------------------------------------------

VALID: dict[str, Any] = {
    "name": "fuzz", "game": "trumps", "seats": 2, "seed": 5,
    "options": {"draw": False},
    "time": {"move_ms": 500},
    "schedule": {"format": "round-robin", "deals": 2},
    "limits": {"memory_mb": 512},
    "bots": [{"name": "a", "spec": "random"}, {"name": "b", "spec": "heuristic"},
             {"name": "c", "spec": "random", "env": {"X": "1"}}],
}
VALID_TEXT = tomli_w.dumps(VALID).encode()


def check_config_file(path: Path) -> None:
    """The file loads into a config that keeps the documented limits, or ConfigError says
    why in one line naming the file."""
    try:
        config = load_config(path)
    except ConfigError as e:
        assert_one_line(str(e), f"{path}: ")
        return
    assert config.seed is None or 0 <= config.seed <= MAX_SEED
    assert config.seats <= len(config.bots)
    assert game_count(config.format, len(config.bots), config.seats, config.deals,
                      len(config.candidates)) <= MAX_GAMES
    assert len({b.name for b in config.bots}) == len(config.bots)


def test_the_valid_file_is_valid(scratch: Path) -> None:
    path = scratch / "valid.toml"
    path.write_bytes(VALID_TEXT)
    config = load_config(path)
    assert (config.name, config.seed, config.deals, len(config.bots)) == ("fuzz", 5, 2, 3)


@settings(FUZZ, max_examples=examples(300))
@given(data=st.one_of(
    st.binary(max_size=2000),
    st.builds(lambda at, junk: VALID_TEXT[:at] + junk + VALID_TEXT[at:],
              st.integers(0, len(VALID_TEXT)), st.binary(min_size=1, max_size=20)),
    st.builds(lambda at: VALID_TEXT[:at], st.integers(0, len(VALID_TEXT)))))
def test_tournament_file_bytes(scratch: Path, data: bytes) -> None:
    path = scratch / "bytes.toml"
    path.write_bytes(data)
    check_config_file(path)


TOMLISH = st.text(alphabet=st.sampled_from(list('[]{}="\'.,\n #aбz019-_:+\\\t')), max_size=300)


@settings(FUZZ, max_examples=examples(300))
@given(text=st.one_of(st.text(max_size=1000), TOMLISH))
def test_tournament_file_text(scratch: Path, text: str) -> None:
    path = scratch / "text.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    check_config_file(path)


TOML_VALUES = st.recursive(
    st.one_of(st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30),
              st.sampled_from(["random", "heuristic", "gauntlet", "cmd:no-such-bot", "0xff",
                               "abc", "wizard", "deal", "", "\x00"])),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=12)
PLACES = ["name", "game", "seats", "seed", "concurrency", "output", "isolation", "bots",
          "options", "options.draw", "options.trump", "time.move_ms", "time.max_faults",
          "schedule", "schedule.format", "schedule.deals", "schedule.candidates",
          "limits.memory_mb", "limits.cpu_s", "bots.0", "bots.1.name", "bots.2.spec",
          "bots.0.limits", "bots.1.env", "bots.2.read_only", "bots.0.sandbox",
          "bots.1.requires", "new-key", "time.new"]


def _set(table: Any, place: str, value: Any) -> None:
    *parents, last = place.split(".")
    for key in parents:
        table = table[int(key)] if isinstance(table, list) else table.setdefault(key, {})
    if isinstance(table, list):
        table[int(last)] = value
    elif isinstance(table, dict):
        table[last] = value


@settings(FUZZ, max_examples=examples(200))
@given(changes=st.lists(st.tuples(st.sampled_from(PLACES), TOML_VALUES), min_size=1,
                        max_size=3))
def test_tournament_tables(scratch: Path, changes: list[tuple[str, Any]]) -> None:
    data = copy.deepcopy(VALID)
    for place, value in changes:
        with contextlib.suppress(TypeError, KeyError, IndexError, ValueError, AttributeError):
            _set(data, place, value)
    path = scratch / "tables.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8", errors="surrogatepass")
    check_config_file(path)


@settings(FUZZ, max_examples=examples(100))
@given(fmt=st.sampled_from(FORMATS), bots=st.integers(2, 7), seats=st.integers(2, 7),
       deals=st.integers(1, 3), candidates=st.integers(0, 3), per_bot=st.integers(1, 4))
def test_game_count_is_the_schedule_length(fmt: str, bots: int, seats: int, deals: int,
                                           candidates: int, per_bot: int) -> None:
    """The count the tournament file is refused by is the schedule's, unbuilt."""
    field = [f"b{i}" for i in range(bots)]
    chosen = field[:candidates] if fmt == "gauntlet" else []
    tables = per_bot if fmt == "balanced" else None
    if fmt == "balanced" and bots < seats:
        with pytest.raises(ValueError, match="seats"):
            schedule(fmt, field, seats, deals, 1, chosen, tables_per_bot=tables)
        return
    count = game_count(fmt, bots, seats, deals, len(chosen), tables_per_bot=tables)
    assert count == len(schedule(fmt, field, seats, deals, 1, chosen, tables_per_bot=tables))


# -- arena verify ---------------------------------------------------------------------


def _record(game: str, seed: int) -> dict[str, Any]:
    g = new_game(game, {}, seed)
    rng = random.Random(seed)
    while not g.is_over:
        g.apply(rng.choice(g.legal_actions()))
    record: dict[str, Any] = json.loads(json.dumps(game_record(
        g, [f"bot{i}" for i in range(g.players)], faults=[])))
    return record


TRUMPS = _record("trumps", 11)
WIZARD = _record("wizard", 12)
RECORD_LINES = (json.dumps(TRUMPS) + "\n" + json.dumps(WIZARD) + "\n").encode()


def test_the_records_are_valid() -> None:
    verify_record(TRUMPS)
    verify_record(WIZARD)


def records_read(data: bytes) -> int:
    """How many records ``arena verify`` reads in a file that passes: one JSON document
    (which may span lines: a record printed with an indent), else one a non-blank line,
    lines ending at ``\\n`` only (a ``\\r`` is JSON's white space inside a record)."""
    try:
        json.loads(data)
    except ValueError:
        return sum(1 for line in data.split(b"\n") if line.strip())
    return 1


@settings(FUZZ, max_examples=examples(200))
@example(data=json.dumps(TRUMPS, indent=1).encode())  # one record over many lines
@example(data=RECORD_LINES.replace(b", ", b",\r", 1))  # a \r inside the first record
@given(data=st.one_of(
    st.binary(max_size=3000),
    st.builds(lambda flips: bytes(b ^ flips.get(i, 0) for i, b in enumerate(RECORD_LINES)),
              st.dictionaries(st.integers(0, len(RECORD_LINES) - 1), st.integers(1, 255),
                              min_size=1, max_size=4)),
    st.builds(lambda at: RECORD_LINES[:at], st.integers(0, len(RECORD_LINES) - 1))))
def test_verify_bytes(scratch: Path, data: bytes) -> None:
    path = scratch / "records.jsonl"
    path.write_bytes(data)
    rc, out, err = cli("verify", path)
    if rc == 0:  # only a file of records that pass, or of none
        assert err == "" and out.startswith(f"{path}: ok (")
        count = int(out.split("(")[1].split()[0])
        assert count == records_read(data)
    else:
        assert rc == 1, err
        assert_one_line(err.rstrip("\n"), str(path))


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False,
                                                                  allow_infinity=False),
              st.text(max_size=20)),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=20)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
        value, list) else ()
    for key, child in items:
        yield from _paths(child, (*prefix, key))


TRUMPS_PATHS = list(_paths(TRUMPS))[1:]
WIZARD_PATHS = list(_paths(WIZARD))[1:]


@settings(FUZZ, max_examples=examples(150))
@given(wizard=st.booleans(), picks=st.lists(st.tuples(st.integers(0, 10**9), JSON_VALUES),
                                              min_size=1, max_size=3))
@example(wizard=False, picks=[(TRUMPS_PATHS.index(("options",)), {})])  # found in CI settings
def test_verify_json_shaped_records(wizard: bool, picks: list[tuple[int, Any]]) -> None:
    """A record changed in one to three places verifies only if it still equals a record
    the rules give; else RecordError says where, in one line."""
    record = copy.deepcopy(WIZARD if wizard else TRUMPS)
    paths = WIZARD_PATHS if wizard else TRUMPS_PATHS
    for pick, value in picks:
        *parents, last = paths[pick % len(paths)]
        target: Any = record
        try:
            for key in parents:
                target = target[key]
            target[last] = value
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the place
    try:
        verify_record(json.loads(json.dumps(record)))
    except RecordError as e:
        assert_one_line(str(e), "")
        assert str(e).startswith(("record", "round"))
    else:
        original = WIZARD if wizard else TRUMPS
        # what verification reads is unchanged (a change elsewhere, e.g. a seat's name);
        # the options as in force: an option left out is its default (Hypothesis found
        # {} for a Trumps record whose options are all the defaults, the same game)
        for key in ("game", "seed", "totals", "places"):
            assert record[key] == original[key]
        assert new_game(record["game"], record["options"], record["seed"]).options == \
            new_game(original["game"], original["options"], original["seed"]).options


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def _longest_number(value: Any) -> int:
    if isinstance(value, dict):
        return max(map(_longest_number, value.values()), default=0)
    if isinstance(value, list):
        return max(map(_longest_number, value), default=0)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return len(json.dumps(value))
    return 0


@settings(FUZZ, max_examples=examples(300))
@given(value=st.one_of(
    JSON_VALUES,
    st.integers(min_value=10**30, max_value=10**60),
    st.builds(lambda depth: json.loads("[" * depth + "]" * depth), st.integers(1, 60)),
    st.builds(lambda depth: json.loads('{"a":' * depth + "1" + "}" * depth),
              st.integers(1, 60))))
def test_parse_record_keeps_its_limits(value: Any) -> None:
    text = json.dumps(value)
    try:
        parsed = parse_record(text.encode())
    except RecordError as e:
        assert_one_line(str(e), "")
        assert _depth(value) > MAX_DEPTH or _longest_number(value) > MAX_NUMBER_CHARS, str(e)
    else:
        assert parsed == value
        assert _depth(value) <= MAX_DEPTH and _longest_number(value) <= MAX_NUMBER_CHARS


# -- stores ---------------------------------------------------------------------------

TINY = tournament_toml("tiny", "trumps", 2, 9, 2, [
    ("heuristic", "heuristic"), ("random", "random"), ("random2", "random")])


@pytest.fixture(scope="module")
def store_bytes(scratch: Path) -> bytes:
    """The store of a real tiny tournament of built-in bots (12 games)."""
    (scratch / "tiny.toml").write_text(TINY)
    rc, _, err = cli("tournament", scratch / "tiny.toml", "--out", scratch / "tiny",
                     "--resamples", "5")
    assert rc == 0, err
    return (scratch / "tiny" / STORE_NAME).read_bytes()


# Offsets are drawn from a fixed range and folded onto the store's size, so what is drawn
# never depends on the fixture (a strategy built from it made Hypothesis's replay flaky).
FLIP_AT = st.one_of(st.integers(0, 4095), st.integers(0, 1 << 24))


@settings(FUZZ, max_examples=examples(80))
@given(flips=st.lists(st.tuples(FLIP_AT, st.integers(1, 255)), min_size=1, max_size=30),
       cut=st.one_of(st.none(), st.floats(0, 1)))
def test_store_with_flipped_bytes(scratch: Path, store_bytes: bytes,
                                  flips: list[tuple[int, int]], cut: float | None) -> None:
    size = len(store_bytes)
    damaged = bytearray(store_bytes)
    for at, xor in flips:
        damaged[at % size] ^= xor
    if cut is not None:
        del damaged[int(cut * size):]
    folder = Path(tempfile.mkdtemp(dir=scratch))
    store = folder / STORE_NAME
    store.write_bytes(bytes(damaged))
    try:
        rc, out, err = cli("leaderboard", folder, "--format", "json", "--resamples", "5")
        if rc == 0:
            board = json.loads(out)
            assert 0 <= board["games"] <= 12 and err == ""
        else:
            assert rc == 2, err
            assert_one_line(err.rstrip("\n"), f"{store}: ")
            assert store.read_bytes() == bytes(damaged)  # refused, and left as it was
    finally:
        shutil.rmtree(folder)


def test_a_flipped_schema_byte_is_a_damaged_store(scratch: Path, store_bytes: bytes) -> None:
    """A byte of SQLite's own schema text made invalid UTF-8 (found by the test above):
    one line saying the store is damaged, from every command that reads it, never an
    internal error."""
    at = store_bytes.index(b"CREATE TABLE") + 8
    damaged = bytearray(store_bytes)
    damaged[at] ^= 0x80
    folder = Path(tempfile.mkdtemp(dir=scratch))
    store = folder / STORE_NAME
    store.write_bytes(bytes(damaged))
    for argv in (["leaderboard", folder], ["export", folder, "--out", folder / "x.jsonl"],
                 ["publish", folder, "--out", folder / "site"], ["verify", folder]):
        rc, _, err = cli(*argv)
        assert rc == (1 if argv[0] == "verify" else 2), (argv, err)
        assert_one_line(err.rstrip("\n"), f"{store}: damaged or not a trick-arena store")
    shutil.rmtree(folder)


def test_a_flipped_record_byte_names_its_game(scratch: Path, store_bytes: bytes) -> None:
    """A flip inside a record's text (not SQLite's structure) is named by game."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    store = folder / STORE_NAME
    store.write_bytes(store_bytes)
    with sqlite3.connect(store) as db:
        game_id, record = db.execute("SELECT id, record FROM games WHERE seq = 5").fetchone()
    db.close()
    at = store_bytes.index(record.encode())
    damaged = bytearray(store_bytes)
    damaged[at] ^= ord("{") ^ ord("!")
    store.write_bytes(bytes(damaged))
    rc, _, err = cli("export", folder)
    assert rc == 2
    assert_one_line(err.rstrip("\n"), f"{store}: game {game_id!r}: record is not JSON")
    shutil.rmtree(folder)


# -- bot answers off the wire ---------------------------------------------------------

INT32 = st.integers(-(2**31), 2**31 - 1)
UINT32 = st.integers(0, 2**32 - 1)
DECKS: dict[str | None, set[int]] = {"wizard": set(wizard_deck()),
                                     "trumps": set(standard_deck())}
DECKS[None] = DECKS["wizard"] | DECKS["trumps"]
CARDS = st.builds(game_pb2.Card, kind=st.one_of(st.integers(0, 4), INT32),
                  suit=st.one_of(st.integers(0, 5), INT32), rank=st.one_of(st.integers(0, 15),
                                                                           UINT32))
ANSWERS = st.one_of(
    st.builds(bot_pb2.PlayResponse, card=CARDS),
    st.just(bot_pb2.PlayResponse()),
    st.builds(bot_pb2.BidResponse, tricks=UINT32),
    st.builds(bot_pb2.ChooseTrumpResponse, suit=st.one_of(st.integers(0, 5), INT32)))
GAMES = st.sampled_from([None, "wizard", "trumps"])


def check_answer(answer: Any, game: str | None) -> None:
    """A decoded action is what the answer says (re-encoding gives the same message), or
    WireError says what is wrong in one line."""
    try:
        action = action_from_response(answer, game)
    except WireError as e:
        assert_one_line(str(e), "")
        if isinstance(answer, bot_pb2.PlayResponse) and answer.HasField("card"):
            card = answer.card
            assert (card.kind, card.suit, card.rank) not in {
                (m.kind, m.suit, m.rank) for m in map(card_to_message, DECKS[game])}
        return
    if isinstance(answer, bot_pb2.PlayResponse):
        assert action in DECKS[game]
        assert card_to_message(action) == answer.card
    elif isinstance(answer, bot_pb2.BidResponse):
        assert action == answer.tricks
    else:
        assert 0 <= action <= 3 and answer.suit == game_pb2.SUIT_CLUBS + action


@settings(FUZZ, max_examples=examples(300))
@given(answer=ANSWERS, game=GAMES)
def test_bot_answer_fields(answer: Any, game: str | None) -> None:
    check_answer(answer, game)


@settings(FUZZ, max_examples=examples(300))
@given(kind=st.sampled_from([bot_pb2.PlayResponse, bot_pb2.BidResponse,
                             bot_pb2.ChooseTrumpResponse]),
       data=st.one_of(st.binary(max_size=40),
                      st.builds(lambda m, junk: m.SerializeToString() + junk, ANSWERS,
                                st.binary(max_size=8))),
       game=GAMES)
def test_bot_answer_bytes(kind: Any, data: bytes, game: str | None) -> None:
    try:
        answer = kind.FromString(data)
    except DecodeError:
        return  # gRPC refuses the call: the referee counts a fault
    check_answer(answer, game)


@settings(FUZZ, max_examples=examples(300))
@given(data=st.one_of(
    st.binary(max_size=60),
    st.builds(lambda name, version, games: bot_pb2.HelloResponse(
        name=name, protocol_version=version, games=games).SerializeToString(),
        st.text(max_size=10), UINT32, st.lists(st.one_of(st.integers(0, 3), INT32),
                                               max_size=4))))
def test_hello_answer_bytes(data: bytes) -> None:
    try:
        answer = bot_pb2.HelloResponse.FromString(data)
    except DecodeError:
        return
    try:
        info = bot_info_from_response(answer)
    except WireError as e:
        assert_one_line(str(e), "HelloResponse")
        try:
            check_hello(answer.name, answer.version, answer.author)
        except NameError_:
            return  # refused by the rule for names (arena/names.py)
        assert (not answer.name.strip() or answer.protocol_version == 0
                or not {game_pb2.GAME_WIZARD, game_pb2.GAME_TRUMPS} & set(answer.games))
    else:
        assert info.name == answer.name and info.protocol_version == answer.protocol_version
        assert info.games and set(info.games) <= {"wizard", "trumps"}
