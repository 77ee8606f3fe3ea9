"""A test bot that dies in the call it is told to: ``--in`` hello, bid, play, trump,
round-ended or game-ended, on the ``--nth`` such call (default 1), by exiting with
``--code N`` (default 3), by the signal ``--signal NAME`` (``KILL``, ``ABRT``, ...), or
``--allocate``: by taking memory (touched, 16 MiB at a time) until a limit stops it (it
exits with code 9 after 4096 MiB, or half the memory the machine has available, without
being stopped). Just before, it writes ``--say TEXT`` to its stderr (Python escapes such
as ``\\x1b`` are decoded, so a test can ask for control characters). Otherwise it plays
the lowest legal action. With ``--marker PATH`` only the first process dies (it leaves
the file behind; a later process plays on)."""

from __future__ import annotations

import codecs
import os
import resource
import signal
import sys
from typing import Any

import _common

from arena import sdk
from arena.rules import Decision
from arena.sdk import Bot, GameResult, RoundResult, View

BLOCK = 16 << 20


def cap_mb() -> int:
    """Half the memory the machine has available (at most 4096 MiB); in the sandbox
    /proc/meminfo states the bot's memory limit instead, all of it free
    (arena/proc/procfs.py): then 64 MiB past that limit, which it must not reach."""
    info: dict[str, int] = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("MemTotal", "MemFree", "MemAvailable"):
                    info[key] = int(rest.split()[0]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    available = info.get("MemAvailable", 2048)
    if info and info.get("MemTotal") == info.get("MemFree") == available:
        return min(4096, available + 64)
    return min(4096, available // 2)


class Dier(Bot):
    name = "dier"

    def __init__(self, where: str, nth: int, death: Any, say: str, marker: str | None) -> None:
        self.where = where
        self.nth = nth
        self.death = death
        self.say = say
        self.marker = marker
        self.calls = 0

    def maybe_die(self, call: str) -> None:
        if call != self.where:
            return
        self.calls += 1
        if self.calls != self.nth:
            return
        if self.marker is not None:
            if os.path.exists(self.marker):
                return
            with open(self.marker, "w") as f:
                f.write(str(os.getpid()))
        if self.say:
            sys.stderr.write(self.say + "\n")
            sys.stderr.flush()
        self.death()

    def _lowest(self, view: View) -> int:
        self.maybe_die({Decision.BID: "bid", Decision.PLAY: "play",
                        Decision.TRUMP: "trump"}[view.decision])  # type: ignore[index]
        return min(view.legal)

    bid = play = choose_trump = _lowest

    def round_ended(self, result: RoundResult) -> None:
        self.maybe_die("round-ended")

    def game_ended(self, result: GameResult) -> None:
        self.maybe_die("game-ended")


def allocate() -> None:
    held = []
    cap = cap_mb()
    while len(held) * (BLOCK >> 20) < cap:
        held.append(b"\x01" * BLOCK)  # written, so every page is really taken
    sys.stderr.write(f"dier: allocated {cap} MiB without being stopped\n")
    sys.stderr.flush()
    os._exit(9)


if __name__ == "__main__":
    parser = _common.parser(__doc__ or "")
    parser.add_argument("--in", dest="where", required=True,
                        choices=["hello", "bid", "play", "trump", "round-ended", "game-ended"])
    parser.add_argument("--nth", type=int, default=1)
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--code", type=int, default=3)
    how.add_argument("--signal")
    how.add_argument("--allocate", action="store_true")
    parser.add_argument("--say", default="")
    parser.add_argument("--marker")
    args, rest = parser.parse_known_args(sys.argv[1:])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a signal leaves no core file
    if args.allocate:
        death = allocate
    elif args.signal:
        signo = signal.Signals["SIG" + args.signal.upper().removeprefix("SIG")]
        death = lambda: os.kill(os.getpid(), signo)  # noqa: E731
    else:
        death = lambda: os._exit(args.code)  # noqa: E731
    bot = Dier(args.where, args.nth, death, codecs.decode(args.say, "unicode_escape"),
               args.marker)

    sdk_servicer = sdk._Servicer  # before _common.serve puts its own in its place

    def hello(request: Any, context: Any) -> Any:
        bot.maybe_die("hello")
        return sdk_servicer(bot).Hello(request, context)  # the SDK's own answer

    _common.serve(bot, args, rest, hello=hello)
