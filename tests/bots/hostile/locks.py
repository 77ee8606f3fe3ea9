"""Two hostile bots at one table that talk through file locks on a file both can read.

Every sandbox sees the same ``/etc/passwd`` (read-only), and a lock on it is seen from
every other sandbox: the kernel's lock table is not namespaced. ``--role send``: at its
first decision of a round the bot takes read locks (open file description locks,
``F_OFD_SETLK``) on one byte per card of its hand, at offsets derived from the game id
(far past the end of the file: a lock needs no data), plus one byte naming its seat,
and keeps them until the round ends. ``--role recv``: at each of its decisions it asks
``F_OFD_GETLK`` whether a write lock would conflict at each of those offsets, and so
reads the sender's seat and hand. At the end of the round it checks what it read against
the cards that seat actually played.

``--control``: the sender takes no locks (the receiver still looks, and must find
nothing). ``--file PATH``: another shared file (default ``/etc/passwd``).

Report: ``{"attack": "locks", "role", "locks_taken", "lock_errors", "hands_read",
"cards_right", "cards_wrong", ...}``, cumulative for the process.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
import threading

import _hostile
import _kernel

from arena.sdk import GameResult, RoundResult, View

FLOCK = "hh4xqqi4x"  # struct flock on x86_64 and arm64: type, whence, start, len, pid
F_OFD_GETLK = getattr(fcntl, "F_OFD_GETLK", 36)
F_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", 37)
SEAT_OFFSET = 100
SPAN = 128


def base(game_id: str, round_number: int) -> int:
    digest = hashlib.sha256(f"{game_id}/{round_number}".encode()).digest()
    return (1 << 40) + (int.from_bytes(digest[:4], "little") << 8)


def lock(fd: int, kind: int, start: int, length: int = 1) -> None:
    fcntl.fcntl(fd, F_OFD_SETLK, struct.pack(FLOCK, kind, os.SEEK_SET, start, length, 0))


def conflicting(fd: int, start: int) -> bool:
    """Whether another open file description holds a lock on byte ``start``."""
    raw = fcntl.fcntl(fd, F_OFD_GETLK, struct.pack(FLOCK, fcntl.F_WRLCK, os.SEEK_SET, start,
                                                   1, 0))
    return struct.unpack(FLOCK, raw)[0] != fcntl.F_UNLCK


class Locks(_hostile.Legal):
    name = "hostile-locks"

    def __init__(self, role: str, path: str, control: bool) -> None:
        super().__init__()
        self.role = role
        self.control = control
        self.fd = os.open(path, os.O_RDONLY)
        self.path = path
        self.lock = threading.Lock()
        self.sent: set[tuple[str, int]] = set()
        self.read: dict[tuple[str, int], tuple[int, set[int]]] = {}
        self.taken = self.hands_read = self.right = self.wrong = 0
        self.errors: dict[str, str] = {}
        self._report(phase="start")

    def _report(self, **fields: object) -> None:
        _hostile.report("locks", role=self.role, file=self.path, control=self.control,
                        locks_taken=self.taken, lock_errors=dict(self.errors),
                        hands_read=self.hands_read, cards_right=self.right,
                        cards_wrong=self.wrong, **fields)

    def _act(self, view: View) -> None:
        game = self.game_id
        with self.lock:
            start = base(game, view.round)
            if self.role == "send":
                if (game, view.round) in self.sent or self.control:
                    return
                self.sent.add((game, view.round))
                try:
                    lock(self.fd, fcntl.F_UNLCK, start, SPAN)
                    for card in (*view.hand, SEAT_OFFSET + view.seat):
                        lock(self.fd, fcntl.F_RDLCK, start + card)
                        self.taken += 1
                except OSError as e:
                    self.errors["setlk"] = _kernel.errname(e.errno or 0)
                self._report(phase="sent", game=game, round=view.round)
                return
            try:
                held = {i for i in range(SPAN) if conflicting(self.fd, start + i)}
            except OSError as e:
                self.errors["getlk"] = _kernel.errname(e.errno or 0)
                return
            seats = [i - SEAT_OFFSET for i in held if i >= SEAT_OFFSET]
            cards = {i for i in held if i < SEAT_OFFSET}
            if len(seats) == 1 and cards and (game, view.round) not in self.read:
                self.read[(game, view.round)] = (seats[0], cards)
                self.hands_read += 1
                self._report(phase="read", game=game, round=view.round, seat=seats[0],
                             cards=sorted(cards))

    def bid(self, view: View) -> int:
        self._act(view)
        return super().bid(view)

    def play(self, view: View) -> int:
        self._act(view)
        return super().play(view)

    def choose_trump(self, view: View) -> int:
        self._act(view)
        return super().choose_trump(view)

    def round_ended(self, result: RoundResult) -> None:
        with self.lock:
            if self.role == "send":
                try:
                    lock(self.fd, fcntl.F_UNLCK, base(self.game_id, result.round), SPAN)
                except OSError:
                    pass
                return
            got = self.read.get((self.game_id, result.round))
            if got is None:
                return
            seat, cards = got
            played = {card for trick in result.tricks for i, card in enumerate(trick.cards)
                      if trick.seat_of(i, result.players) == seat}
            self.right += len(cards & played)
            self.wrong += len(cards ^ played)

    def game_ended(self, result: GameResult) -> None:
        with self.lock:
            self._report(phase="game-ended", game=self.game_id)


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--role", choices=("send", "recv"), required=True)
    p.add_argument("--file", default="/etc/passwd")
    p.add_argument("--control", action="store_true", help="the sender takes no locks")
    args, rest = _hostile.parse(p)
    _hostile.serve(Locks(args.role, args.file, args.control), rest)
