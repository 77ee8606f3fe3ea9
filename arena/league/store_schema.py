"""The league's tables (described in :mod:`arena.league.store`), as SQL."""

from __future__ import annotations

LEAGUE_SCHEMA = "1"

TABLES = (
    """CREATE TABLE IF NOT EXISTS league_bots (
    name TEXT PRIMARY KEY,
    base TEXT NOT NULL,
    version_no INTEGER NOT NULL,
    previous TEXT,
    spec TEXT NOT NULL,
    entry TEXT NOT NULL,
    house INTEGER NOT NULL,
    rating REAL,
    status TEXT NOT NULL CHECK (status IN ('active', 'retired')),
    added_at REAL NOT NULL,
    retired_at REAL,
    reason TEXT,
    request TEXT
)""",
    """CREATE TABLE IF NOT EXISTS league_requests (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    applied_at REAL NOT NULL,
    answer TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS league_seasons (
    season INTEGER PRIMARY KEY,
    commitment TEXT NOT NULL,
    seed TEXT NOT NULL,
    first_set INTEGER NOT NULL,
    started_at REAL NOT NULL,
    closed_at REAL
)""",
    """CREATE TABLE IF NOT EXISTS league_sets (
    set_no INTEGER PRIMARY KEY,
    season INTEGER NOT NULL,
    derivation INTEGER NOT NULL,
    bots TEXT NOT NULL,
    reason TEXT NOT NULL,
    deal_seed TEXT NOT NULL,
    decided_at REAL NOT NULL
)""",
)
TABLE_NAMES = ("league_bots", "league_requests", "league_seasons", "league_sets")
