"""The Alerts page's tables, pure: webhooks and deliveries (API dicts) in, text and DataFrames out."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

import pandas as pd

from dashboard.times import DASH, when
from fedgen.webhook_events import EVENT_LABELS

# The events a webhook can subscribe to (fedgen/webhook_events.py), as the form shows them.
COLUMNS = ["created", "event", "subject", "status", "attempts", "HTTP", "error", "next attempt"]


def delivery_state(d: dict[str, Any]) -> str:
    """queued (not tried yet), retrying (tried, will try again), delivered or failed."""
    if d.get("status") == "pending":
        return "retrying" if int(d.get("attempts") or 0) > 0 else "queued"
    return str(d.get("status") or DASH)


def events_text(events: list[str]) -> str:
    """`Run failed, Sweep finished`."""
    return ", ".join(EVENT_LABELS.get(e, e) for e in events) or DASH


def deliveries_table(rows: list[dict[str, Any]], now: datetime, tz: tzinfo) -> pd.DataFrame:
    """One row per delivery, newest first as given: when, what, state, attempts, last answer."""
    out = [
        {
            "created": when(d.get("created_at"), now, tz),
            "event": d.get("event") or DASH,
            "subject": str(d.get("subject") or "")[:8] or DASH,
            "status": delivery_state(d),
            "attempts": int(d.get("attempts") or 0),
            "HTTP": str(d["last_status_code"]) if d.get("last_status_code") else DASH,
            "error": (d.get("last_error") or DASH).splitlines()[0][:200],
            "next attempt": (
                when(d.get("next_attempt_at"), now, tz) if d.get("status") == "pending" else DASH
            ),
        }
        for d in rows
    ]
    return pd.DataFrame(out, columns=COLUMNS)
