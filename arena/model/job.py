"""A game as a job: everything needed to play one scheduled game, and what came of it.

A :class:`GameJob` is a plain, frozen description (standard library types only) that
crosses a process or machine boundary as JSON: the local runner plays it with pooled bot
processes, a Ray node's game host with pools of its own
(:class:`arena.play.worker.WorkerPools`).
A :class:`GameOutcome` carries the finished game back to the driver, the store's only
writer. This module imports nothing but the standard library and :mod:`arena.model`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.model.limits import Confinement, Limits
from arena.model.spec import BotSpec, Remote


class JobError(ValueError):
    """A job or outcome in JSON that is not one; the message names the field."""


@dataclass(frozen=True, slots=True)
class SeatJob:
    """One seat's bot: its name in the field, its spec and how its processes are confined."""

    name: str
    kind: str
    """``builtin``, ``cmd``, ``grpc``, ``grpcs`` or ``unix`` (a
    :class:`~arena.model.spec.BotSpec`)."""
    value: str
    sandbox: bool = True
    limits: tuple[tuple[str, int], ...] = ()
    """Overrides of :class:`~arena.model.limits.Limits`, by field name."""
    read_only: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    hide: tuple[str, ...] = ()
    """Folders this bot must not see (the output, other bots' folders)."""
    tls_ca: str | None = None
    """PEM text trusted for a ``grpcs`` bot (None: the system's roots)."""
    server_name: str = ""
    token: str = field(default="", repr=False)
    insecure: bool = False
    view: str = "runtime"
    """What its sandbox shows of the machine's files (:attr:`Confinement.view`)."""
    within: str | None = None
    """The folder nothing of the bot may leave (:attr:`Confinement.within`)."""
    cwd: str = ""
    """The folder its command runs in, relative to the job's (:attr:`GameJob.cwd`), or
    absolute; "" for the job's own."""

    def folder(self, job_cwd: str) -> Path | None:
        """Where its command runs, for a job run in ``job_cwd`` (None: the process's own
        working folder)."""
        base = Path(job_cwd) if job_cwd else Path.cwd()
        path = base / self.cwd if self.cwd else base
        return path if job_cwd or self.cwd else None

    def spec(self) -> BotSpec:
        """How to reach the seat's bot."""
        return BotSpec(self.kind, self.value, Remote(
            None if self.tls_ca is None else self.tls_ca.encode(), self.server_name,
            self.token, self.insecure))

    def confinement(self) -> Confinement:
        """How the seat's bot processes are confined."""
        return Confinement(self.sandbox, Limits().merged(dict(self.limits)),
                           tuple(Path(p) for p in self.read_only), self.env, self.view,
                           None if self.within is None else Path(self.within))

    def to_key(self) -> str:
        """The seat as one string: equal for seats whose bots may share processes."""
        return json.dumps(_plain(self), sort_keys=True)


@dataclass(frozen=True, slots=True)
class GameJob:
    """One scheduled game, ready to play anywhere."""

    game: str
    options: dict[str, Any]
    deal_seed: int
    game_id: str
    table_id: str
    wire_ids: tuple[str, str]
    seats: tuple[SeatJob, ...]
    move_ms: int = 1000
    bank_ms: int = 0
    max_faults: int = 3
    startup_ms: int = 10000
    isolation: str = "deal"
    log_dir: str = ""
    """Where bot logs go on the node that plays it ("" : a temporary folder)."""
    cwd: str = ""
    """The folder bot commands are relative to, where it exists on the node ("" : the
    node's own working folder, e.g. Ray's ``working_dir``)."""
    deals: int = 0
    """How many different deals the run has (0: not known): a node's pool ends a process
    that has seen them all, as a local pool does."""

    @property
    def bots(self) -> tuple[str, ...]:
        """Bot names by seat (as a scheduled game has them)."""
        return tuple(seat.name for seat in self.seats)

    def to_json(self) -> str:
        return json.dumps(_plain(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> GameJob:
        data = _object(text, "job")
        try:
            seats = tuple(SeatJob(
                name=_get(s, "name", str), kind=_get(s, "kind", str),
                value=_get(s, "value", str), sandbox=_get(s, "sandbox", bool),
                limits=tuple((str(k), int(v)) for k, v in _get(s, "limits", list)),
                read_only=tuple(_get(s, "read_only", list)),
                env=tuple((str(k), str(v)) for k, v in _get(s, "env", list)),
                hide=tuple(_get(s, "hide", list)), view=str(s.get("view", "runtime")),
                tls_ca=s.get("tls_ca"), server_name=_get(s, "server_name", str),
                token=_get(s, "token", str), insecure=_get(s, "insecure", bool),
                within=None if s.get("within") is None else str(s["within"]),
                cwd=str(s.get("cwd", "")))
                for s in _get(data, "seats", list))
            ids = _get(data, "wire_ids", list)
            return cls(
                game=_get(data, "game", str), options=_get(data, "options", dict),
                deal_seed=_get(data, "deal_seed", int), game_id=_get(data, "game_id", str),
                table_id=_get(data, "table_id", str), wire_ids=(str(ids[0]), str(ids[1])),
                seats=seats, move_ms=_get(data, "move_ms", int),
                bank_ms=_get(data, "bank_ms", int), max_faults=_get(data, "max_faults", int),
                startup_ms=_get(data, "startup_ms", int),
                isolation=_get(data, "isolation", str), log_dir=_get(data, "log_dir", str),
                cwd=_get(data, "cwd", str),
                deals=_get(data, "deals", int) if "deals" in data else 0)
        except (TypeError, ValueError, IndexError, AttributeError) as e:
            if isinstance(e, JobError):
                raise
            raise JobError(f"job: {e}") from None


@dataclass(frozen=True, slots=True)
class GameOutcome:
    """A played game: its record (each decision's times in its ``timing``, their one
    copy) and what became of its bots."""

    game_id: str
    record: dict[str, Any]
    bot_infos: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each external bot's hand-shake (name, version, author, protocol_version, games)."""
    restarts: dict[str, int] = field(default_factory=dict)
    """Bot processes restarted during this game, by bot name."""

    @property
    def faults(self) -> list[dict[str, Any]]:
        return list(self.record.get("faults", []))

    def to_json(self) -> str:
        return json.dumps(_plain(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> GameOutcome:
        data = _object(text, "outcome")
        try:
            return cls(
                game_id=_get(data, "game_id", str), record=_get(data, "record", dict),
                bot_infos={str(k): dict(v) for k, v in _get(data, "bot_infos", dict).items()},
                restarts={str(k): int(v) for k, v in _get(data, "restarts", dict).items()})
        except (TypeError, ValueError) as e:
            if isinstance(e, JobError):
                raise
            raise JobError(f"outcome: {e}") from None


def _plain(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _object(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as e:
        raise JobError(f"{what}: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise JobError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return data


def _get(data: dict[str, Any], key: str, kind: type) -> Any:
    if key not in data:
        raise JobError(f"missing field {key!r}")
    value = data[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise JobError(f"field {key!r}: expected {kind.__name__}, got {type(value).__name__}")
    return value
