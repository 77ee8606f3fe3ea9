"""What the live page of a league says (arena/league_service/web.py), rendered from the values the
league gives it: every season with its own start, games and seed (revealed once it ended,
sealed while under way), a rating history line per version of a bot, a retired bot
marked in the standings. (The league end to end, on a served league: tests/test_league_web.py;
its published site: tests/test_league.py.)"""

from __future__ import annotations

import html
import re

from arena.league_service.web import bot_page, season_page, standing_json
from arena.model.league_api import (
    ACTIVE,
    RETIRED,
    BotDetail,
    FieldBot,
    RatingPoint,
    SeasonInfo,
    Standing,
    VersionEntry,
)


def words(page: str) -> str:
    raw = re.sub(r"<script.*?</script>|<svg.*?</svg>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def test_the_season_page_shows_every_season_with_its_own_games_and_seed() -> None:
    seasons = [SeasonInfo(1, 1_796_000_000, "a" * 64, 93, 424242, 1_796_003_600),
               SeasonInfo(2, 1_796_003_600, "b" * 64, 12)]
    page = season_page(seasons)
    text = words(page)
    assert "Season 2 is under way." in text
    assert (f"1 2026-11-30 00:53:20 UTC 2026-11-30 01:53:20 UTC 93 {'a' * 64} 424242"
            in text), text
    assert f"2 2026-11-30 01:53:20 UTC under way 12 {'b' * 64} sealed until the season ends" \
        in text
    assert "each season has a seed of its own" in text
    ended = season_page([seasons[0]])
    assert "Season 1 has ended; the next starts with the next run." in words(ended)


def test_a_bots_rating_history_is_a_line_per_version() -> None:
    """Versions 0.1 and 0.2 each from their own first game: two lines, not one that
    jumps from version 0.1's game 33 back to version 0.2's game 3."""
    old = tuple(RatingPoint(g, 1500 + g, 30.0, 1000.0 + g) for g in range(1, 34))
    new = tuple(RatingPoint(g, 1550 + g, 40.0, 2000.0 + g) for g in range(1, 4))
    detail = BotDetail(FieldBot("alice", "cautious", "0.2", ACTIVE, "f" * 64),
                       (VersionEntry("0.1", "e" * 64, 1000.0),
                        VersionEntry("0.2", "f" * 64, 2000.0)),
                       36, 0, {}, 400, 1.5, 2.0, (("0.1", old), ("0.2", new)))
    page = bot_page(detail)
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert "<title>version 0.1</title>" in svg and "<title>version 0.2</title>" in svg
    lines = re.findall(r'<path d="M([\d.]+) [\d.]+[^"]*" fill="none" stroke="([^"]+)"', svg)
    assert len(lines) == 2 and lines[0][1] != lines[1][1]  # two lines, two colours
    assert lines[0][0] == lines[1][0]  # each from its own first game: the same x
    one = BotDetail(detail.bot, detail.versions[:1], 33, 0, {}, 300, 1.5, 2.0,
                    (("0.1", old),))
    assert "version 0.1" in bot_page(one)


def test_a_retired_bot_is_marked_in_the_live_standings() -> None:
    row = standing_json(Standing(3, "old", "bob", "1.0", 1480.0, 30.0, 40, RETIRED))
    assert row["status"] == RETIRED and row["rank"] == 3
    assert standing_json(Standing(1, "new", "bob", "2.0", 1600.0, 30.0, 40))["status"] == ACTIVE
    from importlib import resources
    script = resources.files("arena.league_service").joinpath("assets", "live.js").read_text()
    assert "r.status === 'retired'" in script and "'mark retired'" in script
