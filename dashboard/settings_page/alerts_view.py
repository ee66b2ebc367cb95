"""The Alerts page's tables, pure: webhook deliveries (the API's DeliveryPublic) in, text and
DataFrames out."""

from __future__ import annotations

from datetime import datetime, tzinfo

import pandas as pd

from dashboard.times import DASH, when
from vocab.schemas.webhooks import DeliveryPublic
from vocab.webhook_events import EVENT_LABELS

# The events a webhook can subscribe to (vocab/webhook_events.py), as the form shows them.
COLUMNS = ["created", "event", "subject", "status", "attempts", "HTTP", "error", "next attempt"]


def delivery_state(d: DeliveryPublic) -> str:
    """queued (not tried yet), retrying (tried, will try again), delivered or failed."""
    if d.status == "pending":
        return "retrying" if d.attempts > 0 else "queued"
    return d.status


def events_text(events: list[str]) -> str:
    """`Run failed, Sweep finished`."""
    return ", ".join(EVENT_LABELS.get(e, e) for e in events) or DASH


def deliveries_table(rows: list[DeliveryPublic], now: datetime, tz: tzinfo) -> pd.DataFrame:
    """One row per delivery, newest first as given: when, what, state, attempts, last answer."""
    out = [
        {
            "created": when(d.created_at, now, tz),
            "event": d.event or DASH,
            "subject": d.subject[:8] or DASH,
            "status": delivery_state(d),
            "attempts": d.attempts,
            "HTTP": str(d.last_status_code) if d.last_status_code else DASH,
            "error": (d.last_error or DASH).splitlines()[0][:200],
            "next attempt": when(d.next_attempt_at, now, tz) if d.status == "pending" else DASH,
        }
        for d in rows
    ]
    return pd.DataFrame(out, columns=COLUMNS)
