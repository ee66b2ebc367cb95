"""fedgen.cost (a run's MB and seconds, cumulative axes) and fedgen.stats.validation_statistic
(what tuning by validation ranks) against hand computations on fixed curves."""

from __future__ import annotations

import math

import pytest

from fedgen.cost import cumulative, run_cost
from fedgen.stats import validation_statistic

NAN = math.nan
# Round 0 stores no cost (the initial model); rounds 1..3 do.
CURVES = {
    "bytes_up": [NAN, 1_000_000.0, 2_000_000.0, 500_000.0],
    "bytes_down": [NAN, 250_000.0, 250_000.0, 250_000.0],
    "time_train_ms": [NAN, 1500.0, 1000.0, 500.0],
    "time_server_ms": [NAN, 100.0, NAN, 300.0],
}


def test_run_cost_sums_every_stored_round() -> None:
    cost = run_cost(CURVES)
    assert cost["mb_up"] == pytest.approx(3.5)
    assert cost["mb_down"] == pytest.approx(0.75)
    assert cost["mb_total"] == pytest.approx(4.25)
    assert cost["client_train_s"] == pytest.approx(3.0)
    assert cost["server_s"] == pytest.approx(0.4)  # a round without the figure adds nothing


def test_run_cost_is_nan_without_the_metrics() -> None:
    cost = run_cost({"bytes_up": [NAN, NAN]})
    assert all(math.isnan(v) for v in cost.values())


def test_cumulative_axes_count_up_to_and_including_each_round() -> None:
    assert cumulative("round", CURVES, 4) == [0.0, 1.0, 2.0, 3.0]
    assert cumulative("bytes", CURVES, 4) == pytest.approx([0.0, 1.25, 3.5, 4.25])
    assert cumulative("compute", CURVES, 4) == pytest.approx([0.0, 1.6, 2.6, 3.4])


VAL = [0.1, 0.5, 0.7, 0.6, 0.4, 0.9]  # round 5 (R) is never counted under before_training


@pytest.mark.parametrize(
    ("statistic", "expected"),
    [
        ("final", 0.4),  # round R-1
        ("best", 0.7),
        ("val_best", 0.7),  # the best validation accuracy: what val_best picks its round by
        ("top5", (0.5 + 0.7 + 0.6 + 0.4 + 0.1) / 5),
    ],
)
def test_validation_statistic_on_the_counted_rounds(statistic: str, expected: float) -> None:
    got = validation_statistic(VAL, statistic, "before_training", 5)  # type: ignore[arg-type]
    assert got == pytest.approx(expected)


def test_validation_statistic_leaves_out_rounds_without_a_figure() -> None:
    vals = [NAN, 0.3, NAN, 0.2]
    assert validation_statistic(vals, "best", "after_aggregation", 3) == pytest.approx(0.3)
    assert validation_statistic(vals, "top5", "after_aggregation", 3) == pytest.approx(0.25)
    assert math.isnan(validation_statistic([], "val_best", "after_aggregation", 3))
    assert math.isnan(validation_statistic(None, "final"))
