"""What the ``arena league`` commands share: the usage error, the output folder claimed,
the store opened with the run lock (checked against the league file), the run lock
taken, the leaderboard written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from arena import __version__
from arena.files import FolderError, claim_folder
from arena.league.config import FORMAT, LeagueConfig
from arena.league.store import LeagueBot, ensure_tables, register_file_bots
from arena.model.errors import one_line
from arena.runs.audit import open_for_run
from arena.runs.lock import Held, LockError, RunLock
from arena.runs.store import Store, StoreError

PROG = "arena league"


class LeagueUsage(ValueError):
    """A mistake in the command line, the file or the folder: one line, exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


def claim(config: LeagueConfig) -> None:
    try:
        claim_folder(config.output, "league",
                     f"choose another output in {config.path} or --out", Store.is_store)
    except FolderError as e:
        raise LeagueUsage(str(e)) from None


def open_store(config: LeagueConfig, lock: RunLock) -> Store:
    """The league's store, opened with the run lock, checked against the file, with the
    league's tables and the file's bots."""
    try:
        store = open_for_run(config.output, lock)  # it holds the secret master seeds
    except StoreError as e:
        raise LeagueUsage(str(e)) from None
    return prepared(config, store)


def prepared(config: LeagueConfig, store: Store) -> Store:
    """``store``, checked against the league file, with the league's tables and the
    file's bots (closed if it cannot be)."""
    try:
        _prepare(config, store)
    except BaseException:
        store.close()
        raise
    return store


def _prepare(config: LeagueConfig, store: Store) -> None:
    base = config.base
    try:
        meta = store.meta()
        if meta.get("format", FORMAT) != FORMAT:
            raise LeagueUsage(f"{config.output}: holds a tournament, not a league; choose "
                              f"another output in {config.path} or --out")
        if "tournament_hash" in meta and meta["tournament_hash"] != config.digest:
            raise LeagueUsage(
                f"{config.path} has changed since the league in {config.output} was "
                f"started (file sha256 {config.digest[:12]}, stored "
                f"{meta['tournament_hash'][:12]}); restore the file (the field changes "
                f"with 'arena league add/update/retire'), or run again with --fresh")
        store.set_meta({
            "name": config.name, "game": base.game, "options": json.dumps(base.options),
            "seats": str(base.seats), "format": FORMAT, "deals": "1", "candidates": "[]",
            "move_ms": str(base.move_ms), "bank_ms": str(base.bank_ms),
            "max_faults": str(base.max_faults), "tournament_file": base.text,
            "tournament_path": str(base.path), "tournament_hash": config.digest,
            "arena_version": __version__,
            "skipped": json.dumps([list(s) for s in base.skipped]),
            "isolation": base.isolation})
        ensure_tables(store)
        folder = base.folder
        register_file_bots(store, [
            LeagueBot(b.name, b.name, 1, None, b, b.cwd or folder, b.name in config.house,
                      config.house.get(b.name), "active") for b in base.bots])
    except StoreError as e:
        raise LeagueUsage(str(e)) from None


def take_lock(config: LeagueConfig) -> RunLock | None:
    """The run lock if no run holds it (None while one does)."""
    try:
        return RunLock.take(config.output, "league")
    except Held:
        return None
    except LockError as e:
        raise LeagueUsage(str(e)) from None


def write_board(store: Store, folder: Path, resamples: int) -> None:
    from arena.report.board import build_leaderboard
    from arena.report.text import write_leaderboard

    try:
        if not store.readonly:
            store.set_meta({"resamples": str(resamples)})
        board = build_leaderboard(store.iter_games(), store.meta(), store.bots(),
                                  resamples=resamples)
        write_leaderboard(folder, board)
    except (StoreError, OSError) as e:
        print(f"note: the leaderboard was not written: {one_line(str(e))}", file=sys.stderr)
