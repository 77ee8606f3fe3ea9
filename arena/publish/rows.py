"""The games list's rows, packed: what :class:`arena.publish.build.Site` keeps of each
game while the games stream past, for the list pages written at the end.

A :class:`~arena.publish.pages.GameRow` is a dozen Python objects (the row, its tuples,
its id and numbers), some 600 bytes a game; :class:`GameRows` keeps the same fields in
flat arrays (the id's bytes, eight-byte numbers, a bot by its index in a list of names),
about 80 bytes a four-seat game, and makes the rows again when they are read.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import overload

from arena.publish.pages import GameRow


class GameRows(Sequence[GameRow]):
    """The rows in the order appended: ``len``, an index or a slice (rows made anew on
    every read), iteration."""

    __slots__ = ("_bot", "_bots", "_ends", "_ids", "_names", "_numbers", "_places", "_totals")

    def __init__(self) -> None:
        self._ids = bytearray()
        self._numbers = array("q")
        """Per row: seq, table, deal, rotation, faults, the end of its id in ``_ids``
        and the end of its seats in ``_bots``."""
        self._bots = array("i")
        self._totals = array("q")
        self._places = array("q")
        self._names: list[str] = []
        self._bot: dict[str, int] = {}

    def append(self, row: GameRow) -> None:
        if not len(row.bots) == len(row.totals) == len(row.places):
            raise ValueError(f"game {row.id}: {len(row.bots)} bots, {len(row.totals)} totals "
                             f"and {len(row.places)} places")
        self._ids += row.id.encode()
        for name in row.bots:
            index = self._bot.get(name)
            if index is None:
                index = self._bot[name] = len(self._names)
                self._names.append(name)
            self._bots.append(index)
        self._totals.extend(row.totals)
        self._places.extend(row.places)
        self._numbers.extend((row.seq, row.table_no, row.deal_no, row.rotation, row.faults,
                              len(self._ids), len(self._bots)))

    def __len__(self) -> int:
        return len(self._numbers) // 7

    def _row(self, i: int) -> GameRow:
        seq, table_no, deal_no, rotation, faults, id_end, seat_end = \
            self._numbers[7 * i:7 * i + 7]
        id_start, seat_start = (0, 0) if i == 0 else self._numbers[7 * i - 2:7 * i]
        names = self._names
        return GameRow(self._ids[id_start:id_end].decode(), seq, table_no, deal_no, rotation,
                       tuple(names[b] for b in self._bots[seat_start:seat_end]),
                       tuple(self._totals[seat_start:seat_end]),
                       tuple(self._places[seat_start:seat_end]), faults)

    @overload
    def __getitem__(self, index: int) -> GameRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[GameRow]: ...

    def __getitem__(self, index: int | slice) -> GameRow | list[GameRow]:
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(len(self)))]
        count = len(self)
        if not -count <= index < count:
            raise IndexError("game row index out of range")
        return self._row(index % count)

    def __iter__(self) -> Iterator[GameRow]:
        return (self._row(i) for i in range(len(self)))


__all__ = ["GameRows"]
