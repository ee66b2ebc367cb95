"""The Runs table for download: real values, not the words the page shows (numbers, ISO-8601
UTC timestamps, full ids, empty where there is no value). No Streamlit.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd

from dashboard.run_name import compact_names
from dashboard.run_state import running_s
from dashboard.runs_table import final_acc
from dashboard.times import iso_utc
from fedgen import specdict
from vocab.schemas.runs import RunPublic

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
    "running_s",
    "total_s",
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


def _pct4(value: float | None) -> float | None:
    # Percent to 4 decimals: the fraction's float error (87.64999999999999) left out of the CSV.
    return None if value is None else round(100.0 * value, 4)


def csv_row(run: RunPublic, name: str | None, now: datetime) -> dict[str, Any]:
    """One run's values, by CSV_COLUMNS name."""
    return {
        "id": run.id,
        "run": name,
        "status": run.status,
        "algorithm": specdict.get_dotted(run.spec, "algorithm.name"),
        "dataset": specdict.get_dotted(run.spec, "data.name"),
        "seed": run.spec.get("seed"),
        "current_round": run.current_round,
        "rounds": run.rounds,
        "final_acc_pct": _pct4(final_acc(run)),
        "best_acc_pct": _pct4(run.best_acc),
        "last_acc_pct": _pct4(run.last_acc),
        "running_s": running_s(run, now),
        "total_s": run.total_s,
        "created_at": iso_utc(run.created_at),
        "started_at": iso_utc(run.started_at),
        "finished_at": iso_utc(run.finished_at),
        "owner": run.owner,
        "sweep_id": run.sweep_id,
        "tags": ";".join(run.tags) or None,
        "note": run.note or None,
        "error": run.error or None,
        "peak_rss_bytes": run.peak_rss_bytes,
        "cpu_s": run.cpu_s,
        "gpu_peak_bytes": run.gpu_peak_bytes,
    }


def csv_frame(
    runs: list[RunPublic], now: datetime, names: dict[str, str] | None = None
) -> pd.DataFrame:
    """The table for download: real values, not the words the page shows (numbers, ISO-8601
    UTC timestamps, full ids, empty where there is no value)."""
    names = names if names is not None else compact_names(runs)
    rows = [csv_row(r, names.get(r.id), now) for r in runs]
    integers = ("seed", "current_round", "rounds", "peak_rss_bytes", "gpu_peak_bytes")
    return pd.DataFrame(rows, columns=CSV_COLUMNS).astype(dict.fromkeys(integers, "Int64"))
