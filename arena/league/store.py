"""The league's tables, beside a tournament store's own in the same SQLite file.

A league's store is a tournament store (:mod:`arena.runs.store`: meta, bots, games,
results, faults, latencies, the results chain) plus these tables, made by the league:

- ``league_bots``: the field, every version of every bot: its spec and confinement (JSON),
  whether it is a house bot and its fixed rating, active or retired (when, why), the
  version number and the previous version it replaces;
- ``league_requests``: every field change applied (``add``, ``update``, ``retire``,
  ``close``), by request id, with the answer given: a request applied before a kill -9 is
  found here and never applied twice;
- ``league_seasons``: each season's master seed (secret until the season is closed), its
  SHA-256 commitment, the first set it dealt, and when it was closed (revealed);
- ``league_sets``: each matchmaking decision, stored before its games: the set number,
  the season, the deal seed's derivation index, the table and the reason (JSON).

Every change of the field is one transaction that also records its request, and rewrites
the two meta keys the leaderboard reads (``house``: house bots and their fixed ratings;
``lineage``: each bot's status and previous version). Writes need the run lock, as every
write of the store does (:meth:`Store.claim`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arena.league.store_schema import LEAGUE_SCHEMA, TABLE_NAMES, TABLES
from arena.model.errors import one_line, show
from arena.model.limits import Confinement, Limits
from arena.model.names import NameError_, check_name
from arena.model.spec import BotSpec, BotSpecError, Remote
from arena.runs.config import BotEntry
from arena.runs.schedule import deal_seed, seed_commitment
from arena.runs.store import Store, StoreError, store_error

VERSION_MARK = "@"
"""A bot's later versions are named ``NAME@2``, ``NAME@3``, ..."""


class FieldError(ValueError):
    """A field change that cannot be made (an unknown bot, a name taken); one line."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


@dataclass(frozen=True, slots=True)
class LeagueBot:
    """One version of a bot of the league."""

    name: str
    base: str
    version_no: int
    previous: str | None
    entry: BotEntry
    cwd: Path
    """Where its command runs (the league file's folder, or the adding command's)."""
    house: bool
    rating: float | None
    status: str
    reason: str | None = None

    @property
    def active(self) -> bool:
        return self.status == "active"


@dataclass(frozen=True, slots=True)
class Season:
    season: int
    commitment: str
    seed: int
    first_set: int
    closed: bool


@dataclass(frozen=True, slots=True)
class SetDecision:
    """A matchmaking decision: one duplicate set, stored before its games."""

    set_no: int
    season: int
    derivation: int
    bots: tuple[str, ...]
    reason: dict[str, Any]
    deal_seed: int


@dataclass(slots=True)
class Answer:
    """What a request got: ``ok``, one line, and the bot it made (if any)."""

    ok: bool
    message: str
    name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Answer:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        name, extra = data.get("name"), data.get("extra")
        return cls(bool(data.get("ok")), str(data.get("message", "")),
                   name if isinstance(name, str) else None,
                   extra if isinstance(extra, dict) else {})


# -- entries as JSON ----------------------------------------------------------------------


def entry_json(entry: BotEntry, cwd: Path) -> str:
    """A bot's spec, confinement and working folder as JSON (what the store keeps)."""
    c, r = entry.confinement, entry.spec.remote
    return json.dumps({
        "spec": str(entry.spec), "kind": entry.spec.kind, "value": entry.spec.value,
        "cwd": str(cwd), "sandbox": c.sandbox, "limits": asdict(c.limits),
        "read_only": [str(p) for p in c.read_only], "env": [list(kv) for kv in c.env],
        "tls_ca": None if r.tls_ca is None else r.tls_ca.decode(),
        "server_name": r.server_name, "token": r.token, "insecure": r.insecure,
        **({} if c.within is None else {"within": str(c.within)}),
    }, sort_keys=True)


