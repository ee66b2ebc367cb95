"""The `workers` table: each worker process's row per queue (slots, heartbeat, capabilities)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from lab.db import db_now
from lab.models import Run, Worker
from lab.repository.rowcount import rows_matched
from vocab.run_status import RunStatus


def register(
    session: Session,
    name: str,
    queues: list[str],
    slots: int,
    started_at: datetime | None = None,
    *,
    host: str | None = None,
    capabilities: dict[str, Any] | None = None,
) -> datetime:
    """Insert or renew the rows of worker `name` (one per queue it consumes).

    `started_at`: when this process started. A process restarted under the same name (a slot
    the supervisor brought back) thus gets a new start time, and the runs its predecessor held
    (heartbeats older than that) are not taken for its own. `capabilities`: what it can run
    (worker.capabilities), renewed with the heartbeat.
    """
    now = db_now(session)
    since = started_at or now
    renewed = {
        "slots": slots,
        "heartbeat_at": now,
        "started_at": since,
        "host": host,
        "capabilities": capabilities,
    }
    for queue in queues:
        done = rows_matched(
            session,
            update(Worker)
            .where(Worker.name == name, Worker.queue == queue)
            .values(**renewed)
            .execution_options(synchronize_session=False),
        )
        if not done:
            session.add(Worker(name=name, queue=queue, **renewed))
    session.flush()
    return since


def set_capabilities(session: Session, name: str, capabilities: dict[str, Any]) -> None:
    """Replace what worker `name` says it can run (at once, not at its next renewal)."""
    session.execute(
        update(Worker)
        .where(Worker.name == name)
        .values(capabilities=capabilities)
        .execution_options(synchronize_session=False)
    )


def unregister(session: Session, name: str) -> None:
    """Remove the rows of worker `name` (it stops; its slots stop counting at once)."""
    session.execute(delete(Worker).where(Worker.name == name))


def served_queues(session: Session, ttl_s: float) -> set[str]:
    """Queue names a live worker (heartbeat within `ttl_s`) consumes now."""
    since = db_now(session) - timedelta(seconds=ttl_s)
    rows = session.scalars(select(Worker.queue).where(Worker.heartbeat_at >= since).distinct())
    return set(rows)


def live_rows(session: Session, ttl_s: float, now: datetime | None = None) -> list[Worker]:
    """The rows of live workers (heartbeat within `ttl_s` of the database's `now`)."""
    since = (now or db_now(session)) - timedelta(seconds=ttl_s)
    stmt = select(Worker).where(Worker.heartbeat_at >= since).order_by(Worker.name, Worker.queue)
    return list(session.scalars(stmt))


def by_name(rows: list[Worker]) -> dict[str, list[Worker]]:
    """Rows grouped per worker process (one row per queue it serves), names in order."""
    out: dict[str, list[Worker]] = {}
    for row in sorted(rows, key=lambda r: (r.name, r.queue)):
        out.setdefault(row.name, []).append(row)
    return out


def runs_held(session: Session, names: list[str]) -> list[Any]:
    """The running, leased runs of these workers: (id, worker, algorithm, dataset,
    current_round, rounds) rows."""
    stmt = select(
        Run.id, Run.worker, Run.algorithm, Run.dataset, Run.current_round, Run.rounds
    ).where(Run.status == RunStatus.RUNNING, Run.lease_token.is_not(None), Run.worker.in_(names))
    return list(session.execute(stmt))
