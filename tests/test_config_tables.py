"""The tables a tournament file and a league file share (``[time]``, ``[limits]``,
``[cluster]``, ``isolation``, ``concurrency``) are read by one parser
(:func:`arena.runs.config_read.parse_run_tables`): the same text gives the same
settings in both kinds of file, and the same mistake the same one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.league.config import load_league
from arena.model.limits import Limits
from arena.runs.config import ConfigError, TournamentConfig, load_config

SHARED = """concurrency = 3
isolation = "game"

[time]
move_ms = 1500
bank_ms = 250
max_faults = 7
startup_ms = 4000

[limits]
memory_mb = 300
processes = 40

[cluster]
retries = 5
"""

TOURNAMENT_HEAD = """name = "tables"
game = "trumps"
seats = 3
[schedule]
format = "round-robin"
"""

LEAGUE_HEAD = """name = "tables"
game = "trumps"
seats = 3
"""

BOTS = "".join(f'\n[[bots]]\nname = "r{i}"\nspec = "random"\n' for i in range(3))


def both(tmp_path: Path, shared: str) -> tuple[Path, Path]:
    """A tournament file and a league file, each with the ``shared`` tables at its top."""
    tournament = tmp_path / "t.toml"
    league = tmp_path / "l.toml"
    # top-level keys first: TOML's tables end only at the next table
    top, _, tables = shared.partition("\n\n")
    tournament.write_text(top + "\n" + TOURNAMENT_HEAD.replace("[schedule]", tables
                                                               + "\n[schedule]") + BOTS)
    league.write_text(top + "\n" + LEAGUE_HEAD + tables + BOTS)
    return tournament, league


def run_settings(config: TournamentConfig) -> tuple[object, ...]:
    return (config.move_ms, config.bank_ms, config.max_faults, config.startup_ms,
            config.limits, config.engine, config.address, config.working_dir,
            config.retries, config.isolation, config.concurrency, config.concurrency_given)


def test_the_shared_tables_mean_the_same_in_both_files(tmp_path: Path) -> None:
    tournament, league = both(tmp_path, SHARED)
    expected = (1500, 250, 7, 4000, Limits().merged({"memory_mb": 300, "processes": 40}),
                "local", "", None, 5, "game", 3, True)
    assert run_settings(load_config(tournament)) == expected
    assert run_settings(load_league(league).base) == expected


@pytest.mark.parametrize(("old", "new", "error"), [
    ("move_ms = 1500", "move_ms = 0", "time.move_ms: expected an integer 1..3600000, got 0"),
    ("memory_mb = 300", "memory_gb = 1", "limits.memory_gb: unknown key in [limits]"),
    ("retries = 5", 'engine = "spark"', "cluster.engine: "),
    ("retries = 5", "address = 7", "cluster.address: expected a string, got 7"),
    ('isolation = "game"', 'isolation = "none"', "isolation: "),
])
def test_a_mistake_in_a_shared_table_reads_the_same_in_both_files(
        tmp_path: Path, old: str, new: str, error: str) -> None:
    assert old in SHARED
    shared = SHARED.replace(old, new)
    tournament, league = both(tmp_path, shared)
    with pytest.raises(ConfigError) as in_tournament:
        load_config(tournament)
    with pytest.raises(ConfigError) as in_league:
        load_league(league)
    said = str(in_tournament.value).removeprefix(f"{tournament}: ")
    assert said.startswith(error), said
    assert str(in_league.value) == f"{league}: {said}"
