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
    """Add whole sets to the league's store, copies of its first set (same deal and
    records, as the league names them: set ``n`` is table ``n``, its games
    ``t{n}-d{season}-r{rotation}`` at positions ``3n`` to ``3n + 2``, its decision in
    ``league_sets``), until it holds at least ``total`` finished games; the number
    held. A league run on it goes on with the next set. (The copies' chain links are
    the first set's: such a store is for reading and for playing on, not for ``arena
    verify``.)"""
    with closing(sqlite3.connect(out / "tournament.sqlite", isolation_level=None)) as db:
        have = int(db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'"
                              ).fetchone()[0])
        if have >= total:
            return have
        first = db.execute("SELECT MIN(set_no), MAX(set_no) FROM league_sets").fetchone()
        template, next_set = int(first[0]), int(first[1]) + 1
        chain0 = int(db.execute("SELECT COALESCE(MAX(chain_seq), -1) FROM games"
                                ).fetchone()[0]) + 1
        sets = -(-(total - have) // 3)  # whole sets, rounded up
        db.execute("BEGIN IMMEDIATE")
        db.execute("CREATE TEMP TABLE copies (n INTEGER PRIMARY KEY)")
        db.executemany("INSERT INTO copies VALUES (?)",
                       [(next_set + i,) for i in range(sets)])
        source = "g.table_no = ?"
        db.execute(
            "INSERT INTO league_sets (set_no, season, derivation, bots, reason, deal_seed,"
            " decided_at) SELECT c.n, s.season, c.n, s.bots, s.reason, s.deal_seed,"
            " s.decided_at FROM copies AS c, league_sets AS s WHERE s.set_no = ?",
            (template,))
        new_id = "'t' || c.n || '-d' || g.deal_no || '-r' || g.rotation"
        db.execute(
            "INSERT INTO games (id, seq, table_no, deal_no, rotation, deal_seed, bots,"
            " status, started_at, ended_at, chain_seq, chain_prev, chain, record)"
            f" SELECT {new_id}, 3 * c.n + g.rotation, c.n, g.deal_no, g.rotation,"
            " g.deal_seed, g.bots, 'done', g.started_at, g.ended_at,"
            " ? + 3 * (c.n - ?) + g.rotation, g.chain_prev, g.chain,"
            f" g.record FROM copies AS c, games AS g WHERE {source} AND g.status = 'done'",
            (chain0, next_set, template))
        copied = {table: ", ".join(r[1] for r in db.execute(f"PRAGMA table_info({table})")
                                   if r[1] != "game_id")
                  for table in ("results", "faults", "latencies")}  # latencies: if any
        for table, columns in copied.items():
            if not columns:
                continue
            db.execute(f"INSERT INTO {table} (game_id, {columns}) SELECT {new_id}, "
                       + ", ".join(f"t.{c.strip()}" for c in columns.split(","))
                       + f" FROM copies AS c, games AS g JOIN {table} AS t"
                       f" ON t.game_id = g.id WHERE {source}", (template,))
        db.execute("DROP TABLE copies")
        db.execute("COMMIT")
        return have + 3 * sets
