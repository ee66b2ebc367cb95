"""Summary statistics of an accuracy curve: final, best, and the official top-5.

The official plotting code reports, per seed, the five best per-round accuracies,
then mean and std pooled over seeds (reference §1.1). These pure functions are
shared by the runner's summary, the API's sweep tables and the benchmarks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def top_k(values: Sequence[float], k: int = 5) -> list[float]:
    """The k largest values, largest first (all of them if fewer than k)."""
    return sorted(values, reverse=True)[:k]


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population std (numpy's default ddof=0, as the official plots use)."""
    if not values:
        return math.nan, math.nan
    m = sum(values) / len(values)
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


def reported_curve(accs: Sequence[float], eval_timing: str) -> list[float]:
    """The accuracies a protocol reports: with 'before_training' the official code never
    evaluates the model after the last aggregation, so the last round is left out."""
    values = list(accs)
    if eval_timing == "before_training" and len(values) > 1:
        values = values[:-1]
    return values


def curve_statistic(
    accs: Sequence[float], statistic: str, eval_timing: str = "after_aggregation"
) -> float:
    """The reported number of one run's per-round accuracies (index = round, 0 = initial model).

    With eval_timing='before_training' the official code never evaluates the model
    after the last aggregation, so the last round is left out, as there.
    """
    values = reported_curve(accs, eval_timing)
    if not values:
        return math.nan
    if statistic == "final":
        return values[-1]
    if statistic == "best":
        return max(values)
    if statistic == "top5":
        return mean_std(top_k(values, 5))[0]
    raise ValueError(f"unknown statistic {statistic!r}; expected final, best or top5")


def pooled_top5(curves: Sequence[Sequence[float]]) -> tuple[float, float]:
    """Mean and std of the top-5 rounds of each curve, pooled (15 values for 3 seeds)."""
    pooled: list[float] = []
    for c in curves:
        pooled.extend(top_k(c, 5))
    return mean_std(pooled)