def entry_from_json(name: str, text: str) -> tuple[BotEntry, Path]:
    """The bot and working folder stored by :func:`entry_json`; ValueError if it is not."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    remote = Remote(None if data.get("tls_ca") is None else str(data["tls_ca"]).encode(),
                    str(data.get("server_name", "")), str(data.get("token", "")),
                    bool(data.get("insecure", False)))
    spec = BotSpec(str(data["kind"]), str(data["value"]), remote)
    limits = Limits().merged({k: int(v) for k, v in dict(data.get("limits", {})).items()})
    confinement = Confinement(bool(data.get("sandbox", True)), limits,
                              tuple(Path(p) for p in data.get("read_only", [])),
                              tuple((str(k), str(v)) for k, v in data.get("env", [])),
                              within=(None if data.get("within") is None
                                      else Path(str(data["within"]))))
    return BotEntry(name, spec, None, confinement), Path(str(data.get("cwd", ".")))


def parse_spec(text: str, where: str) -> BotSpec:
    try:
        return BotSpec.parse(text)
    except BotSpecError as e:
        raise FieldError(f"{where}: {e}") from None


# -- the tables ---------------------------------------------------------------------------


@contextmanager
def transaction(store: Store) -> Iterator[sqlite3.Connection]:
    """One write transaction on ``store`` (its run lock taken first); SQLite's errors as
    :class:`StoreError`."""
    store.claim()
    db = store.db
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.DatabaseError as e:
        raise store_error(e, store.path, "write") from None
    try:
        yield db
        db.execute("COMMIT")
    except sqlite3.DatabaseError as e:
        _rollback(db)
        raise store_error(e, store.path, "write") from None
    except BaseException:
        _rollback(db)
        raise


def _rollback(db: sqlite3.Connection) -> None:
    if db.in_transaction:
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def ensure_tables(store: Store) -> None:
    """Make the league's tables (once)."""
    with transaction(store) as db:
        for statement in TABLES:
            db.execute(statement)
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('league_schema', ?)",
                   (LEAGUE_SCHEMA,))


def has_tables(store: Store) -> bool:
    try:
        names = {r[0] for r in store.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        raise store_error(e, store.path, "read") from None
    return set(TABLE_NAMES) <= names


def _read(store: Store, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    try:
        return store.db.execute(sql, params).fetchall()
    except sqlite3.DatabaseError as e:
        raise store_error(e, store.path, "read") from None


def load_bots(store: Store) -> dict[str, LeagueBot]:
    """Every version of every bot, by name, in the order they joined."""
    out: dict[str, LeagueBot] = {}
    for row in _read(store, "SELECT name, base, version_no, previous, entry, house, rating,"
                            " status, reason FROM league_bots ORDER BY added_at, rowid"):
        name = row[0]
        where = f"{store.path}: league_bots {show(name)}"
        try:
            entry, cwd = entry_from_json(str(name), row[4])
        except (ValueError, KeyError, TypeError) as e:
            raise StoreError(f"{where}: entry is not what the arena writes ({e})") from None
        if row[7] not in ("active", "retired") or not isinstance(row[2], int):
            raise StoreError(f"{where}: not what the arena writes")
        out[name] = LeagueBot(name, str(row[1]), row[2], row[3], entry, cwd, bool(row[5]),
                              None if row[6] is None else float(row[6]), row[7], row[8])
    return out


def _write_bot(db: sqlite3.Connection, bot: LeagueBot, request: str | None) -> None:
    db.execute(
        "INSERT INTO league_bots (name, base, version_no, previous, spec, entry, house,"
        " rating, status, added_at, request) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (bot.name, bot.base, bot.version_no, bot.previous, str(bot.entry.spec),
         entry_json(bot.entry, bot.cwd), int(bot.house), bot.rating, bot.status, time.time(),
         request))
    sandboxed = bot.entry.spec.kind == "builtin" or (bot.entry.spec.kind == "cmd"
                                                     and bot.entry.confinement.sandbox)
    db.execute(  # the tournament's table of bots, which the leaderboard reads
        "INSERT OR IGNORE INTO bots (name, spec, version, author, protocol_version, games,"
        " sandboxed, isolation, insecure) VALUES (?, ?, '', '', NULL, '', ?, '', ?)",
        (bot.name, str(bot.entry.spec), int(sandboxed), int(bot.entry.spec.plain_remote)))


def _refresh_meta(db: sqlite3.Connection) -> None:
    """The meta keys the leaderboard reads: ``house`` and ``lineage``; and ``bots``."""
    house: dict[str, float | None] = {}
    lineage: dict[str, dict[str, Any]] = {}
    names: list[str] = []
    for name, base, version_no, previous, is_house, rating, status in db.execute(
            "SELECT name, base, version_no, previous, house, rating, status FROM league_bots"
            " ORDER BY added_at, rowid"):
        names.append(name)
        if is_house:
            house[name] = rating
        lineage[name] = {"base": base, "version": version_no, "previous": previous,
                         "status": status}
    db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                   [("house", json.dumps(house, sort_keys=True)),
                    ("lineage", json.dumps(lineage, sort_keys=True)),
                    ("bots", json.dumps(names))])


