"""The leaderboard of a tournament: ratings, per-bot statistics and head-to-head scores.

:func:`build_leaderboard` reads the finished games once, as a stream, keeping only
per-bot accumulators and a few numbers per game in arrays (the ratings' comparisons,
:class:`~arena.stats.ratings.Comparisons`, and each bot's scores and incremental Elo;
never a record or an object per game), and returns a JSON-ready dict
(``trick-arena.leaderboard/1``, documented in ``docs/leaderboard.md``). The output has
no timestamps: the same games give the same leaderboard, byte for byte. The renderers
turn it into Markdown, CSV, JSON or a terminal table; :func:`write_leaderboard` writes
the three files atomically. No SQLite here: the
caller passes ``Store.iter_games()``, ``Store.meta()`` and ``Store.bots()``.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from arena.model.faults import FAULT_KINDS
from arena.model.spec import BotSpecError, builtin_settings
from arena.runs.store import StoredGame
from arena.stats.ratings import (
    Comparisons,
    GameScores,
    IncrementalElo,
    mean_and_se,
    rate,
    same_cards,
)

if TYPE_CHECKING:
    pass


FORMAT = "trick-arena.leaderboard/1"


LEVEL = 0.95
"""The confidence level of the Elo intervals."""


PRIOR_DRAWS = 1.0
"""Virtual draws of each bot against the pool average (see :func:`arena.stats.ratings.rate`)."""


PROVISIONAL_GAMES = 20
"""A bot with fewer games than this is provisional."""


PROVISIONAL_HALF_WIDTH = 100.0
"""A bot whose Elo interval is wider than twice this is provisional."""


ISOLATION_MODES = {
    "deal": "a process per bot plays one game at a time and never sees a deal twice",
    "game": "a fresh process per bot and game",
    "shared": "bot processes may play several games at once and see a deal more than once; "
              "trusted bots only",
}
"""What each isolation mode (the store's ``isolation`` metadata) means, for people."""


DEFAULT_ISOLATION = "shared"
"""The isolation of a store that does not say (one written before the setting existed)."""


BOT_KINDS = {"builtin": "a built-in bot: the arena's own code, played inside the arena's "
                        "process (no process of its own, nothing to confine)",
             "process": "a bot process the arena started (cmd:), in its sandbox unless the "
                        "tournament file trusts it",
             "remote": "a bot served from elsewhere (grpc://, grpcs://, unix:), out of the "
                       "arena's reach"}
"""The kinds of bot (a leaderboard entry's ``kind``), for people."""


def bot_kind(spec: str | None) -> str | None:
    """The kind of bot a registered spec is (a key of :data:`BOT_KINDS`); None when the
    store does not say."""
    if not spec:
        return None
    if spec.startswith("cmd:"):
        return "process"
    if spec.startswith(("grpc://", "grpcs://", "unix:")):
        return "remote"
    try:
        return "builtin" if builtin_settings(spec) is not None else None
    except BotSpecError:
        return None


UNSANDBOXED = "(no sandbox)"
"""The mark after the name of a bot that ran without the sandbox (untrusted mode off)."""


UNSANDBOXED_NOTE = ("the arena did not confine the bot in its sandbox (untrusted mode off, "
                    "or a bot served from elsewhere)")


INSECURE = "(insecure)"
"""The mark after the name of a bot reached by plain grpc:// beyond loopback."""


INSECURE_NOTE = ("reached by plain grpc:// over the network (insecure = true): no TLS and no "
                 "authentication, so its moves could have been read or changed on the way")


class LatencyHistogram:
    """Times in milliseconds (answer latencies, CPU time per decision) in log-spaced bins 1%
    wide, so memory does not grow with answers.

    :meth:`quantile` gives the nearest-rank percentile to within 0.5%; ``max`` is exact.
    """

    RATIO = 1.01
    FLOOR_MS = 0.001
    """Latencies below this share one bin (reported as the smallest latency seen)."""

    __slots__ = ("count", "counts", "max", "min")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.count = 0
        self.max = 0.0
        self.min = math.inf

    def add(self, ms: float) -> None:
        ms = max(0.0, float(ms))
        key = (-1 if ms < self.FLOOR_MS
               else math.floor(math.log(ms / self.FLOOR_MS) / math.log(self.RATIO)))
        self.counts[key] = self.counts.get(key, 0) + 1
        self.count += 1
        self.max = max(self.max, ms)
        self.min = min(self.min, ms)

    def quantile(self, q: float) -> float | None:
        """The ``q`` quantile (0..1) by nearest rank, or None when empty."""
        if not self.count:
            return None
        rank = min(self.count, max(1, math.ceil(q * self.count)))
        seen = 0
        for key in sorted(self.counts):
            seen += self.counts[key]
            if seen >= rank:
                if key < 0:
                    return self.min
                middle = self.FLOOR_MS * math.exp((key + 0.5) * math.log(self.RATIO))
                return min(self.max, max(self.min, middle))
        return self.max  # pragma: no cover - the loop always reaches the rank


@dataclass(slots=True)
class _BotStats:
    """One bot's running totals over the games read so far."""

    games: int = 0
    place_sum: int = 0
    wins: int = 0
    shared_wins: int = 0
    faults: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAULT_KINDS, 0))
    forfeits: int = 0
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    cpu: LatencyHistogram = field(default_factory=LatencyHistogram)
    """The bot process's CPU time per decision (decisions where it was measured)."""
    bid_rounds: int = 0
    bid_exact: int = 0
    bid_abs_error: int = 0
    bid_diff: int = 0
    by_hand: dict[int, list[int]] = field(default_factory=dict)
    """Wizard: hand size -> [rounds, exact bids]."""


