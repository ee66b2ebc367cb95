"""Pure helpers of the Runs page: readable times, durations, ETAs, queue fields, counts.

Timestamps show both how long ago (or how soon) and the wall-clock time in the viewer's
time zone. A run's state names the issue's states beyond the stored status (claimed,
cancelling); a failed run's error is said with the round it stopped at. A running run's ETA is its own median round time times the rounds left (the
median, so one slow first round with start-up work does not skew it). No Streamlit.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pandas as pd

from dashboard.run_name import compact_names
from fedgen import specdict
from fedgen import status as status_words
from fedgen.status import RUN_STATUSES

DASH = "—"
# What a researcher scans first comes first and fits 1,280 px (the compact name is pinned):
# status, accuracy, seed, where it stands (round, ETA, queue, what it waits for), the error.
TABLE_COLUMNS = [
    "run", "status", "final acc (%)", "seed", "progress", "ETA", "queue", "waiting for",
    "error", "last acc (%)", "best acc (%)", "duration", "age", "expected start",
    "tags", "note", "peak RSS (MiB)", "CPU (s)", "GPU peak (MiB)",
    "started", "finished", "owner", "id",
]  # fmt: skip
# Columns left out when no run shown has a value in them.
OPTIONAL_COLUMNS = (
    "waiting for", "error", "tags", "note", "peak RSS (MiB)", "CPU (s)", "GPU peak (MiB)",
)  # fmt: skip
SHORT_ID = 8
MIB = 1024 * 1024
# The CSV: real values (numbers, ISO-8601 UTC times, full ids; empty where there is none).
CSV_COLUMNS = [
    "id", "run", "status", "algorithm", "dataset", "seed", "current_round", "rounds",
    "final_acc_pct", "best_acc_pct", "last_acc_pct", "duration_s", "created_at", "started_at",
    "finished_at", "owner", "sweep_id", "tags", "note", "error", "peak_rss_bytes", "cpu_s",
    "gpu_peak_bytes",
]  # fmt: skip


def zone(name: str | None) -> tzinfo:
    """The viewer's time zone by IANA name; UTC when unknown."""
    try:
        return ZoneInfo(name) if name else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def parse_ts(value: Any) -> datetime | None:
    """An API timestamp (ISO 8601; naive means UTC) as an aware datetime, or None."""
    if not value:
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def duration(seconds: float | None) -> str:
    """`42 s`, `3 min 05 s`, `2 h 07 min`, `3 d 4 h`; a dash for None."""
    if seconds is None or seconds != seconds:
        return DASH
    s = max(int(round(seconds)), 0)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def relative(dt: datetime, now: datetime) -> str:
    """`just now`, `42 s ago`, `5 min ago`, `in 3 h 02 min`, `2 d 4 h ago`."""
    delta = (dt - now).total_seconds()
    s = abs(int(round(delta)))
    if s < 5:
        return "just now"
    if s < 60:
        text = f"{s} s"
    elif s < 3600:
        text = f"{s // 60} min"
    else:
        text = duration(s)
    return f"in {text}" if delta > 0 else f"{text} ago"


def local_time(dt: datetime, tz: tzinfo, now: datetime) -> str:
    """`14:03` today, `Nov 30 14:03` another day, `2025-11-30 14:03` another year."""
    loc, today = dt.astimezone(tz), now.astimezone(tz)
    if loc.date() == today.date():
        return loc.strftime("%H:%M")
    if loc.year == today.year:
        return loc.strftime("%b %d %H:%M")
    return loc.strftime("%Y-%m-%d %H:%M")


def when(value: Any, now: datetime, tz: tzinfo) -> str:
    """A timestamp for people: `5 min ago (14:03)`; a dash when missing."""
    dt = parse_ts(value)
    return DASH if dt is None else f"{relative(dt, now)} ({local_time(dt, tz, now)})"


def median_round_s(round_ms: list[float | None] | None) -> float | None:
    """The median time of the run's rounds after round 0 (round 0 only evaluates), in s."""
    vals = [float(v) for v in (round_ms or [])[1:] if v is not None and v == v]
    return statistics.median(vals) / 1000.0 if vals else None


def eta_seconds(run: dict[str, Any], round_ms: list[float | None] | None) -> float | None:
    """Seconds until a running run finishes: median round time x rounds left."""
    per_round = median_round_s(round_ms)
    rounds, current = int(run.get("rounds") or 0), int(run.get("current_round") or 0)
    if per_round is None or not rounds:
        return None
    return per_round * max(rounds - current, 0)


def run_duration(run: dict[str, Any], now: datetime) -> str:
    """Run time (start to finish, or to now while running); queued: waiting for ..."""
    started, finished = parse_ts(run.get("started_at")), parse_ts(run.get("finished_at"))
    if started is None:
        created = parse_ts(run.get("created_at"))
        if run.get("status") == "queued" and created is not None:
            return f"waiting {duration((now - created).total_seconds())}"
        return DASH
    return duration(((finished or now) - started).total_seconds())