def register_file_bots(store: Store, bots: list[LeagueBot]) -> list[str]:
    """Add the bots of the league file that the store does not hold yet (its house bots
    and its starting field); their names."""
    added: list[str] = []
    with transaction(store) as db:
        known = {r[0] for r in db.execute("SELECT name FROM league_bots")}
        for bot in bots:
            if bot.name not in known:
                _write_bot(db, bot, None)
                added.append(bot.name)
        _refresh_meta(db)
    return added


def retire(store: Store, name: str, reason: str) -> bool:
    """Retire ``name`` (the run's own decision: a bot that fails to start); whether it was
    active."""
    with transaction(store) as db:
        changed = db.execute("UPDATE league_bots SET status = 'retired', retired_at = ?,"
                             " reason = ? WHERE name = ? AND status = 'active'",
                             (time.time(), one_line(reason, 300), name)).rowcount
        _refresh_meta(db)
    return bool(changed)


def set_bot_info(store: Store, name: str, info: Mapping[str, Any], isolation: str) -> None:
    """Record what a bot's hand-shake said (``bots`` row: version, author, ...)."""
    with transaction(store) as db:
        db.execute("UPDATE bots SET version = ?, author = ?, protocol_version = ?, games = ?,"
                   " isolation = ? WHERE name = ?",
                   (str(info.get("version", "")), str(info.get("author", "")),
                    info.get("protocol_version"), ",".join(info.get("games", ())),
                    isolation, name))


def apply_request(store: Store, request: Mapping[str, Any], house: Mapping[str, Any],
                  ) -> tuple[Answer, bool]:
    """Apply one field change (``add``, ``update`` or ``retire``) in one transaction that
    records its id; (its answer, whether it was applied now: False when it had been
    applied before, e.g. by a run killed before it answered)."""
    request_id = str(request["id"])
    kind = str(request.get("kind"))
    with transaction(store) as db:
        row = db.execute("SELECT answer FROM league_requests WHERE id = ?",
                         (request_id,)).fetchone()
        if row is not None:
            return Answer.from_json(row[0]), False
        bots = {r[0]: r for r in db.execute(
            "SELECT name, base, version_no, status FROM league_bots")}
        try:
            answer = _change(db, kind, request, bots, house)
        except FieldError as e:
            answer = Answer(False, str(e))
        db.execute("INSERT INTO league_requests (id, kind, body, applied_at, answer)"
                   " VALUES (?, ?, ?, ?, ?)",
                   (request_id, kind, json.dumps(_public(request), sort_keys=True),
                    time.time(), answer.to_json()))
        _refresh_meta(db)
    return answer, True


