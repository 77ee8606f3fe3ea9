"""Two hostile bots at one table that talk through the page cache, by read timing alone.

Both can read one large file that other bots see too: ``--shared PATH`` (for example a
data file in both bots' ``read_only`` extras), or ``--shared usr``, the largest library
under /usr. The bits are its 4 KiB pages (``_kernel.PageBits``): a page that no one has
read reads from disk (a hundred microseconds or more here), a cached one in about one.

``--role send``: at its first decision of each round the bot reads the pages that spell
its hand (a marker derived from the game and round, then a bit per card value, three
copies), at positions chosen by the game and round. ``--role recv``: at its first
decision of a round after the first trick (every seat, the sender too, has then decided
once), it times the same pages and decodes the sender's hand; at the round's end it
checks what it read against the cards each seat played. No system call that the
seccomp filter refuses is needed: the channel is the time a read takes.

``--channel dentry``: the same through the kernel's cache of directory entries instead
(``_kernel.DentryBits``: a bit is a name that does not exist in the shared file's
folder, set by looking it up, read by the time a lookup takes), which no view closes.

``--control``: the sender reads nothing (the receiver still looks, and must find
nothing).

Report: ``{"attack": "cachetalk", "role", "file", "sent", "hands_read", "cards_right",
"cards_wrong", "looks", ...}``, cumulative for the process.
"""

from __future__ import annotations

import os
import threading
import time

import _hostile
import _kernel

from arena.sdk import GameResult, RoundResult, View


class CacheTalk(_hostile.Legal):
    name = "hostile-cachetalk"

    def __init__(self, role: str, path: str, control: bool, channel: str = "timing") -> None:
        super().__init__()
        self.role = role
        self.control = control
        self.path = path
        self.channel = channel
        self.lock = threading.Lock()
        self.setup_error = ""
        self.bits: _kernel.PageBits | _kernel.DentryBits | None = None
        self.read_s = 0.0
        try:
            self.bits = (_kernel.DentryBits(os.path.dirname(path)) if channel == "dentry"
                         else _kernel.PageBits(path))
        except OSError as e:
            self.setup_error = f"{path}: {_kernel.errname(e.errno or 0)}"
        self.done: set[tuple[str, int]] = set()
        self.read: dict[tuple[str, int], set[int]] = {}
        self.sent = self.looks = self.hands_read = self.right = self.wrong = 0
        self._report(phase="start")

    def _report(self, **fields: object) -> None:
        _hostile.report("cachetalk", role=self.role, file=self.path, control=self.control,
                        sent=self.sent, looks=self.looks, hands_read=self.hands_read,
                        cards_right=self.right, cards_wrong=self.wrong,
                        channel=self.channel, read_s=round(self.read_s, 4),
                        setup_error=self.setup_error, **fields)

    def _act(self, view: View) -> None:
        game = self.game_id
        key = f"cachetalk/{game}/{view.round}"
        with self.lock:
            if self.bits is None or (game, view.round) in self.done:
                return
            if self.role == "send":
                self.done.add((game, view.round))
                if not self.control:
                    self.bits.write(key, _kernel.encode(key, [view.hand]))
                    self.sent += 1
                return
            if not view.tricks:
                return  # the sender may not have decided yet in this round
            self.done.add((game, view.round))
            self.looks += 1
            start = time.perf_counter()
            bits = self.bits.read("timing", key, _kernel.message_bits(1))
            self.read_s += time.perf_counter() - start
            hands = None if bits is None else _kernel.decode(key, bits, 1)
            if hands is not None:
                self.read[(game, view.round)] = hands[0]
                self.hands_read += 1
            self._report(phase="look", game=game, round=view.round, hit=hands is not None)

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
            cards = self.read.pop((self.game_id, result.round), None)
            if cards is None:
                return
            n = result.players
            hands = [set(hand) for hand in _hostile.round_hands(result)]
            best = max((hands[s] for s in range(n) if s != result.seat),
                       key=lambda held: len(held & cards))
            self.right += len(best & cards)
            self.wrong += len(best ^ cards)

    def game_ended(self, result: GameResult) -> None:
        with self.lock:
            self._report(phase="game-ended", game=self.game_id)


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--role", choices=("send", "recv"), required=True)
    p.add_argument("--shared", default="usr",
                   help="the file both bots read: a path, or 'usr' (the largest library)")
    p.add_argument("--channel", choices=("timing", "dentry"), default="timing")
    p.add_argument("--control", action="store_true", help="the sender reads nothing")
    args, rest = _hostile.parse(p)
    _hostile.serve(CacheTalk(args.role, _kernel.usr_file("" if args.shared == "usr"
                                                          else args.shared),
                             args.control, args.channel), rest)
