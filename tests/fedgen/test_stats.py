"""fedgen.stats: the rounds a protocol evaluates, and which round a "final" figure is."""

from __future__ import annotations

import math

import pytest

from fedgen.events import MemorySink
from fedgen.runner import run
from fedgen.stats import (
    common_final_round,
    curve_statistic,
    reported_curve,
    summarize_curve,
)
from tests.support.specs import tiny_spec

# Round 0 (initial) .. round 6; the post-final model (round 6) is the best one.
CURVE = [0.1, 0.5, 0.4, 0.7, 0.6, 0.65, 0.99]


def test_before_training_leaves_out_the_last_aggregation() -> None:
    """before_training: rounds 0..R-1; after_aggregation: rounds 0..R."""
    assert reported_curve(CURVE, "before_training", rounds=6) == CURVE[:6]
    assert reported_curve(CURVE, "before_training") == CURVE[:6]
    assert reported_curve(CURVE, "after_aggregation", rounds=6) == CURVE
    # A stopped run (3 of 6 rounds done) never reached round R: every round is reported.
    assert reported_curve(CURVE[:4], "before_training", rounds=6) == CURVE[:4]


def test_summary_says_which_round_the_final_figure_is() -> None:
    official = summarize_curve(CURVE, "before_training", rounds=6)
    assert (official.final, official.final_round, official.best) == (0.65, 5, 0.7)
    assert official.top5_mean == pytest.approx((0.7 + 0.65 + 0.6 + 0.5 + 0.4) / 5)
    paper = summarize_curve(CURVE, "after_aggregation", rounds=6)
    assert (paper.final, paper.final_round, paper.best) == (0.99, 6, 0.99)
    empty = summarize_curve([], "before_training", rounds=6)
    assert empty.final_round == -1
    assert math.isnan(empty.final)
    assert curve_statistic(CURVE, "final", "before_training", 6) == 0.65
    assert curve_statistic(CURVE, "best", "before_training", 6) == 0.7


def test_common_final_round() -> None:
    a = summarize_curve(CURVE, "before_training", 6)
    b = summarize_curve(CURVE, "after_aggregation", 6)
    assert common_final_round([a, a]) == 5
    assert common_final_round([a, b]) is None
    assert common_final_round([]) is None


@pytest.mark.parametrize(
    ("timing", "final_round"), [("before_training", 3), ("after_aggregation", 4)]
)
@pytest.mark.slow  # real training
def test_run_summary_uses_only_the_evaluated_rounds(timing: str, final_round: int) -> None:
    """The runner's summary: final, best and top-5 over the rounds the protocol evaluates."""
    sink = MemorySink()
    summary = run(tiny_spec(fidelity={"eval_timing": timing}), sink)
    accs = [e.metrics["test_acc"] for e in sink.events]
    shown = accs[: final_round + 1]
    assert len(accs) == 5
    assert summary.final_round == final_round
    assert summary.final_acc == accs[final_round]
    assert summary.best_acc == max(shown)
    assert summary.top5_mean == pytest.approx(sum(shown) / len(shown))
    assert summary.to_dict()["final_round"] == final_round


def test_counts_round_is_the_one_rule_of_reported_curve() -> None:
    """Round R counts under after_aggregation only; every earlier round under both."""
    from fedgen.stats import counts_round

    assert [counts_round(r, "before_training", 6) for r in (0, 5, 6)] == [True, True, False]
    assert counts_round(6, "after_aggregation", 6)
    kept = [v for r, v in enumerate(CURVE) if counts_round(r, "before_training", 6)]
    assert kept == reported_curve(CURVE, "before_training", rounds=6)
