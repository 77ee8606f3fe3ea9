"""A sensible baseline strategy (placeholder until the real one lands: plays like random)."""

from __future__ import annotations

from arena.rules import View


class HeuristicBot:
    def __init__(self, name: str = "heuristic") -> None:
        self.name = name

    def act(self, view: View) -> int:
        return view.legal[0]
