"""Sweep tables: the "Tune by validation over" picker and the cost table; Compare: accuracy
against cumulative bytes and compute (issue 39).

The pure frames from a summary the API would send (tests/support/factories.py), and the pages
on the seeded lab: its sweep has no validation data, so tuning it says why instead of failing.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dashboard.paper_tables_page import sweep_plot
from dashboard.sweep_tables import cost_frame, swept_fields, tune_frame
from tests.support.apptest import open_page, texts
from tests.support.factories import summary_group, sweep_summary
from vocab.schemas.results import PlotData
from vocab.schemas.sweeps import TuneChoice


def _tuned(label: str, chosen: dict[str, Any] | None, budget: int) -> TuneChoice:
    return TuneChoice(
        statistic="val_best",
        fields=["algorithm.mu", "lr"],
        chosen=chosen,
        val_mean=0.8 if chosen else None,
        test_mean=0.7 if chosen else None,
        test_seed_std=0.01 if chosen else None,
        budget=budget,
        candidates=[],
    )


def test_tune_frame_names_the_choice_budget_and_test_figure_in_percent() -> None:
    summary = sweep_summary(
        summary_group(
            label="algorithm=fedavg",
            fields={"algorithm.name": "fedavg"},
            tune=_tuned("fedavg", {"algorithm.mu": None, "lr": 0.05}, 2),
        ),
        summary_group(
            label="algorithm=fedprox",
            fields={"algorithm.name": "fedprox"},
            tune=_tuned("fedprox", None, 4),
        ),
    )
    frame = tune_frame(summary)
    assert list(frame["group"]) == ["algorithm=fedavg", "algorithm=fedprox"]
    assert list(frame["lr"]) == [0.05, "–"]  # nothing chosen without validation data
    assert list(frame["budget"]) == [2, 4]
    assert frame["validation"].iloc[0] == pytest.approx(80.0)
    assert (frame["test"].iloc[0], frame["test_seed_std"].iloc[0]) == pytest.approx((70.0, 1.0))
    assert pd.isna(frame["test"].iloc[1])
    assert swept_fields(summary) == ["algorithm.name"]


def test_cost_frame_writes_mean_and_seed_std_per_run() -> None:
    summary = sweep_summary(
        summary_group(
            label="a",
            n=3,
            mb_total_mean=12.5,
            mb_total_seed_std=0.25,
            server_s_mean=3.0,
            server_s_seed_std=None,
            client_train_s_mean=0.2,
            client_train_s_seed_std=3.4e-17,  # equal seeds, summed in another order
        ),
    )
    (row,) = cost_frame(summary).to_dict("records")
    assert (row["group"], row["n"]) == ("a", 3)
    assert row["MB total"] == "12.5 ± 0.25"
    assert row["server (s)"] == "3"
    assert row["MB up"] == "–"
    assert row["clients' training (s)"] == "0.2 ± 0"


def test_tuning_a_sweep_without_validation_data_says_why(
    app_path: str, lab_env: dict[str, Any]
) -> None:
    """The seeded sweep (fedavg, fedgen) has no validation data: the picker offers its swept
    field, choosing it shows the lab's reason, and the cost table is there."""
    # Prepare
    at = open_page(app_path, "app_pages/paper_tables.py")
    at.selectbox(key="tables_sweep").set_value(lab_env["sweep_id"]).run()
    assert not at.exception
    assert at.multiselect(key="tables_tune").options == ["algorithm · algorithm.name"]
    (cost,) = [d.value for d in at.dataframe if "MB total" in d.value.columns]
    # FakeRunner: 1e5 bytes up and down in each of rounds 0..6.
    assert set(cost["MB total"]) == {"1.4 ± 0"}
    # Execute
    at.multiselect(key="tables_tune").set_value(["algorithm.name"]).run()
    # Assert
    assert not at.exception
    assert "needs validation data" in texts(at) + " ".join(e.value for e in at.error)
    assert at.query_params["tune"] == "algorithm.name"


def test_a_link_with_tune_opens_with_the_field_chosen(
    app_path: str, lab_env: dict[str, Any]
) -> None:
    """`?sweep=..&tune=algorithm.name`, opened afresh: the picker holds the field and the
    address keeps it (the page's first rewrite of the address ran before the picker)."""
    # Prepare
    params = {"sweep": lab_env["sweep_id"], "tune": "algorithm.name"}
    # Execute
    at = open_page(app_path, "app_pages/paper_tables.py", params=params)
    # Assert
    assert not at.exception
    assert at.multiselect(key="tables_tune").value == ["algorithm.name"]
    assert at.query_params["tune"] == "algorithm.name"


