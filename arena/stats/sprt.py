"""The statistics of ``arena match``: a generalized SPRT on pentanomial counts. No I/O.

The maths are fishtest's (``server/fishtest/stats/LLRcalc.py`` and ``stat_util.py``),
with the Elo model ``logistic``:

- A *game pair* (the candidate's total against the baseline's in the same seat of the
  same deal) scores 1, 1/2 or 0 for the candidate. The two game pairs of one deal form
  a *pair of pairs*, whose mean score is 0, 1/4, 1/2, 3/4 or 1: the pentanomial counts
  ``[LL, LD+DL, LW+DD+WL, DW+WD, WW]`` count the pairs of pairs by that score.
- Elo is logistic Elo of the score per game pair: ``score = 1 / (1 + 10^(-elo/400))``.
- H0: elo = elo0, H1: elo = elo1. The log-likelihood ratio is the *generalized* one: the
  likelihood of the counts under the most likely pentanomial distribution whose mean is
  ``score(elo1)``, over that under the most likely one whose mean is ``score(elo0)`` (the
  maximum under a constraint on the mean, found by solving the secular equation of
  fishtest's ``MLE_expected``). Empty classes get 1e-3 of a count first, as in
  fishtest's ``regularize``.
- The test stops at the first LLR outside ``(log(beta/(1-alpha)), log((1-beta)/alpha))``:
  below, H0 (not better by elo1); above, H1 (better).
- The Elo estimate and its interval are fishtest's ``get_elo``: the mean score per
  game pair with its normal interval (the variance from the pairs of pairs, so the
  correlation inside one is counted), mapped to Elo. After a sequential stop they are the
  fixed-sample figures, not corrected for the stopping (fishtest's median-unbiased
  estimate is not done here).

Every function takes counts as a sequence of five numbers, or a numpy array of shape
``(..., 5)`` to compute many at once (the simulation runs thousands of tests side by side).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]


VALUES: Array = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
"""A pair of pairs' mean score per game pair, by the index of its class in the counts."""


EPSILON = 1e-3
"""What an empty class of the counts is taken to hold (fishtest's ``regularize``)."""


Z95 = 1.959963984540054
"""The standard normal quantile of 0.975."""


_ITERATIONS = 64
"""Bisection steps for the secular equation (the root's interval is at most a few units
wide: 2^-64 of it is far below a float's resolution there)."""


def score_of(elo: float) -> float:
    """The expected score per game pair at logistic Elo difference ``elo``."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def elo_of(score: float) -> float:
    """The logistic Elo difference of a score (clamped to 0.001..0.999, ±1200 Elo)."""
    score = min(max(score, EPSILON), 1.0 - EPSILON)
    return -400.0 * math.log10(1.0 / score - 1.0)


def bounds(alpha: float, beta: float) -> tuple[float, float]:
    """The LLR bounds: H0 at or below the first, H1 at or above the second."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def _counts(counts: Sequence[float] | Array) -> Array:
    array = np.asarray(counts, dtype=np.float64)
    if array.shape[-1:] != (5,) or (array < 0).any():
        raise ValueError(f"pentanomial counts are 5 numbers >= 0, not {counts!r}")
    return array


def regularized(counts: Sequence[float] | Array) -> Array:
    """The counts with every empty class given :data:`EPSILON`."""
    array = _counts(counts)
    return np.where(array == 0, EPSILON, array)


def _secular(a: Array, p: Array) -> Array:
    """The root x of sum_i p_i a_i / (1 + x a_i) = 0 (fishtest's ``secular``), for each
    row; every row's a must straddle 0. The sum falls as x rises, between the poles
    -1/max(a) and -1/min(a)."""
    low = -1.0 / a.max(axis=-1)
    high = -1.0 / a.min(axis=-1)
    span = high - low
    low, high = low + 1e-12 * span, high - 1e-12 * span
    for _ in range(_ITERATIONS):
        mid = (low + high) / 2
        positive = (p * a / (1.0 + mid[..., None] * a)).sum(axis=-1) > 0
        low = np.where(positive, mid, low)
        high = np.where(positive, high, mid)
    result: Array = (low + high) / 2
    return result


def mle(pdf: Array, score: float) -> Array:
    """The distribution over :data:`VALUES` with mean ``score`` that makes the observed
    frequencies ``pdf`` most likely (fishtest's ``MLE_expected``)."""
    a = VALUES - score
    x = _secular(np.broadcast_to(a, pdf.shape), pdf)
    out: Array = pdf / (1.0 + x[..., None] * a)
    return out


def llr(counts: Sequence[float] | Array, elo0: float, elo1: float) -> Any:
    """The generalized log-likelihood ratio of H1 (elo1) against H0 (elo0) for the
    pentanomial ``counts`` (fishtest's ``LLR_logistic``): a float, or an array for an
    array of counts."""
    reg = regularized(counts)
    n = reg.sum(axis=-1)
    pdf = reg / n[..., None]
    s0, s1 = score_of(elo0), score_of(elo1)
    # log p1_i - log p0_i = log(1 + x0 (v_i - s0)) - log(1 + x1 (v_i - s1))
    x0 = _secular(np.broadcast_to(VALUES - s0, pdf.shape), pdf)
    x1 = _secular(np.broadcast_to(VALUES - s1, pdf.shape), pdf)
    jumps = (np.log1p(x0[..., None] * (VALUES - s0))
             - np.log1p(x1[..., None] * (VALUES - s1)))
    result = n * (pdf * jumps).sum(axis=-1)
    return float(result) if result.ndim == 0 else result


