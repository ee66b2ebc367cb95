"""Compare page logic: run names, colour by algorithm, dash by α, CSV in both modes, legend place."""

from __future__ import annotations

import io
from typing import Any

import pandas as pd

from dashboard import charts, compare_view
from dashboard.tables import aggregate, group_labels


def _run(rid: str, alg: str, alpha: float, seed: int) -> dict[str, Any]:
    spec = {"algorithm": {"name": alg}, "data": {"name": "fashion-mnist"},
            "partition": {"alpha": alpha, "num_users": 20}, "seed": seed, "rounds": 3}  # fmt: skip
    return {"id": rid, "spec": spec, "status": "succeeded"}


RUNS = [
    _run(f"r{i}", alg, alpha, seed)
    for i, (alg, alpha, seed) in enumerate(
        (a, al, s) for a in ("fedavg", "fedgen") for al in (0.1, 1.0) for s in (0, 1)
    )
]


def _long(runs: list[dict[str, Any]]) -> pd.DataFrame:
    rows = [
        {"run_id": r["id"], "round": k, "value": 0.1 * k + 0.01 * i, "wall_s": 2.0 * k}
        for i, r in enumerate(runs)
        for k in range(3)
    ]
    return pd.DataFrame(rows)


def test_colour_by_algorithm_is_stable_across_alpha_and_selection() -> None:
    """FedGen has one colour at every α, in any selection; α picks the dash."""
    # Prepare
    groups = group_labels(RUNS)
    only_fedgen = [r for r in RUNS if r["spec"]["algorithm"]["name"] == "fedgen"]
    # Execute
    styles = compare_view.trace_styles(RUNS, groups)
    alone = compare_view.trace_styles(only_fedgen, group_labels(only_fedgen))
    # Assert
    fedgen = compare_view.algorithm_color("fedgen")
    assert fedgen != compare_view.algorithm_color("fedavg")
    assert styles["algorithm=fedgen, alpha=0.1"]["color"] == fedgen
    assert styles["algorithm=fedgen, alpha=1"]["color"] == fedgen
    assert {s["color"] for s in alone.values()} == {fedgen}
    assert (
        styles["algorithm=fedavg, alpha=0.1"]["dash"]
        == styles["algorithm=fedgen, alpha=0.1"]["dash"]
    )
    assert (
        styles["algorithm=fedgen, alpha=0.1"]["dash"] != styles["algorithm=fedgen, alpha=1"]["dash"]
    )


def test_ungrouped_names_carry_the_seed_and_no_uuid() -> None:
    """One legend entry per run: what differs plus the seed; run names are human labels."""
    # Execute
    names = compare_view.seed_names(RUNS, group_labels(RUNS))
    labels = compare_view.run_names(RUNS + [dict(RUNS[0], id="dup")])
    # Assert
    assert names["r0"] == "algorithm=fedavg, alpha=0.1, seed=0"
    assert len(set(names.values())) == len(RUNS)
    assert labels["r7"] == "fedgen · fashion-mnist · α=1 · seed=1"
    assert labels["dup"] == "fedavg · fashion-mnist · α=0.1 · seed=0 #2"


def test_csv_in_both_modes() -> None:
    """Grouped: mean ± std per group and round; ungrouped: every run's curve, named."""
    # Prepare
    long = _long(RUNS)
    groups = group_labels(RUNS)
    long["group"] = long["run_id"].map(groups)
    names = compare_view.seed_names(RUNS, groups)
    # Execute
    grouped = pd.read_csv(io.StringIO(compare_view.grouped_csv(aggregate(long))))
    ungrouped = pd.read_csv(io.StringIO(compare_view.runs_csv(long, names, "test_acc")))
    # Assert
    assert list(grouped.columns) == ["group", "round", "mean", "std", "n", "wall_s"]
    assert len(grouped) == 4 * 3
    assert set(grouped["n"]) == {2}
    row = grouped[(grouped["group"] == "algorithm=fedavg, alpha=0.1") & (grouped["round"] == 2)]
    assert row["mean"].iloc[0] == (0.2 + 0.2 + 0.01) / 2
    assert list(ungrouped.columns) == ["run", "run_id", "round", "test_acc", "wall_s"]
    assert len(ungrouped) == len(RUNS) * 3
    assert "algorithm=fedgen, alpha=1, seed=1" in set(ungrouped["run"])


def test_legend_outside_the_plot_area_and_styles_applied() -> None:
    """Legend right of the plot (x > 1, anchored left), title clear; log y; colours from styles."""
    # Prepare
    long = _long(RUNS)
    groups = group_labels(RUNS)
    long["group"] = long["run_id"].map(groups)
    styles = compare_view.trace_styles(RUNS, groups)
    names = compare_view.seed_names(RUNS, groups)
    # Execute
    band = charts.band_chart(aggregate(long), "t", styles=styles, log_y=True)
    lines = charts.run_lines(long, names, "t", styles=compare_view.trace_styles(RUNS, names))
    # Assert
    for fig in (band, lines):
        assert fig.layout.legend.x > 1
        assert fig.layout.legend.xanchor == "left"
        assert fig.layout.legend.orientation == "v"
        assert fig.layout.legend.y <= 1
        assert fig.layout.legend.yanchor == "top"
    assert band.layout.yaxis.type == "log"
    mean_lines = [t for t in band.data if t.fill != "toself"]
    fedgen = [t for t in mean_lines if t.name.startswith("algorithm=fedgen")]
    assert {t.line.color for t in fedgen} == {compare_view.algorithm_color("fedgen")}
    assert len(lines.data) == len(RUNS)
    assert lines.data[0].name == "algorithm=fedavg, alpha=0.1, seed=0"
