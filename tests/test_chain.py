"""The results chain against tampering: a real tournament of built-in bots is run through
the command line, then its SQLite store or its export is changed in one way each, as a
process with write access could, and ``arena verify`` must name the game and exit 1."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.cli import main
from arena.model.chain import ChainError, Link, canonical, check_chain, genesis, link

REPO = Path(__file__).resolve().parent.parent

TOURNAMENT = """
name = "chain-test"
game = "trumps"
seats = 3
seed = 77
concurrency = 2

[options]
draw = false

[schedule]
format = "round-robin"
deals = 1

[[bots]]
name = "h1"
spec = "heuristic"

[[bots]]
name = "r1"
spec = "random"

[[bots]]
name = "r2"
spec = "random"

[[bots]]
name = "h2"
spec = "heuristic"
"""
TOTAL = 4 * 1 * 3  # tables x deals x rotations

def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def caught(capsys: pytest.CaptureFixture[str], name: str, target: Path, game: str | None,
           what: str, *extra: str) -> None:
    """``arena verify target`` must fail with one line naming ``game`` and ``what``."""
    code, out, err = run(capsys, "verify", str(target), *extra)
    assert code == 1, f"{name}: not caught: {out}{err}"
    assert out == "" and err.count("\n") == 1 and len(err) < 300, err
    if game is not None:
        assert f"game {game}" in err, err
    assert what in err, err


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tournament's output folder (copy it before changing it)."""
    folder = tmp_path_factory.mktemp("chain")
    path = folder / "t.toml"
    path.write_text(TOURNAMENT)
    assert main(["tournament", str(path), "--out", str(folder / "out"),
                 "--resamples", "20"]) == 0
    return folder / "out"


@pytest.fixture
def out(played: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "out"
    shutil.copytree(played, copy)
    return copy


@contextlib.contextmanager
def db(folder: Path) -> Iterator[sqlite3.Connection]:
    with contextlib.closing(sqlite3.connect(folder / "tournament.sqlite")) as conn, conn:
        yield conn


def chain_ids(folder: Path) -> list[str]:
    with db(folder) as conn:
        return [r[0] for r in conn.execute(
            "SELECT id FROM games WHERE status = 'done' ORDER BY chain_seq")]


def record_of(conn: sqlite3.Connection, game_id: str) -> dict[str, Any]:
    return dict(json.loads(conn.execute("SELECT record FROM games WHERE id = ?",
                                        (game_id,)).fetchone()[0]))


def swap_seats(record: dict[str, Any]) -> dict[str, Any]:
    """The issue's attack: the bots of seats 0 and 1 trade places, so each is credited
    with the other's cards and score; the record is still a legal game."""
    seats = list(record["seats"])
    seats[0], seats[1] = seats[1], seats[0]
    return {**record, "seats": seats}


def delete_game(conn: sqlite3.Connection, game_id: str) -> None:
    for table in ("results", "faults"):
        conn.execute(f"DELETE FROM {table} WHERE game_id = ?", (game_id,))
    conn.execute("DELETE FROM games WHERE id = ?", (game_id,))


def head_of(folder: Path) -> str:
    return str(json.loads((folder / "leaderboard.json").read_text())["chain_head"])


# -- the untampered tournament --------------------------------------------------------------


def test_a_finished_tournament_verifies_with_its_published_head(
        out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = head_of(out)
    with db(out) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        rows = conn.execute("SELECT chain_seq, chain_prev, chain, record FROM games"
                            " ORDER BY chain_seq").fetchall()
    assert meta["chain_head"] == head and meta["chain_games"] == str(TOTAL)
    assert [r[0] for r in rows] == list(range(TOTAL))
    prev = genesis(meta["seed_commitment"])
    for _, stored_prev, digest, text in rows:  # recomputed here, not by the arena
        assert stored_prev == prev and digest == link(prev, json.loads(text))
        prev = digest
    assert prev == head
    code, text, _ = run(capsys, "verify", str(out), "--head", head)
    assert code == 0 and text == f"{out}: ok ({TOTAL} games), chain head {head}\n"
    board = (out / "leaderboard.md").read_text()
    assert f"results chain head `{head}`" in board


def test_an_export_is_in_chain_order_and_verifies(out: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "export", str(out))[0] == 0
    lines = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]
    assert [x["game_id"] for x in lines] == chain_ids(out)
    assert [x["chain"]["seq"] for x in lines] == list(range(TOTAL))
    head = head_of(out)
    code, text, _ = run(capsys, "verify", str(out / "games.jsonl"), "--head", head)
    assert code == 0 and text.endswith(f"ok ({TOTAL} records), chain head {head}\n")


def test_the_snippet_in_the_docs_rechecks_an_export(out: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    docs = (REPO / "docs" / "records.md").read_text()
    match = re.search(r"<!-- chain-check -->\n```python\n(.*?)```", docs, re.S)
    assert match is not None, "records.md lost its chain-check snippet"
    script = tmp_path / "check.py"
    script.write_text(match.group(1))
    assert len(match.group(1).splitlines()) <= 16
    assert run(capsys, "export", str(out))[0] == 0
    export, board = out / "games.jsonl", out / "leaderboard.json"

    def snippet() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(script), str(export), str(board)],
                              capture_output=True, text=True, timeout=60, check=False)

    good = snippet()
    assert good.returncode == 0 and good.stdout == f"chain ok: {head_of(out)}\n", good.stderr
    lines = export.read_text().splitlines()
    first = json.loads(lines[4])
    first["seats"] = swap_seats(first)["seats"]
    lines[4] = json.dumps(first)
    export.write_text("\n".join(lines) + "\n")
    bad = snippet()
    assert bad.returncode != 0 and "line 5 does not hold" in bad.stderr


