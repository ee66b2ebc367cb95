"""A run's three durations, each defined once, with the name every page, API field, CLI line
and docs/metrics.md give it.

- total time: from submission (queued) to the end (finished), waiting in the queue included;
- running time: from the start of the run (a worker claimed it; the CLI: the runner began)
  to its end: loading data, building models, every round, checkpoints and storing them;
- training time: the rounds themselves, each round's `time_total_ms` (local training, the
  server's step and evaluation) summed over the stored rounds; no start-up, no storage.

So training time <= running time <= total time. No clock is read here: callers pass the
timestamps or the rounds' times.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

TOTAL_TIME = "total time"
RUNNING_TIME = "running time"
TRAINING_TIME = "training time"

# What each includes, for a page's help and the API's field descriptions.
HELP: dict[str, str] = {
    TOTAL_TIME: "queued → finished: waiting in the queue included",
    RUNNING_TIME: (
        "started → finished (to now while running): data loading, every round, checkpoints "
        "and storing them; not the wait in the queue"
    ),
    TRAINING_TIME: (
        "the rounds' own time summed (each round's local training, server step and "
        "evaluation, time_total_ms): no start-up, no storage, no waiting"
    ),
}


def between(start: datetime | None, end: datetime | None) -> float | None:
    """Seconds from `start` to `end`; None when either is missing (not started, not ended)."""
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)


def training_s(round_ms: Iterable[float | None]) -> float:
    """Training time in seconds from the rounds' `time_total_ms` (missing or NaN ones: 0)."""
    total = 0.0
    for ms in round_ms:
        if ms is not None and math.isfinite(ms):
            total += float(ms)
    return total / 1000.0


def format_s(seconds: float | None) -> str:
    """'8.7 s', '–' when there is no value: how the CLI and Live write a duration."""
    return "–" if seconds is None or math.isnan(seconds) else f"{seconds:.1f} s"