def _public(request: Mapping[str, Any]) -> dict[str, Any]:
    """A request as stored, without a token."""
    body = dict(request)
    entry = body.get("entry")
    if isinstance(entry, str):
        try:
            data = json.loads(entry)
            if isinstance(data, dict) and data.get("token"):
                data["token"] = "(hidden)"
                body["entry"] = json.dumps(data, sort_keys=True)
        except ValueError:
            pass
    return body


def _change(db: sqlite3.Connection, kind: str, request: Mapping[str, Any],
            bots: Mapping[str, Any], house: Mapping[str, Any]) -> Answer:
    name = str(request.get("name", ""))
    request_id = str(request["id"])
    if kind == "retire":
        if name not in bots:
            raise FieldError(f"retire: no bot {show(name)} in the league")
        if name in house:
            raise FieldError(f"retire: {name} is a house bot (house bots come from the "
                             f"league file)")
        if bots[name][3] != "active":
            raise FieldError(f"retire: {name} is already retired")
        reason = one_line(str(request.get("reason") or "retired by the organiser"), 300)
        db.execute("UPDATE league_bots SET status = 'retired', retired_at = ?, reason = ?"
                   " WHERE name = ?", (time.time(), reason, name))
        return Answer(True, f"retired {name}: it plays no new set (a set it is playing is "
                            f"finished)", name)
    if kind not in ("add", "update"):
        raise FieldError(f"unknown request {show(kind)}")
    entry, cwd = entry_from_json(name, str(request["entry"]))
    if kind == "add":
        try:
            check_name(name, "NAME")
        except NameError_ as e:
            raise FieldError(f"add: {e}") from None
        if VERSION_MARK in name:
            raise FieldError(f"add: {show(name)}: {VERSION_MARK} is kept for versions "
                             f"(NAME{VERSION_MARK}2); choose another name")
        if name in bots or name in house:
            raise FieldError(f"add: {name} is in the league already; a new version is "
                             f"'arena league update FILE {name} SPEC'")
        bot = LeagueBot(name, name, 1, None, entry, cwd, False, None, "active")
        _write_bot(db, bot, request_id)
        return Answer(True, f"added {name} ({entry.spec})", name)
    # update: a new version of the bot's line, linked to the latest
    base = bots[name][1] if name in bots else name
    line = sorted((r for r in bots.values() if r[1] == base), key=lambda r: r[2])
    if not line:
        raise FieldError(f"update: no bot {show(name)} in the league; add it first")
    if base in house:
        raise FieldError(f"update: {base} is a house bot (house bots come from the league "
                         f"file)")
    latest = line[-1]
    new_name = f"{base}{VERSION_MARK}{latest[2] + 1}"
    try:
        check_name(new_name, "NAME")
    except NameError_ as e:
        raise FieldError(f"update: the new version's name: {e}") from None
    bot = LeagueBot(new_name, base, latest[2] + 1, latest[0],
                    BotEntry(new_name, entry.spec, None, entry.confinement), cwd, False, None,
                    "active")
    _write_bot(db, bot, request_id)
    kept = bool(request.get("keep"))
    if not kept and latest[3] == "active":
        db.execute("UPDATE league_bots SET status = 'retired', retired_at = ?, reason = ?"
                   " WHERE name = ?", (time.time(), f"replaced by {new_name}", latest[0]))
    return Answer(True, f"added {new_name}, a new version of {latest[0]} ({entry.spec}); "
                        + (f"{latest[0]} plays on" if kept or latest[3] != "active"
                           else f"{latest[0]} is retired"), new_name)


# -- seasons and sets -------------------------------------------------------------------


def seasons(store: Store) -> list[Season]:
    out: list[Season] = []
    for season, commitment, seed, first, closed in _read(
            store, "SELECT season, commitment, seed, first_set, closed_at FROM league_seasons"
                   " ORDER BY season"):
        if not isinstance(seed, str) or not seed.isdigit() or not isinstance(first, int):
            raise StoreError(f"{store.path}: league_seasons {season}: not what the arena "
                             f"writes")
        out.append(Season(season, str(commitment), int(seed), first, closed is not None))
    return out


