"""The site's statement of how the ranking was made (:func:`tournament_page`): the
tournament file's terms, the schedule, the seeds and their commitments (a league's by
season, :func:`league_seeds`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from arena import __version__
from arena.publish.markup import (
    DATA_FILE,
    bot_link,
    esc,
    num,
    page,
    table,
    when,
    when_range,
)
from arena.publish.pages import (
    INSECURE_MARK,
    UNSANDBOXED_MARK,
    LeagueFacts,
    SiteContext,
    game_title,
    isolation_of,
    rank_text,
    summary_line,
)
from arena.report.board import (
    ISOLATION_MODES,
    bot_kind,
)
from arena.report.format import option_value
from arena.runs.schedule import game_count


def league_seeds(league: LeagueFacts) -> list[str]:
    """A league's seeds section: each season's commitment, its master seed once it closed
    (and what that seed fixes: that season's deals, no other), when it ran and its games."""
    rows = []
    for s in league.seasons:
        ended = when(s.closed_at) if s.closed_at is not None else "under way"
        seed = (f"<code>{esc(s.seed)}</code>" if s.seed is not None
                else "sealed until the season ends")
        rows.append(f'<tr data-season="{s.season}"><td class="num">{s.season}</td>'
                    f"<td>{when(s.started_at)}</td><td>{ended}</td>"
                    f'<td class="num">{s.games}</td>'
                    f"<td><code>{esc(s.commitment)}</code></td><td>{seed}</td></tr>")
    closed = [s for s in league.seasons if s.seed is not None]
    example = closed[0] if closed else None
    check = ("" if example is None else
             f"python3 -c \"import hashlib; print(hashlib.sha256(b'{example.seed}')"
             f".hexdigest())\"")
    first_set = ("" if example is None else
                 "python3 -c \"import hashlib; print(int.from_bytes(hashlib.sha256("
                 f"b'trick-arena/deal/{example.seed}/{example.first_set}').digest()[:8], "
                 "'big') >> 1)\"")
    return [
        '<section aria-labelledby="seed-h"><h2 id="seed-h">The seeds</h2>',
        table(["Season", "Started", "Ended", "Games", "Master seed commitment (SHA-256)",
               "Master seed"], rows, ' id="seasons" class="data compact"'),
        "<p>Every season has a master seed of its own. Before its games the organiser "
        "published its commitment, the SHA-256 digest of the seed's decimal digits; the seed "
        "is revealed when the season ends, and it fixes that season's deals, and no other "
        "season's, so nobody could choose the cards after seeing the bots. A season under "
        "way keeps its seed sealed: its deals are still being played.</p>",
        *([f"<p>Check a revealed seed against its commitment (season {example.season}):</p>",
           f"<pre><code>{esc(check)}</code></pre>",
           "<p>Set <i>n</i> of the league (its sets are numbered 0, 1, … over all its "
           "seasons, in the order it decided them) is dealt from the deal seed made of the "
           "first 63 bits of SHA-256 of <code>trick-arena/deal/SEED/n</code>, SEED its "
           "season's master seed; each record holds its deal seed (<code>seed</code>). For "
           f"season {example.season}'s first set, set {example.first_set}:</p>",
           f"<pre><code>{esc(first_set)}</code></pre>"] if example is not None else []),
    ]


def scheduled_games(meta: Mapping[str, str]) -> int | None:
    """How many games the schedule has (None if the store does not say)."""
    try:
        per_bot = meta.get("tables_per_bot")
        return game_count(meta["format"], len(json.loads(meta["bots"])), int(meta["seats"]),
                          int(meta["deals"]), len(json.loads(meta.get("candidates") or "[]")),
                          tables_per_bot=int(per_bot) if per_bot is not None else None)
    except (KeyError, ValueError, TypeError):
        return None


def tournament_page(lb: Mapping[str, Any], site: SiteContext,
                    registered: Sequence[Mapping[str, Any]]) -> str:
    meta = site.meta
    schedule = lb.get("schedule") or {}
    clock = lb.get("time_control") or {}
    rating = lb.get("rating") or {}
    options = dict(lb.get("options") or {})
    played = {b["name"]: b for b in lb["bots"]}
    anchored = ", ".join(f"{b['name']} {num(b['fixed_elo'], 0)}" for b in lb["bots"]
                         if b.get("house") and b.get("fixed_elo") is not None)
    scheduled = scheduled_games(meta)
    n_tables = len({r.table_no for r in site.rows})
    seed = lb.get("seed")
    commitment = lb.get("seed_commitment")
    isolation = isolation_of(lb)
    unsandboxed = [str(b["name"]) for b in registered
                   if b.get("sandboxed") is not None and not b.get("sandboxed")]

    def dl(items: Iterable[tuple[str, str]]) -> str:
        return ('<dl class="facts">'
                + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items) + "</dl>")

    league = site.league
    games_text = f"{lb['games']} finished"
    if league is not None:
        games_text += (f" in {len(league.seasons)} season"
                       f"{'s' if len(league.seasons) != 1 else ''} (a league plays on: the "
                       f"ratings are the games' so far)")
    elif scheduled is not None:
        games_text += f" of {scheduled} scheduled"
        if lb["games"] < scheduled:
            games_text += " (the tournament is not finished: the results are provisional)"
    candidates = json.loads(meta.get("candidates") or "[]") if meta.get("candidates") else []
    bot_rows = []
    retired_class = ' class="is-retired"'
    for b in registered:
        name = str(b["name"])
        entry = played.get(name)
        link = bot_link("", site.slugs, name) if entry else esc(name)
        sandboxed = b.get("sandboxed") is None or bool(b.get("sandboxed"))
        confined = (UNSANDBOXED_MARK if not sandboxed else
                    "built-in" if bot_kind(b.get("spec")) == "builtin" else "yes")
        said = str(b.get("author") or "")
        if league is not None:  # the league's author; the bot's own word beside it
            author = esc(league.authors.get(name, "the organiser"))
            if said and said != league.authors.get(name):
                author += f' <span class="muted">(it says: {esc(said)})</span>'
            status = league.status.get(name, "active")
        else:
            author, status = esc(said or "–"), ""
        bot_rows.append(
            f'<tr data-bot="{esc(name)}"{retired_class if status == "retired" else ""}>'
            f"<td>{link}</td>"
            f"<td>{esc(b.get('version') or '–')}</td>"
            f"<td>{author}</td>"
            + (f"<td>{esc(status)}</td>" if league is not None else "")
            + f"<td>{confined}"
            f"{' ' + INSECURE_MARK if b.get('insecure') else ''}</td>"
            f'<td class="num">{entry["games"] if entry else 0}</td>'
            f'<td class="num">{rank_text(entry) if entry else "–"}</td></tr>')
    skipped = json.loads(meta.get("skipped") or "[]") if meta.get("skipped") else []
    seed_text = esc(seed) if seed is not None else "not recorded"
    check = (f"python3 -c \"import hashlib; print(hashlib.sha256(b'{seed}').hexdigest())\""
             if seed is not None else "")
    deal_check = ("python3 -c \"import hashlib; print(int.from_bytes(hashlib.sha256("
                  f"b'trick-arena/deal/{seed}/0').digest()[:8], 'big') >> 1)\""
                  if seed is not None else "")
    body = [
        f"<h1>{esc(site.name)}: the tournament</h1>",
        f'<p class="lede">{summary_line(lb, lb["games"])}</p>',
        '<section aria-labelledby="game-h"><h2 id="game-h">The game</h2>',
        dl([("Game", esc(game_title(lb.get("game")))),
            ("Options", esc(", ".join(f"{k} = {option_value(v)}" for k, v in options.items()))
             or "the defaults"),
            ("Rules", "as enforced by the referee; see the rules in the trick-arena "
                      "documentation (<code>docs/rules.md</code>)")]),
        "</section>",
        '<section aria-labelledby="schedule-h"><h2 id="schedule-h">Schedule</h2>',
        dl([("Format", esc(schedule.get("format") or "?")
             + (f" (candidates: {esc(', '.join(candidates))})" if candidates else "")),
            ("Seats per table", esc(num(schedule.get("seats")))),
            ("Tables", str(n_tables)),
            ("Deals per table", esc(num(schedule.get("deals")))
             + " (each deal played in every rotation of the table's bots: a duplicate set)"),
            ("Games", esc(games_text)),
            ("Played", when_range(*site.played) if site.played is not None else "–"),
            ("Published", when(site.published))]),
        "</section>",
        '<section aria-labelledby="time-h"><h2 id="time-h">Time control</h2>',
        dl([("Time per decision", f"{esc(num(clock.get('move_ms')))} ms"),
            ("Time bank per game", f"{esc(num(clock.get('bank_ms')))} ms"),
            ("Faults before a seat is forfeited", esc(num(clock.get("max_faults"))))]),
        '<p class="note">A late, illegal or malformed answer is a fault: the referee plays a '
        "default action for the seat and the game goes on. After the allowed number of "
        "faults the default actions play the seat for the rest of the game.</p></section>",
        '<section aria-labelledby="isolation"><h2 id="isolation">Isolation</h2>',
        dl([("Bot processes", f'<span id="isolation-mode">{esc(isolation)}</span>: '
                              f"{esc(ISOLATION_MODES.get(isolation, 'not described'))}"),
            ("Sandbox", "no bot ran without it" if not unsandboxed else
             f"{esc(', '.join(unsandboxed))}: not confined in it (untrusted mode off, or "
             "a bot served from elsewhere); the others ran in it")]),
        '<p class="note">A bot process the arena starts runs in a sandbox, with limits on its '
        "memory, processes, CPU time, file size and open files; hitting a limit is a "
        "<i>resource</i> fault. Only a bot the tournament file trusts runs without it (and a "
        "bot served from elsewhere is out of the arena's reach). The "
        "isolation mode says how bot processes are shared between games. The bots' CPU time "
        "per decision (on the leaderboard and the bot pages) is the bot process's own CPU "
        "time while it decided, where the machine could measure it.</p></section>",
        '<section aria-labelledby="bots-h"><h2 id="bots-h">Bots</h2>',
        table(["Bot", "Version", "Author", *(["Status"] if league is not None else []),
               "Sandbox", "Games", "Rank"], bot_rows, ' id="bots" class="data compact"'),
        (f'<p class="note">Left out: {esc(", ".join(f"{n} ({why})" for n, why in skipped))}.'
         "</p>" if skipped else ""),
        "</section>",
        *(league_seeds(league) if league is not None else [
            '<section aria-labelledby="seed-h"><h2 id="seed-h">The seed</h2>',
            dl([("Seed commitment", f"<code>{esc(commitment or 'not recorded')}</code>"),
                ("Seed (revealed)", f"<code>{seed_text}</code>")]),
            "<p>Before the games the organiser published the commitment: the SHA-256 digest "
            "of the seed's decimal digits. The seed is revealed now; it fixes every deal, so "
            "nobody could choose the cards after seeing the bots. Check that the seed matches "
            "the commitment:</p>",
            f"<pre><code>{esc(check)}</code></pre>" if check else "",
            "<p>Deal <i>d</i> (0, 1, …) of every table uses the deal seed made of the first 63 "
            "bits of SHA-256 of <code>trick-arena/deal/SEED/d</code>; each record holds its "
            "deal seed (<code>seed</code>). For deal 0:</p>",
            f"<pre><code>{esc(deal_check)}</code></pre>" if deal_check else ""]),
        dl([("Results chain head", f'<code id="chain-head">'
                                   f"{esc(lb.get('chain_head') or 'not recorded')}</code>")]),
        "<p>Every finished game's record is chained to the ones before it by SHA-256, "
        "starting from the seed commitment; the head fixes every record, their number and "
        "their order. Check it against the organiser's export with <code>arena verify "
        "games.jsonl.gz --head HEAD</code>, or the few lines of Python in the trick-arena "
        "documentation (<code>docs/records.md</code>).</p>",
        "</section>",
        '<section aria-labelledby="verify-h"><h2 id="verify-h">Checking the games</h2>',
        f'<p>Every game\'s complete record is in <a href="{DATA_FILE}">{DATA_FILE}</a> '
        "(one JSON object per line, gzip-compressed, format <code>trick-arena.record/1</code>): "
        "the deal, the "
        "trump, every bid and card, every trick and score. Anyone can re-play them through "
        "the rules engine of trick-arena (the version above, or a later one that reads this "
        "format):</p>",
        "<pre><code>arena verify games.jsonl.gz</code></pre>",
        "<p>It prints <code>games.jsonl.gz: ok (N records), no chain</code>, or the first "
        "record, round, trick and seat that does not hold. The leaderboard's numbers are in "
        '<a href="data/leaderboard.json">data/leaderboard.json</a>.</p>',
        dl([("Played with", f"trick-arena {esc(lb.get('arena_version') or '?')}"),
            ("Published with", f"trick-arena {esc(__version__)}"),
            ("Tournament file SHA-256", f"<code>{esc(lb.get('tournament_hash') or '–')}</code>")]),
        "</section>",
        '<section aria-labelledby="ratings"><h2 id="ratings">How the ratings are made</h2>',
        ("<p>In every whole duplicate set (one deal in every rotation of the seats) the "
         "bots that held the same seat's cards are compared, as duplicate bridge scores a "
         "board: the higher final total with those cards wins, equal totals draw, and the "
         "luck of the deal cancels; a set still being played is not counted. The ratings "
         if rating.get("compare") == "cards" else
         "<p>Every game of <i>k</i> seats counts as <i>k</i>(<i>k</i> − 1)/2 comparisons, one "
         "per pair of seats: the higher final total wins it, equal totals draw. The ratings ")
        + "are the Bradley-Terry strengths that best explain all comparisons, on the Elo scale "
        + "(400 points = odds of 10 to 1) "
        + (f"set by the house bots' fixed ratings ({esc(anchored)}), with " if anchored else
           "and centred so that the pool averages 1500, with ")
        + f"{esc(num(rating.get('prior_draws', 1), 1)).removesuffix('.0')} virtual draw(s) per "
        "bot against the pool average. "
        f"The {round(100 * float(rating.get('level', 0.95)))}% intervals come from a "
        f"bootstrap over duplicate sets ({esc(rating.get('resamples', '?'))} resamples, "
        f"seed {esc(rating.get('seed', 0))}): the games of one deal at one table share their "
        "cards, so whole sets are resampled. A rating is provisional while the bot has fewer "
        "than 20 games or its interval is wider than ±100.</p>",
        "</section>",
    ]
    return page(f"The tournament: {site.name}", "", "\n".join(body), "tournament.html",
                site.name, description=f"How {site.name} was run", published=site.published,
                up=site.up)
