"""A tournament as a static web site: ``arena publish DIR --out SITE``.

The site (leaderboard with charts, a page per bot, the games list, a replay page per
game, the tournament statement and the raw data) is plain files that work from
``file://`` and from any static host; see ``docs/publishing.md``. :mod:`.build` builds
it (staging, swap), :mod:`.pages` and :mod:`.figures` write its pages and charts,
:mod:`.replay` the replay viewer (also used by the browser seat), :mod:`.serve` serves it.
"""
