"""The league's sets as its ratings and its matchmaking see them: the live ratings fed
whole duplicate sets only (:class:`WholeSets`), rebuilt from the store when a run starts
(:func:`rebuild_sets`), how often each pair of bots has met (:func:`met_counts`), a
set's games (:func:`game_of`), a season's seed (:func:`season_seed`), and whether a game's
cards may be shown yet (:func:`cards_open`)."""

from __future__ import annotations

import hashlib
import secrets

from arena.league import audit
from arena.league.live import LiveRatings
from arena.league.store import LeagueBot, SetDecision
from arena.runs.schedule import ScheduledGame
from arena.runs.store import Store
from arena.stats.ratings import GameScores


def season_seed(file_seed: int | None, season: int) -> int:
    """The master seed of ``season``: drawn at random, or derived from the file's ``seed``
    (for tests: the same file gives the same deals)."""
    if file_seed is None:
        return secrets.randbits(128)
    if season == 1:
        return file_seed
    digest = hashlib.sha256(f"trick-arena/league-season/{file_seed}/{season}".encode())
    return int.from_bytes(digest.digest()[:16], "big")


def game_of(decision: SetDecision, rotation: int) -> ScheduledGame:
    """Rotation ``rotation`` of a set: table number = set number, deal number = season."""
    return audit.game_of(decision.set_no, decision.season, decision.bots,
                         decision.deal_seed, rotation)


def rotations_to_come(seats: int, done: int, *, over: bool) -> int:
    """The rotations of a game's duplicate set, other than the game itself, still to be
    played (queued or in flight): the set has ``seats`` rotations, ``done`` of them finished
    and stored (the game itself among them when it is ``over``)."""
    return max(0, seats - done - (0 if over else 1))


def cards_open(seats: int, done: int, *, over: bool) -> bool:
    """May a game's cards be shown now (its replay, or, while it is played, the cards of
    its live view)? Only once no other rotation of its duplicate set is still to be
    played: each rotation plays the same deal and plays out every card dealt, so one
    rotation seen tells every hand of the next. The one rule for every place a game's
    cards reach a client (:func:`rotations_to_come` is 0)."""
    return rotations_to_come(seats, done, over=over) == 0


COMPARE = "cards"
"""What the league's ratings compare (:class:`LiveRatings`): the bots that held the same
seat's cards in a duplicate set, as the league's published board does."""


class WholeSets:
    """The live ratings fed whole duplicate sets only: a game is held until every rotation
    of its set (``seats`` games of one unit) is stored, then the set is recorded and one
    full Newton step taken (:meth:`LiveRatings.record_set`). A set in flight is never half
    counted: the live ratings hold the comparisons of the published board
    (:func:`arena.report.board.whole_sets`), whatever the order the rotations finish in."""

    def __init__(self, live: LiveRatings, seats: int) -> None:
        self.live = live
        self.seats = seats
        self.held: dict[str, list[GameScores]] = {}
        """The stored games of each set not yet whole, by unit."""

    def add(self, game: GameScores, *, update: bool = True) -> bool:
        """One stored game; True when it made its set whole (and the set was recorded:
        with ``update`` a full step, without it none, for :meth:`LiveRatings.settle`)."""
        held = self.held.setdefault(game.unit, [])
        held.append(game)
        if len(held) < self.seats:
            return False
        del self.held[game.unit]
        if update:
            self.live.record_set(held)
        else:
            for g in held:
                self.live.record(g, update=False)
        return True


def rebuild_ratings(store: Store, bots: dict[str, LeagueBot], seats: int | None = None,
                    ) -> tuple[LiveRatings, int]:
    """The live ratings of every stored whole set, settled (the results table, not the
    records: a second or so at 100,000 games); and the number of games stored. ``seats``
    (default: the store's) is a set's rotations. Use :func:`rebuild_sets` to go on
    feeding them (the games of the sets not yet whole are held there)."""
    return rebuild_sets(store, bots, seats).live, store.count_done()


def rebuild_sets(store: Store, bots: dict[str, LeagueBot], seats: int | None = None,
                 ) -> WholeSets:
    """The live ratings (``compare="cards"``) of every stored whole set, settled, in a
    :class:`WholeSets` that holds the stored games of the sets not yet whole."""
    house = {b.name: b.rating for b in bots.values() if b.house and b.rating is not None}
    live = LiveRatings(bots=[b.name for b in bots.values() if b.name not in house],
                       house={k: v for k, v in house.items() if v is not None},
                       compare=COMPARE)
    if seats is None:
        seats = int(store.meta().get("seats") or 0)
    sets = WholeSets(live, seats)
    rows = store.db.execute(
        "SELECT r.game_id, g.table_no, g.deal_no, r.bot, r.score FROM results AS r JOIN"
        " games AS g ON g.id = r.game_id WHERE g.status = 'done' ORDER BY g.seq, r.seat"
    ).fetchall()
    whole = 0
    current: str | None = None
    unit = ""
    names: list[str] = []
    scores: list[float] = []
    for game_id, table_no, deal_no, bot, score in [*rows, (None, 0, 0, "", 0)]:
        if game_id != current:
            if current is not None and len(names) >= 2:
                whole += sets.add(GameScores(unit, tuple(names), tuple(scores)),
                                  update=False)
            current, names, scores = game_id, [], []
            unit = f"t{table_no}-d{deal_no}"  # ScheduledGame.unit: the set
        names.append(str(bot))
        scores.append(float(score))
    if whole:
        live.settle()
    return sets


def met_counts(sets: list[SetDecision]) -> dict[tuple[str, str], int]:
    met: dict[tuple[str, str], int] = {}
    for s in sets:
        add_met(met, s.bots)
    return met


def add_met(met: dict[tuple[str, str], int], bots: tuple[str, ...]) -> None:
    for i, a in enumerate(bots):
        for b in bots[i + 1:]:
            key = (a, b) if a < b else (b, a)
            met[key] = met.get(key, 0) + 1
