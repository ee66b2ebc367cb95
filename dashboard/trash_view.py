"""The Trash page's tables, pure: what a member deleted, who deleted it, when, and when it will
be purged (rows of GET /trash; times for people in the viewer's zone)."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

import pandas as pd

from dashboard.runs_table import short_id
from dashboard.times import relative, when
from vocab.run_names import base_name
from vocab.schemas.trash import TrashedRun, TrashedSweep

RUN_COLUMNS = ["run", "status", "owner", "deleted", "deleted by", "purged", "id"]
SWEEP_COLUMNS = ["sweep", "runs", "owner", "deleted", "deleted by", "purged", "id"]


def purge_text(purge_after: datetime, now: datetime, tz: tzinfo) -> str:
    """When a trashed row goes for good: `in 6 d 23 h (Dec 10 12:00)`; `at the next pass`
    once that time is past (the workers' pass runs every FEDGEN_REAPER_S)."""
    if purge_after <= now:
        return "at the next pass"
    return when(purge_after, now, tz)


def run_label(run: TrashedRun) -> str:
    """`FedGen · Synth` (the algorithm and the dataset as every page names them:
    `vocab.run_names.base_name`), plus the sweep's short id."""
    label = base_name(run.algorithm, run.dataset)
    return f"{label} (sweep {short_id(run.sweep_id)})" if run.sweep_id else label


def _trash_cells(row: TrashedRun | TrashedSweep, now: datetime, tz: tzinfo) -> dict[str, Any]:
    """The cells a trashed run and a trashed sweep share: whose, deleted when and by whom,
    purged when, and its short id."""
    return {
        "owner": row.owner,
        "deleted": when(row.deleted_at, now, tz),
        "deleted by": row.deleted_by,
        "purged": purge_text(row.purge_after, now, tz),
        "id": short_id(row.id),
    }


def runs_table(runs: list[TrashedRun], now: datetime, tz: tzinfo) -> pd.DataFrame:
    """One row per trashed run, newest deletion first (the API's order)."""
    rows = [{"run": run_label(r), "status": r.status, **_trash_cells(r, now, tz)} for r in runs]
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def sweeps_table(sweeps: list[TrashedSweep], now: datetime, tz: tzinfo) -> pd.DataFrame:
    """One row per trashed sweep, with the number of runs that come back with it."""
    rows = [{"sweep": s.name, "runs": s.runs, **_trash_cells(s, now, tz)} for s in sweeps]
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)


def restore_label(row: TrashedRun | TrashedSweep, now: datetime) -> str:
    """The Restore button of one row: `Restore run fedgen · synthetic · 1a2b3c4d (purged in 6 d)`."""
    if isinstance(row, TrashedRun):
        kind, name = "run", run_label(row)
    else:
        kind, name = "sweep", row.name
    left = f" (purged {relative(row.purge_after, now)})" if row.purge_after > now else ""
    return f"Restore {kind} {name} · {short_id(row.id)}{left}"


def days_text(days: float) -> str:
    """FEDGEN_TRASH_DAYS for a sentence: `7 days`, `1 day`, `0.5 days`."""
    n = int(days) if float(days).is_integer() else days
    return f"{n} day" if n == 1 else f"{n} days"
