"""``pimc``: Perfect Information Monte Carlo search over the public search API.

For each decision it draws deals of the hidden cards consistent with its view
(:class:`arena.rules.search.Sampler`), rebuilds the game for each
(:func:`arena.rules.search.game_from_view`), and for every candidate action plays the
round out with the ``heuristic`` policy in every seat. A playout scores its own points
for the round (Wizard) or the game (Trumps) minus the mean of the other seats'. The same
deals serve every action (common random numbers). The playouts are spent in
:data:`STAGES` (successive halving): the first stage plays every candidate, each later
one only the better half of those left, so the close contenders get the most deals. It
plays the heuristic's move unless the action with the best mean beats it by
:data:`CONFIDENCE` standard errors. Bids and
the trump choice are searched the same way; bids only within two of the heuristic's
estimate.

**Time.** The number of playouts is fixed by the decision's time, through a cost model of
the playouts (:data:`MOVE_US` per simulated move), never by the clock: the same view and
time give the same move on every machine. It aims at :data:`TARGET` of the time (less
:data:`MARGIN_MS`), leaving the rest to a loaded machine; a time too short for
:data:`MIN_SAMPLES` deals gets the heuristic's move (the cheap setting). The clock is only
a brake, looked at after every playout: past :data:`BRAKE` of the time the search stops
with the deals played out for every live action so far (the heuristic's move if none), so
only a machine (or a load) far slower than the model changes the moves. The referee's
players give it the move's own time, ``deadline_ms - bank_ms``: the bank stays a
reserve.

**Determinism.** The deals come from a generator seeded by the bot's seed and the
position (the hash of the view), so a replay gives the same moves.

Its rules knowledge is the rules engine: legal actions, trick play and scoring all come
from :mod:`arena.rules`.
"""

from __future__ import annotations

import hashlib
import random
import time

from arena.bots.heuristic import HeuristicBot, trumps_estimate, wizard_estimate
from arena.rules import Decision, Game, View
from arena.rules.search import Sampler, game_from_view

MOVE_US = 30.0
"""The modelled cost of one simulated move (a view and a heuristic decision), in µs."""
SAMPLE_US = 300.0
"""The modelled cost of drawing one deal and rebuilding the games, in µs."""
TARGET = 0.5
"""The share of the deadline the search plans to use."""
BRAKE = 0.7
"""The share of the deadline after which the search stops, whatever it planned."""
CONFIDENCE = 1.0
"""The search overrides the heuristic's move only with an action whose mean beats it by
this many standard errors (paired over the same deals): noise does not move it."""
MIN_SAMPLES = 4
"""Fewer deals than this and the bot plays the heuristic's move (the cheap setting)."""
MAX_SAMPLES = 400
"""More deals than this add little; the search stops there however long the deadline."""
BID_WINDOW = 2
"""Bids searched: those within this many tricks of the heuristic's estimate."""
MARGIN_MS = 20
"""Taken off every deadline first: the answer's way back to the referee."""
STAGES = (1 / 3, 1 / 3, 1 / 3)
"""Successive halving: the playouts are spent in these shares, the first on every
candidate, each later one on the better half of those left (at least two, the heuristic's
move always among them), so the close contenders get the most deals."""
DEFAULT_MS = 1000
"""The deadline :meth:`PimcBot.act` assumes when it is given none."""


