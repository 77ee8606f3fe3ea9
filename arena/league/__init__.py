"""The open league's pure core: live ratings, matchmaking, and their simulation.

:mod:`arena.league.live` keeps the ratings up to date game by game or set by set (the
league feeds it whole sets, comparing the same cards: :mod:`arena.league.runner`);
:mod:`arena.league.matchmaking` chooses the next tables from them; :mod:`arena.league.sim`
measures the matchmaking against other schedulers with known strengths (no games are
played). No module here does I/O or touches global random state.
"""
