"""The events a webhook may subscribe to, declared once for the schemas, the queue and the sender."""

from __future__ import annotations

from typing import Literal, get_args

WebhookEvent = Literal["run.failed", "run.succeeded", "sweep.finished", "study.finished"]
EVENTS: tuple[str, ...] = get_args(WebhookEvent)
SWEEP_EVENTS: tuple[str, ...] = ("sweep.finished", "study.finished")
# Each event as the dashboard names it (its Settings page's checkboxes, the webhooks' lists).
EVENT_LABELS: dict[str, str] = {
    "run.failed": "Run failed",
    "run.succeeded": "Run succeeded",
    "sweep.finished": "Sweep finished",
    "study.finished": "Study finished",
}
# The "send test" delivery: always sent, never subscribed to.
TEST_EVENT = "test"
