"""CSV injection: the API's CSVs quote text a spreadsheet would run as a formula (issue 28).

The sweep summary and plot-data CSVs carry spec values (group fields, the `by` value); a
note and tags are not group fields, so they never reach them. Both writers are checked with
such text where a string spec value would be, and numbers next to it stay numbers.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from fedgen.cost import COST_TOTALS
from lab.analysis import summary_csv
from lab.plot_data import CSV_COLUMNS, plot_csv


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_summary_csv_quotes_a_formula_in_a_group_field_and_keeps_numbers() -> None:
    """A group field `=1+1` is `'=1+1`; a negative mean stays -0.5."""
    stats = dict.fromkeys(
        ("n", "n_succeeded", "n_total", "final_round", "last_round", "best_mean", "best_std"), 1
    )
    stats |= {"final_mean": -0.5, "final_std": 0.0, "top5_mean": 0.25, "top5_std": None}
    # The validation, seed-std and cost columns, empty; no tuning.
    seeds = ("final_seed_std", "best_seed_std", "top5_seed_std", "val_best_seed_std")
    costs = (f"{c}_{s}" for c in COST_TOTALS for s in ("mean", "seed_std"))
    stats |= dict.fromkeys(("val_best_mean", "val_best_std", "n_seeds", *seeds, *costs))
    stats |= {"tune": None}
    row = {"label": "@SUM(A1)", "fields": {"data.root": "=1+1"}, "varying": ["-x"], **stats}
    (out,) = _rows(summary_csv([row]))
    assert (out["label"], out["data.root"], out["varying"]) == ("'@SUM(A1)", "'=1+1", "'-x")
    assert (out["final_mean"], out["top5_mean"], out["top5_std"]) == ("-0.5", "0.25", "")


def test_plot_csv_quotes_a_formula_by_value() -> None:
    """The `by` value `+cmd|' /C calc'!A0` is quoted; the x and statistics are not."""
    point: dict[str, Any] = dict.fromkeys(CSV_COLUMNS, 1)
    point |= {"x": -1.5, "mean": -0.5, "run_ids": ["r1"]}
    series = [{"by_value": "+cmd|' /C calc'!A0", "points": [point]}]
    data = {"by": "data.root", "x": "lr", "statistic": "final", "interval": "std"}
    (out,) = _rows(plot_csv({**data, "series": series}))
    assert out["data.root"] == "'+cmd|' /C calc'!A0"
    assert (out["lr"], out["mean_pct"]) == ("-1.5", "-50.0")
