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
    seat_blocks = []
    for seat in range(n):
        hand = "".join(card_html(c) for c in first["hands"][seat])
        dealer = " dealer" if first.get("dealer") == seat else ""
        seat_blocks.append(
            f'<div class="seat{dealer}" data-seat="{seat}"><div class="seat-head">'
            f'<span class="seat-no">{seat}</span>{name_html(seats[seat])}'
            f'<span class="badge dealer-badge" title="dealer">dealer</span>'
            f'<span class="seat-info" data-seat="{seat}"></span></div>'
            f'<div class="hand" data-seat="{seat}">{hand}</div></div>')
    score_rows = "".join(
        f'<tr data-seat="{s}"><th scope="row">{esc(seats[s])}</th>'
        + (f'<td class="bid num" data-seat="{s}"></td>' if has_bids else "")
        + f'<td class="won num" data-seat="{s}">0</td><td class="points num" data-seat="{s}">'
        f'</td><td class="total num" data-seat="{s}">0</td></tr>' for s in range(n))
    bid_word = "Bid" if game_name == "wizard" else "Announced"
    score_head = ('<tr><th scope="col">Seat</th>'
                  + (f'<th scope="col">{bid_word}</th>' if has_bids else "")
                  + '<th scope="col">Won</th>'
                  + f'<th scope="col">{"Round" if game_name == "wizard" else "Points"}</th>'
                  + '<th scope="col">Total</th></tr>')
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
        '<div class="board">',
        f'<div class="seats">{"".join(seat_blocks)}</div>',
        '<div class="centre">',
        '<div id="trump" class="trump"></div>',
        '<div id="trick" class="trick" role="group" aria-label="The current trick"></div>',
        '<div id="trick-result" class="trick-result"></div>',
        f'<table id="scores" class="data compact"><thead>{score_head}</thead>'
        f"<tbody>{score_rows}</tbody></table>",
        "</div></div>",
        '<h3 id="tricks-h">Tricks of this round</h3>',
        '<ol id="tricks-log" class="tricks-log" aria-labelledby="tricks-h"></ol>',
        "</div>",
        '<noscript><p class="note">Stepping through the game needs JavaScript. The record is '
        'in this page and in ' + where + '.</p></noscript>',
        '<p class="note">Keys: → forward, ← back, Home and End for the first and last step. '
        "Every hand is shown face up.</p>",
        "</section>",
    ])
