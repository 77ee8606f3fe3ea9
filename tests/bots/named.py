"""A test bot that plays the lowest legal action and answers Hello with the ``--name``,
``--version`` and ``--author`` given (Python escapes such as ``\\x1b`` are decoded, so a
test can ask for control characters without putting them on a command line);
``--repeat N`` repeats the name N times (a name longer than a command line may be).
"""

from __future__ import annotations

import codecs
import sys

import _common

from arena.sdk import Bot, View


def _decoded(text: str) -> str:
    return codecs.decode(text, "unicode_escape")


if __name__ == "__main__":
    parser = _common.parser(__doc__ or "")
    parser.add_argument("--name", required=True)
    parser.add_argument("--version", default="")
    parser.add_argument("--author", default="")
    parser.add_argument("--repeat", type=int, default=1)
    args, rest = parser.parse_known_args(sys.argv[1:])

    class Named(Bot):
        name = _decoded(args.name) * args.repeat
        version = _decoded(args.version)
        author = _decoded(args.author)

        def bid(self, view: View) -> int:
            return min(view.legal)

        def play(self, view: View) -> int:
            return min(view.legal)

    _common.serve(Named(), args, rest)
