"""A hostile bot that fills its socket folder (``ARENA_BOT_LISTEN``'s folder).

Once the arena bound that folder (on the host's disk under $TMPDIR) read-write into the
sandbox; now it is a 64 KiB tmpfs of the sandbox's own (``/run/arena``), and only an
unsandboxed bot's socket folder is on the host. On its first decision the bot makes a
subfolder there and writes files of 16 MiB into it (under the file size limit), up to
``--max-mb`` (default 150) or the first error (no space), then plays on. The arena removes the
folder's files at the end, but not a subfolder: it stays behind, with what is in it, and
the sweep of later runs does not remove it either.

``--control``: the same writes into its private /tmp instead (a tmpfs that goes with the
process).

Report: ``{"attack": "sockfill", "folder", "written_mb", "seconds", "error", ...}``. A test
compares it with what it finds on the host afterwards.
"""

from __future__ import annotations

import os
import threading
import time

import _hostile

from arena.sdk import View

CHUNK = bytes(1 << 20)


class SockFill(_hostile.Legal):
    name = "hostile-sockfill"

    def __init__(self, max_mb: int, control: bool) -> None:
        super().__init__()
        self.max_mb = max_mb
        self.control = control
        self.done = False
        self.lock = threading.Lock()

    def _first(self) -> None:
        with self.lock:
            if self.done:
                return
            self.done = True
            folder = "/tmp" if self.control else os.path.dirname(_hostile.own_socket())
            sub = os.path.join(folder, "hostile-sub")
            written, error = 0, ""
            start = time.monotonic()
            try:
                os.makedirs(sub, exist_ok=True)
                while written < self.max_mb:  # files of 16 MiB: under the file size limit
                    with open(os.path.join(sub, f"fill-{written // 16}"), "wb",
                              buffering=0) as f:
                        for _ in range(min(16, self.max_mb - written)):
                            f.write(CHUNK)
                            written += 1
            except OSError as e:
                error = e.strerror or str(e)
            _hostile.report("sockfill", control=self.control, folder=folder, sub=sub,
                            written_mb=written, seconds=round(time.monotonic() - start, 2),
                            error=error)

    def bid(self, view: View) -> int:
        self._first()
        return super().bid(view)

    def play(self, view: View) -> int:
        self._first()
        return super().play(view)


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--max-mb", type=int, default=150)
    p.add_argument("--control", action="store_true", help="write into the private /tmp")
    args, rest = _hostile.parse(p)
    _hostile.serve(SockFill(args.max_mb, args.control), rest)
