"""Sweep tables one can tell apart: an α sweep's Table 3 rows say their α, each CSV has a
column per varying field, and the CSVs carry percents rounded as the tables show them (the
plot CSV too, in the same unit). Built from the real API's answers (SQLite and Postgres)."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from dashboard.sweep_tables import summary_groups, table1_long, table3_frame
from dashboard.table_csv import table1_csv_frame, table3_csv_frame, varying_fields
from lab.models import User
from tests.support.factories import (
    create_sweep_runs,
    make_spec,
    public_run,
    seed_rounds,
    summary_group,
    sweep_summary,
)
from vocab.schemas.analysis import TimingTable
from vocab.schemas.runs import RunPublic
from vocab.schemas.sweeps import SweepSummary

API = "/api/v1"
ALPHAS = [0.1, 0.5, 1.0]
# Accuracies whose percent is not exact in binary (0.75948 * 100 = 75.94800000000001).
CURVE = [0.1, 0.5, *[0.75948] * 6]  # the top 5 of each protocol are all 0.75948


@pytest.fixture
def alpha_sweep(client: TestClient, auth: dict[str, str], session: Session) -> dict[str, Any]:
    """FedAvg and FedGen x α 0.1, 0.5, 1.0 x seeds 0, 1, finished, with timing per round."""
    alice = session.query(User).filter_by(name="alice").one()
    grid = {
        "algorithm": [{"name": "fedavg"}, {"name": "fedgen"}],
        "partition.alpha": ALPHAS,
        "seed": [0, 1],
    }
    sweep_id, runs = create_sweep_runs(session, alice, grid, base=make_spec(rounds=len(CURVE) - 1))
    for run in runs:
        # FedGen twice FedAvg's time at every α; α itself changes the time (10, 20, 30 ms).
        ms = 10.0 * (ALPHAS.index(run.spec["partition"]["alpha"]) + 1)
        ms *= 2 if run.spec["algorithm"]["name"] == "fedgen" else 1
        seed_rounds(session, run, CURVE, extra=lambda _r, ms=ms: {"time_user_ms": ms})

    def get(path: str) -> Any:
        r = client.get(f"{API}{path}", headers=auth)
        assert r.status_code == 200, r.text
        return r.json() if "format=csv" not in path else r.text

    members = get(f"/runs?sweep_id={sweep_id}&limit=100")["data"]
    return {
        "timing": TimingTable.model_validate(get(f"/timing?sweep_id={sweep_id}")),
        "summary": SweepSummary.model_validate(get(f"/sweeps/{sweep_id}/summary")),
        "runs": {r["id"]: RunPublic.model_validate(r) for r in members},
        "plot_csv": get(f"/sweeps/{sweep_id}/plot-data?x=alpha&by=algorithm&format=csv"),
    }


def _decimals(value: float) -> int:
    text = repr(float(value))
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def test_alpha_sweep_table3_rows_say_their_alpha_and_csv_has_an_alpha_column(
    alpha_sweep: dict[str, Any],
) -> None:
    """Six rows, six different labels ("FedAvg · α=0.1"), three settings; each FedGen row's
    ratio is to the FedAvg row of its own α; the CSV has partition.alpha, ms rounded."""
    # Execute
    t3 = table3_frame(alpha_sweep["timing"])
    out = table3_csv_frame(t3)
    # Assert
    assert len(t3) == 6
    assert len(set(t3["row"])) == 6
    assert "FedAvg · α=0.1" in set(t3["row"])
    assert "FedGen B_G=32 · α=0.5" in set(t3["row"])
    assert len(set(t3["setting"])) == 3
    assert all(s.endswith(("α=0.1", "α=0.5", "α=1")) for s in t3["setting"])
    fedgen = t3[t3["row"].str.startswith("FedGen")]
    assert fedgen["ours_ratio"].tolist() == pytest.approx([2.0, 2.0, 2.0])
    assert sorted(out["partition.alpha"]) == sorted(ALPHAS * 2)
    assert all(_decimals(v) <= 2 for v in out["ours_ms"])
    by_alpha = dict(zip(out["row"], out["partition.alpha"], strict=True))
    assert by_alpha["FedAvg · α=1"] == 1.0


def test_alpha_sweep_table1_csv_has_rounded_percents_and_matches_the_plot_csv(
    alpha_sweep: dict[str, Any],
) -> None:
    """Table 1's CSV: `_pct` columns rounded to 2 decimals (never 75.94800000000001), an α
    column; the plot CSV says the same numbers in the same unit."""
    # Execute
    groups = summary_groups(alpha_sweep["summary"], alpha_sweep["runs"], "top5")
    out = table1_csv_frame(table1_long(groups))
    plot = list(csv.DictReader(io.StringIO(alpha_sweep["plot_csv"])))
    text = out.to_csv(index=False)
    # Assert
    assert len(out) == 6
    assert {"partition.alpha", "mean_pct", "std_pct", "paper_mean_pct", "diff_pct"} <= set(out)
    assert "75.948000" not in text
    assert set(out["mean_pct"]) == {75.95}
    assert all(_decimals(v) <= 2 for v in out["mean_pct"])
    for rec in out.to_dict("records"):
        row = next(
            r
            for r in plot
            if r["algorithm.name"] == rec["algorithm"]
            and float(r["partition.alpha"]) == rec["partition.alpha"]
        )
        assert float(row["mean_pct"]) == rec["mean_pct"]
        assert float(row["std_pct"]) == rec["std_pct"]


def test_a_field_that_varies_beyond_the_cell_is_in_the_setting_text() -> None:
    """lr varies with the algorithm (no two groups share a cell): the rows still say their lr;
    the algorithm's own fields (B_G) stay out of the setting."""

    # Prepare
    def run(rid: str, alg: str, lr: float) -> RunPublic:
        spec = {
            "algorithm": {"name": alg},
            "data": {"name": "mnist"},
            "partition": {"alpha": 0.1},
            "local_steps": 20,
            "lr": lr,
        }
        return public_run(id=rid, spec=spec)

    summary = sweep_summary(
        summary_group(
            run_ids=["a"],
            top5_mean=0.8,
            top5_std=0.0,
            fields={"algorithm.name": "fedavg", "lr": 0.01},
        ),
        summary_group(
            run_ids=["b"],
            top5_mean=0.9,
            top5_std=0.0,
            fields={"algorithm.name": "fedgen", "algorithm.gen_batch_size": 32, "lr": 0.05},
        ),
    )
    # Execute
    df = summary_groups(summary, {"a": run("a", "fedavg", 0.01), "b": run("b", "fedgen", 0.05)})
    out = table1_csv_frame(table1_long(df))
    # Assert
    assert df["setting"].tolist() == ["α=0.1 [lr=0.01]", "α=0.1 [lr=0.05]"]
    assert out["lr"].tolist() == [0.01, 0.05]
    assert out["algorithm.gen_batch_size"].tolist()[1] == 32


def test_varying_fields_counts_a_missing_field_as_differing() -> None:
    rows = [{"a": 1, "b": 0.1}, {"a": 1, "b": 0.5}, {"a": 1, "c": "x"}]
    assert varying_fields(rows) == ["b", "c"]
    assert varying_fields([*rows, None]) == ["a", "b", "c"]  # no fields: every one missing
    assert varying_fields([{"a": 1.0}, {"a": 1}]) == []  # 1.0 and 1 are one value
