"""Webhook events are declared once (vocab.webhook_events): the API's schema, the queue and
the dashboard's labels read that declaration; the dashboard spells no event of its own."""

from __future__ import annotations

import re
from pathlib import Path

from dashboard.settings_page.alerts_view import events_text
from vocab.webhook_events import EVENT_LABELS, EVENTS, SWEEP_EVENTS

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"


def test_every_event_has_one_label() -> None:
    """The labels name exactly the declared events, in their order."""
    # Assert
    assert tuple(EVENT_LABELS) == EVENTS
    assert set(SWEEP_EVENTS) <= set(EVENTS)
    assert len(set(EVENT_LABELS.values())) == len(EVENTS)


def test_dashboard_reads_the_declared_labels() -> None:
    """The webhooks list shows the declared labels; an unknown event stays as sent."""
    # Execute
    shown = events_text(["run.failed", "sweep.finished", "run.paused"])
    # Assert
    assert shown == f"{EVENT_LABELS['run.failed']}, {EVENT_LABELS['sweep.finished']}, run.paused"


def test_dashboard_declares_no_labels() -> None:
    """No dashboard module maps an event name to text of its own (a `"run.failed": ...` key)."""
    # Execute
    keyed = re.compile(r"""["']([a-z]+\.[a-z]+)["']\s*:""")
    declared = {
        str(path.relative_to(DASHBOARD)): sorted(set(keyed.findall(text)) & set(EVENTS))
        for path in DASHBOARD.rglob("*.py")
        if (text := path.read_text(encoding="utf-8"))
    }
    # Assert
    assert {p: names for p, names in declared.items() if names} == {}
