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
from collections.abc import Mapping, Sequence
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
    seen: set[str] = set()
    prev = start
    prev_id = "the start"
    for i, lk in enumerate(links):
        at = f"game {lk.game_id}{lk.where} (chain position {i})"
        if lk.game_id in seen:
            raise ChainError(f"{at}: added: a second copy of a game already in the chain")
        seen.add(lk.game_id)
        if lk.seq is None or lk.prev is None or lk.hash is None:
            raise ChainError(f"{at}: added: it carries no chain link")
        if not is_hex_digest(lk.prev) or not is_hex_digest(lk.hash):
            raise ChainError(f"{at}: changed: its chain link is not two SHA-256 hex digests")
        if link(lk.prev, lk.record) != lk.hash:
            raise ChainError(f"{at}: changed: the record does not hash to its chain link")
        if prev is not None and lk.prev != prev:
            if lk.prev in known or lk.prev == start:
                after = known.get(lk.prev, "the start")
                raise ChainError(f"{at}: reordered: it follows {after} in the chain, "
                                 f"not {prev_id}")
            other = ", or the chain is of another tournament" if i == 0 else ""
            raise ChainError(f"{at}: removed: the game before it in the chain (after "
                             f"{prev_id}) is missing{other}")
        if lk.seq != i:
            what = "removed: a game before it is missing" if lk.seq > i else "reordered"
            raise ChainError(f"{at}: {what} (it says chain position {lk.seq})")
        prev, prev_id = lk.hash, f"game {lk.game_id}"
    end = prev if prev is not None else start
    if length is not None and len(links) < length:
        raise ChainError(f"removed: the chain ends at {prev_id} after {len(links)} games, "
                         f"but it held {length}")
    if length is not None and len(links) > length:
        raise ChainError(f"game {links[length].game_id} (chain position {length}): added: "
                         f"the chain held {length} games")
    if head is not None and end != head:
        if head in known:
            index = next(i for i, lk in enumerate(links) if lk.hash == head)
            raise ChainError(f"game {links[index + 1].game_id} (chain position {index + 1}): "
                             f"added: the chain head is game {links[index].game_id}")
        raise ChainError(f"head mismatch: the chain ends at {prev_id} with "
                         f"{(end or '?')[:16]}…, the head is {head[:16]}…")
    return end or ""