@dataclass(slots=True)
class _Pair:
    """Head-to-head totals of two bots, from the first's side (names sorted)."""

    games: int = 0
    wins: int = 0
    losses: int = 0
    draws: int = 0


class QuickStandings:
    """The standings of a tournament in progress, cheap enough to show every few games:
    the classic incremental Elo over the games so far (:class:`IncrementalElo`, in the
    order they finished; no bootstrap, no intervals: the leaderboard at the end has
    those)."""

    def __init__(self) -> None:
        self._elo = IncrementalElo()

    def add(self, bots: Sequence[str], totals: Sequence[float]) -> None:
        """One finished game: the bots by seat and their totals."""
        self._elo.add(GameScores("", tuple(bots), tuple(float(t) for t in totals)))

    def add_stored(self, games: Iterable[tuple[Sequence[str], Sequence[float]]]) -> None:
        """The games stored before this run (a resumed tournament): each one's bots and
        totals by seat (:meth:`arena.runs.store.Store.iter_results`)."""
        for bots, totals in games:
            self.add(bots, totals)

    def top(self, count: int) -> list[tuple[str, float, int]]:
        """The first ``count`` bots: (name, incremental Elo, games), best first (ties by
        name)."""
        ratings = self._elo.ratings
        order = sorted(ratings, key=lambda name: (-ratings[name], name))
        return [(name, ratings[name], self._elo.games[name]) for name in order[:count]]