@dataclass(frozen=True, slots=True)
class SeasonRow:
    """One season as a page shows it: its commitment, its master seed once revealed (its
    close), when it started and closed, and its finished games."""

    season: int
    commitment: str
    seed: int | None
    """None while the season is open: the seed is revealed when it closes."""
    first_set: int
    started_at: float
    closed_at: float | None
    games: int


def season_rows(store: Store) -> list[SeasonRow]:
    """Every season, in order, with its finished games (those of its sets: a season's
    sets are numbered from its ``first_set`` up to the next season's)."""
    rows = _read(store, "SELECT season, commitment, seed, first_set, started_at, closed_at"
                        " FROM league_seasons ORDER BY season")
    out: list[SeasonRow] = []
    for i, (season, commitment, seed, first, started, closed) in enumerate(rows):
        end = rows[i + 1][3] if i + 1 < len(rows) else None
        games = _read(store, "SELECT COUNT(*) FROM games WHERE status = 'done' AND table_no"
                             " >= ?" + ("" if end is None else " AND table_no < ?"),
                      (first,) if end is None else (first, end))[0][0]
        out.append(SeasonRow(int(season), str(commitment),
                             int(seed) if closed is not None and str(seed).isdigit() else None,
                             int(first), float(started),
                             None if closed is None else float(closed), int(games)))
    return out


def start_season(store: Store, seed: int, first_set: int) -> Season:
    """Start the next season from master seed ``seed``; its commitment is stored now."""
    with transaction(store) as db:
        row = db.execute("SELECT MAX(season) FROM league_seasons").fetchone()
        number = 1 if row[0] is None else int(row[0]) + 1
        commitment = seed_commitment(seed)
        db.execute("INSERT INTO league_seasons (season, commitment, seed, first_set,"
                   " started_at) VALUES (?, ?, ?, ?, ?)",
                   (number, commitment, str(seed), first_set, time.time()))
        # the first season's commitment is the results chain's genesis
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('seed_commitment', ?)",
                   (commitment,))
        _seasons_meta(db)
    return Season(number, commitment, seed, first_set, False)


def close_season(store: Store, request_id: str | None = None) -> Answer:
    """Close the open season: its master seed is revealed (``meta``), and the next run
    starts the next season. Refused while one of its sets is unfinished."""
    with transaction(store) as db:
        if request_id is not None:
            row = db.execute("SELECT answer FROM league_requests WHERE id = ?",
                             (request_id,)).fetchone()
            if row is not None:
                return Answer.from_json(row[0])
        answer = _close(db, open_sets_in(db))
        if request_id is not None:
            db.execute("INSERT INTO league_requests (id, kind, body, applied_at, answer)"
                       " VALUES (?, 'close', '{}', ?, ?)",
                       (request_id, time.time(), answer.to_json()))
    return answer


def _close(db: sqlite3.Connection, unfinished: list[int]) -> Answer:
    row = db.execute("SELECT season, seed, commitment FROM league_seasons WHERE closed_at IS"
                     " NULL ORDER BY season DESC LIMIT 1").fetchone()
    if row is None:
        return Answer(False, "no season is open (the next run starts one)")
    season, seed, commitment = row
    if unfinished:
        return Answer(False, f"season {season} has {len(unfinished)} unfinished set(s) "
                             f"(set {unfinished[0]}, ...): run the league to finish them, "
                             f"or close it while it runs")
    db.execute("UPDATE league_seasons SET closed_at = ? WHERE season = ?",
               (time.time(), season))
    if season == 1:  # the genesis's seed: what verify and the board read as the seed
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('seed', ?)", (seed,))
    _seasons_meta(db)
    return Answer(True, f"season {season} closed; its master seed is {seed} (commitment "
                        f"{commitment}); the next run starts season {season + 1}",
                  extra={"season": season, "seed": seed, "commitment": commitment})