def _numbers(arr: Any) -> list[float]:
    """A plotly array as numbers (typed arrays come as {"dtype", "bdata"})."""
    if isinstance(arr, dict):
        return list(np.frombuffer(base64.b64decode(arr["bdata"]), dtype=arr["dtype"]))
    return [float(v) for v in arr]


@pytest.mark.parametrize(
    ("axis", "title", "step"),
    [
        # FakeRunner: every round 1e5 bytes up and 1e5 down; 100 ms clients' + 20 ms server.
        ("bytes", "cumulative MB communicated (up + down)", 0.2),
        ("compute", "cumulative compute, s (clients' training + server)", 0.12),
    ],
)
def test_compare_draws_accuracy_against_cumulative_cost(
    app_path: str, lab_env: dict[str, Any], axis: str, title: str, step: float
) -> None:
    """x=bytes|compute: each curve's x is the cost so far, round by round."""
    # Execute
    params = {"sweep": lab_env["sweep_id"], "x": axis, "group": "none"}
    at = open_page(app_path, "app_pages/compare.py", params=params)
    # Assert
    assert not at.exception
    assert at.radio(key="cmp_x").value == axis
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert fig["layout"]["xaxis"]["title"]["text"] == title
    lines = [t for t in fig["data"] if t.get("mode") == "lines" and "fill" not in t]
    assert lines
    for line in lines:
        xs = _numbers(line["x"])
        assert xs == pytest.approx([step * (r + 1) for r in range(len(xs))])


def test_sweep_plot_offers_and_draws_the_curves_against_cost() -> None:
    """The x picker offers round, bytes and compute after the swept fields; a curve is one line
    per series, x the cumulative MB, y the test accuracy in %, titled by its axis."""
    # Prepare
    fields = sweep_plot.pick_fields(["algorithm.name", "partition.alpha"], "bytes")
    point = {
        "std": None,
        "lo": None,
        "hi": None,
        "n": 2,
        "n_total": 2,
        "reached": None,
        "censored": False,
        "run_ids": [],
        "values": [],
    }
    data = PlotData.model_validate(
        {
            "sweep_id": "s1",
            "x": "bytes",
            "x_axis": "bytes",
            "x_unit": "MB",
            "by": "algorithm.name",
            "statistic": "top5",
            "target": None,
            "unit": "fraction",
            "interval": "std",
            "level": None,
            "log_x": False,
            "series": [
                {
                    "by_value": "fedavg",
                    "points": [
                        {**point, "x": 0.0, "mean": 0.1, "round": 0},
                        {**point, "x": 0.4, "mean": 0.5, "round": 1},
                    ],
                }
            ],
            "groups": [],
            "excluded": {"counts": {}, "run_ids": {}},
            "warnings": [],
            "varying": ["algorithm.name"],
        }
    )
    # Execute
    fig = sweep_plot.plot_figure(data)
    # Assert
    assert fields.x_options[-3:] == ["round", "bytes", "compute"]
    assert fields.by_options[0] == "algorithm.name"
    (line,) = fig.data
    assert list(line.x) == [0.0, 0.4]
    assert list(line.y) == pytest.approx([10.0, 50.0])
    assert fig.layout.xaxis.title.text == "cumulative MB communicated (up + down)"
    assert fig.layout.yaxis.title.text == "test accuracy (%)"


def test_sweep_tables_plot_draws_accuracy_against_cumulative_mb(
    app_path: str, lab_env: dict[str, Any]
) -> None:
    """x=bytes on the Sweep tables page: the lab's curve points drawn, the choice in the URL."""
    # Prepare
    at = open_page(app_path, "app_pages/paper_tables.py")
    at.selectbox(key="tables_sweep").set_value(lab_env["sweep_id"]).run()
    # Execute
    at.selectbox(key="tables_plot_x").set_value("bytes").run()
    # Assert
    assert not at.exception
    assert at.query_params["x"] == "bytes"
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert fig["layout"]["xaxis"]["title"]["text"] == "cumulative MB communicated (up + down)"
    lines = [t for t in fig["data"] if t.get("meta", {}).get("kind") == "curve"]
    assert len(lines) == 2  # one per algorithm (fedavg, fedgen)
    for line in lines:
        # FakeRunner: 2e5 bytes every round (0..6); official profile: rounds 0..5 counted.
        assert _numbers(line["x"]) == pytest.approx([0.2 * (r + 1) for r in range(6)])