class PimcBot:
    """Determinized search: sample deals, play each action out, take the best mean."""

    def __init__(self, seed: int | str = 0, name: str = "pimc",
                 samples: int | None = None, ms: int | None = None) -> None:
        self.name = name
        self.seed = str(seed)
        self.ms = ms
        """A time of its own per decision (``pimc:ms=200``): it plans on the smaller of
        this and the move's time. None: the move's whole time."""
        self.samples = samples
        """A fixed number of deals per decision, whatever the deadline and the clock
        (for tests and experiments); None (default): planned from the deadline."""
        self.confidence = CONFIDENCE
        self.policy = HeuristicBot()
        self.last_samples = 0
        """The number of deals the last decision searched (0: the heuristic's move)."""
        self.last_planned = 0
        """The deals of every candidate the last decision planned (the clock's brake may
        stop it short of them)."""

    def act(self, view: View) -> int:
        return self.act_within(view, DEFAULT_MS)

    def act_within(self, view: View, deadline_ms: int) -> int:
        """The action for ``view``, searched within ``deadline_ms`` (or its own
        :attr:`ms`, if that is less)."""
        if self.ms is not None:
            deadline_ms = min(deadline_ms, self.ms + MARGIN_MS)
        started = time.perf_counter()
        self.last_samples = self.last_planned = 0
        candidates = self.candidates(view)
        if len(candidates) == 1:
            return candidates[0]
        if self.samples is not None:
            samples, brake = self.samples, float("inf")
        else:
            samples = planned_samples(view, len(candidates), deadline_ms)
            brake = started + BRAKE * (deadline_ms - MARGIN_MS) / 1000
        self.last_planned = samples
        if samples < MIN_SAMPLES:
            return self.policy.act(view)
        rng = random.Random(position_key(view, self.seed))
        sampler = Sampler(view)
        default = self.policy.act(view)
        if default not in candidates:
            candidates.append(default)
        live = list(range(len(candidates)))
        results: list[list[float]] = []  # results[deal][k], the live actions' columns kept
        budget = samples * len(candidates)  # playouts, whatever the stage
        for stage, share in enumerate(STAGES):
            if stage:
                live = survivors(results, live, candidates.index(default))
            deals = max(1, round(budget * share / len(live)))
            for _ in range(deals):
                deal = sampler.sample(rng)
                values = [0.0] * len(candidates)
                for k in live:
                    game = game_from_view(view, deal, check=False, round_only=True)
                    game.apply(candidates[k])
                    values[k] = self.playout(game, view.seat)
                    if time.perf_counter() > brake:
                        break
                else:
                    results.append(values)
                    self.last_samples += 1
                    continue
                break  # a deal not played out for every live action is left out
            else:
                continue
            break
        return candidates[choose(results, candidates.index(default), self.confidence,
                                 live)]

    def candidates(self, view: View) -> list[int]:
        """The actions worth searching: every legal one, but bids only near the estimate."""
        legal = list(view.legal)
        if view.decision is not Decision.BID:
            return legal
        estimate = wizard_estimate(view) if view.game == "wizard" else trumps_estimate(view)
        near = [b for b in legal if abs(b - estimate) <= BID_WINDOW + 0.5]
        return near or legal

    def playout(self, game: Game, seat: int) -> float:
        """Play the round out with the heuristic; ``seat``'s points minus the others' mean."""
        entry = game.log[-1]
        act = self.policy.act
        while entry.points is None:
            game.apply(act(game.view(game.to_move)))  # type: ignore[arg-type]
        points = entry.points
        others = (sum(points) - points[seat]) / (len(points) - 1)
        return points[seat] - others


def survivors(results: list[list[float]], live: list[int], default: int) -> list[int]:
    """The better half of the ``live`` actions by their mean over the deals so far (at
    least two, the ``default`` always among them), in their order."""
    if len(live) <= 2 or len(results) < 2:
        return live
    means = {k: sum(r[k] for r in results) for k in live}
    keep = sorted(live, key=lambda k: (-means[k], k))[:max(2, (len(live) + 1) // 2)]
    if default not in keep:
        keep[-1] = default
    return sorted(keep)


def choose(results: list[list[float]], default: int, confidence: float,
           live: list[int] | None = None) -> int:
    """The index of the action with the best mean over the deals (``results[deal][k]``),
    among the ``live`` ones (default: all: they were played on every deal), if it beats
    the ``default`` action by more than ``confidence`` standard errors of their paired
    differences; else ``default``."""
    if len(results) < 2:
        return default
    m = len(results)
    keys = range(len(results[0])) if live is None else live
    means = {k: sum(r[k] for r in results) / m for k in keys}
    best = max(keys, key=lambda k: (means[k], -k))
    diffs = [r[best] - r[default] for r in results]
    mean = sum(diffs) / m
    var = sum((d - mean) ** 2 for d in diffs) / (m - 1)
    return best if mean > confidence * (var / m) ** 0.5 else default


def planned_samples(view: View, actions: int, deadline_ms: int) -> int:
    """The decision's budget, in deals of every candidate (the playouts, divided by the
    candidates): what the cost model fits in :data:`TARGET` of the deadline, at most
    :data:`MAX_SAMPLES`. A function of the view and deadline only."""
    moves = remaining_moves(view)
    cost_us = SAMPLE_US + actions * moves * MOVE_US
    return min(MAX_SAMPLES, int(TARGET * (deadline_ms - MARGIN_MS) * 1000 / cost_us))


def remaining_moves(view: View) -> int:
    """Decisions left in the round (bids included), an upper bound for the cost model."""
    n = view.players
    cards = n * view.tricks_in_round - sum(len(t.cards) for t in view.tricks) \
        - len(view.trick.cards)
    bids = sum(1 for b in view.bids if b is None) if view.decision is Decision.BID else 0
    return max(1, cards + bids)


def position_key(view: View, seed: str) -> int:
    """A seed from the bot's seed and everything that makes the position."""
    text = "|".join(map(str, (
        seed, view.game, sorted(view.options.items()), view.seat, view.round, view.dealer,
        view.hand, view.trump_card, view.trump, view.bids, view.trick, view.tricks,
        view.scores, view.stock_size)))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
