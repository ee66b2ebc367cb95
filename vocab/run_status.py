"""Run statuses and queue priorities: the lists the database, the API, the worker and the
dashboard share.

A run is `queued` until a worker claims it, `running` while it holds the lease, and
ends `succeeded`, `failed` or `cancelled`. It waits in its queue at a priority tier: `high`
before `normal` before `low`. Imports only the standard library.
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """A run's status; each member is its own string (`RunStatus.QUEUED == "queued"`), so the
    database column, JSON and query strings hold the plain word."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"  # the one successful end ("finished" is not a status)
    FAILED = "failed"
    CANCELLED = "cancelled"


RUN_STATUSES: tuple[RunStatus, ...] = tuple(RunStatus)
# Still to change: the dashboard refreshes while any run is active.
ACTIVE: tuple[RunStatus, ...] = (RunStatus.QUEUED, RunStatus.RUNNING)
# End states: nothing changes a run's status after one of these.
TERMINAL: tuple[RunStatus, ...] = (
    RunStatus.SUCCEEDED,
    RunStatus.FAILED,
    RunStatus.CANCELLED,
)


class Priority(StrEnum):
    """A run's queue priority: high goes before normal before low, each tier shared
    round-robin across owners; high is for admins only."""

    # The API documents this docstring (OpenAPI). Each member is its word: the request and
    # response field `priority` and the database column hold it; lab.fairshare ranks them.

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"


PRIORITIES: tuple[Priority, ...] = tuple(Priority)


def stopped_at(current_round: int | None, rounds: int) -> str:
    """Where a run that ended early stopped, in the words every page and alert uses:
    `in round 3 of 30`, `before round 0`, or `after its last round (30)`. `current_round` is
    the last round stored; the run was computing the one after it."""
    last = -1 if current_round is None else int(current_round)
    if last < 0:
        return "before round 0"
    if rounds and last >= rounds:
        return f"after its last round ({rounds})"
    return f"in round {last + 1} of {rounds}" if rounds else f"in round {last + 1}"
