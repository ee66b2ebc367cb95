"""Sweep plot figures are pure: plot data in, plotly figure out (log x for α, bars, parcoords)."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.paper_tables_page import sweep_plot
from tests.support.apptest import open_page
from vocab.schemas.results import PlotData


def _point(
    x: Any,
    mean: float | None,
    lo: float | None,
    hi: float | None,
    n: int = 3,
    total: int = 3,
    censored: bool = False,
) -> dict[str, Any]:
    return {
        "x": x,
        "mean": mean,
        "std": None,
        "lo": lo,
        "hi": hi,
        "n": n,
        "n_total": total,
        "reached": None,
        "round": None,
        "censored": censored,
        "run_ids": [],
        "values": [],
    }


def _data(**changes: Any) -> PlotData:
    """Plot data as the server sends it: α × algorithm, accuracies as fractions."""
    data: dict[str, Any] = {
        "sweep_id": "s1",
        "x": "partition.alpha",
        "x_axis": "field",
        "x_unit": None,
        "by": "algorithm.name",
        "statistic": "top5",
        "target": None,
        "unit": "fraction",
        "interval": "std",
        "level": None,
        "log_x": True,
        "series": [
            {
                "by_value": "fedavg",
                "points": [_point(0.05, 0.60, 0.58, 0.63), _point(1.0, 0.80, 0.79, 0.81)],
            },
            {
                "by_value": "fedgen",
                "points": [_point(0.05, 0.70, 0.69, 0.72, n=2), _point(1.0, None, None, None, n=0)],
            },
        ],
        "groups": [],
        "excluded": {"counts": {}, "run_ids": {}},
        "warnings": [],
        "varying": ["algorithm.name", "partition.alpha"],
    }
    return PlotData.model_validate(data | changes)


def test_alpha_is_log_x_with_asymmetric_error_bars_in_percent() -> None:
    """One line per algorithm, % on y, bars from lo/hi; a point with no finished run is left out."""
    # Execute
    fig = sweep_plot.plot_figure(_data())
    # Assert
    assert fig.layout.xaxis.type == "log"
    assert list(fig.layout.xaxis.ticktext) == ["0.05", "1"]
    avg, gen = fig.data
    assert avg.name == "fedavg (n=3)"
    assert list(avg.y) == pytest.approx([60.0, 80.0])
    assert list(avg.error_y.array) == pytest.approx([3.0, 1.0])
    assert list(avg.error_y.arrayminus) == pytest.approx([2.0, 1.0])
    assert list(gen.x) == [0.05]  # α = 1 has no finished FedGen run yet
    assert list(gen.text) == ["2/3"]  # partial: n of the point's runs
    assert gen.name == "fedgen (n=0–2)"
    assert fig.layout.legend.title.text == "algorithm"
    assert fig.layout.yaxis.title.text == "top-5 mean (test-selected) accuracy (%)"


def test_linear_x_for_a_narrow_field_and_a_level_line_for_runs_without_it() -> None:
    """B_G 8..128 is linear; FedAvg (no B_G) is a dashed level line with its ± band."""
    # Prepare
    data = _data(
        x="algorithm.gen_batch_size",
        log_x=False,
        series=[
            {"by_value": "fedavg", "points": [_point(None, 0.5, 0.48, 0.52)]},
            {
                "by_value": "fedgen",
                "points": [_point(8, 0.6, 0.59, 0.61), _point(128, 0.65, 0.63, 0.67)],
            },
        ],
    )
    # Execute
    fig = sweep_plot.plot_figure(data)
    # Assert
    assert fig.layout.xaxis.type is None
    kinds = [t.meta["kind"] for t in fig.data]
    assert kinds == ["level-band", "level", "series"]
    level = fig.data[1]
    assert list(level.x) == [8, 128]
    assert list(level.y) == pytest.approx([50.0, 50.0])
    assert level.line.dash == "dash"
    assert "no B_G" in level.name


def test_algorithms_on_x_are_categories_drawn_as_markers_without_a_line() -> None:
    """Algorithm names on x: a category axis, each α's points markers only (no joining line,
    which would claim an order between algorithms); a numeric x keeps its lines."""
    # Prepare
    low = [_point("fedavg", 0.6, 0.58, 0.62), _point("fedgen", 0.7, 0.69, 0.71)]
    high = [_point("fedavg", 0.8, 0.79, 0.81), _point("fedgen", 0.85, 0.84, 0.86)]
    data = _data(
        x="algorithm.name",
        by="partition.alpha",
        log_x=False,
        series=[{"by_value": 0.1, "points": low}, {"by_value": 1.0, "points": high}],
    )
    # Execute
    fig = sweep_plot.plot_figure(data)
    numeric = sweep_plot.plot_figure(_data())
    # Assert
    assert fig.layout.xaxis.type == "category"
    assert [t.mode for t in fig.data] == ["markers+text", "markers+text"]
    assert list(fig.data[0].x) == ["fedavg", "fedgen"]
    assert fig.layout.scattermode == "group"  # the α series side by side per algorithm
    assert {t.mode for t in numeric.data} == {"lines+markers+text"}


def test_time_to_target_in_rounds_marks_censored_points_open() -> None:
    """Rounds are not scaled; a censored point (a lower bound) is an open marker without a bar."""
    # Prepare
    data = _data(
        statistic="time_to_target",
        target=0.7,
        unit="round",
        series=[
            {
                "by_value": "fedgen",
                "points": [
                    _point(0.1, 12.0, 10.0, 14.0),
                    _point(1.0, 30.0, None, None, censored=True),
                ],
            }
        ],
    )
    # Execute
    fig = sweep_plot.plot_figure(data)
    # Assert
    (line,) = fig.data
    assert list(line.y) == [12.0, 30.0]
    assert list(line.marker.symbol) == ["circle", "circle-open"]
    assert list(line.error_y.array) == [2.0, 0.0]
    assert line.hovertext[1].startswith("≥ 30.0")
    assert fig.layout.yaxis.title.text == "rounds to 70% accuracy"


def test_parcoords_only_when_three_fields_vary() -> None:
    """Three varying fields: one axis each (α on log10, names as ticks) plus the statistic."""
    # Prepare
    groups = [
        {
            "label": "",
            "fields": {"algorithm.name": a, "partition.alpha": al, "local_steps": t},
            "mean": m,
            "std": 0.0,
            "censored": False,
            "n": 3,
            "n_total": 3,
        }
        for a, al, t, m in [
            ("fedavg", 0.1, 20, 0.6),
            ("fedgen", 1.0, 40, 0.7),
            ("fedgen", 0.1, 20, None),
        ]
    ]
    three = _data(varying=["algorithm.name", "local_steps", "partition.alpha"], groups=groups)
    # Execute
    fig = sweep_plot.parcoords_figure(three)
    two = sweep_plot.parcoords_figure(_data(groups=groups))
    # Assert
    assert two is None
    assert fig is not None
    (pc,) = fig.data
    assert pc.type == "parcoords"
    labels = [d.label for d in pc.dimensions]
    assert labels == ["algorithm", "T", "α", "top-5 mean (test-selected) accuracy (%)"]
    alg, steps, alpha, stat = pc.dimensions
    assert list(alg.ticktext) == ["fedavg", "fedgen"]
    assert list(alg.values) == [0, 1]  # the group without a finished run is left out
    assert list(steps.values) == [20, 40]
    assert list(alpha.values) == pytest.approx([-1.0, 0.0])
    assert list(stat.values) == pytest.approx([60.0, 70.0])


@pytest.mark.parametrize(
    ("varying", "x", "expected"),
    [
        (["algorithm.name", "partition.alpha"], None, ("partition.alpha", ["algorithm.name"])),
        (
            ["algorithm.name", "algorithm.gen_batch_size"],
            None,
            ("algorithm.gen_batch_size", ["algorithm.name"]),
        ),
        (
            ["algorithm.name", "local_steps", "partition.alpha"],
            "local_steps",
            ("partition.alpha", ["algorithm.name", "partition.alpha"]),
        ),
        (["algorithm.name"], None, ("algorithm.name", ["data.name"])),
    ],
)
def test_pick_fields_prefers_alpha_then_bg_and_splits_by_algorithm(
    varying: list[str], x: str | None, expected: tuple[str, list[str]]
) -> None:
    """x defaults to α (else B_G); by offers the algorithm first, never x itself."""
    # Execute
    fields = sweep_plot.pick_fields(varying, x)
    # Assert
    assert fields.x_default == expected[0]
    assert fields.by_options == expected[1]
    assert fields.by_default == expected[1][0]


def test_paper_tables_page_plots_the_sweep_from_a_shared_link(
    app_path: str, lab_env: dict[str, Any]
) -> None:
    """The page's Plot section: pickers from the link, the chart, its CSV; state in the URL."""
    # Prepare: the seeded sweep varies only the algorithm (FedAvg, FedGen x 2 seeds).
    params = {"sweep": lab_env["sweep_id"], "plot_stat": "final", "interval": "ci95"}
    # Execute
    at = open_page(app_path, "app_pages/paper_tables.py", params=params)
    # Assert
    assert not at.exception
    assert at.selectbox(key="tables_plot_x").value == "algorithm.name"
    assert at.selectbox(key="tables_plot_by").value == "data.name"
    assert at.selectbox(key="tables_plot_stat").value == "final"
    assert at.radio(key="tables_plot_interval").value == "ci95"
    assert at.query_params["x"] == "algorithm.name"
    assert at.query_params["interval"] == "ci95"
    assert len(at.get("plotly_chart")) == 1  # the line chart; one varying field: no parcoords
    assert "4 runs counted" in "\n".join(str(c.value) for c in at.caption)
