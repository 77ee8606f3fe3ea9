"""The replay viewer of one game (a game page of the site, and the browser seat's
finished game): the record as JSON safe inside ``<script>``, and its section."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from arena.publish.markup import (
    card_html,
    esc,
)


def script_json(value: Any) -> str:
    """JSON safe inside ``<script>``: ``<``, ``>`` and ``&`` as ``\\u`` escapes."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def board_html(names_html: Sequence[str], rows_html: Sequence[str], hands_html: Sequence[str],
               dealer: int | None, game_name: str, columns: Sequence[str],
               hand_attrs: Mapping[int, str] | None = None, centre_extra: str = "") -> str:
    """The card table, one for the replay viewer (``replay.js``) and the browser seat
    (``play.js``), which fill it in: a block per seat (its number, ``names_html[s]``, the
    dealer's badge, its bid and tricks, its hand ``hands_html[s]``, the ``.hand`` element
    with ``hand_attrs[s]`` added), and in the centre the trump, the trick on the felt,
    what became of it, ``centre_extra`` (HTML) and the scores table (a row a seat, named
    ``rows_html[s]``), whose ``columns`` are of ``bid``, ``won``, ``points`` (this
    round's) and ``total``."""
    hand_attrs = hand_attrs or {}
    seat_blocks = []
    for seat, (name, hand) in enumerate(zip(names_html, hands_html, strict=True)):
        cls = " dealer" if dealer == seat else ""
        seat_blocks.append(
            f'<div class="seat{cls}" data-seat="{seat}"><div class="seat-head">'
            f'<span class="seat-no">{seat}</span>{name}'
            f'<span class="badge dealer-badge" title="dealer">dealer</span>'
            f'<span class="seat-info" data-seat="{seat}"></span></div>'
            f'<div class="hand" data-seat="{seat}"{hand_attrs.get(seat, "")}>{hand}</div>'
            "</div>")
    heads = {"bid": "Bid" if game_name == "wizard" else "Announced", "won": "Won",
             "points": "Round" if game_name == "wizard" else "Points", "total": "Total"}
    score_head = ('<tr><th scope="col">Seat</th>'
                  + "".join(f'<th scope="col">{heads[c]}</th>' for c in columns) + "</tr>")
    score_rows = "".join(
        f'<tr data-seat="{s}"><th scope="row">{name}</th>'
        + "".join(f'<td class="{c} num" data-seat="{s}">{"0" if c in ("won", "total") else ""}'
                  f"</td>" for c in columns) + "</tr>"
        for s, name in enumerate(rows_html))
    return "\n".join([
        '<div class="board">',
        f'<div class="seats">{"".join(seat_blocks)}</div>',
        '<div class="centre">',
        '<div id="trump" class="trump"></div>',
        '<div id="trick" class="trick" role="group" aria-label="The current trick"></div>',
        '<div id="trick-result" class="trick-result"></div>',
        *([centre_extra] if centre_extra else []),
        f'<table id="scores" class="data compact"><thead>{score_head}</thead>'
        f"<tbody>{score_rows}</tbody></table>",
        "</div></div>",
    ])


def replay_section(record: Mapping[str, Any], seats: Sequence[str],
                   name_html: Callable[[str], str], where: str) -> str:
    """The replay viewer's section for ``record`` (driven by ``replay.js`` from the record
    in ``<script id="record">``): ``name_html`` shows a seat's name (escaped), ``where``
    says where else the record is (HTML), for readers without JavaScript."""
    n = len(seats)
    rounds = record.get("rounds") or []
    has_bids = any(r.get("bids") is not None for r in rounds)
    game_name = str(record.get("game"))
    first: dict[str, Any] = rounds[0] if rounds else {"hands": [[]] * n, "dealer": 0}
    board = board_html([name_html(name) for name in seats], [esc(name) for name in seats],
                       ["".join(card_html(c) for c in first["hands"][seat])
                        for seat in range(n)],
                       first.get("dealer"), game_name,
                       ("bid", "won", "points", "total") if has_bids
                       else ("won", "points", "total"))
    round_options = "".join(f'<option value="{r["number"]}">Round {r["number"]}</option>'
                            for r in rounds)
    round_jump = (f'<label for="round-jump" class="sr-only">Jump to round</label>'
                  f'<select id="round-jump">{round_options}</select>' if len(rounds) > 1 else "")
    return "\n".join([
        '<section aria-labelledby="replay-h"><h2 id="replay-h">Replay</h2>',
        f'<div id="replay" data-round="1" data-trick="0" data-step="0" data-players="{n}">',
        '<div class="controls">'
        '<button id="first" type="button" title="First step (Home)">'
        "« First</button>"
        '<button id="prev" type="button" title="Back one step (←)">◀ Back</button>'
        '<button id="next" type="button" title="Forward one step (→)">Forward ▶</button>'
        '<button id="last" type="button" title="Last step (End)">Last »'
        f'</button>{round_jump}<span id="step-count" class="muted"></span></div>',
        '<p id="step-text" aria-live="polite">The deal.</p>',
        board,
        '<h3 id="tricks-h">Tricks of this round</h3>',
        '<ol id="tricks-log" class="tricks-log" aria-labelledby="tricks-h"></ol>',
        "</div>",
        '<noscript><p class="note">Stepping through the game needs JavaScript. The record is '
        'in this page and in ' + where + '.</p></noscript>',
        '<p class="note">Keys: → forward, ← back, Home and End for the first and last step. '
        "Every hand is shown face up.</p>",
        "</section>",
    ])
