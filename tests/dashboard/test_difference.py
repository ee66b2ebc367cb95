"""The difference line the Compare page shows (pure formatting of GET /difference)."""

from __future__ import annotations

from dashboard.difference import format_difference, format_p, short_name


def test_format_difference_reads_as_the_issue_asks() -> None:
    """Fractions become points with a sign, the CI in brackets, p and both n."""
    d = {"diff": 0.039, "ci": [0.021, 0.056], "p_value": 0.00312, "n_a": 3, "n_b": 3,
         "label_a": "algorithm=fedgen", "label_b": "algorithm=fedavg"}  # fmt: skip
    assert format_difference(d) == "FedGen − FedAvg: +3.9 points [2.1, 5.6], p = 0.003, n = 3 vs 3"


def test_format_difference_negative_small_p_and_names() -> None:
    """A negative difference keeps its sign; tiny p reads "< 0.001"; names can be given."""
    d = {"diff": -0.1, "ci": [-0.15, -0.05], "p_value": 1e-6, "n_a": 4, "n_b": 2}
    assert format_difference(d, "α=0.1", "α=1") == (
        "α=0.1 − α=1: -10.0 points [-15.0, -5.0], p < 0.001, n = 4 vs 2"
    )
    assert format_p(None) == "p n/a"
    assert short_name("algorithm=fedgen, alpha=0.1") == "algorithm=fedgen, alpha=0.1"