def build_leaderboard(games: Iterable[StoredGame], meta: Mapping[str, str],
                      bots: Sequence[Mapping[str, Any]], resamples: int = 1000,
                      rating_seed: int = 0) -> dict[str, Any]:
    """The leaderboard of the finished ``games`` (in schedule order), as a JSON-ready dict.

    ``meta`` is the store's metadata (missing keys give nulls), ``bots`` the registered
    bots (for their versions and whether they ran sandboxed; a bot not listed there, or
    without a ``sandboxed`` key, counts as sandboxed). Bots with no finished game are not
    listed. The isolation is ``meta["isolation"]``, else the one every registered bot
    names, else :data:`DEFAULT_ISOLATION` (a store from before the setting).

    What the ratings compare (``rating.compare``): a tournament's, every two seats of a
    game (``games``); a league's (``meta["format"]`` ``league``), its whole duplicate sets
    only (:func:`whole_sets`) and in them the bots that held the same seat's cards
    (``cards``, :func:`arena.stats.ratings.same_cards`): the comparisons of the league's
    live ratings (:mod:`arena.league.runner`), so that the live and the published order
    of a settled league are one. The other columns count every game either way.
    """
    stats: dict[str, _BotStats] = {}
    pairs: dict[tuple[str, str], _Pair] = {}
    # Per game only numbers in arrays: the comparisons the ratings need (per duplicate
    # set), and each bot's score and incremental Elo after each of its games.
    comparisons = Comparisons()
    elo = IncrementalElo()
    history: dict[str, array[float]] = {}
    by_bot: dict[str, array[float]] = {}
    game_name = meta.get("game")
    house = _json_object(meta.get("house"))
    lineage = _json_object(meta.get("lineage"))
    fixed = {str(k): float(v) for k, v in house.items() if isinstance(v, int | float)}
    is_league = meta.get("format") == LEAGUE
    compare = "cards" if is_league else "games"
    held: list[GameScores] = []  # a league's set being read (its games are consecutive)
    if is_league:
        games = whole_sets(games, _int(meta.get("seats")) or 0)
    count = 0
    for stored in games:
        record = stored.record
        if game_name is None:
            game_name = record.get("game")
        _add_game(stored, record, stats, pairs)
        scores = GameScores(stored.unit, tuple(stored.bots),
                            tuple(float(t) for t in record["totals"]))
        count += 1
        if compare == "games":
            comparisons.add(scores)
        else:
            if held and held[0].unit != scores.unit:
                for cards in same_cards(held):
                    comparisons.add(cards)
                held = []
            held.append(scores)
        for name, score, after in zip(scores.bots, scores.scores, elo.add(scores),
                                      strict=True):
            by_bot.setdefault(name, array("d")).append(score)
            history.setdefault(name, array("d")).append(after)

    for cards in same_cards(held):
        comparisons.add(cards)
    # every bot that played is rated (a bot all of whose cards no one else held has no
    # comparison, and the prior's rating)
    ratings = rate(comparisons, resamples=resamples, seed=rating_seed, level=LEVEL,
                   prior_draws=PRIOR_DRAWS, fixed=fixed or None,
                   bots=stats) if count else []
    classic = elo.ratings
    versions = {str(b.get("name")): b.get("version") or None for b in bots}
    kinds = {str(b.get("name")): bot_kind(b.get("spec")) for b in bots}
    unsandboxed = {str(b.get("name")) for b in bots
                   if b.get("sandboxed") is not None and not b.get("sandboxed")}
    insecure = {str(b.get("name")) for b in bots if b.get("insecure")}
    wizard = game_name == "wizard"

    entries: list[dict[str, Any]] = []
    rank = 0
    for rating in ratings:
        name = rating.name
        s = stats[name]
        mean, se = mean_and_se(by_bot[name])
        half_width = (rating.high - rating.low) / 2
        rank += name not in house
        league: dict[str, Any] = {}
        if house or lineage:  # a league's board: house bots shown, not ranked; versions
            found = lineage.get(name)
            line: dict[str, Any] = found if isinstance(found, dict) else {}
            league = {"house": name in house, "fixed_elo": fixed.get(name),
                      "previous_version": line.get("previous"),
                      "retired": line.get("status") == "retired"}
        entries.append({
            "rank": None if name in house else rank,
            "name": name,
            "version": versions.get(name),
            "kind": kinds.get(name),
            "sandboxed": name not in unsandboxed,
            "insecure": name in insecure,
            "elo": _r(rating.elo, 1),
            "elo_low": _r(rating.low, 1),
            "elo_high": _r(rating.high, 1),
            "p_above_next": None if rating.p_above_next is None else _r(rating.p_above_next, 4),
            "elo_incremental": _r(classic[name], 1),
            "games": s.games,
            "mean_score": _r(mean, 3),
            "mean_score_se": _r(se, 3),
            "mean_place": _r(s.place_sum / s.games, 3),
            "wins": s.wins,
            "shared_wins": s.shared_wins,
            "faults": dict(s.faults),
            "forfeits": s.forfeits,
            "latency_ms": _quantiles(s.latency),
            "cpu_ms": _quantiles(s.cpu),
            "bid_accuracy": _r(s.bid_exact / s.bid_rounds, 4) if s.bid_rounds else None,
            "bid_error": _r(s.bid_abs_error / s.bid_rounds, 4) if s.bid_rounds else None,
            "bid_bias": _r(s.bid_diff / s.bid_rounds, 4) if s.bid_rounds else None,
            "bid_accuracy_by_hand": {
                str(hand): _r(exact / rounds, 4)
                for hand, (rounds, exact) in sorted(s.by_hand.items())
            } if wizard and s.by_hand else None,
            "provisional": (name not in house
                            and (s.games < PROVISIONAL_GAMES
                                 or half_width > PROVISIONAL_HALF_WIDTH)),
            **league,
        })

    order = [e["name"] for e in entries]
    return {
        "format": FORMAT,
        "tournament": meta.get("name"),
        "game": game_name,
        "options": _json_object(meta.get("options")),
        "seed": _int(meta.get("seed")),
        "seed_commitment": meta.get("seed_commitment"),
        "chain_head": meta.get("chain_head"),
        "games": count,
        "schedule": {"format": meta.get("format"), "deals": _int(meta.get("deals")),
                     "seats": _int(meta.get("seats"))},
        "time_control": {"move_ms": _int(meta.get("move_ms")),
                         "bank_ms": _int(meta.get("bank_ms")),
                         "max_faults": _int(meta.get("max_faults"))},
        "isolation": meta.get("isolation") or _common_isolation(bots) or DEFAULT_ISOLATION,
        "arena_version": meta.get("arena_version"),
        "tournament_hash": meta.get("tournament_hash"),
        "rating": {"method": "bradley-terry", "compare": compare, "resamples": resamples,
                   "seed": rating_seed, "level": LEVEL, "prior_draws": PRIOR_DRAWS},
        "bots": entries,
        "head_to_head": _head_to_head(order, pairs),
        "elo_history": {name: [_r(x, 1) for x in history.get(name, ())] for name in order},
    }


