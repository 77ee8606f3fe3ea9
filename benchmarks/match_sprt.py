"""The figures of docs/match.md: the SPRT of ``arena match`` simulated, no games played.

``python -m benchmarks.match_sprt [--runs N] [--seed S]`` prints, for the default design
(H0 elo 0, H1 elo 20, alpha = beta = 0.05) and two pentanomial shapes, the share of tests
ending in H1 and the mean and 90th percentile of pairs of pairs they took at several true
Elo differences; and the size a fixed-size test with the same error rates at the same
hypotheses needs (one-sided z-test on the mean score: n = ((z_(1-alpha) + z_(1-beta))
sigma / (s1 - s0))^2, sigma the standard deviation of a pair of pairs' mean score).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from arena.stats.sprt import VALUES, Array, Sprt, model, score_of, simulate

SHAPES = {
    "split": [0.05, 0.2, 0.5, 0.2, 0.05],
    "independent, 20% draws": [0.16, 0.16, 0.36, 0.16, 0.16],
}
"""Pentanomial shapes at an even score: pairs of pairs mostly split or even, and two
independent game pairs that draw one time in five."""
ELOS = (-20, 0, 10, 20, 40, 80)


def fixed_size(sprt: Sprt, pdf: Sequence[float] | Array) -> float:
    """Pairs of pairs a fixed-size test with the same alpha and beta needs, at the
    pentanomial ``pdf``'s spread."""
    p = np.asarray(pdf, dtype=np.float64)
    mu = float((p * VALUES).sum())
    sigma = math.sqrt(float((p * (VALUES - mu) ** 2).sum()))
    z = NormalDist().inv_cdf(1 - sprt.alpha) + NormalDist().inv_cdf(1 - sprt.beta)
    return (z * sigma / (score_of(sprt.elo1) - score_of(sprt.elo0))) ** 2


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.match_sprt")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args(argv)
    sprt = Sprt()
    rng = np.random.default_rng(args.seed)
    for name, base in SHAPES.items():
        fixed = fixed_size(sprt, model(0, base))
        print(f"shape {name}: {base}; a fixed-size test needs {fixed:.0f} pairs of pairs "
              f"({4 * fixed:.0f} games)")
        print("| true elo | H1 | mean pairs of pairs | 90% within | mean games |")
        print("|---:|---:|---:|---:|---:|")
        for elo in ELOS:
            result = simulate(sprt, model(elo, base), args.runs, 20000, rng)
            p90 = float(np.percentile(result.lengths, 90))
            print(f"| {elo:+d} | {result.h1 / args.runs:.1%} | {result.mean_length:.0f} | "
                  f"{p90:.0f} | {4 * result.mean_length:.0f} |"
                  + (f" ({result.undecided} undecided)" if result.undecided else ""))
        print()


if __name__ == "__main__":
    main()