def queue_cells(run: dict[str, Any], now: datetime, tz: tzinfo) -> tuple[str, str]:
    """(position, expected start) of a queued run as the API reports them; dashes otherwise.

    A run that no live worker can take (a waiting_reason) has no expected start, whatever
    the estimate says: it starts only once such a worker is up.
    """
    if run.get("status") != "queued":
        return DASH, DASH
    pos = run.get("queue_position")
    position = f"#{int(pos)}" if isinstance(pos, int | float) and pos == pos else DASH
    expected = run.get("expected_start")
    start = DASH
    if expected is not None and not run.get("waiting_reason"):
        dt = parse_ts(expected)
        start = f"{relative(dt, now)} ({local_time(dt, tz, now)})" if dt else str(expected)
    return position, start


# The API's waiting_reason wordings, said as what the run waits for (others are shown as they are).
_WAITING = [
    (re.compile(r"no live worker has dataset (?P<x>.+)"), "a worker with dataset {x}"),
    (re.compile(r"no live worker serves the (?P<x>.+) queue"), "a worker serving the {x} queue"),
]


def waiting_for(run: dict[str, Any]) -> str:
    """What a run no live worker can take waits for (from its waiting_reason); a dash when
    some live worker could take it (or it is not waiting)."""
    reason = str(run.get("waiting_reason") or "").strip()
    if not reason:
        return DASH
    for pattern, text in _WAITING:
        m = pattern.fullmatch(reason)
        if m:
            return text.format(x=m["x"])
    return reason


def state(run: dict[str, Any], status: str | None = None) -> str:
    """The run's state as people name it: `claimed` (a worker took it, no round stored yet),
    `cancelling` (running, a cancel asked), else the stored status (`status` overrides the
    run's own, e.g. the event stream's newer one)."""
    status = str(status or run.get("status") or "?")
    if status == "running":
        if run.get("cancel_requested"):
            return "cancelling"
        if int(run.get("current_round") if run.get("current_round") is not None else -1) < 0:
            return "claimed"
    return status


def stopped_at(run: dict[str, Any]) -> str:
    """Where a run that ended early stopped (fedgen.status.stopped_at's words)."""
    current = run.get("current_round")
    return status_words.stopped_at(
        None if current is None else int(current), int(run.get("rounds") or 0)
    )


def split_error(error: str | None) -> tuple[str, str | None]:
    """(message, traceback or None) of a run's `error`: the worker stores the exception's line,
    then a blank line and the end of its traceback."""
    text = str(error or "").strip()
    head, sep, rest = text.partition("\n\nTraceback")
    if sep:
        return head.strip(), ("Traceback" + rest).strip()
    return text, None


def failure(run: dict[str, Any]) -> str:
    """A failed run's error in one line with where it stopped: `in round 3 of 6: RuntimeError:
    ...`; a dash for a run that has not failed."""
    if run.get("status") != "failed":
        return DASH
    message = split_error(run.get("error"))[0].splitlines()
    return f"{stopped_at(run)}: {message[0] if message else 'no error message recorded'}"


def full_failure(run: dict[str, Any]) -> str:
    """A failed run's whole error message (every line, no traceback) with where it stopped:
    what the table's one-line, width-cut "error" cell leaves out."""
    message = split_error(run.get("error"))[0] or "no error message recorded"
    return f"Failed {stopped_at(run)}:\n{message}"


def shown_columns(df: pd.DataFrame) -> list[str]:
    """The table's columns less "waiting for" when no run shown waits for a missing worker,
    and less "error" when none has failed."""
    empty = {c for c in OPTIONAL_COLUMNS if c not in df or not _has_values(df[c])}
    return [c for c in df.columns if c not in empty]


def _has_values(col: pd.Series) -> bool:
    return bool((col.notna() & (col != DASH) & (col != "")).any())


def status_counts(runs: list[dict[str, Any]]) -> dict[str, int]:
    """Runs per status, in the lifecycle order, statuses with no run left out."""
    counts = Counter(str(r.get("status")) for r in runs)
    return {s: counts[s] for s in RUN_STATUSES if counts[s]}


def counts_line(counts: dict[str, int]) -> str:
    """`2 queued · 1 running · 40 succeeded` (or `no runs`)."""
    return " · ".join(f"{n} {s}" for s, n in counts.items()) or "no runs"


def _pct(value: Any) -> float | None:
    return None if value is None else 100.0 * float(value)


def _pct4(value: Any) -> float | None:
    # Percent to 4 decimals: the fraction's float error (87.64999999999999) left out of the CSV.
    pct = _pct(value)
    return None if pct is None else round(pct, 4)


