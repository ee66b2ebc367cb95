"""Where a run stands, in words: its state as people name it (claimed, cancelling beyond the
stored status), where it stopped, how long it ran or waited, its queue place and expected
start, and what a run no live worker can take waits for. No Streamlit.
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

from dashboard.times import DASH, duration, local_time, relative
from fedgen import durations
from vocab import run_status as status_words
from vocab.run_status import RunStatus
from vocab.schemas.runs import RunPublic


def state(run: RunPublic, status: str | None = None) -> str:
    """The run's state as people name it: `claimed` (a worker took it, no round stored yet),
    `cancelling` (running, a cancel asked), else the stored status (`status` overrides the
    run's own, e.g. the event stream's newer one)."""
    status = status or run.status
    if status == RunStatus.RUNNING:
        if run.cancel_requested:
            return "cancelling"
        if run.current_round < 0:
            return "claimed"
    return status


def stopped_at(run: RunPublic) -> str:
    """Where a run that ended early stopped (vocab.run_status.stopped_at's words)."""
    return status_words.stopped_at(run.current_round, run.rounds)


def run_duration(run: RunPublic, now: datetime) -> str:
    """Running time (fedgen.durations: started → finished, or to now while running); queued:
    waiting for ..."""
    if run.started_at is None:
        if run.status == RunStatus.QUEUED:
            return f"waiting {duration((now - run.created_at).total_seconds())}"
        return DASH
    return duration(((run.finished_at or now) - run.started_at).total_seconds())


def running_s(run: RunPublic, now: datetime) -> float | None:
    """Running time in seconds (fedgen.durations: started → finished, to now while running);
    None before it started."""
    return durations.between(run.started_at, run.finished_at or now)


def queue_cells(run: RunPublic, now: datetime, tz: tzinfo) -> tuple[str, str]:
    """(position, expected start) of a queued run as the API reports them; dashes otherwise.

    A run that no live worker can take (a waiting_reason) has no expected start, whatever
    the estimate says: it starts only once such a worker is up.
    """
    if run.status != RunStatus.QUEUED:
        return DASH, DASH
    position = DASH if run.queue_position is None else f"#{run.queue_position}"
    start, expected = DASH, run.expected_start
    if expected is not None and not run.waiting_reason:
        start = f"{relative(expected, now)} ({local_time(expected, tz, now)})"
    return position, start


# The API's waiting_reason wordings, said as what the run waits for (others are shown as they are).
_WAITING = [
    (re.compile(r"no live worker has dataset (?P<x>.+)"), "a worker with dataset {x}"),
    (re.compile(r"no live worker serves the (?P<x>.+) queue"), "a worker serving the {x} queue"),
]


def waiting_for(run: RunPublic) -> str:
    """What a run no live worker can take waits for (from its waiting_reason); a dash when
    some live worker could take it (or it is not waiting)."""
    reason = (run.waiting_reason or "").strip()
    if not reason:
        return DASH
    for pattern, text in _WAITING:
        m = pattern.fullmatch(reason)
        if m:
            return text.format(x=m["x"])
    return reason
