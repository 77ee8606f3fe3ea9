"""A hostile bot that remembers deals across games, to recognise a deal played again.

A tournament plays every deal once in each rotation of the seats. A bot that remembers
every seat's cards of a finished game (RoundEnded shows every trick, so every card each
seat played: its whole hand, when every card is played, as in Wizard and in Trumps
without drawing) knows all the other hands as soon as it sees its own again in another
rotation. The sandbox's answer: a process never plays two games of the same deal
(isolation ``deal``), and its /tmp is its own.

Memory is kept in the process and in a file in the temporary folder (one JSON line per
hand, appended, so that other processes of the bot can read it). A hand is keyed by the
game, players, round, turned card and the sorted cards. At the first decision of every
round the bot looks its own hand up: a match from another game is a recognised deal.

Report: ``{"attack": "memory", "games_seen": N, "deal_recognised": M, "from_disk": K}``
(cumulative for the process: games it played, games in which it recognised a deal, and
those recognised through the file only).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterable

import _hostile

from arena.sdk import GameResult, RoundResult, View

FILE_NAME = "hostile-memory.jsonl"


def key(game: str, players: int, round_number: int, trump_card: int | None,
        hand: Iterable[int]) -> str:
    cards = ",".join(str(c) for c in sorted(hand))
    return f"{game}/{players}/{round_number}/{trump_card}/{cards}"


class Memory(_hostile.Legal):
    name = "hostile-memory"

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.path = os.path.join(tempfile.gettempdir(), FILE_NAME)
        self.in_memory: dict[str, str] = {}
        """hand key -> the game it was seen in (this process)."""
        self.on_disk: dict[str, tuple[str, str]] = {}
        """hand key -> (game, process), read from the file (any process)."""
        self.disk_offset = 0
        self.played: set[str] = set()
        self.recognised: set[str] = set()
        self.from_disk: set[str] = set()
        self.checked: set[tuple[str, int]] = set()
        self.disk_errors = 0
        self._read_disk()
        _hostile.report("memory", phase="start", disk_entries=len(self.on_disk),
                        path=self.path, **self._counts())

    def _counts(self) -> dict[str, int]:
        return {"games_seen": len(self.played), "deal_recognised": len(self.recognised),
                "from_disk": len(self.from_disk)}

    def _read_disk(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.disk_offset)
                data = f.read()
        except FileNotFoundError:
            return
        except OSError:
            self.disk_errors += 1
            return
        end = data.rfind(b"\n") + 1  # a line being appended is read next time
        self.disk_offset += end
        for line in data[:end].splitlines():
            try:
                entry = json.loads(line)
                self.on_disk.setdefault(entry["key"], (entry["game"], entry["proc"]))
            except (ValueError, KeyError, TypeError):
                continue

    def _remember(self, keys: dict[str, str]) -> None:
        lines = []
        for k, game in keys.items():
            if k not in self.in_memory:
                self.in_memory[k] = game
                lines.append(json.dumps({"key": k, "game": game, "proc": _hostile.PROC})
                             + "\n")
        if not lines:
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, "".join(lines).encode())
            finally:
                os.close(fd)
        except OSError:
            self.disk_errors += 1

    def _look(self, view: View) -> None:
        game = self.game_id
        with self.lock:
            if (game, view.round) in self.checked:
                return
            self.checked.add((game, view.round))
            new_game = game not in self.played
            self.played.add(game)
            self._read_disk()
            mine = key(view.game, view.players, view.round, view.trump_card, view.hand)
            seen_in = self.in_memory.get(mine)
            disk_game, disk_proc = self.on_disk.get(mine, ("", ""))
            hit = ""
            if seen_in is not None and seen_in != game:
                hit = "memory"
            elif disk_game and (disk_game != game or disk_proc != _hostile.PROC):
                # another game, or this game played by another process (an earlier run)
                hit = "disk"
            if hit and game not in self.recognised:
                self.recognised.add(game)
                if hit == "disk":
                    self.from_disk.add(game)
            self._remember({mine: game})
            if new_game or hit:
                _hostile.report("memory", game=game, round=view.round, hit=hit,
                                seen_in=seen_in if hit == "memory" else disk_game,
                                disk_errors=self.disk_errors, **self._counts())

    def bid(self, view: View) -> int:
        self._look(view)
        return super().bid(view)

    def play(self, view: View) -> int:
        self._look(view)
        return super().play(view)

    def choose_trump(self, view: View) -> int:
        self._look(view)
        return super().choose_trump(view)

    def round_ended(self, result: RoundResult) -> None:
        n = result.players
        hands = _hostile.round_hands(result)
        size = result.round if result.game == "wizard" else 7
        if any(len(h) != size for h in hands):
            return  # Trumps with drawing: the hands as dealt cannot be told
        keys = {key(result.game, n, result.round, result.trump_card, h): self.game_id
                for h in hands}
        with self.lock:
            self._remember(keys)

    def game_ended(self, result: GameResult) -> None:
        with self.lock:
            _hostile.report("memory", phase="game-ended", game=self.game_id,
                            remembered=len(self.in_memory), disk_errors=self.disk_errors,
                            **self._counts())


if __name__ == "__main__":
    args, rest = _hostile.parse(_hostile.parser(__doc__ or ""))
    _hostile.serve(Memory(), rest)
