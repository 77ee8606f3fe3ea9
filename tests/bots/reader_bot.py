"""A test bot that, as it starts, reads each file its command line names and writes what
it read to its stderr (its log, and the last lines a league's check sends back to the
author): what a bundle trying to read beyond its folder would do. Then it plays the
lowest legal action. Standalone (no helper module): tests copy it into a bundle folder.
"""

from __future__ import annotations

import sys

from arena.sdk import Bot, View, serve


class Reader(Bot):
    name = "reader"
    version = "1"

    def bid(self, view: View) -> int:
        return view.legal[0]

    def play(self, view: View) -> int:
        return view.legal[0]

    def choose_trump(self, view: View) -> int:
        return view.legal[0]


if __name__ == "__main__":
    for path in sys.argv[1:]:
        try:
            with open(path, errors="replace") as f:
                print(f"read {path}: {f.read(4096)}", file=sys.stderr, flush=True)
        except OSError as e:
            print(f"cannot read {path}: {e}", file=sys.stderr, flush=True)
    serve(Reader(), argv=[])
