"""Where a run stands, in words: its state as people name it (claimed, cancelling beyond the
stored status), where it stopped, how long it ran or waited, its queue place and expected
start, and what a run no live worker can take waits for. No Streamlit.
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo
from typing import Any

from dashboard.times import DASH, duration, local_time, parse_ts, relative
from fedgen import status as status_words


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


def run_duration(run: dict[str, Any], now: datetime) -> str:
    """Run time (start to finish, or to now while running); queued: waiting for ..."""
    started, finished = parse_ts(run.get("started_at")), parse_ts(run.get("finished_at"))
    if started is None:
        created = parse_ts(run.get("created_at"))
        if run.get("status") == "queued" and created is not None:
            return f"waiting {duration((now - created).total_seconds())}"
        return DASH
    return duration(((finished or now) - started).total_seconds())


def duration_s(run: dict[str, Any], now: datetime) -> float | None:
    """Seconds from start to finish (to now while running); None before it started."""
    started, finished = parse_ts(run.get("started_at")), parse_ts(run.get("finished_at"))
    if started is None:
        return None
    return round(((finished or now) - started).total_seconds(), 3)


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
