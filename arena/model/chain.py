"""The results chain: every finished game's record linked to the ones before it.

Link ``i`` is ``SHA-256(bytes of link i-1 || canonical JSON of record i)`` in hex, and
link ``-1`` (the genesis) is ``SHA-256("trick-arena chain v1\\n" + seed commitment)``, so
a chain belongs to one tournament. The last link is the *head*: published beside the seed
commitment, it fixes every record, their number and their order. The construction is
documented in ``docs/records.md``. This module does no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

GENESIS_TAG = b"trick-arena chain v1\n"


CHAIN_KEY = "chain"
"""The key of an exported record's link: ``{"seq": int, "prev": hex, "hash": hex}``."""


class ChainError(ValueError):
    """The chain does not hold; the message names the first game at fault."""


def canonical(record: Mapping[str, Any]) -> bytes:
    """The bytes of ``record`` that are hashed: sorted keys, no spaces, UTF-8."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def genesis(commitment: str) -> str:
    """The link before the first game: bound to the tournament's seed commitment."""
    return hashlib.sha256(GENESIS_TAG + commitment.encode()).hexdigest()


def link(prev: str, record: Mapping[str, Any]) -> str:
    """The link of ``record`` after the link ``prev`` (hex)."""
    return hashlib.sha256(bytes.fromhex(prev) + canonical(record)).hexdigest()


@dataclass(frozen=True, slots=True)
class Link:
    """A game as it claims to sit in the chain (``seq``, ``prev``, ``hash`` are None for a
    game that carries no link)."""

    game_id: str
    seq: int | None
    prev: str | None
    hash: str | None
    record: Mapping[str, Any]
    where: str = ""
    """Where the game is, for messages (e.g. " at line 7" of an export)."""


def is_hex_digest(value: object) -> bool:
    return (isinstance(value, str) and len(value) == 64
            and all(c in "0123456789abcdef" for c in value))


def check_chain(links: Sequence[Link], start: str | None, head: str | None = None,
                length: int | None = None) -> str:
    """Check ``links`` (in the order they are stored) from ``start`` (the genesis; None:
    whatever the first link says) and return the head.

    ``head`` and ``length``, when given, are what the chain must end at and how many games
    it must hold. Raises :class:`ChainError` naming the first game that was changed,
    removed (the game after the gap), reordered or added, or the head that does not match.
    """
    known: dict[str, str] = {}
    for lk in links:
        if lk.hash is not None:
            known.setdefault(lk.hash, lk.game_id)
    walk = ChainWalk(start, head, length, known.get)
    for lk in links:
        walk.add(lk)
    return walk.end()


class ChainWalk:
    """:func:`check_chain` one link at a time, for a chain too long to hold: :meth:`add`
    each link in stored order, then :meth:`end`. It keeps the ids seen (to catch a second
    copy of a game), never the records.

    ``find(hash)``: the id of the first game whose link is ``hash``, or None. It is asked
    only when a link does not follow the one before it, to tell a reordered game (it
    follows another game of the chain) from a removed one (it follows nothing there): the
    caller looks, e.g. with a second pass over a file or a query of the store."""

    def __init__(self, start: str | None, head: str | None = None,
                 length: int | None = None,
                 find: Callable[[str], str | None] | None = None) -> None:
        self.start = start
        self.head = head
        self.length = length
        self.find = find or (lambda _: None)
        self.count = 0
        self.prev = start
        self.prev_id = "the start"
        self.seen: set[str] = set()
        self._head_at: tuple[int, str] | None = None
        """The first link that is ``head``: its position and game."""
        self._after_head: str | None = None
        self._at_length: str | None = None
        """The game at position ``length`` (one too many)."""

    def add(self, lk: Link) -> None:
        """The next link; :class:`ChainError` if it does not hold."""
        i = self.count
        at = f"game {lk.game_id}{lk.where} (chain position {i})"
        if lk.game_id in self.seen:
            raise ChainError(f"{at}: added: a second copy of a game already in the chain")
        self.seen.add(lk.game_id)
        if lk.seq is None or lk.prev is None or lk.hash is None:
            raise ChainError(f"{at}: added: it carries no chain link")
        if not is_hex_digest(lk.prev) or not is_hex_digest(lk.hash):
            raise ChainError(f"{at}: changed: its chain link is not two SHA-256 hex digests")
        if link(lk.prev, lk.record) != lk.hash:
            raise ChainError(f"{at}: changed: the record does not hash to its chain link")
        if self.prev is not None and lk.prev != self.prev:
            owner = self.find(lk.prev)
            if owner is not None or lk.prev == self.start:
                after = owner if owner is not None else "the start"
                raise ChainError(f"{at}: reordered: it follows {after} in the chain, "
                                 f"not {self.prev_id}")
            other = ", or the chain is of another tournament" if i == 0 else ""
            raise ChainError(f"{at}: removed: the game before it in the chain (after "
                             f"{self.prev_id}) is missing{other}")
        if lk.seq != i:
            what = "removed: a game before it is missing" if lk.seq > i else "reordered"
            raise ChainError(f"{at}: {what} (it says chain position {lk.seq})")
        if self._head_at is not None and self._head_at[0] == i - 1:
            self._after_head = lk.game_id
        if self._head_at is None and lk.hash == self.head:
            self._head_at = (i, lk.game_id)
        if i == self.length:
            self._at_length = lk.game_id
        self.prev, self.prev_id = lk.hash, f"game {lk.game_id}"
        self.count += 1

    def end(self) -> str:
        """Check the chain's end against ``length`` and ``head``; returns the head."""
        end = self.prev if self.prev is not None else self.start
        length, head = self.length, self.head
        if length is not None and self.count < length:
            raise ChainError(f"removed: the chain ends at {self.prev_id} after {self.count} "
                             f"games, but it held {length}")
        if length is not None and self.count > length:
            raise ChainError(f"game {self._at_length} (chain position {length}): added: "
                             f"the chain held {length} games")
        if head is not None and end != head:
            if self._head_at is not None:
                index, game = self._head_at
                raise ChainError(f"game {self._after_head} (chain position {index + 1}): "
                                 f"added: the chain head is game {game}")
            raise ChainError(f"head mismatch: the chain ends at {self.prev_id} with "
                             f"{(end or '?')[:16]}…, the head is {head[:16]}…")
        return end or ""