def _seasons_meta(db: sqlite3.Connection) -> None:
    """``meta`` ``seasons``: every season's commitment, and its seed once revealed."""
    out = []
    for season, commitment, seed, first, closed in db.execute(
            "SELECT season, commitment, seed, first_set, closed_at FROM league_seasons"
            " ORDER BY season"):
        out.append({"season": season, "commitment": commitment, "first_set": first,
                     "closed": closed is not None,
                     "seed": seed if closed is not None else None})
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('seasons', ?)",
               (json.dumps(out),))


def open_sets_in(db: sqlite3.Connection) -> list[int]:
    """The sets decided whose games are not all finished (set ``n``'s games are at
    positions ``n * seats`` to ``n * seats + seats - 1``)."""
    seats = db.execute("SELECT value FROM meta WHERE key = 'seats'").fetchone()
    n = int(seats[0]) if seats else 1
    done: dict[int, int] = {}
    for (seq,) in db.execute("SELECT seq FROM games WHERE status = 'done'"):
        done[seq // n] = done.get(seq // n, 0) + 1
    return [r[0] for r in db.execute("SELECT set_no FROM league_sets ORDER BY set_no")
            if done.get(r[0], 0) < n]


def decide(store: Store, decision: SetDecision) -> None:
    """Store a matchmaking decision, before any of its games."""
    with transaction(store) as db:
        db.execute("INSERT INTO league_sets (set_no, season, derivation, bots, reason,"
                   " deal_seed, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (decision.set_no, decision.season, decision.derivation,
                    json.dumps(list(decision.bots)),
                    json.dumps(decision.reason, sort_keys=True), str(decision.deal_seed),
                    time.time()))


def load_sets(store: Store) -> list[SetDecision]:
    out: list[SetDecision] = []
    for set_no, season, derivation, bots, reason, seed in _read(
            store, "SELECT set_no, season, derivation, bots, reason, deal_seed FROM"
                   " league_sets ORDER BY set_no"):
        where = f"{store.path}: league_sets {show(set_no)}"
        try:
            names = json.loads(bots)
            why = json.loads(reason)
            if (not isinstance(names, list) or not all(isinstance(b, str) for b in names)
                    or not isinstance(why, dict) or not str(seed).isdigit()
                    or not isinstance(set_no, int) or not isinstance(derivation, int)):
                raise ValueError("not what the arena writes")
        except (ValueError, TypeError) as e:
            raise StoreError(f"{where}: {e}") from None
        out.append(SetDecision(set_no, int(season), derivation, tuple(names), why,
                               int(seed)))
    return out


def set_deal_seed(master_seed: int, derivation: int) -> int:
    """The deal seed of the set with derivation index ``derivation`` in a season of
    master seed ``master_seed`` (:func:`arena.runs.schedule.deal_seed`)."""
    return deal_seed(master_seed, derivation)


@dataclass(frozen=True, slots=True)
class FieldRow:
    """A version of a bot with the request that made it (the league service keeps its
    author, manifest version and bundle there); ``request`` empty for the file's bots."""

    name: str
    base: str
    version_no: int
    status: str
    house: bool
    added_at: float
    request: Mapping[str, Any]


def field_rows(store: Store) -> list[FieldRow]:
    """Every version of every bot, in the order they joined, with its request's body."""
    rows = _read(store, "SELECT b.name, b.base, b.version_no, b.status, b.house, b.added_at,"
                        " r.body FROM league_bots AS b LEFT JOIN league_requests AS r"
                        " ON r.id = b.request ORDER BY b.added_at, b.rowid")
    out: list[FieldRow] = []
    for name, base, version_no, status, house, added_at, body in rows:
        try:
            request = json.loads(body) if body else {}
        except ValueError:
            request = {}
        out.append(FieldRow(str(name), str(base), int(version_no), str(status), bool(house),
                            float(added_at), request if isinstance(request, dict) else {}))
    return out
