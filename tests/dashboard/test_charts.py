"""Chart builders are pure: DataFrame in, Figure out, with stable uirevision."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard import charts


def test_band_chart_draws_band_only_for_groups() -> None:
    """A group of 2 runs gets a band + line; a single run only a line."""
    # Prepare
    agg = pd.DataFrame(
        {
            "group": ["a", "a", "b", "b"],
            "round": [0, 1, 0, 1],
            "mean": [0.1, 0.5, 0.2, 0.4],
            "std": [0.01, 0.02, 0, 0],
            "n": [2, 2, 1, 1],
            "wall_s": [1, 2, 1, 2],
        }
    )
    # Execute
    fig = charts.band_chart(agg, "t", revision="r")
    # Assert
    assert [t.fill for t in fig.data] == ["toself", None, None]
    assert fig.data[1].name == "a (n=2)"
    assert fig.layout.uirevision == "r"


def test_live_charts_from_metrics_frame() -> None:
    """Accuracy lines, a stack of parts with 'other' (the rest of the total) and user spread."""
    # Prepare
    df = pd.DataFrame(
        {
            "round": [0, 1],
            "test_acc": [0.1, 0.3],
            "time_train_ms": [10, 10],
            "time_server_ms": [5, 5],
            "time_eval_ms": [1, 1],
            "time_total_ms": [20, 30],
            "gen_teacher_loss": [1.0, 0.5],
        }
    )
    band = pd.DataFrame({"round": [0, 1], "min": [0, 0.1], "mean": [0.1, 0.3], "max": [0.2, 0.5]})
    # Execute
    acc = charts.metric_lines(df, ["test_acc", "missing"], "Accuracy")
    parts = {
        "time_train_ms": "local training",
        "time_server_ms": "server",
        "time_eval_ms": "evaluation",
    }
    timing = charts.stacked_parts(df, parts, "time_total_ms", "Time", "ms")
    spread = charts.user_spread(band)
    # Assert
    assert len(acc.data) == 1
    assert [t.name for t in timing.data] == ["local training", "server", "evaluation", "other"]
    assert list(timing.data[-1].y) == [4, 14]
    assert len(spread.data) == 3


def test_heatmap_and_latent_scatter() -> None:
    """Users x classes heatmap; one PCA panel per round with a legend entry per class once."""
    # Prepare
    points = pd.DataFrame(
        {
            "pc1": np.arange(8.0),
            "pc2": np.arange(8.0),
            "label": [0, 1] * 4,
            "round": [1] * 4 + [5] * 4,
        }
    )
    # Execute
    heat = charts.label_heatmap([[1, 2, 3], [4, 5, 6]])
    scatter = charts.latent_scatter(points)
    # Assert
    assert heat.data[0].z.shape == (2, 3)
    assert len(scatter.data) == 4
    assert sum(bool(t.showlegend) for t in scatter.data) == 2
    assert scatter.layout.xaxis2.title.text == "round 5"


def test_band_hover_gives_n_per_round_and_run_lines_mark_states() -> None:
    """The mean line's hover carries n per round; a running run is named, a failed one dotted."""
    # Prepare
    agg = pd.DataFrame(
        {
            "group": ["a", "a"],
            "round": [0, 1],
            "mean": [0.1, 0.5],
            "std": [0.0, 0.1],
            "n": [3, 2],
            "wall_s": [1.0, 2.0],
        }
    )
    long = pd.DataFrame(
        {
            "run_id": ["r", "r", "f", "s"],
            "round": [0, 1, 0, 0],
            "value": [0.1, 0.2, 0.3, 0.4],
            "wall_s": [1.0, 2.0, 1.0, 1.0],
        }
    )
    # Execute
    band = charts.band_chart(agg, "t", legend={"a": "a (n=3, 1 of 3 running)"})
    lines = charts.run_lines(
        long,
        {"r": "run r", "f": "run f", "s": "run s"},
        "t",
        statuses={"r": "running", "f": "failed", "s": "succeeded"},
    )
    # Assert
    mean = band.data[1]
    assert list(mean.customdata) == [3, 2]
    assert "n=%{customdata}" in mean.hovertemplate
    assert mean.name == "a (n=3, 1 of 3 running)"
    assert mean.meta["kind"] == "mean"
    assert [t.name for t in lines.data] == ["run r · running", "run f · failed @0", "run s"]
    assert [t.line.dash for t in lines.data] == ["dash", "dot", "solid"]
    assert lines.data[0].meta["status"] == "running"


def test_a_curve_under_a_nearly_equal_one_stays_visible() -> None:
    """FedAvg drawn first and FedProx (tiny mu) on top at the same values: FedAvg's line is
    wider, so its rim shows, and one hover box lists both."""
    rounds = np.arange(5)
    acc = np.linspace(0.5, 0.7, 5)
    agg = pd.concat(
        [
            pd.DataFrame({"group": g, "round": rounds, "mean": acc, "std": 0.0, "n": 1})
            for g in ("fedavg", "fedprox")
        ]
    )
    fig = charts.band_chart(agg, "t", revision="r")
    widths = {t.name.split(" ")[0]: t.line.width for t in fig.data if t.meta["kind"] == "mean"}
    assert widths["fedavg"] > widths["fedprox"]
    assert fig.layout.hovermode == "x unified"