@dataclass(frozen=True, slots=True)
class Estimate:
    """The Elo difference the counts show (fishtest's ``get_elo``)."""

    pairs_of_pairs: int
    score: float
    """The mean score per game pair."""
    elo: float
    low: float
    high: float
    """The 95% interval of ``elo``."""
    los: float
    """The likelihood of superiority: P(the candidate is better), normal approximation."""


def estimate(counts: Sequence[float]) -> Estimate:
    """The Elo estimate, its 95% interval and the LOS of pentanomial ``counts``."""
    raw = _counts(counts)
    reg = regularized(raw)
    n = float(reg.sum())
    pdf = reg / n
    mu = float((pdf * VALUES).sum())
    # as stat_util.stats: 2n game pairs, each with twice the variance of a pair of
    # pairs' mean (so se^2 = var(mean of a pair of pairs) / n)
    var = float((pdf * (VALUES - mu) ** 2).sum()) * 2.0
    se = math.sqrt(var / (2.0 * n))
    los = 0.5 * (1.0 + math.erf((mu - 0.5) / se / math.sqrt(2.0))) if se > 0 else 0.5
    return Estimate(int(raw.sum()), mu, elo_of(mu), elo_of(mu - Z95 * se),
                    elo_of(mu + Z95 * se), los)


@dataclass(frozen=True, slots=True)
class Sprt:
    """The test's design: H0 elo = elo0 against H1 elo = elo1, with error rates alpha
    (a false H1) and beta (a false H0)."""

    elo0: float = 0.0
    elo1: float = 20.0
    alpha: float = 0.05
    beta: float = 0.05

    def problem(self) -> str | None:
        """What is wrong with the design (one line naming the flag), or None."""
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if not 0.0 < value < 0.5:
                return f"--{name} must be above 0 and below 0.5, not {value:g}"
        for name in ("elo0", "elo1"):
            value = getattr(self, name)
            if not (math.isfinite(value) and -1000 < value < 1000):
                return f"--{name} must be a logistic Elo difference between -1000 and " \
                       f"1000, not {value:g}"
        if self.elo1 <= self.elo0:
            return f"--elo1 ({self.elo1:g}) must be above --elo0 ({self.elo0:g})"
        return None

    @property
    def lower(self) -> float:
        return bounds(self.alpha, self.beta)[0]

    @property
    def upper(self) -> float:
        return bounds(self.alpha, self.beta)[1]

    def llr(self, counts: Sequence[float]) -> float:
        value: float = llr(counts, self.elo0, self.elo1)
        return value

    def verdict(self, value: float) -> str | None:
        """``"H1"`` at or above the upper bound, ``"H0"`` at or below the lower one,
        else None (go on)."""
        if value >= self.upper:
            return "H1"
        if value <= self.lower:
            return "H0"
        return None


def model(elo: float, base: Sequence[float]) -> Array:
    """A pentanomial distribution with mean score ``score_of(elo)``: ``base`` (five
    probabilities, the first and last not zero) exponentially tilted, p_i ∝ base_i
    e^(t v_i). A known model to simulate the test with."""
    b = np.asarray(base, dtype=np.float64) / float(np.sum(base))
    target = score_of(elo)
    low, high = -200.0, 200.0
    for _ in range(200):
        t = (low + high) / 2
        w = b * np.exp(t * (VALUES - 0.5))
        if float((w * VALUES).sum() / w.sum()) < target:
            low = t
        else:
            high = t
    w = b * np.exp((low + high) / 2 * (VALUES - 0.5))
    out: Array = w / w.sum()
    return out


@dataclass(frozen=True, slots=True)
class Simulation:
    """What ``runs`` tests drawn from one model came to."""

    h1: int
    h0: int
    undecided: int
    mean_length: float
    """The mean number of pairs of pairs a test took (undecided ones count ``limit``)."""
    lengths: npt.NDArray[np.int64]
    """Each test's pairs of pairs."""


def simulate(sprt: Sprt, pdf: Sequence[float] | Array, runs: int, limit: int,
             rng: np.random.Generator) -> Simulation:
    """Run ``runs`` tests side by side, each drawing pairs of pairs from the pentanomial
    distribution ``pdf`` until its LLR leaves the bounds or ``limit`` is reached."""
    p = np.asarray(pdf, dtype=np.float64)
    counts = np.zeros((runs, 5))
    lengths = np.zeros(runs, dtype=np.int64)
    verdict = np.zeros(runs, dtype=np.int64)  # 1: H1, -1: H0, 0: going on
    active = np.arange(runs)
    for step in range(1, limit + 1):
        draws = rng.choice(5, size=len(active), p=p)
        counts[active, draws] += 1
        value = llr(counts[active], sprt.elo0, sprt.elo1)
        up, down = value >= sprt.upper, value <= sprt.lower
        verdict[active[up]] = 1
        verdict[active[down]] = -1
        lengths[active[up | down]] = step
        active = active[~(up | down)]
        if not len(active):
            break
    lengths[active] = limit
    return Simulation(int((verdict == 1).sum()), int((verdict == -1).sum()),
                      int((verdict == 0).sum()), float(lengths.mean()), lengths)
