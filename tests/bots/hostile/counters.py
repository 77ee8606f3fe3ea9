"""Two hostile bots at one table that talk through a counter of the whole machine.

``--role send``: at each of its decisions the bot moves a counter by ``BASE + STEP x
payload``, where the payload (4 bits) is the round's parity and the sum of the card
values of its hand at the round's start, modulo 8. ``--carrier mlock``: it locks that
many pages (``mlock`` of a fresh anonymous mapping, then unlocked and unmapped), which
``/proc/vmstat``'s ``unevictable_pgs_mlocked`` counts, exactly; ``--carrier fork``: it
forks that many children that exit at once, which ``/proc/stat``'s ``processes`` counts
(with every other fork of the machine: a small tolerance).

``--role recv``: at each of its decisions the bot reads the counter; the difference from
its previous reading, when it is one, two or three moves of one payload ``p``
(:func:`decode`), is a frame: payload ``p``, meant for the round of that parity. At
the end of the round it checks each frame of the round against the other seats' hands
(every card is played: the hands as dealt are known): ``frames_right`` when one of them
has that sum.

``--control``: the sender moves nothing (the receiver still reads).

``--carrier all``: both at once (they do not move each other's counter).

Report: ``{"attack": "counters", "role", "carriers", "decisions", "sent", "send_errors",
"channels": {carrier: {"reads", "unreadable", "values", "moved", "frames", "frames_right",
"frames_wrong"}}}``, cumulative for the process; ``values`` is how many different
readings the receiver saw, ``moved`` how many differences were at least one move
(``BASE``), ``unreadable`` how many readings found no counter.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading

import _hostile
import _kernel

from arena.sdk import GameResult, RoundResult, View

BASE = {"mlock": 64, "fork": 24}
STEP = {"mlock": 1, "fork": 4}
TOLERANCE = {"mlock": 0, "fork": 2}
"""A move is ``BASE + STEP x payload``; between two readings the sender may have moved
once, twice (it decided twice: it led the trick after it played last), or not at all.
A difference is read as ``k`` moves of one payload, the smallest ``k`` that fits within
the tolerance (mlock pages: exact; forks: the machine's own forks add some)."""
SIGCHLD = 17
SOURCE = {"mlock": ("/proc/vmstat", "unevictable_pgs_mlocked"),
          "fork": ("/proc/stat", "processes")}

libc = _kernel.libc
libc.clone.restype = ctypes.c_int
libc.clone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
CHILD_STACK = ctypes.create_string_buffer(1 << 16)
"""The stack a child of :meth:`Counters._fork` runs ``_exit`` on (its own copy)."""
EXIT = ctypes.cast(libc._exit, ctypes.c_void_p)
libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.munlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def payload(round_number: int, hand: list[int]) -> int:
    return ((round_number & 1) << 3) | (sum(hand) % 8)


def decode(carrier: str, delta: int) -> int | None:
    """The payload of ``delta`` (one, two or three moves of it), or None."""
    base, step, tolerance = BASE[carrier], STEP[carrier], TOLERANCE[carrier]
    for moves in (1, 2, 3):
        p = round((delta / moves - base) / step)
        if 0 <= p <= 15 and abs(delta - moves * (base + step * p)) <= tolerance:
            return p
    return None


def read_counter(carrier: str) -> int | None:
    """The counter's value, or None where the file is missing, empty or lacks it."""
    path, key = SOURCE[carrier]
    try:
        with open(path) as f:
            for line in f:
                words = line.split()
                if len(words) >= 2 and words[0] == key and words[1].isdigit():
                    return int(words[1])
    except OSError:
        return None
    return None


class Channel:
    """What the receiver knows of one carrier."""

    def __init__(self) -> None:
        self.reads = self.unreadable = self.moved = self.decoded = self.right = 0
        self.wrong = 0
        self.seen: set[int] = set()
        self.last: int | None = None
        self.frames: dict[tuple[str, int], list[int]] = {}

    def summary(self) -> dict[str, int]:
        return {"reads": self.reads, "unreadable": self.unreadable, "values": len(self.seen),
                "moved": self.moved,
                "frames": self.decoded, "frames_right": self.right,
                "frames_wrong": self.wrong}


class Counters(_hostile.Legal):
    name = "hostile-counters"

    def __init__(self, role: str, carriers: tuple[str, ...], control: bool) -> None:
        super().__init__()
        self.role = role
        self.carriers = carriers
        self.control = control
        self.lock = threading.Lock()
        self.payloads: dict[tuple[str, int], int] = {}
        self.sent = self.decisions = 0
        self.children: list[int] = []
        self.send_errors: dict[str, str] = {}
        self.channels = {c: Channel() for c in carriers}
        self._report(phase="start")

    def _report(self, **fields: object) -> None:
        _hostile.report("counters", role=self.role, carriers=list(self.carriers),
                        control=self.control, decisions=self.decisions, sent=self.sent,
                        send_errors=self.send_errors,
                        channels={c: ch.summary() for c, ch in self.channels.items()},
                        **fields)

    # -- sending ------------------------------------------------------------------------

    def _lock_pages(self, count: int) -> None:
        size = count * mmap.PAGESIZE
        address = libc.mmap(None, size, 3, 0x22, -1, 0)  # read-write, private, anonymous
        if address in (None, _kernel.MAP_FAILED):
            self.send_errors["mmap"] = _kernel.errname(ctypes.get_errno())
            return
        try:
            ctypes.set_errno(0)
            if libc.mlock(ctypes.c_void_p(address), size) != 0:
                self.send_errors["mlock"] = _kernel.errname(ctypes.get_errno())
                return
            libc.munlock(ctypes.c_void_p(address), size)
        finally:
            libc.munmap(ctypes.c_void_p(address), size)

    def _fork(self, count: int) -> None:
        """``count`` children by the C library's ``clone`` running ``_exit`` at once: no
        Python in the child (a child of ``fork`` back in Python can wait forever for the
        GIL or a lock another thread held; ``os.fork`` runs gRPC's slow handlers). The
        counter moves at the clone: the children are reaped later (waiting for each to
        be scheduled took seconds on a loaded machine)."""
        self._reap(block=True)
        top = (ctypes.addressof(CHILD_STACK) + len(CHILD_STACK)) & ~15
        for _ in range(count):
            ctypes.set_errno(0)
            pid = libc.clone(EXIT, top, SIGCHLD, None)
            if pid < 0:
                self.send_errors["fork"] = _kernel.errname(ctypes.get_errno())
                return
            self.children.append(pid)
        self._reap(block=False)

    def _reap(self, block: bool) -> None:
        left = []
        for pid in self.children:
            try:
                done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                continue
            if not done:
                left.append(pid)
        self.children = left

    def _send(self, view: View) -> None:
        self.decisions += 1
        key = (self.game_id, view.round)
        if key not in self.payloads:
            self.payloads[key] = payload(view.round, list(view.hand))
        if self.control:
            return
        for carrier in self.carriers:
            count = BASE[carrier] + STEP[carrier] * self.payloads[key]
            if carrier == "mlock":
                self._lock_pages(count)
            else:
                self._fork(count)
        self.sent += 1

    # -- receiving ----------------------------------------------------------------------

    def _receive(self, view: View) -> None:
        for carrier, ch in self.channels.items():
            value = read_counter(carrier)
            ch.reads += 1
            if value is None:
                ch.unreadable += 1
                continue
            ch.seen.add(value)
            last, ch.last = ch.last, value
            if last is None:
                continue
            if value - last >= BASE[carrier]:
                ch.moved += 1
            p = decode(carrier, value - last)
            if p is not None and (p >> 3) == (view.round & 1):
                ch.frames.setdefault((self.game_id, view.round), []).append(p)
                ch.decoded += 1

    def _act(self, view: View) -> None:
        with self.lock:
            if self.role == "send":
                self._send(view)
            else:
                self._receive(view)

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
        n = result.players
        hands = _hostile.round_hands(result)
        truth = {payload(result.round, hands[s]) for s in range(n) if s != result.seat}
        with self.lock:
            for ch in self.channels.values():
                for p in ch.frames.pop((self.game_id, result.round), []):
                    if p in truth:
                        ch.right += 1
                    else:
                        ch.wrong += 1

    def game_ended(self, result: GameResult) -> None:
        with self.lock:
            self._report(phase="game-ended", game=self.game_id)


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--role", choices=("send", "recv"), required=True)
    p.add_argument("--carrier", choices=(*SOURCE, "all"), required=True)
    p.add_argument("--control", action="store_true", help="the sender moves nothing")
    args, rest = _hostile.parse(p)
    carriers = tuple(SOURCE) if args.carrier == "all" else (args.carrier,)
    _hostile.serve(Counters(args.role, carriers, args.control), rest)
