"""A test bot that dies: on its ``--exit-on``-th decision it exits with code 3 at once
(``os._exit``), but only the first time: it leaves ``--marker`` behind, and a restarted
process answers the lowest legal action. With ``--no-restart`` a process that finds the
marker exits with code 4 before it serves, so the arena cannot restart it."""

from __future__ import annotations

import os
import sys
import time

import _common

from arena.sdk import Bot, View


class Crasher(Bot):
    name = "crasher"

    def __init__(self, exit_on: int, marker: str) -> None:
        self.exit_on = exit_on
        self.marker = marker
        self.calls = 0

    def _decide(self, view: View) -> int:
        self.calls += 1
        if self.calls == self.exit_on and not os.path.exists(self.marker):
            with open(self.marker, "w") as f:
                f.write(str(os.getpid()))
            os._exit(3)
        return min(view.legal)

    bid = play = choose_trump = _decide


if __name__ == "__main__":
    parser = _common.parser(__doc__ or "")
    parser.add_argument("--exit-on", type=int, required=True)
    parser.add_argument("--marker", required=True)
    parser.add_argument("--no-restart", action="store_true")
    parser.add_argument("--restart-ms", type=int, default=0)
    parser.add_argument("--rename", action="store_true")
    args, rest = parser.parse_known_args(sys.argv[1:])
    if os.path.exists(args.marker):
        if args.no_restart:
            print("crasher: crashed before, refusing to start", file=sys.stderr)
            sys.exit(4)
        time.sleep(args.restart_ms / 1000)
        if args.rename:
            Crasher.name = "impostor"
    _common.serve(Crasher(args.exit_on, args.marker), args, rest)
