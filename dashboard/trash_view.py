"""The Trash page's tables, pure: what a member deleted, who deleted it, when, and when it will
be purged (rows of GET /trash; times for people in the viewer's zone)."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

import pandas as pd

from dashboard.runs_table import short_id
from dashboard.times import DASH, parse_ts, relative, when

RUN_COLUMNS = ["run", "status", "owner", "deleted", "deleted by", "purged", "id"]
SWEEP_COLUMNS = ["sweep", "runs", "owner", "deleted", "deleted by", "purged", "id"]


def purge_text(value: Any, now: datetime, tz: tzinfo) -> str:
    """When a trashed row goes for good: `in 6 d 23 h (Dec 10 12:00)`; `at the next pass`
    once that time is past (the workers' pass runs every FEDGEN_REAPER_S)."""
    dt = parse_ts(value)
    if dt is None:
        return DASH
    if dt <= now:
        return "at the next pass"
    return when(value, now, tz)


def run_label(run: dict[str, Any]) -> str:
    """`fedgen · synthetic` (the algorithm and the dataset), plus the sweep's short id."""
    label = f"{run.get('algorithm', '?')} · {run.get('dataset', '?')}"
    sweep = run.get("sweep_id")
    return f"{label} (sweep {short_id(sweep)})" if sweep else label


def _trash_cells(row: dict[str, Any], now: datetime, tz: tzinfo) -> dict[str, Any]:
    """The cells a trashed run and a trashed sweep share: whose, deleted when and by whom,
    purged when, and its short id."""
    return {
        "owner": row.get("owner", DASH),
        "deleted": when(row.get("deleted_at"), now, tz),
        "deleted by": row.get("deleted_by") or DASH,
        "purged": purge_text(row.get("purge_after"), now, tz),
        "id": short_id(row["id"]),
    }


def runs_table(runs: list[dict[str, Any]], now: datetime, tz: tzinfo) -> pd.DataFrame:
    """One row per trashed run, newest deletion first (the API's order)."""
    rows = [
        {"run": run_label(r), "status": r.get("status", DASH), **_trash_cells(r, now, tz)}
        for r in runs
    ]
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def sweeps_table(sweeps: list[dict[str, Any]], now: datetime, tz: tzinfo) -> pd.DataFrame:
    """One row per trashed sweep, with the number of runs that come back with it."""
    rows = [
        {
            "sweep": s.get("name", DASH),
            "runs": int(s.get("runs") or 0),
            **_trash_cells(s, now, tz),
        }
        for s in sweeps
    ]
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)


def restore_label(row: dict[str, Any], kind: str, now: datetime) -> str:
    """The Restore button of one row: `Restore run fedgen · synthetic · 1a2b3c4d (purged in 6 d)`."""
    name = run_label(row) if kind == "run" else str(row.get("name", "?"))
    dt = parse_ts(row.get("purge_after"))
    left = f" (purged {relative(dt, now)})" if dt is not None and dt > now else ""
    return f"Restore {kind} {name} · {short_id(row['id'])}{left}"


def days_text(days: float) -> str:
    """FEDGEN_TRASH_DAYS for a sentence: `7 days`, `1 day`, `0.5 days`."""
    n = int(days) if float(days).is_integer() else days
    return f"{n} day" if n == 1 else f"{n} days"
