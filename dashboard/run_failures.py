"""A failed run's error as the pages say it: one line with the round it stopped at for the
table, the whole message for the list above it, the traceback apart. No Streamlit.
"""

from __future__ import annotations

from datetime import datetime

from dashboard.run_state import stopped_at
from dashboard.times import DASH
from vocab.run_status import RunStatus
from vocab.schemas.runs import RunPublic


def split_error(error: str | None) -> tuple[str, str | None]:
    """(message, traceback or None) of a run's `error`: the worker stores the exception's line,
    then a blank line and the end of its traceback."""
    text = (error or "").strip()
    head, sep, rest = text.partition("\n\nTraceback")
    if sep:
        return head.strip(), ("Traceback" + rest).strip()
    return text, None


def failure(run: RunPublic) -> str:
    """A failed run's error in one line with where it stopped: `in round 3 of 6: RuntimeError:
    ...`; a dash for a run that has not failed."""
    if run.status != RunStatus.FAILED:
        return DASH
    message = split_error(run.error)[0].splitlines()
    return f"{stopped_at(run)}: {message[0] if message else 'no error message recorded'}"


def full_failure(run: RunPublic) -> str:
    """A failed run's whole error message (every line, no traceback) with where it stopped:
    what the table's one-line, width-cut "error" cell leaves out."""
    message = split_error(run.error)[0] or "no error message recorded"
    return f"Failed {stopped_at(run)}:\n{message}"


def recent_failures(
    runs: list[RunPublic], now: datetime, limit: int = 5
) -> tuple[list[RunPublic], int, bool]:
    """(the newest failed runs, at most `limit`; how many failed in all; whether one failed in
    the last 24 h): what the Runs page says above its table."""
    failed = sorted(
        (r for r in runs if r.status == RunStatus.FAILED),
        key=lambda r: r.finished_at or now,
        reverse=True,
    )
    recent = any((now - (r.finished_at or now)).total_seconds() < 86_400 for r in failed)
    return failed[:limit], len(failed), recent
