"""Summary statistics of an accuracy curve: final, best, the official top-5, val_best.

`best` and `top5` pick rounds by test accuracy (test-selected); `val_best` is the test
accuracy at the round of best validation accuracy (`partition.val_fraction`), the one a
reviewer accepts. Over seeds, `seed_std` is the sample std (ddof 1) of each seed's own
statistic, beside the pooled std the official code reports (`pooled_top5`).

The official plotting code reports, per seed, the five best per-round accuracies,
then mean and std pooled over seeds (reference §1.1). These pure functions are
shared by the runner's summary, the API's sweep tables and the benchmarks.

Which rounds count is decided here, once (`reported_curve`): a curve is indexed by round
(0 = the initial model, r = after r aggregations). Under ``eval_timing: before_training``
the official code evaluates at the start of rounds 0..R-1 only and never sees the model
after the last (R-th) aggregation, so round R is left out of every statistic, the "final"
figure is round R-1's, and `CurveSummary.final_round` says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

# One run's reported accuracy figure (docs/metrics.md), every table's and the API's choice.
CurveStatistic = Literal["final", "best", "top5", "val_best"]
CURVE_STATISTICS: tuple[CurveStatistic, ...] = get_args(CurveStatistic)
# The sweep plot's figures: a curve statistic, or the first round reaching a target accuracy.
PlotStatistic = Literal[CurveStatistic, "time_to_target"]
# Each statistic as the tables, the plot and their pickers name it, in the pickers' order.
STATISTIC_LABELS: dict[str, str] = {
    "top5": "top-5 mean (test-selected)",
    "final": "final",
    "best": "best (test-selected)",
    "val_best": "test at best validation",
    "time_to_target": "time to target",
}


def top_k(values: Sequence[float], k: int = 5) -> list[float]:
    """The k largest values, largest first (all of them if fewer than k)."""
    return sorted(values, reverse=True)[:k]


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population std (numpy's default ddof=0, as the official plots use)."""
    if not values:
        return math.nan, math.nan
    m = sum(values) / len(values)
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


def reported_curve(
    accs: Sequence[float], eval_timing: str, rounds: int | None = None
) -> list[float]:
    """The accuracies a protocol reports, index = round.

    With 'before_training' the official code never evaluates the model after the last
    aggregation: round `rounds` (the run's R) is left out. Without `rounds` the curve is
    taken as complete (rounds 0..R) and its last value is left out; a curve of one value
    (round 0 only) is kept.
    """
    values = list(accs)
    if rounds is not None:
        return [v for r, v in enumerate(values) if counts_round(r, eval_timing, rounds)]
    if eval_timing == "before_training" and len(values) > 1:
        values = values[:-1]
    return values


def counts_round(round_: int, eval_timing: str, rounds: int) -> bool:
    """Whether round `round_` of a run of `rounds` rounds (its R) counts in the statistics.

    The one rule (docs/metrics.md): under 'before_training' round R is stored but never
    counted, as the official code never evaluates it. Every figure of a run, the live ones
    the run's row keeps while it runs (`last_acc`, `best_acc`) included, follows it.
    """
    return not (eval_timing == "before_training" and round_ >= rounds)


@dataclass(frozen=True)
class CurveSummary:
    """What one run's curve reports under its protocol (NaN and final_round -1 if empty).

    Attributes
    ----------
    final, final_round
        The last reported accuracy and its round (R-1 under 'before_training', else R).
    best, best_round
        The best reported accuracy and its (first) round.
    top5_mean, top5_std
        Mean and population std of the five best reported rounds.
    """

    final: float
    final_round: int
    best: float
    top5_mean: float
    top5_std: float
    best_round: int = -1


def summarize_curve(
    accs: Sequence[float], eval_timing: str, rounds: int | None = None
) -> CurveSummary:
    """Final (with its round), best and top-5 over the rounds the protocol evaluates."""
    values = reported_curve(accs, eval_timing, rounds)
    if not values:
        return CurveSummary(math.nan, -1, math.nan, math.nan, math.nan)
    m, s = mean_std(top_k(values, 5))
    best = max(values)
    return CurveSummary(values[-1], len(values) - 1, best, m, s, best_round=values.index(best))


def format_acc(
    acc: float | None, at_round: int | None = None, last_round: int | None = None
) -> str:
    """An accuracy (a fraction) as people read it: '70.42%', with '@29' when its round is not
    the run's last round (`last_round`; always named when `last_round` is None).

    This is how "final" and "best" are written everywhere (CLI, demo, API texts, dashboard):
    final = the accuracy of the last model the protocol evaluates (`summarize_curve`), so a
    'before_training' run of R rounds shows its final as '… @R-1'.
    """
    if acc is None or math.isnan(acc):
        return "–"
    text = f"{acc * 100:.2f}%"
    if at_round is not None and at_round >= 0 and at_round != last_round:
        text += f" @{at_round}"
    return text


