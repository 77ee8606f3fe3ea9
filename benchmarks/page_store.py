"""Synthetic league stores for the live page's benchmark and tests: a real league's
store, played by built-in bots (``arena league run``), then grown to any number of
finished games with SQL alone (copies of its games under new ids and tables), the way
the store's own triggers see them (the running totals are kept as a run keeps them)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

LEAGUE_TOML = """name = "page"
game = "trumps"
seats = 3
seed = 5
concurrency = 1
output = "out"
[options]
draw = false
[time]
move_ms = 2000
[[bots]]
name = "b0"
spec = "random"
[[bots]]
name = "b1"
spec = "heuristic"
[[bots]]
name = "b2"
spec = "random"
[[bots]]
name = "b3"
spec = "heuristic"
"""
"""Trumps at 3 seats, four built-in bots (no process): a set is 3 games."""


def play_league(folder: Path, games: int = 6) -> Path:
    """A league of :data:`LEAGUE_TOML` in ``folder`` that played ``games`` games (whole
    sets); its output folder."""
    from arena.cli import main

    (folder / "league.toml").write_text(LEAGUE_TOML)
    code = main(["league", "run", str(folder / "league.toml"), "--games", str(games),
                 "--resamples", "20"])
    if code != 0:
        raise RuntimeError(f"arena league run exited {code}")
    return folder / "out"


def grow(out: Path, total: int) -> int:
    """Add copies of the store's finished games (new ids, new table numbers: whole sets,
    as the league's) until it holds ``total`` finished games; the number held."""
    with closing(sqlite3.connect(out / "tournament.sqlite", isolation_level=None)) as db:
        have = int(db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'"
                              ).fetchone()[0])
        if have >= total:
            return have
        template = [r[0] for r in db.execute(
            "SELECT id FROM games WHERE status = 'done' ORDER BY seq")]
        top = db.execute("SELECT MAX(seq), MAX(table_no), MAX(chain_seq) FROM games"
                         ).fetchone()
        seq0, table0, chain0 = int(top[0]) + 1, int(top[1]) + 1, int(top[2] or 0) + 1
        period = len(template)
        db.execute("BEGIN IMMEDIATE")
        db.execute("CREATE TEMP TABLE copies (n INTEGER PRIMARY KEY, src TEXT, id TEXT,"
                   " seq INTEGER, table_no INTEGER)")
        db.executemany("INSERT INTO copies VALUES (?, ?, ?, ?, ?)", [
            (i, template[i % period], f"x{i}-{template[i % period]}", seq0 + i,
             table0 + i // 3) for i in range(total - have)])
        db.execute(
            "INSERT INTO games (id, seq, table_no, deal_no, rotation, deal_seed, bots,"
            " status, started_at, ended_at, chain_seq, chain_prev, chain, record)"
            " SELECT c.id, c.seq, c.table_no, g.deal_no, g.rotation, g.deal_seed, g.bots,"
            " 'done', g.started_at, g.ended_at, ? + c.n, g.chain_prev, g.chain, g.record"
            " FROM copies AS c JOIN games AS g ON g.id = c.src", (chain0,))
        for table, columns in (("results", "seat, bot, score, place, forfeited"),
                               ("latencies", "seat, bot, ms, cpu_ms"),
                               ("faults", "seat, bot, round, trick, kind, detail, action")):
            db.execute(f"INSERT INTO {table} (game_id, {columns}) SELECT c.id, {columns}"
                       f" FROM copies AS c JOIN {table} AS t ON t.game_id = c.src")
        db.execute("DROP TABLE copies")
        db.execute("COMMIT")
    return total
