"""The Runs table: one row per run with the columns a researcher scans first, the columns
left out when empty, what the runs listed share, and one run's details rows. No Streamlit.
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo
from typing import Any

import pandas as pd

from dashboard.run_eta import eta_seconds
from dashboard.run_failures import failure
from dashboard.run_name import compact_names
from dashboard.run_records import RunSummaryView
from dashboard.run_state import queue_cells, run_duration, state, waiting_for
from dashboard.times import DASH, duration, iso_utc, local_time, relative, when
from fedgen import durations, specdict
from vocab.run_status import RunStatus
from vocab.schemas.runs import RunPublic

# What a researcher scans first comes first and fits 1,280 px (the compact name is pinned):
# status, accuracy, seed, round, whose it is and its short id (what `fedgen export` takes),
# then where it stands (ETA, queue, what it waits for) and the error.
TABLE_COLUMNS = [
    "run",
    "status",
    "final acc (%)",
    "seed",
    "progress",
    "owner",
    "id",
    "ETA",
    "queue",
    "waiting for",
    "error",
    "last acc (%)",
    "best acc (%)",
    durations.RUNNING_TIME,
    "age",
    "expected start",
    "tags",
    "note",
    "peak RSS (MiB)",
    "CPU (s)",
    "GPU peak (MiB)",
    "started",
    "finished",
]
# Columns left out when no run shown has a value in them.
OPTIONAL_COLUMNS = (
    "waiting for",
    "error",
    "tags",
    "note",
    "peak RSS (MiB)",
    "CPU (s)",
    "GPU peak (MiB)",
)
SHORT_ID = 8
MIB = 1024 * 1024


def short_id(run_id: str) -> str:
    """The first 8 characters of a run id (the full one is in the details and the CSV)."""
    return run_id[:SHORT_ID]


def final_acc(run: RunPublic) -> float | None:
    """The run's final accuracy (a fraction; `summary.final_acc`), None until it succeeded."""
    return RunSummaryView.of(run.summary).final_acc


def _pct(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


def _mib(value: int | None) -> float | None:
    return None if value is None else value / MIB


def first_line(note: str | None, width: int = 60) -> str:
    """A note's first line, cut to `width` characters (the whole note is in the details)."""
    text = (note or "").strip().splitlines()
    line = text[0] if text else ""
    more = len(text) > 1 or len(line) > width
    return (line[: width - 1] + "…") if len(line) > width else line + (" …" if more else "")


def eta(run: RunPublic, round_ms: list[float | None] | None, now: datetime, tz: tzinfo) -> str:
    """A running run's time left and finish time: `12 s (12:00)`; a dash otherwise."""
    secs = eta_seconds(run, round_ms) if run.status == RunStatus.RUNNING else None
    if secs is None:
        return DASH
    return f"{duration(secs)} ({local_time(now + timedelta(seconds=secs), tz, now)})"


def row(
    run: RunPublic, name: str, now: datetime, tz: tzinfo, round_ms: list[float | None] | None
) -> dict[str, Any]:
    """One run's cells, by TABLE_COLUMNS name."""
    position, start = queue_cells(run, now, tz)
    return {
        "run": name,
        "status": state(run),
        "progress": f"{max(run.current_round, 0)}/{run.rounds}",
        "final acc (%)": _pct(final_acc(run)),
        "seed": run.spec.get("seed"),
        durations.RUNNING_TIME: run_duration(run, now),
        "age": relative(run.created_at, now),
        "best acc (%)": _pct(run.best_acc),
        "last acc (%)": _pct(run.last_acc),
        "ETA": eta(run, round_ms, now, tz),
        "queue": position,
        "expected start": start,
        "waiting for": waiting_for(run),
        "error": failure(run),
        "tags": ", ".join(run.tags),
        "note": first_line(run.note),
        "peak RSS (MiB)": _mib(run.peak_rss_bytes),
        "CPU (s)": run.cpu_s,
        "GPU peak (MiB)": _mib(run.gpu_peak_bytes),
        "started": when(run.started_at, now, tz),
        "finished": when(run.finished_at, now, tz),
        "owner": run.owner,
        "id": short_id(run.id),
    }


def table(
    runs: list[RunPublic],
    now: datetime,
    tz: tzinfo,
    round_ms: dict[str, list[float | None]] | None = None,
    names: dict[str, str] | None = None,
) -> pd.DataFrame:
    """One row per run with the columns the Runs page shows (same order as `runs`).

    `names`: run id -> its name among the runs listed (default `run_name.compact_names`);
    `round_ms`: run id -> its rounds' times (a running run's ETA).
    """
    names = names if names is not None else compact_names(runs)
    times = round_ms or {}
    rows = [row(r, names.get(r.id, short_id(r.id)), now, tz, times.get(r.id)) for r in runs]
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def shown_columns(df: pd.DataFrame) -> list[str]:
    """The table's columns less "waiting for" when no run shown waits for a missing worker,
    and less "error" when none has failed."""
    empty = {c for c in OPTIONAL_COLUMNS if c not in df or not _has_values(df[c])}
    return [c for c in df.columns if c not in empty]


def _has_values(col: pd.Series) -> bool:
    return bool((col.notna() & (col != DASH) & (col != "")).any())


def common_fields(runs: list[RunPublic], limit: int = 6) -> str:
    """What every listed run shares (the names leave it out): `algorithm=fedgen, dataset=mnist,
    alpha=0.1`; the algorithm, dataset and α first, at most `limit` fields."""
    flats = [specdict.flatten(r.spec) for r in runs]
    if len(flats) < 2:
        return ""
    varying = set(specdict.differing_fields(flats))
    first = ("algorithm.name", "data.name", "partition.alpha")
    shared = {
        f: flats[0][f]
        for f in first
        if f in flats[0] and f not in varying and all(f in x for x in flats)
    }
    return specdict.group_label(dict(list(shared.items())[:limit])) if shared else ""


def details(run: RunPublic, now: datetime, tz: tzinfo) -> list[tuple[str, str]]:
    """(what, value) rows of one run with the full values the table shortens: the full id,
    each time as local time and ISO-8601 UTC, the whole note, who annotated it last."""

    def stamp(dt: datetime | None) -> str:
        if dt is None:
            return DASH
        local = dt.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z")
        return f"{local} · {iso_utc(dt)} · {relative(dt, now)}"

    out = [
        ("id", run.id),
        ("owner", run.owner),
        ("submitted", stamp(run.created_at)),
        ("started", stamp(run.started_at)),
        ("finished", stamp(run.finished_at)),
        ("spec hash", run.spec_hash or DASH),
    ]
    if run.sweep_id:
        out.append(("sweep", run.sweep_id))
    if run.annotated_by:
        out.append(("note/tags edited", f"by {run.annotated_by}, {stamp(run.annotated_at)}"))
    return out