def common_final_round(curves: Sequence[CurveSummary]) -> int | None:
    """The final round shared by every curve, or None if they differ or there are none."""
    found = {c.final_round for c in curves}
    return found.pop() if len(found) == 1 else None


def val_best(
    accs: Sequence[float],
    val_accs: Sequence[float] | None,
    eval_timing: str = "after_aggregation",
    rounds: int | None = None,
) -> tuple[float, int]:
    """Test accuracy at the (first) round of best validation accuracy, and that round.

    Both curves are index = round and cut to the rounds the protocol counts
    (`reported_curve`); a round whose validation figure is missing or NaN is never picked.
    (NaN, -1) without validation figures (`partition.val_fraction` 0).
    """
    values = reported_curve(accs, eval_timing, rounds)
    vals = reported_curve(val_accs or [], eval_timing, rounds)
    best_round, best_val = -1, -math.inf
    for r, v in enumerate(vals[: len(values)]):
        if v is not None and not math.isnan(v) and v > best_val:
            best_round, best_val = r, v
    if best_round < 0:
        return math.nan, -1
    return values[best_round], best_round


def validation_statistic(
    val_accs: Sequence[float] | None,
    statistic: CurveStatistic,
    eval_timing: str = "after_aggregation",
    rounds: int | None = None,
) -> float:
    """The validation counterpart of a statistic: what tuning by validation (`tune=`) ranks.

    The statistic taken on the run's validation curve instead of its test curve, over the
    same rounds: final: the validation accuracy of the final round; best and val_best: the
    best validation accuracy (the figure val_best picks its round by); top5: the mean of the
    five best validation rounds. Rounds without a validation figure are left out; NaN when
    none has one (`partition.val_fraction` 0).
    """
    vals = reported_curve(val_accs or [], eval_timing, rounds)
    if statistic == "final":
        return vals[-1] if vals and not math.isnan(vals[-1]) else math.nan
    present = [v for v in vals if not math.isnan(v)]
    if not present:
        return math.nan
    if statistic in ("best", "val_best"):
        return max(present)
    if statistic == "top5":
        return mean_std(top_k(present, 5))[0]
    raise ValueError(f"unknown statistic {statistic!r}; expected one of {CURVE_STATISTICS}")


def curve_statistic(
    accs: Sequence[float],
    statistic: CurveStatistic,
    eval_timing: str = "after_aggregation",
    rounds: int | None = None,
    val_accs: Sequence[float] | None = None,
) -> float:
    """The reported number of one run's per-round accuracies (index = round, 0 = initial model).

    With eval_timing='before_training' the official code never evaluates the model
    after the last aggregation, so that round is left out, as there (`reported_curve`).
    `val_accs`: the run's per-round validation accuracies, which `val_best` needs (NaN
    without them).
    """
    if statistic == "val_best":
        return val_best(accs, val_accs, eval_timing, rounds)[0]
    values = reported_curve(accs, eval_timing, rounds)
    if not values:
        return math.nan
    if statistic == "final":
        return values[-1]
    if statistic == "best":
        return max(values)
    if statistic == "top5":
        return mean_std(top_k(values, 5))[0]
    raise ValueError(f"unknown statistic {statistic!r}; expected one of {CURVE_STATISTICS}")


def pooled_top5(curves: Sequence[Sequence[float]]) -> tuple[float, float]:
    """Mean and std of the top-5 rounds of each curve, pooled (15 values for 3 seeds)."""
    pooled: list[float] = []
    for c in curves:
        pooled.extend(top_k(c, 5))
    return mean_std(pooled)


def seed_std(values: Sequence[float]) -> float:
    """The sample std (ddof 1) of per-seed statistics, NaNs left out; NaN under 2 values.

    What `± seed std` means in every table: the spread of each seed's own figure, not the
    pooled std of the official code (`pooled_top5`: 5 rounds x seeds pooled).
    """
    xs = [v for v in values if not math.isnan(v)]
    if len(xs) < 2:
        return math.nan
    m = sum(xs) / len(xs)
    return math.sqrt(sum((v - m) ** 2 for v in xs) / (len(xs) - 1))


def format_mean_std(mean: float | None, std: float | None) -> str:
    """Mean ± std of accuracies (fractions) in %, 2 decimals: '70.61 ± 0.35%' ('–' if no mean)."""
    if mean is None or math.isnan(mean):
        return "–"
    s = 0.0 if std is None or math.isnan(std) else std
    return f"{mean * 100:.2f} ± {s * 100:.2f}%"


def summary_text(
    final: float,
    final_round: int,
    best: float,
    best_round: int,
    top5_mean: float,
    top5_std: float,
    last_round: int,
) -> str:
    """One run's figures as one line: 'final 70.42% @29 · best 71.02% @27 · top-5 70.61 ± 0.35%'.

    `last_round` is the run's R; a round is named when it is not R (docs/metrics.md).
    """
    return (
        f"final {format_acc(final, final_round, last_round)} · "
        f"best {format_acc(best, best_round, last_round)} · "
        f"top-5 {format_mean_std(top5_mean, top5_std)}"
    )
