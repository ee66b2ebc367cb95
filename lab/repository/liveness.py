"""When a running run's holder counts as gone before its lease expires (`Liveness`), and the SQL
conditions built from it: a run is unheld when queued, on an expired lease or with its holder gone.
Shared by the lease protocol (lab.repository.runs) and the dispatch state
(lab.repository.dispatch_state)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import (
    ColumnElement,
    and_,
    false,
    or_,
    select,
)

from lab.models import Run, Worker
from vocab.run_status import RunStatus


@dataclass(frozen=True)
class Liveness:
    """When a running run's holder counts as gone before its lease expires (see the docstring)."""

    heartbeat_s: float  # the run heartbeat's period: two missed and the run looks unattended
    worker_ttl_s: float  # a `workers` row not renewed for this long is a dead worker

    def holder_gone(self, now: datetime) -> ColumnElement[bool]:
        """SQL: the run is running, unattended, and its worker has no live row of its own."""
        holder_alive = (
            select(Worker.name)
            .where(
                Worker.name == Run.worker,
                Worker.heartbeat_at >= now - timedelta(seconds=self.worker_ttl_s),
                Worker.started_at <= Run.heartbeat_at,
            )
            .exists()
        )
        return and_(
            Run.status == RunStatus.RUNNING,
            Run.heartbeat_at < now - timedelta(seconds=2 * self.heartbeat_s),
            ~holder_alive,
        )


def holder_gone(now: datetime, live: Liveness | None) -> ColumnElement[bool]:
    return live.holder_gone(now) if live is not None else false()


def unheld(now: datetime, live: Liveness | None) -> ColumnElement[bool]:
    """Queued, or running on an expired lease or with its holder gone."""
    expired = and_(Run.status == RunStatus.RUNNING, Run.lease_expires_at < now)
    return or_(Run.status == RunStatus.QUEUED, expired, holder_gone(now, live))
