"""The dashboard's CSV downloads quote text a spreadsheet would run as a formula (issue 28)."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pandas as pd

from dashboard.compare_page import compare_view
from dashboard.runs_page import runs_csv
from tests.support.factories import public_run
from vocab.safe_csv import frame_csv


def test_runs_table_csv_quotes_a_note_a_tag_and_a_sweep_name() -> None:
    """A run noted `=1+1`, tagged `@SUM(A1)`, named after sweep `-2+3`: each cell quoted; the
    seed and the accuracies stay numbers."""
    run = public_run(
        id="r1",
        status="failed",
        spec={"algorithm": {"name": "fedavg"}, "data": {"name": "mnist"}, "seed": -1},
        current_round=3,
        rounds=5,
        best_acc=0.5,
        tags=["@SUM(A1)"],
        note="=1+1",
        error="\tboom",
    )
    now = datetime(2026, 1, 1, tzinfo=UTC)
    text = frame_csv(runs_csv.csv_frame([run], now, {"r1": "-2+3 · seed=0"}))
    (row,) = csv.DictReader(io.StringIO(text))
    assert (row["note"], row["tags"], row["run"]) == ("'=1+1", "'@SUM(A1)", "'-2+3 · seed=0")
    assert row["error"] == "'\tboom"
    assert (row["seed"], row["best_acc_pct"]) == ("-1", "50.0")


def test_compare_csv_quotes_a_run_name() -> None:
    """Compare's per-run download: a run named `=HYPERLINK(...)` is text."""
    long = pd.DataFrame({"run_id": ["r1"], "round": [0], "value": [-0.5], "wall_s": [1.0]})
    text = compare_view.runs_csv(long, {"r1": '=HYPERLINK("http://e.vil")'}, "test_acc")
    (row,) = csv.DictReader(io.StringIO(text))
    assert (row["run"], row["test_acc"]) == ('\'=HYPERLINK("http://e.vil")', "-0.5")
