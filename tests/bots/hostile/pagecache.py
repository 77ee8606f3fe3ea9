"""A hostile bot that remembers deals in the page cache, which outlives its process.

At the end of every round it knows every seat's hand (every card is played: Trumps
without drawing, Wizard). For each hand it writes the other seats' cards as bits, one
per 4 KiB page of a large file it can read (``--file own``: ``--data PATH``, a file in
its own folder, e.g. a sparse file shipped with the bot; ``--file usr``: a large file
under /usr, shared with every other sandbox), at pages chosen by the hand. A later
process of the bot (another rotation of the same duplicate deal) looks its own hand up
at its first decision of the round: the pages that are cached are the 1 bits. How it
reads them: ``--channel mincore | cachestat | nowait`` (``preadv2(RWF_NOWAIT)``) |
``timing`` (a cached page reads in microseconds, one from disk in tens of them).
``--channel dentry`` uses another cache the same way: the kernel's cache of directory
entries, one bit per name that does not exist in the file's folder (looked up: cached;
timed by a later lookup; see ``_kernel.DentryBits``).
``--channel pagemap`` keeps its bits where the reclaim after a game cannot drop them: it
locks each page it reads (``mlock``), and the process, kept frozen for a later game,
holds them; a later process reads them by a fault in each 16-page window and
``/proc/self/pagemap`` (see ``_kernel.LockedBits``).

``--control``: the same bot with its channel off: it writes nothing (it still looks its
hand up, and must then find nothing).

Report: ``{"attack": "pagecache", "channel", "file", "games_seen", "deal_recognised",
"cards_right", "cards_wrong", "errors", ...}``, cumulative for the process. A deal is
recognised when the marker derived from its key is read back; the cards it then
predicted for the other seats are checked against the cards they actually played
(``cards_right``: predicted and held; ``cards_wrong``: predicted and not held, or held
and not predicted), which the bot cannot fake to a test that compares the counts with
the game records.
"""

from __future__ import annotations

import os
import threading
import time

import _hostile
import _kernel

from arena.sdk import GameResult, RoundResult, View


class PageCache(_hostile.Legal):
    name = "hostile-pagecache"

    def __init__(self, channel: str, path: str, control: bool) -> None:
        super().__init__()
        self.channel = channel
        self.control = control
        self.lock = threading.Lock()
        self.bits: _kernel.PageBits | _kernel.DentryBits | None = None
        self.setup_error = ""
        try:
            self.bits = (_kernel.DentryBits(os.path.dirname(path)) if channel == "dentry"
                         else _kernel.LockedBits(path) if channel == "pagemap"
                         else _kernel.PageBits(path))
        except OSError as e:
            self.setup_error = f"{path}: {_kernel.errname(e.errno or 0)} {e.strerror}"
        self.path = path
        self.played: set[str] = set()
        self.recognised: set[str] = set()
        self.looked: set[tuple[str, int]] = set()
        self.predicted: dict[tuple[str, int], list[set[int]]] = {}
        self.right = self.wrong = 0
        self.write_s = self.read_s = 0.0
        self.writes = 0
        self._report(phase="start")

    def _report(self, **fields: object) -> None:
        _hostile.report(
            "pagecache", channel=self.channel, file=self.path, control=self.control,
            games_seen=len(self.played), deal_recognised=len(self.recognised),
            cards_right=self.right, cards_wrong=self.wrong, writes=self.writes,
            write_s=round(self.write_s, 3), read_s=round(self.read_s, 3),
            errors=dict(self.bits.errors) if self.bits else {"setup": self.setup_error},
            **fields)

    def _look(self, view: View) -> None:
        game = self.game_id
        with self.lock:
            self.played.add(game)
            if (game, view.round) in self.looked or self.bits is None:
                return
            self.looked.add((game, view.round))
            key = _kernel.hand_key(view.game, view.players, view.round, view.trump_card,
                                   view.hand)
            start = time.perf_counter()
            bits = self.bits.read(self.channel, key, _kernel.message_bits(view.players - 1))
            self.read_s += time.perf_counter() - start
            others = None if bits is None else _kernel.decode(key, bits, view.players - 1)
            if others is not None:
                self.recognised.add(game)
                self.predicted[(game, view.round)] = others
            self._report(phase="look", game=game, round=view.round, hit=others is not None,
                         refused=bits is None)

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
            return  # not every card was played: the hands as dealt cannot be told
        with self.lock:
            guess = self.predicted.pop((self.game_id, result.round), None)
            if guess is not None:
                for offset, cards in enumerate(guess, start=1):
                    actual = set(hands[(result.seat + offset) % n])
                    self.right += len(cards & actual)
                    self.wrong += len(cards ^ actual)
            if self.bits is None or self.control:
                return
            start = time.perf_counter()
            for seat in range(n):
                key = _kernel.hand_key(result.game, n, result.round, result.trump_card,
                                       hands[seat])
                others = [hands[(seat + k) % n] for k in range(1, n)]
                self.bits.write(key, _kernel.encode(key, others))
            self.write_s += time.perf_counter() - start
            self.writes += 1

    def game_ended(self, result: GameResult) -> None:
        with self.lock:
            self._report(phase="game-ended", game=self.game_id)


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--channel", choices=("mincore", "cachestat", "nowait", "timing", "dentry",
                                          "pagemap"),
                   default="mincore")
    p.add_argument("--file", choices=("own", "usr"), default="own")
    p.add_argument("--data", default="",
                   help="--file own: the file (a large, e.g. sparse, file in a folder the "
                   "bot can read; naming it on the command line makes its folder visible)")
    p.add_argument("--usr-file", default="", help="--file usr: this file, not the largest")
    p.add_argument("--control", action="store_true", help="channel off: write nothing")
    args, rest = _hostile.parse(p)
    if args.file == "own":
        path = args.data or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "pagecache.bin")
    else:
        path = _kernel.usr_file(args.usr_file)
    _hostile.serve(PageCache(args.channel, path, args.control), rest)
