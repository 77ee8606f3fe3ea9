"""Shared by the hostile bots that attack through kernel state that sandboxes share.

* Deal memory: :func:`hand_key` names a hand (game, players, round, turned card, sorted
  cards: the same in every rotation of a duplicate deal, since the hands go with the
  seat positions); :func:`encode` / :func:`decode` carry the other seats' cards of a
  round as bits, behind a marker derived from the key, so that garbage is not taken for
  a message.
* Page-cache bits (:class:`PageBits`): one bit per 4 KiB page of a file the bot can read.
  A bit is set by reading its page (through a private read-only mapping with
  ``MADV_RANDOM``: no read-ahead, only that page); it is read back by ``mincore``,
  ``cachestat``, ``preadv2(RWF_NOWAIT)`` or the time a read takes (a page read from
  disk takes tens of microseconds, a cached one a few). Where the kernel still allows
  it (``POSIX_FADV_DONTNEED``) the writer clears its pages first.
* System calls by number, through ctypes, with their errno.

Nothing here trusts the arena to cooperate: every result is measured, and a test reads
the bots' own reports (``HOSTILE {json}`` lines on stderr) or their play.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import time
from collections.abc import Sequence

PAGE = 4096
CARDS = 66
"""Card values are below 66 (``suit << 4 | rank``, Wizard 64, Jester 65)."""
MARKER_BITS = 32
"""16 bits of a digest of the key, each sent as a pair (bit, not bit). A marker then has
no run longer than two: the pages a receiver's own reads leave cached come in runs of
tens (a whole copy is read at once), and with the seccomp filter refusing eviction they
stay. A plain 16-bit marker was matched by such runs often enough to fail a control in
CI (the sender read nothing; the receiver "read" a hand of garbage)."""
COPIES = 3
"""Each key is written this many times: a read by timing or RWF_NOWAIT caches the pages
it reads, so each later reader takes the next copy (its first page says whether it was
read already)."""
GAP = 16
"""Pages left between two copies."""
TIMING_THRESHOLD_NS = 20_000
"""Below: the page was cached (measured here: cached p99 6 us, from disk p1 41 us)."""

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]

SYS_CACHESTAT = 451
MADV_RANDOM = 1
PROT_READ, MAP_PRIVATE = 1, 2
MAP_FAILED = ctypes.c_void_p(-1).value


def errname(number: int) -> str:
    return errno.errorcode.get(number, f"E{number}")


def syscall(number: int, *args: int | ctypes.Array[ctypes.c_uint64] | None) -> tuple[int, str]:
    """``syscall(number, args)``: (result, "" or the errno's name)."""
    ctypes.set_errno(0)
    result = libc.syscall(number, *args)
    return result, (errname(ctypes.get_errno()) if result < 0 else "")


# -- deal memory ------------------------------------------------------------------------


def hand_key(game: str, players: int, round_number: int, trump_card: int | None,
             hand: Sequence[int]) -> str:
    return f"{game}/{players}/{round_number}/{trump_card}/{','.join(map(str, sorted(hand)))}"


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\0".join(parts).encode()).digest()


def marker(key: str) -> list[int]:
    value = int.from_bytes(_digest("marker", key)[:2], "little")
    return [bit for i in range(MARKER_BITS // 2) for bit in ((value >> i) & 1,
                                                             1 - ((value >> i) & 1))]


def encode(key: str, others: Sequence[Sequence[int]]) -> list[int]:
    """The marker, then for each other seat (the next seat first) a bit per card value."""
    bits = marker(key)
    for cards in others:
        held = set(cards)
        bits += [1 if c in held else 0 for c in range(CARDS)]
    return bits


def decode(key: str, bits: Sequence[int], seats: int) -> list[set[int]] | None:
    """The other seats' cards, or None when the marker is not there."""
    if list(bits[:MARKER_BITS]) != marker(key):
        return None
    out = []
    for i in range(seats):
        chunk = bits[MARKER_BITS + i * CARDS:MARKER_BITS + (i + 1) * CARDS]
        out.append({c for c, b in enumerate(chunk) if b})
    return out


def message_bits(seats: int) -> int:
    return MARKER_BITS + seats * CARDS


# -- page-cache bits --------------------------------------------------------------------


class PageBits:
    """Bits in the page cache of one file (see the module's docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)
        self.size = os.fstat(self.fd).st_size
        self.pages = self.size // PAGE
        if self.pages < 4096:
            raise OSError(errno.EFBIG, f"{path}: too small for page bits ({self.size} bytes)")
        addr = libc.mmap(None, self.pages * PAGE, PROT_READ, MAP_PRIVATE, self.fd, 0)
        if addr in (None, MAP_FAILED):
            raise OSError(ctypes.get_errno(), "mmap")
        self.addr: int = addr
        libc.madvise(ctypes.c_void_p(addr), self.pages * PAGE, MADV_RANDOM)
        self.errors: dict[str, str] = {}

    def base(self, key: str, copy: int, nbits: int) -> int:
        """The first page of ``copy`` of ``key``: ``nbits`` pages of bits, then a "read
        already" page, then a gap (a refused RWF_NOWAIT read starts a read-ahead of the
        few pages after it)."""
        span = (nbits + 1 + GAP) * COPIES
        room = self.pages - span - 16
        start = 16 + int.from_bytes(_digest("base", key)[:8], "little") % room
        return start + copy * (nbits + 1 + GAP)

    # -- setting ---------------------------------------------------------------------

    def touch_ns(self, page: int) -> int:
        """Read one byte of ``page`` through the mapping; the nanoseconds it took."""
        start = time.perf_counter_ns()
        ctypes.string_at(self.addr + page * PAGE, 1)
        return time.perf_counter_ns() - start

    def clear(self, first: int, count: int) -> bool:
        """Evict pages (POSIX_FADV_DONTNEED, where it is allowed)."""
        try:
            os.posix_fadvise(self.fd, first * PAGE, count * PAGE, os.POSIX_FADV_DONTNEED)
            return True
        except OSError as e:
            self.errors["fadvise"] = errname(e.errno or 0)
            return False

    def write(self, key: str, bits: Sequence[int]) -> None:
        for copy in range(COPIES):
            first = self.base(key, copy, len(bits))
            self.clear(first, len(bits) + 1)
            for i, bit in enumerate(bits):
                if bit:
                    self.touch_ns(first + i)

    # -- reading ---------------------------------------------------------------------

    def cached(self, channel: str, first: int, count: int) -> list[int] | None:
        """Whether each page is cached, by ``channel``; None where the channel is refused
        (the error is in :attr:`errors`)."""
        if channel == "mincore":
            vec = (ctypes.c_ubyte * count)()
            ctypes.set_errno(0)
            if libc.mincore(ctypes.c_void_p(self.addr + first * PAGE), count * PAGE, vec):
                self.errors["mincore"] = errname(ctypes.get_errno())
                return None
            return [v & 1 for v in vec]
        if channel == "cachestat":
            out = []
            stat = (ctypes.c_uint64 * 5)()
            for page in range(first, first + count):
                span = (ctypes.c_uint64 * 2)(page * PAGE, PAGE)
                result, err = syscall(SYS_CACHESTAT, self.fd, span, stat, 0)
                if result < 0:
                    self.errors["cachestat"] = err
                    return None
                out.append(1 if stat[0] else 0)
            return out
        if channel == "nowait":
            # a refused read starts reading its page and the few after it: the pages are
            # asked for from the last to the first, so that it only reads pages asked for
            out = [0] * count
            buf = bytearray(1)
            for i in reversed(range(count)):
                try:
                    os.preadv(self.fd, [buf], (first + i) * PAGE, os.RWF_NOWAIT)
                    out[i] = 1
                except BlockingIOError:
                    pass
                except OSError as e:
                    self.errors["nowait"] = errname(e.errno or 0)
                    return None
            return out
        if channel == "timing":
            timed = [self.touch_ns(p) for p in reversed(range(first, first + count))]
            return [1 if ns < TIMING_THRESHOLD_NS else 0 for ns in reversed(timed)]
        raise ValueError(channel)

    def read(self, channel: str, key: str, nbits: int) -> list[int] | None:
        """The first copy of ``key`` not read yet (its first page was not cached), or the
        last copy; None where the channel is refused."""
        bits: list[int] | None = None
        for copy in range(COPIES):
            first = self.base(key, copy, nbits)
            used = self.cached(channel, first + nbits, 1)
            if used is None:
                return None
            if channel in ("timing", "nowait"):
                self.touch_ns(first + nbits)  # read now: the next reader takes the next copy
            bits = self.cached(channel, first, nbits)
            if not used[0] or channel in ("mincore", "cachestat"):
                return bits
        return bits


class LockedBits(PageBits):
    """Page bits that outlive the reclaim after a game: a 1 bit is a page read and
    locked (``mlock``), held by the process that wrote it for as long as it lives (a
    process kept for a later game waits frozen, still holding them). They are read back
    without ``mincore``: a fault on one page of a 16-page window maps every page of the
    window that is cached (the kernel's fault-around, 64 KiB), and
    ``/proc/self/pagemap`` says which pages are mapped. So the first page of each window
    is the one faulted, and the bits are the other 15 (:meth:`slot`)."""

    WINDOW = 16

    def __init__(self, path: str) -> None:
        super().__init__(path)
        libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.locked = 0

    def slot(self, first: int, index: int) -> int:
        return first + (index // (self.WINDOW - 1)) * self.WINDOW + 1 + index % (self.WINDOW - 1)

    def base(self, key: str, copy: int, nbits: int) -> int:
        span = (nbits // (self.WINDOW - 1) + 2) * self.WINDOW
        room = self.pages - span - 32
        start = 16 + int.from_bytes(_digest("locked", key)[:8], "little") % room
        return start - start % self.WINDOW  # one copy: reading changes nothing

    def write(self, key: str, bits: Sequence[int]) -> None:
        first = self.base(key, 0, len(bits))
        for i, bit in enumerate(bits):
            if bit:
                page = self.slot(first, i)
                self.touch_ns(page)
                ctypes.set_errno(0)
                if libc.mlock(ctypes.c_void_p(self.addr + page * PAGE), PAGE) != 0:
                    self.errors["mlock"] = errname(ctypes.get_errno())
                else:
                    self.locked += 1

    def read(self, channel: str, key: str, nbits: int) -> list[int] | None:
        first = self.base(key, 0, nbits)
        slots = [self.slot(first, i) for i in range(nbits)]
        for window in sorted({page - page % self.WINDOW for page in slots}):
            self.touch_ns(window)
        try:
            with open("/proc/self/pagemap", "rb") as f:
                out = []
                for page in slots:
                    f.seek(((self.addr >> 12) + page) * 8)
                    entry = int.from_bytes(f.read(8), "little")
                    out.append(1 if entry >> 63 else 0)
                return out
        except OSError as e:
            self.errors["pagemap"] = errname(e.errno or 0)
            return None


class DentryBits:
    """Bits in the kernel's cache of directory entries: bit ``i`` of ``key`` is a name
    that does not exist in ``folder``; it is set by looking the name up (the kernel keeps
    a "negative" entry), and read back by the time a lookup takes (measured here, in C:
    about 5 us for a name never looked up, 2 us for one in the cache). The threshold is
    calibrated on names just made up (misses) and names looked up twice (hits)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.errors: dict[str, str] = {}
        self.threshold_ns = self._calibrate()

    def _name(self, key: str, copy: int, index: int) -> str:
        tag = _digest("dentry", key).hex()[:16]
        return os.path.join(self.folder, f".{tag}-{copy}-{index}")

    def _lookup_ns(self, path: str) -> int:
        start = time.perf_counter_ns()
        try:
            os.stat(path)
        except OSError:
            pass
        return time.perf_counter_ns() - start

    def _calibrate(self) -> int:
        nonce = os.urandom(8).hex()
        names = [os.path.join(self.folder, f".calibrate-{nonce}-{i}") for i in range(200)]
        misses = sorted(self._lookup_ns(n) for n in names)
        hits = sorted(self._lookup_ns(n) for n in names)
        return (misses[len(misses) // 2] + hits[len(hits) // 2]) // 2

    def write(self, key: str, bits: Sequence[int]) -> None:
        for copy in range(COPIES):
            for i, bit in enumerate(bits):
                if bit:
                    self._lookup_ns(self._name(key, copy, i))

    def read(self, channel: str, key: str, nbits: int) -> list[int] | None:
        bits: list[int] | None = None
        for copy in range(COPIES):
            used = self._lookup_ns(self._name(key, copy, nbits)) < self.threshold_ns
            bits = [1 if self._lookup_ns(self._name(key, copy, i)) < self.threshold_ns else 0
                    for i in range(nbits)]
            if not used:
                return bits
        return bits


def usr_file(override: str = "") -> str:
    """The file under /usr that carries the bits: ``override``, else the largest regular
    file of a few library folders (the same in every sandbox with the same /usr)."""
    if override:
        return override
    best: tuple[int, str] = (0, "")
    for folder in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib",
                   "/usr/bin", "/usr/libexec"):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    best = max(best, (entry.stat(follow_symlinks=False).st_size, entry.path))
            except OSError:
                continue
    return best[1]
