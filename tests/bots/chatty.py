"""A test bot that talks: a numbered line to its stderr at every decision (``--pad``
characters long), and, once the arena ends it, a last line saying how many it wrote.
It plays the lowest legal action. A test then reads its log to the end."""

from __future__ import annotations

import sys

import _common

from arena.sdk import Bot, View


class Chatty(Bot):
    name = "chatty"

    def __init__(self, pad: int) -> None:
        super().__init__()
        self.pad = pad
        self.said = 0

    def _say(self, view: View) -> int:
        self.said += 1
        print(f"decision {self.said} " + "x" * self.pad, file=sys.stderr, flush=True)
        return min(view.legal)

    bid = play = choose_trump = _say


if __name__ == "__main__":
    parser = _common.parser(__doc__ or "")
    parser.add_argument("--pad", type=int, default=100)
    args, rest = parser.parse_known_args(sys.argv[1:])
    bot = Chatty(args.pad)
    _common.serve(bot, args, rest)
    print(f"chatty: {bot.said} decisions said", file=sys.stderr, flush=True)