def test_a_plain_record_file_still_verifies_without_a_chain(
        out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with db(out) as conn:
        record = record_of(conn, chain_ids(out)[0])
    single = out / "one.json"
    single.write_text(json.dumps(record))
    code, text, _ = run(capsys, "verify", str(single))
    assert code == 0 and text == f"{single}: ok (1 record), no chain\n"
    code, _, err = run(capsys, "verify", str(single), "--head", head_of(out))
    assert code == 1 and "head mismatch" in err


# -- a tampered store -----------------------------------------------------------------------


def tamper_record_seats(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    # the attack, done thoroughly: the record, the games table and the results
    game = ids[5]
    record = swap_seats(record_of(conn, game))
    conn.execute("UPDATE games SET record = ?, bots = ? WHERE id = ?",
                 (json.dumps(record), json.dumps(record["seats"]), game))
    conn.executemany("UPDATE results SET bot = ?, score = ?, place = ? WHERE game_id = ?"
                     " AND seat = ?", [(record["seats"][s], record["totals"][s],
                                        record["places"][s], game, s) for s in range(3)])
    return game, "changed: the record does not hash to its chain link"


def tamper_record_only(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    game = ids[0]
    conn.execute("UPDATE games SET record = ? WHERE id = ?",
                 (json.dumps(swap_seats(record_of(conn, game))), game))
    return game, "changed: the record does not hash"


def tamper_games_seats(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    # the leaderboard reads the seats from the games table
    game = ids[3]
    bots = json.loads(conn.execute("SELECT bots FROM games WHERE id = ?", (game,)).fetchone()[0])
    conn.execute("UPDATE games SET bots = ? WHERE id = ?",
                 (json.dumps([bots[1], bots[0], *bots[2:]]), game))
    return game, "changed: the games table seats"


def tamper_result_row(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    game = ids[7]
    conn.execute("UPDATE results SET score = score + 10, place = 1 WHERE game_id = ? AND"
                 " seat = 2", (game,))
    return game, "changed: its results row for seat 2"


def tamper_fault_row(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    game = ids[2]
    conn.execute("INSERT INTO faults VALUES (?, 1, 'h1', 1, 1, 'timeout', 'late', 'play C2')",
                 (game,))
    return game, "changed: its faults rows"


def tamper_result_times(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    # the live pages' totals add up these sums of the record's times
    game = ids[9]
    conn.execute("UPDATE results SET wall_ms = wall_ms / 2 WHERE game_id = ? AND seat = 0",
                 (game,))
    return game, "changed: its results row for seat 0 does not hold the sums of the record's"


def tamper_delete_game(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    delete_game(conn, ids[4])
    return ids[5], "removed: the game before it in the chain"


def tamper_delete_and_renumber(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    delete_game(conn, ids[4])
    conn.execute("UPDATE games SET chain_seq = chain_seq - 1 WHERE chain_seq > 4")
    return ids[5], "removed: the game before it in the chain"


def tamper_delete_last(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    delete_game(conn, ids[-1])
    return ids[-2], "removed: the chain ends at"


def tamper_reorder(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    conn.execute("UPDATE games SET chain_seq = CASE id WHEN ? THEN 6 ELSE 2 END"
                 " WHERE id IN (?, ?)", (ids[2], ids[2], ids[6]))
    return ids[6], "reordered: it follows"


def tamper_reorder_links(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    # swap the two games' whole links: each record now sits under the other's hash
    rows = {r[0]: r[1:] for r in conn.execute(
        "SELECT id, chain_seq, chain_prev, chain FROM games WHERE id IN (?, ?)",
        (ids[1], ids[8]))}
    for game, other in ((ids[1], ids[8]), (ids[8], ids[1])):
        conn.execute("UPDATE games SET chain_seq = NULL, chain_prev = ?, chain = ?"
                     " WHERE id = ?", (rows[other][1], rows[other][2], game))
    for game, other in ((ids[1], ids[8]), (ids[8], ids[1])):
        conn.execute("UPDATE games SET chain_seq = ? WHERE id = ?", (rows[other][0], game))
    return ids[8], "changed: the record does not hash"


def tamper_insert_unlinked(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    # a copy of a real game under the id of a game the schedule does not have
    record = record_of(conn, ids[0])
    record["game_id"] = "t9-d0-r0"
    conn.execute("INSERT INTO games (id, seq, table_no, deal_no, rotation, deal_seed, bots,"
                 " status, started_at, ended_at, record) VALUES ('t9-d0-r0', 99, 9, 0, 0, ?, ?,"
                 " 'done', 1.0, 2.0, ?)",
                 (str(record["seed"]), json.dumps(record["seats"]), json.dumps(record)))
    return "t9-d0-r0", "added: it carries no chain link"


def tamper_insert_linked(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    # a new game linked properly after the head, but the head left alone
    record = record_of(conn, ids[0])
    record["game_id"] = "t9-d0-r0"
    head = conn.execute("SELECT value FROM meta WHERE key = 'chain_head'").fetchone()[0]
    conn.execute("INSERT INTO games (id, seq, table_no, deal_no, rotation, deal_seed, bots,"
                 " status, started_at, ended_at, record, chain_seq, chain_prev, chain)"
                 " VALUES ('t9-d0-r0', 99, 9, 0, 0, ?, ?, 'done', 1.0, 2.0, ?, ?, ?, ?)",
                 (str(record["seed"]), json.dumps(record["seats"]), json.dumps(record),
                  len(ids), head, link(head, record)))
    return "t9-d0-r0", "added"


def tamper_head(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    conn.execute("UPDATE meta SET value = ? WHERE key = 'chain_head'", ("ab" * 32,))
    return "", "head mismatch"


def tamper_orphan_results(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    conn.execute("INSERT INTO results (game_id, seat, bot, score, place, forfeited)"
                 " VALUES ('t7-d0-r0', 0, 'h1', 99, 1, 0)")
    return "t7-d0-r0", "added: results rows"


def tamper_resealed(conn: sqlite3.Connection, ids: list[str]) -> tuple[str, str]:
    # the seats swapped everywhere and the whole chain and its head recomputed: the
    # schedule the committed seed makes still says who sat where
    game = ids[5]
    tamper_record_seats(conn, ids)
    commitment = conn.execute(
        "SELECT value FROM meta WHERE key = 'seed_commitment'").fetchone()[0]
    prev = genesis(commitment)
    for game_id in ids:
        digest = link(prev, record_of(conn, game_id))
        conn.execute("UPDATE games SET chain_prev = ?, chain = ? WHERE id = ?",
                     (prev, digest, game_id))
        prev = digest
    conn.execute("UPDATE meta SET value = ? WHERE key = 'chain_head'", (prev,))
    return game, "changed: the schedule seats"


STORE_TAMPERING: dict[str, Callable[[sqlite3.Connection, list[str]], tuple[str, str]]] = {
    "record and tables with swapped seats": tamper_record_seats,
    "record with swapped seats": tamper_record_only,
    "games table seats swapped": tamper_games_seats,
    "a results row changed": tamper_result_row,
    "a faults row added": tamper_fault_row,
    "a results row's sum of times changed": tamper_result_times,
    "a game deleted": tamper_delete_game,
    "a game deleted and the chain renumbered": tamper_delete_and_renumber,
    "the last game deleted": tamper_delete_last,
    "two games' chain positions swapped": tamper_reorder,
    "two games' whole links swapped": tamper_reorder_links,
    "a game inserted without a link": tamper_insert_unlinked,
    "a game inserted and linked after the head": tamper_insert_linked,
    "the head changed": tamper_head,
    "results rows for no game": tamper_orphan_results,
    "seats swapped and the chain resealed": tamper_resealed,
}


@pytest.mark.parametrize("name", list(STORE_TAMPERING))
def test_a_tampered_store_is_caught(name: str, out: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    ids = chain_ids(out)
    with db(out) as conn:
        game, what = STORE_TAMPERING[name](conn, ids)
    caught(capsys, f"store: {name}", out, game or None, what)


def test_a_truncated_chain_with_a_new_head_is_caught_by_the_published_head(
        out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    published = head_of(out)
    ids = chain_ids(out)
    with db(out) as conn:
        for game in ids[-3:]:
            delete_game(conn, game)
        new_head = conn.execute("SELECT chain FROM games WHERE id = ?", (ids[-4],)).fetchone()[0]
        conn.executemany("UPDATE meta SET value = ? WHERE key = ?",
                         [(new_head, "chain_head"), (str(len(ids) - 3), "chain_games")])
    code, text, _ = run(capsys, "verify", str(out))  # consistent in itself
    assert code == 0 and text.endswith(f"chain head {new_head}\n")
    caught(capsys, "store: truncated, head rewritten", out, None, "head mismatch",
           "--head", published)


def test_a_store_file_cut_short_is_caught(out: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = out / "tournament.sqlite"
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)
    caught(capsys, "store: file cut in half", out, None, f"{path}: ")


# -- a tampered export ----------------------------------------------------------------------


def tamper_line(lines: list[str]) -> tuple[str, str]:
    record = json.loads(lines[3])
    swapped = swap_seats({k: v for k, v in record.items() if k != "chain"})
    lines[3] = json.dumps({**swapped, "chain": record["chain"]})
    return f"{record['game_id']} at line 4", "changed"


def drop_line(lines: list[str]) -> tuple[str, str]:
    del lines[6]
    return f"{json.loads(lines[6])['game_id']} at line 7", "removed"


def swap_lines(lines: list[str]) -> tuple[str, str]:
    lines[2], lines[8] = lines[8], lines[2]
    return f"{json.loads(lines[2])['game_id']} at line 3", "reordered"


def append_copy(lines: list[str]) -> tuple[str, str]:
    lines.append(lines[0])
    return f"{json.loads(lines[0])['game_id']} at line {len(lines)}", "added: a second copy"


def append_plain(lines: list[str]) -> tuple[str, str]:
    record = json.loads(lines[0])
    del record["chain"]
    record["game_id"] = "t9-d0-r0"
    lines.append(json.dumps(record))
    return f"t9-d0-r0 at line {len(lines)}", "added: it carries no chain link"


EXPORT_TAMPERING: dict[str, Callable[[list[str]], tuple[str, str]]] = {
    "a line edited (seats swapped)": tamper_line,
    "a line dropped": drop_line,
    "two lines swapped": swap_lines,
    "a line appended twice": append_copy,
    "a plain record appended": append_plain,
}


@pytest.mark.parametrize("name", list(EXPORT_TAMPERING))
def test_a_tampered_export_is_caught(name: str, out: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "export", str(out))[0] == 0
    export = out / "games.jsonl"
    lines = export.read_text().splitlines()
    game, what = EXPORT_TAMPERING[name](lines)
    export.write_text("\n".join(lines) + "\n")
    caught(capsys, f"export: {name}", export, game, what)


@pytest.mark.parametrize(("cut", "what"), [("last line dropped", "head mismatch"),
                                           ("forged line appended", "added: the chain head")])
def test_an_export_cut_or_extended_at_the_end_is_caught_by_the_published_head(
        cut: str, what: str, out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "export", str(out))[0] == 0
    export = out / "games.jsonl"
    lines = export.read_text().splitlines()
    if cut == "last line dropped":
        lines.pop()
    else:
        record = json.loads(lines[0])
        del record["chain"]
        record["game_id"] = "t9-d0-r0"
        last = json.loads(lines[-1])["chain"]
        record["chain"] = {"seq": len(lines), "prev": last["hash"],
                           "hash": link(last["hash"], record)}
        lines.append(json.dumps(record))
    export.write_text("\n".join(lines) + "\n")
    assert run(capsys, "verify", str(export))[0] == 0  # consistent in itself
    caught(capsys, f"export: {cut}", export, None, what, "--head", head_of(out))


# -- resuming, and stores from before the chain -----------------------------------------------


def unfinish(folder: Path, count: int) -> None:
    """Leave the store as a kill -9 leaves it: the last ``count`` games written were in
    flight (``running``, no record, no link), the head at the game before them."""
    ids = chain_ids(folder)
    with db(folder) as conn:
        for game in ids[-count:]:
            for table in ("results", "faults"):
                conn.execute(f"DELETE FROM {table} WHERE game_id = ?", (game,))
            conn.execute("UPDATE games SET status = 'running', record = NULL, ended_at = NULL,"
                         " chain_seq = NULL, chain_prev = NULL, chain = NULL WHERE id = ?",
                         (game,))
        head = conn.execute("SELECT chain FROM games WHERE id = ?",
                            (ids[-count - 1],)).fetchone()[0]
        conn.executemany("UPDATE meta SET value = ? WHERE key = ?",
                         [(head, "chain_head"), (str(len(ids) - count), "chain_games")])


def resume(folder: Path, tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(TOURNAMENT)
    assert main(["tournament", str(path), "--out", str(folder), "--resamples", "20"]) == 0


def test_a_resumed_tournament_continues_the_chain(out: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    everything = chain_ids(out)
    before = everything[:-4]
    unfinish(out, 4)
    code, text, _ = run(capsys, "verify", str(out))
    assert code == 0 and f"ok ({TOTAL - 4} games)" in text
    resume(out, tmp_path)
    capsys.readouterr()
    after = chain_ids(out)
    assert after[:len(before)] == before and sorted(after) == sorted(everything)
    code, text, err = run(capsys, "verify", str(out), "--head", head_of(out))
    assert code == 0, err
    assert text == f"{out}: ok ({TOTAL} games), chain head {head_of(out)}\n"


def test_a_store_from_before_the_chain_verifies_and_is_linked_on_resume(
        out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unfinish(out, 2)
    with db(out) as conn:  # what an older arena wrote: no links, no head
        conn.execute("UPDATE games SET chain_seq = NULL, chain_prev = NULL, chain = NULL")
        conn.execute("DELETE FROM meta WHERE key IN ('chain_head', 'chain_games')")
    code, text, _ = run(capsys, "verify", str(out))
    assert code == 0 and text == f"{out}: ok ({TOTAL - 2} games), no chain\n"
    assert run(capsys, "export", str(out))[0] == 0
    code, text, _ = run(capsys, "verify", str(out / "games.jsonl"))
    assert code == 0 and text.endswith(f"ok ({TOTAL - 2} records), no chain\n")
    with db(out) as conn:
        seqs = [r[0] for r in conn.execute(
            "SELECT id FROM games WHERE status = 'done' ORDER BY seq")]
    resume(out, tmp_path)
    capsys.readouterr()
    assert chain_ids(out)[:TOTAL - 2] == seqs  # the old games first, in schedule order
    code, text, err = run(capsys, "verify", str(out), "--head", head_of(out))
    assert code == 0 and f"ok ({TOTAL} games), chain head" in text, err


# -- the chain by itself ----------------------------------------------------------------------


def test_the_chain_names_each_kind_of_break() -> None:
    records = [{"game_id": f"g{i}", "n": i, "name": "é"} for i in range(4)]
    start = genesis("c0")
    links, prev = [], start
    for i, rec in enumerate(records):
        digest = link(prev, rec)
        links.append(Link(f"g{i}", i, prev, digest, rec))
        prev = digest
    assert canonical({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()
    assert check_chain(links, start, prev, 4) == prev
    cases: list[tuple[list[Link], str]] = [
        ([links[0], Link("g1", 1, links[1].prev, links[1].hash, {"game_id": "g1"}),
          *links[2:]], "game g1 (chain position 1): changed"),
        ([links[0], *links[2:]], "game g2 (chain position 1): removed"),
        ([links[0], links[2], links[1], links[3]], "game g2 (chain position 1): reordered"),
        ([*links, Link("g9", None, None, None, {})], "game g9 (chain position 4): added"),
        ([*links, links[1]], "game g1 (chain position 4): added: a second copy"),
    ]
    for broken, message in cases:
        with pytest.raises(ChainError, match=re.escape(message)):
            check_chain(broken, start)
    with pytest.raises(ChainError, match="head mismatch"):
        check_chain(links, start, "00" * 32)
    with pytest.raises(ChainError, match=re.escape("game g3 (chain position 3): added")):
        check_chain(links, start, links[2].hash)
    with pytest.raises(ChainError, match="removed: the chain ends at game g3 after 4"):
        check_chain(links, start, prev, 5)
    with pytest.raises(ChainError, match=re.escape("game g0 (chain position 0): removed: "
                                                   "the game before it in the chain (after "
                                                   "the start) is missing, or the chain is "
                                                   "of another tournament")):
        check_chain(links, genesis("another tournament"))


# -- the store file itself ----------------------------------------------------------------


def damage_page_of(folder: Path, name: str) -> int:
    """Flip the first bytes of the root page of the index ``name`` in the store (a page
    that no record lives on, which the export never reads); its page number."""
    path = folder / "tournament.sqlite"
    with db(folder) as conn:
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        root = int(conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?",
                                (name,)).fetchone()[0])
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(path, "r+b") as f:
        f.seek((root - 1) * page_size)
        head = f.read(16)
        f.seek((root - 1) * page_size)
        f.write(bytes(b ^ 0x5A for b in head))
    return root


def test_verify_certifies_no_damaged_store_file(
        out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Damage where no record lives (an index of the games table): every record still
    reads and the chain still holds, yet SQLite's own check fails, and so does verify,
    in one line that says what is still readable. (Before, it said "ok (12 games)".)"""
    damage_page_of(out, "sqlite_autoindex_games_2")
    code, stdout, err = run(capsys, "verify", str(out))
    assert code == 1 and stdout == "" and err.count("\n") == 1, err
    assert "the store file is damaged; " in err and "; SQLite's integrity check: " in err
    assert f"{TOTAL} of its {TOTAL} finished games can still be read" in err


def test_a_run_refuses_to_write_into_a_damaged_store(
        out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.toml"
    path.write_text(TOURNAMENT)
    damage_page_of(out, "sqlite_autoindex_games_2")
    before = (out / "tournament.sqlite").read_bytes()
    code, _, err = run(capsys, "tournament", str(path), "--out", str(out))
    assert code == 2 and err.count("\n") == 1, err
    assert "the store file is damaged" in err and "not run (arena verify says more)" in err
    assert (out / "tournament.sqlite").read_bytes() == before  # nothing written


def test_the_results_rows_give_a_resume_every_games_bots_and_totals(out: Path) -> None:
    """What a resume's standings read (no record parsed) equals what the records say."""
    from arena.runs.store import Store

    with Store.open_readonly(out) as store:
        rows = list(store.iter_results())
        records = [(tuple(g.bots), tuple(float(t) for t in g.record["totals"]))
                   for g in store.iter_games()]
    assert len(rows) == TOTAL and rows == records
