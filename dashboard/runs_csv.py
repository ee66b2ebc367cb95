"""The Runs table for download: real values, not the words the page shows (numbers, ISO-8601
UTC timestamps, full ids, empty where there is no value). No Streamlit.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd

from dashboard.run_name import compact_names
from dashboard.run_state import duration_s
from dashboard.runs_table import final_acc
from dashboard.times import iso_utc
from fedgen import specdict

# The CSV: real values (numbers, ISO-8601 UTC times, full ids; empty where there is none).
CSV_COLUMNS = [
    "id",
    "run",
    "status",
    "algorithm",
    "dataset",
    "seed",
    "current_round",
    "rounds",
    "final_acc_pct",
    "best_acc_pct",
    "last_acc_pct",
    "duration_s",
    "created_at",
    "started_at",
    "finished_at",
    "owner",
    "sweep_id",
    "tags",
    "note",
    "error",
    "peak_rss_bytes",
    "cpu_s",
    "gpu_peak_bytes",
]


def _pct4(value: Any) -> float | None:
    # Percent to 4 decimals: the fraction's float error (87.64999999999999) left out of the CSV.
    return None if value is None else round(100.0 * float(value), 4)


def csv_frame(
    runs: list[dict[str, Any]], now: datetime, names: dict[str, str] | None = None
) -> pd.DataFrame:
    """The table for download: real values, not the words the page shows (numbers, ISO-8601
    UTC timestamps, full ids, empty where there is no value)."""
    names = names if names is not None else compact_names(runs)
    rows = []
    for r in runs:
        spec = r.get("spec") or {}
        rows.append(
            {
                "id": str(r.get("id")),
                "run": names.get(str(r.get("id"))),
                "status": r.get("status"),
                "algorithm": specdict.get_dotted(spec, "algorithm.name"),
                "dataset": specdict.get_dotted(spec, "data.name"),
                "seed": spec.get("seed"),
                "current_round": r.get("current_round"),
                "rounds": r.get("rounds"),
                "final_acc_pct": _pct4(final_acc(r)),
                "best_acc_pct": _pct4(r.get("best_acc")),
                "last_acc_pct": _pct4(r.get("last_acc")),
                "duration_s": duration_s(r, now),
                "created_at": iso_utc(r.get("created_at")),
                "started_at": iso_utc(r.get("started_at")),
                "finished_at": iso_utc(r.get("finished_at")),
                "owner": r.get("owner"),
                "sweep_id": r.get("sweep_id"),
                "tags": ";".join(r.get("tags") or []) or None,
                "note": r.get("note") or None,
                "error": r.get("error") or None,
                "peak_rss_bytes": r.get("peak_rss_bytes"),
                "cpu_s": r.get("cpu_s"),
                "gpu_peak_bytes": r.get("gpu_peak_bytes"),
            }
        )
    return pd.DataFrame(rows, columns=CSV_COLUMNS).astype(
        {
            "seed": "Int64",
            "current_round": "Int64",
            "rounds": "Int64",
            "peak_rss_bytes": "Int64",
            "gpu_peak_bytes": "Int64",
        }
    )
