"""``arena verify`` on a league: its seasons, its stored decisions, its games against them.

:func:`arena.runs.audit.verify_store` re-plays every game by the rules and walks the
results chain, as for a tournament; what it checks the games' tables against is the
league's schedule, made here from the stored decisions (:func:`league_planner`): each
set's rotations, with the set's deal seed. :func:`check_seasons` checks the rest:

- each season's commitment is the SHA-256 of its master seed; a closed season's seed is
  the revealed one (``meta`` ``seasons``, and ``seed`` for the first season, the results
  chain's genesis);
- each decision is whole: its table has ``seats`` distinct bots of the league, its reason
  names the same table, its derivation index is its set number, its season exists and
  began at or before it;
- a set of a closed season was dealt from its revealed master seed and its derivation
  index; a set of a season still open cannot be checked against a seed no one has seen:
  :func:`check_seasons` says so (the seeds are revealed by ``arena league close``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from arena.league.config import FORMAT
from arena.league.store import has_tables, load_sets, seasons, set_deal_seed
from arena.runs.audit import AuditError, Planner
from arena.runs.schedule import ScheduledGame, seed_commitment
from arena.runs.store import Store


def game_of(set_no: int, season: int, bots: tuple[str, ...], seed: int,
            rotation: int) -> ScheduledGame:
    seats = len(bots)
    return ScheduledGame(set_no * seats + rotation, set_no, season, rotation, seed,
                         tuple(bots[(s + rotation) % seats] for s in range(seats)))


def league_planner(store: Store) -> Planner:
    """The schedule of a league's store as :func:`verify_store` reads it: every rotation
    of every stored decision, with the decision's deal seed (checked against the revealed
    master seed by :func:`check_seasons`)."""
    def planned(meta: Mapping[str, str]) -> Iterable[ScheduledGame] | None:
        if meta.get("format") != FORMAT or not has_tables(store):
            return None
        return (game_of(d.set_no, d.season, d.bots, d.deal_seed, r)
                for d in load_sets(store) for r in range(len(d.bots)))
    return planned


def check_seasons(store: Store) -> list[str]:
    """Check the seasons and the decisions (see the module docstring); the notes to print
    (a season whose seed is not yet revealed). Raises :class:`AuditError` naming the set
    or season at fault. Nothing to check (no note) for a store that is not a league's."""
    meta = store.meta()
    if meta.get("format") != FORMAT or not has_tables(store):
        return []
    seats = int(meta.get("seats", "0"))
    found = seasons(store)
    if not found:
        return []
    by_number = {s.season: s for s in found}
    published = _published(meta)
    notes: list[str] = []
    for s in found:
        if seed_commitment(s.seed) != s.commitment:
            raise AuditError(f"season {s.season}: the stored master seed does not match its "
                             f"commitment {s.commitment}")
        shown = published.get(s.season, {})
        if shown.get("commitment") not in (None, s.commitment):
            raise AuditError(f"season {s.season}: meta seasons has commitment "
                             f"{shown.get('commitment')}, the season {s.commitment}")
        if s.closed:
            if shown.get("seed") is not None and str(shown["seed"]) != str(s.seed):
                raise AuditError(f"season {s.season}: the revealed seed {shown['seed']} is "
                                 f"not the season's master seed")
        else:
            notes.append(f"season {s.season}: open; its master seed is not yet revealed "
                         f"(commitment {s.commitment}): the deals of its sets are checked "
                         f"when 'arena league close' reveals it")
    if found[0].commitment != meta.get("seed_commitment"):
        raise AuditError("meta: the seed commitment is not the first season's (the results "
                         "chain's genesis)")
    known = set(_names(meta))
    for d in load_sets(store):
        where = f"set {d.set_no}"
        if len(d.bots) != seats or len(set(d.bots)) != seats:
            raise AuditError(f"{where}: its decision seats {list(d.bots)}, not {seats} "
                             f"distinct bots")
        if not set(d.bots) <= known:
            raise AuditError(f"{where}: its decision seats a bot the league does not have")
        if d.reason.get("bots") is not None and list(d.reason["bots"]) != list(d.bots):
            raise AuditError(f"{where}: changed: its reason names {d.reason['bots']}, its "
                             f"table {list(d.bots)}")
        if d.derivation != d.set_no:
            raise AuditError(f"{where}: changed: derivation index {d.derivation}, not its "
                             f"set number")
        season = by_number.get(d.season)
        if season is None or d.set_no < season.first_set:
            raise AuditError(f"{where}: changed: season {d.season} did not deal it")
        if season.closed and set_deal_seed(season.seed, d.derivation) != d.deal_seed:
            raise AuditError(f"{where}: changed: its deal seed {d.deal_seed} is not the one "
                             f"season {d.season}'s revealed master seed gives")
    return notes


def _published(meta: Mapping[str, str]) -> dict[int, dict[str, object]]:
    try:
        data = json.loads(meta.get("seasons", "[]"))
    except ValueError:
        raise AuditError("meta seasons: not JSON") from None
    if not isinstance(data, list):
        raise AuditError("meta seasons: not a list")
    return {int(s["season"]): s for s in data if isinstance(s, dict) and "season" in s}


def _names(meta: Mapping[str, str]) -> list[str]:
    try:
        names = json.loads(meta.get("bots", "[]"))
    except ValueError:
        return []
    return [str(n) for n in names] if isinstance(names, list) else []