LEAGUE = "league"
"""The ``format`` of a league's store (:mod:`arena.league`)."""


def whole_sets(games: Iterable[StoredGame], seats: int) -> Iterator[StoredGame]:
    """The games of the duplicate sets all of whose ``seats`` rotations are finished: a
    league's board leaves out a set still in flight (never half counted). A set's games
    are consecutive in schedule order (set ``n``'s positions are ``n * seats`` to
    ``n * seats + seats - 1``), so one set is held at a time."""
    held: list[StoredGame] = []
    for game in games:
        if held and held[0].unit != game.unit:
            if len(held) >= seats:
                yield from held
            held = []
        held.append(game)
    if len(held) >= seats:
        yield from held


def _add_game(stored: StoredGame, record: Mapping[str, Any], stats: dict[str, _BotStats],
              pairs: dict[tuple[str, str], _Pair]) -> None:
    """Fold one game into the accumulators."""
    names = stored.bots
    totals = record["totals"]
    places = record["places"]
    n = len(names)
    firsts = sum(1 for p in places if p == 1)
    seat_stats = [stats.setdefault(name, _BotStats()) for name in names]
    for seat, s in enumerate(seat_stats):
        s.games += 1
        s.place_sum += places[seat]
        if places[seat] == 1:
            s.wins += 1
            if firsts > 1:
                s.shared_wins += 1
        for ms in stored.latencies_ms[seat] if seat < len(stored.latencies_ms) else ():
            s.latency.add(ms)
        for cpu in stored.cpu_ms[seat] if seat < len(stored.cpu_ms) else ():
            if cpu is not None:
                s.cpu.add(cpu)
    forfeited = record.get("forfeited")
    for fault in record.get("faults") or ():
        if fault.get("excused_by"):
            continue  # another bot's doing (it ran while stopped): not this bot's fault
        s = seat_stats[fault["seat"]]
        kind = str(fault["kind"])
        s.faults[kind] = s.faults.get(kind, 0) + 1
        if not forfeited and fault.get("forfeited"):
            s.forfeits += 1
    for seat, lost in enumerate(forfeited or ()):
        if lost:
            seat_stats[seat].forfeits += 1
    wizard = record.get("game") == "wizard"
    for rnd in record.get("rounds") or ():
        bids = rnd.get("bids")
        if bids is None:
            continue
        for seat, s in enumerate(seat_stats):
            bid, won = bids[seat], rnd["won"][seat]
            s.bid_rounds += 1
            s.bid_exact += bid == won
            s.bid_abs_error += abs(bid - won)
            s.bid_diff += bid - won
            if wizard:
                tally = s.by_hand.setdefault(len(rnd["hands"][seat]), [0, 0])
                tally[0] += 1
                tally[1] += bid == won
    for i in range(n):  # the bots of a game are distinct (GameScores checks)
        for j in range(i + 1, n):
            (a, ta), (b, tb) = sorted(((names[i], totals[i]), (names[j], totals[j])))
            pair = pairs.setdefault((a, b), _Pair())
            pair.games += 1
            if ta > tb:
                pair.wins += 1
            elif ta < tb:
                pair.losses += 1
            else:
                pair.draws += 1


def _common_isolation(bots: Sequence[Mapping[str, Any]]) -> str | None:
    """The isolation all registered bots name, if they name one and the same."""
    named = {str(b.get("isolation") or "") for b in bots}
    return named.pop() if len(named) == 1 and "" not in named else None


def _quantiles(histogram: LatencyHistogram) -> dict[str, float | None] | None:
    """``p50``, ``p95`` and ``max`` of a histogram in ms, or None when it is empty."""
    if not histogram.count:
        return None
    return {"p50": _r(histogram.quantile(0.50), 3), "p95": _r(histogram.quantile(0.95), 3),
            "max": _r(histogram.max, 3)}


def _head_to_head(order: Sequence[str], pairs: Mapping[tuple[str, str], _Pair],
                  ) -> list[dict[str, Any]]:
    """Every ordered pair of bots that shared a game, in rating order."""
    rows: list[dict[str, Any]] = []
    for a in order:
        for b in order:
            if a == b:
                continue
            pair = pairs.get((a, b) if a < b else (b, a))
            if pair is None:
                continue
            wins, losses = (pair.wins, pair.losses) if a < b else (pair.losses, pair.wins)
            rows.append({"a": a, "b": b, "games": pair.games,
                         "score": _r((wins + 0.5 * pair.draws) / pair.games, 4),
                         "wins": wins, "losses": losses, "draws": pair.draws})
    return rows


def _r(value: float | None, digits: int) -> float | None:
    """``value`` rounded for output (None and non-finite values become None)."""
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits) + 0.0  # + 0.0 turns -0.0 into 0.0


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def _json_object(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