def _mib(value: Any) -> float | None:
    return None if value is None else float(value) / MIB


def final_acc(run: dict[str, Any]) -> float | None:
    """The run's final accuracy (a fraction; `summary.final_acc`), None until it succeeded."""
    value = (run.get("summary") or {}).get("final_acc")
    return None if value is None else float(value)


def short_id(run_id: Any) -> str:
    """The first 8 characters of a run id (the full one is in the details and the CSV)."""
    return str(run_id)[:SHORT_ID]


def age(value: Any, now: datetime) -> str:
    """How long ago: `5 min ago`; a dash when missing."""
    dt = parse_ts(value)
    return DASH if dt is None else relative(dt, now)


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


def first_line(note: Any, width: int = 60) -> str:
    """A note's first line, cut to `width` characters (the whole note is in the details)."""
    text = str(note or "").strip().splitlines()
    line = text[0] if text else ""
    more = len(text) > 1 or len(line) > width
    return (line[: width - 1] + "…") if len(line) > width else line + (" …" if more else "")


def iso_utc(value: Any) -> str | None:
    """An API timestamp as ISO-8601 UTC (`2026-12-01T12:00:00Z`), None when missing."""
    dt = parse_ts(value)
    return None if dt is None else dt.astimezone(UTC).isoformat().replace("+00:00", "Z")


def duration_s(run: dict[str, Any], now: datetime) -> float | None:
    """Seconds from start to finish (to now while running); None before it started."""
    started, finished = parse_ts(run.get("started_at")), parse_ts(run.get("finished_at"))
    if started is None:
        return None
    return round(((finished or now) - started).total_seconds(), 3)


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
        {"seed": "Int64", "current_round": "Int64", "rounds": "Int64",
         "peak_rss_bytes": "Int64", "gpu_peak_bytes": "Int64"}
    )  # fmt: skip


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


def parse_tags(text: str) -> list[str]:
    """Tags typed as `a, b, c`: stripped, empty ones dropped, each once, in order."""
    return list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))


def where_clauses(text: str) -> list[str]:
    """`algorithm.gen_batch_size=32; partition.alpha=0.1` -> the API's `where` clauses."""
    return [c.strip() for c in text.replace("\n", ";").split(";") if c.strip()]


def filter_problems(detail: Any, fallback: str) -> str:
    """The API's 422 on the filters as Markdown, one line per problem ("where: alpha is not a
    spec field; did you mean partition.alpha?"), not only the first; `fallback` without any."""
    items = detail if isinstance(detail, list) else []
    lines = [str(d["msg"]) for d in items if isinstance(d, dict) and d.get("msg")]
    # Field names hold `_` and `*` would start emphasis: escaped, they read as typed.
    escaped = [re.sub(r"([\\`*_\[\]<>#|~])", r"\\\1", line) for line in lines or [fallback]]
    return "Check the filters:\n" + "\n".join(f"- {line}" for line in escaped)


def may_change(run: dict[str, Any], me: dict[str, Any] | None) -> bool:
    """Whether the signed-in user may cancel, delete or annotate the run (owner or admin)."""
    if not me:
        return False
    return bool(me.get("is_admin")) or (
        me.get("name") is not None and run.get("owner") == me.get("name")
    )


def common_fields(runs: list[dict[str, Any]], limit: int = 6) -> str:
    """What every listed run shares (the names leave it out): `algorithm=fedgen, dataset=mnist,
    alpha=0.1`; the algorithm, dataset and α first, at most `limit` fields."""
    flats = [specdict.flatten(r.get("spec") or {}) for r in runs]
    if len(flats) < 2:
        return ""
    varying = set(specdict.differing_fields(flats))
    first = ("algorithm.name", "data.name", "partition.alpha")
    shared = {f: flats[0][f] for f in first if f in flats[0] and f not in varying
              and all(f in x for x in flats)}  # fmt: skip
    return specdict.group_label(dict(list(shared.items())[:limit])) if shared else ""


def compare_params(run_ids: list[str]) -> dict[str, str]:
    """The Compare page's query string for these runs (`?runs=a,b,c`)."""
    return {"runs": ",".join(run_ids)}


def recent_failures(
    runs: list[dict[str, Any]], now: datetime, limit: int = 5
) -> tuple[list[dict[str, Any]], int, bool]:
    """(the newest failed runs, at most `limit`; how many failed in all; whether one failed in
    the last 24 h): what the Runs page says above its table."""
    failed = [r for r in runs if r.get("status") == "failed"]
    failed.sort(key=lambda r: parse_ts(r.get("finished_at")) or now, reverse=True)
    recent = any(
        (now - (parse_ts(r.get("finished_at")) or now)).total_seconds() < 86_400 for r in failed
    )
    return failed[:limit], len(failed), recent
