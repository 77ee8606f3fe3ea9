"""``arena export``: a store's records as JSON lines, in results-chain order."""

from __future__ import annotations

import json
from pathlib import Path

from arena.files import atomic_writer
from arena.model.chain import CHAIN_KEY
from arena.runs.store import Store


def export_records(store: Store, path: Path) -> int:
    """Write every finished game's record as JSON lines, in results-chain order, each with
    its link under ``"chain"`` (a game from before the chain has none); returns how many."""
    count = 0
    with atomic_writer(path) as out:
        for game in store.iter_games(chain_order=True):
            line = dict(game.record)
            if game.chain is not None:
                line[CHAIN_KEY] = {"seq": game.chain_seq, "prev": game.chain_prev,
                                   "hash": game.chain}
            out.write(json.dumps(line, separators=(",", ":")) + "\n")
            count += 1
    return count
