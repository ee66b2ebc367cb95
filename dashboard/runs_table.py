"""The Runs table: one row per run with the columns a researcher scans first, the columns
left out when empty, what the runs listed share, and one run's details rows. No Streamlit.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

import pandas as pd

from dashboard.run_eta import eta_seconds
from dashboard.run_failures import failure
from dashboard.run_name import compact_names
from dashboard.run_state import queue_cells, run_duration, state, waiting_for
from dashboard.times import DASH, age, duration, iso_utc, local_time, parse_ts, relative, when
from fedgen import specdict

# What a researcher scans first comes first and fits 1,280 px (the compact name is pinned):
# status, accuracy, seed, where it stands (round, ETA, queue, what it waits for), the error.
TABLE_COLUMNS = [
    "run",
    "status",
    "final acc (%)",
    "seed",
    "progress",
    "ETA",
    "queue",
    "waiting for",
    "error",
    "last acc (%)",
    "best acc (%)",
    "duration",
    "age",
    "expected start",
    "tags",
    "note",
    "peak RSS (MiB)",
    "CPU (s)",
    "GPU peak (MiB)",
    "started",
    "finished",
    "owner",
    "id",
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


def short_id(run_id: Any) -> str:
    """The first 8 characters of a run id (the full one is in the details and the CSV)."""
    return str(run_id)[:SHORT_ID]


def final_acc(run: dict[str, Any]) -> float | None:
    """The run's final accuracy (a fraction; `summary.final_acc`), None until it succeeded."""
    value = (run.get("summary") or {}).get("final_acc")
    return None if value is None else float(value)


def _pct(value: Any) -> float | None:
    return None if value is None else 100.0 * float(value)


def _mib(value: Any) -> float | None:
    return None if value is None else float(value) / MIB


def first_line(note: Any, width: int = 60) -> str:
    """A note's first line, cut to `width` characters (the whole note is in the details)."""
    text = str(note or "").strip().splitlines()
    line = text[0] if text else ""
    more = len(text) > 1 or len(line) > width
    return (line[: width - 1] + "…") if len(line) > width else line + (" …" if more else "")


def table(
    runs: list[dict[str, Any]],
    now: datetime,
    tz: tzinfo,
    round_ms: dict[str, list[float | None]] | None = None,
    names: dict[str, str] | None = None,
) -> pd.DataFrame:
    """One row per run with the columns the Runs page shows (same order as `runs`).

    `names`: run id -> its name among the runs listed (default `run_name.compact_names`).
    """
    names = names if names is not None else compact_names(runs)
    rows = []
    for r in runs:
        rid, status = str(r.get("id")), r.get("status")
        rounds, current = int(r.get("rounds") or 0), int(r.get("current_round") or 0)
        position, start = queue_cells(r, now, tz)
        eta = DASH
        if status == "running":
            secs = eta_seconds(r, (round_ms or {}).get(rid))
            if secs is not None:
                done = now + pd.Timedelta(seconds=secs)
                eta = f"{duration(secs)} ({local_time(done, tz, now)})"
        rows.append(
            {
                "run": names.get(rid, short_id(rid)),
                "status": state(r),
                "progress": f"{max(current, 0)}/{rounds}",
                "final acc (%)": _pct(final_acc(r)),
                "seed": specdict.get_dotted(r.get("spec") or {}, "seed"),
                "duration": run_duration(r, now),
                "age": age(r.get("created_at"), now),
                "best acc (%)": _pct(r.get("best_acc")),
                "last acc (%)": _pct(r.get("last_acc")),
                "ETA": eta,
                "queue": position,
                "expected start": start,
                "waiting for": waiting_for(r),
                "error": failure(r),
                "tags": ", ".join(r.get("tags") or []),
                "note": first_line(r.get("note")),
                "peak RSS (MiB)": _mib(r.get("peak_rss_bytes")),
                "CPU (s)": r.get("cpu_s"),
                "GPU peak (MiB)": _mib(r.get("gpu_peak_bytes")),
                "started": when(r.get("started_at"), now, tz),
                "finished": when(r.get("finished_at"), now, tz),
                "owner": r.get("owner"),
                "id": short_id(rid),
            }
        )
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def shown_columns(df: pd.DataFrame) -> list[str]:
    """The table's columns less "waiting for" when no run shown waits for a missing worker,
    and less "error" when none has failed."""
    empty = {c for c in OPTIONAL_COLUMNS if c not in df or not _has_values(df[c])}
    return [c for c in df.columns if c not in empty]


def _has_values(col: pd.Series) -> bool:
    return bool((col.notna() & (col != DASH) & (col != "")).any())


def common_fields(runs: list[dict[str, Any]], limit: int = 6) -> str:
    """What every listed run shares (the names leave it out): `algorithm=fedgen, dataset=mnist,
    alpha=0.1`; the algorithm, dataset and α first, at most `limit` fields."""
    flats = [specdict.flatten(r.get("spec") or {}) for r in runs]
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


def details(run: dict[str, Any], now: datetime, tz: tzinfo) -> list[tuple[str, str]]:
    """(what, value) rows of one run with the full values the table shortens: the full id,
    each time as local time and ISO-8601 UTC, the whole note, who annotated it last."""

    def stamp(value: Any) -> str:
        dt = parse_ts(value)
        if dt is None:
            return DASH
        local = dt.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z")
        return f"{local} · {iso_utc(dt)} · {relative(dt, now)}"

    out = [
        ("id", str(run.get("id"))),
        ("owner", str(run.get("owner") or DASH)),
        ("submitted", stamp(run.get("created_at"))),
        ("started", stamp(run.get("started_at"))),
        ("finished", stamp(run.get("finished_at"))),
        ("spec hash", str(run.get("spec_hash") or DASH)),
    ]
    if run.get("sweep_id"):
        out.append(("sweep", str(run["sweep_id"])))
    if run.get("annotated_by"):
        out.append(
            ("note/tags edited", f"by {run['annotated_by']}, {stamp(run.get('annotated_at'))}")
        )
    return out
