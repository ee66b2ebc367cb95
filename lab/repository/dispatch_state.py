"""Dispatch state of runs: the queue snapshot the dispatcher plans from, which runs were sent
(and forgetting sends), the dispatcher's lease, and cancelling runs whose worker is gone
(they lived in lab.repository.runs before; import them from here)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    and_,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from lab.db import db_now
from lab.fairshare import Active, LiveWorker, Snapshot, Waiting
from lab.models import DispatcherLease, Run, Worker
from lab.repository import webhooks as webhooks_repo
from lab.repository import workers as workers_repo
from lab.repository.liveness import Liveness, holder_gone, unheld
from lab.repository.rowcount import rows_matched
from vocab.run_status import Priority, RunStatus


def _needs_worker(now: datetime, live: Liveness | None) -> Any:
    # Queued, or running with an expired lease (its worker died or handed the lease back) or a
    # holder that is gone.
    # A trashed run is cancel-requested too; the explicit test keeps the trash out of any send.
    return and_(Run.cancel_requested.is_(False), Run.deleted_at.is_(None), unheld(now, live))


def queue_snapshot(
    session: Session,
    worker_ttl_s: float,
    now: datetime | None = None,
    live: Liveness | None = None,
) -> Snapshot:
    """Waiting runs, runs held by a live lease (and, with `live`, a live holder), live workers'
    slots per queue, owners' last start."""
    now = now or db_now(session)
    waiting = _waiting(session, now, live)
    rows = workers_repo.live_rows(session, worker_ttl_s, now)
    slots: dict[str, int] = {}
    for row in rows:
        slots[row.queue] = slots.get(row.queue, 0) + row.slots
    return Snapshot(
        now=now,
        waiting=waiting,
        active=_active(session, now, live),
        slots=slots,
        last_start=_last_start(session, {w.owner_id for w in waiting}),
        workers=live_workers(rows),
    )


def _waiting(session: Session, now: datetime, live: Liveness | None) -> list[Waiting]:
    """Runs that need a worker, with what the dispatcher needs to place them."""
    return [
        Waiting(
            id=r.id,
            queue=r.queue,
            owner_id=r.owner_id,
            priority=Priority(r.priority),
            created_at=r.created_at,
            rounds=r.rounds,
            current_round=r.current_round,
            resumed=r.status == RunStatus.RUNNING,
            dispatched_at=r.dispatched_at,
            dispatch_count=r.dispatch_count,
            next_dispatch_at=r.next_dispatch_at,
            dataset=r.dataset,
            dispatched_to=r.dispatched_to,
            any_worker=bool(r.download) or bool(r.root),
            needs_free_bytes=int(r.oom_free) if r.oom_count and r.oom_free is not None else None,
            oom_worker=r.oom_worker if r.oom_count else None,
        )
        for r in session.execute(
            select(
                Run.id,
                Run.queue,
                Run.owner_id,
                Run.priority,
                Run.created_at,
                Run.rounds,
                Run.current_round,
                Run.status,
                Run.dispatched_at,
                Run.dispatch_count,
                Run.next_dispatch_at,
                Run.dataset,
                Run.dispatched_to,
                Run.spec[("data", "download")].as_boolean().label("download"),
                Run.spec[("data", "root")].as_string().label("root"),
                Run.oom_count,
                # A float: bytes overflow SQL's INTEGER, and a double holds them exactly.
                Run.info[("oom", "free_bytes")].as_float().label("oom_free"),
                Run.info[("oom", "worker")].as_string().label("oom_worker"),
            ).where(_needs_worker(now, live))
        )
    ]


def _active(session: Session, now: datetime, live: Liveness | None) -> list[Active]:
    """Runs held by a live lease (and, with `live`, a live holder)."""
    return [
        Active(*row)
        for row in session.execute(
            select(
                Run.id,
                Run.queue,
                Run.owner_id,
                Run.started_at,
                Run.current_round,
                Run.rounds,
                Run.worker,
            ).where(
                Run.status == RunStatus.RUNNING,
                Run.lease_expires_at >= now,
                ~holder_gone(now, live),
            )
        )
    ]


def _last_start(session: Session, owners: set[Any]) -> dict[Any, datetime]:
    """Each owner's latest run start (fair share orders owners by it)."""
    if not owners:
        return {}
    rows = session.execute(
        select(Run.owner_id, func.max(Run.started_at))
        .where(Run.owner_id.in_(owners), Run.started_at.is_not(None))
        .group_by(Run.owner_id)
    )
    return {o: at for o, at in rows if at is not None}


def live_workers(rows: list[Worker]) -> list[LiveWorker]:
    """One LiveWorker per worker process (its rows, one per queue, merged)."""
    out = []
    for name, mine in workers_repo.by_name(rows).items():
        caps = next((r.capabilities for r in mine if r.capabilities), None)
        datasets = caps.get("datasets") if caps else None
        free = [
            int(d["free_bytes"])
            for d in (caps or {}).get("devices") or []
            if d.get("kind") == "cuda" and d.get("free_bytes") is not None
        ]
        out.append(
            LiveWorker(
                name=name,
                queues=frozenset(r.queue for r in mine),
                slots=max(r.slots for r in mine),
                datasets=frozenset(datasets) if datasets is not None else None,
                gpu_free_bytes=max(free) if free else None,
            )
        )
    return out


def mark_dispatched(
    session: Session,
    run_id: uuid.UUID,
    count: int,
    next_at: datetime,
    now: datetime,
    live: Liveness | None = None,
    *,
    to: str | None = None,
) -> bool:
    """Record a send (to worker `to`) of a run that still needs a worker and was sent `count`
    times since its last claim; False when someone else got there first."""
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.dispatch_count == count, _needs_worker(now, live))
        .values(
            dispatched_at=now, dispatch_count=count + 1, next_dispatch_at=next_at, dispatched_to=to
        )
        .execution_options(synchronize_session=False)
    )
    return rows_matched(session, stmt) == 1


def unmark_dispatched(session: Session, run_id: uuid.UUID, count: int) -> None:
    """Undo mark_dispatched after the send failed (broker down): the run waits unsent again."""
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.dispatch_count == count + 1)
        .values(
            dispatched_at=None,
            dispatch_count=count,
            next_dispatch_at=None,
            dispatched_to=None,
        )
        .execution_options(synchronize_session=False)
    )
    session.execute(stmt)


def forget_sends(session: Session) -> int:
    """Mark every queued run unsent (`fedgen-lab requeue`: the next pass sends them afresh)."""
    stmt = (
        update(Run)
        .where(Run.status == RunStatus.QUEUED)
        .values(dispatched_at=None, dispatch_count=0, next_dispatch_at=None, dispatched_to=None)
        .execution_options(synchronize_session=False)
    )
    return rows_matched(session, stmt)


def take_dispatch_lease(session: Session, holder: str, ttl_s: float) -> bool:
    """Become the one dispatcher for ttl_s (or renew); False while another holder has it."""
    now = db_now(session)
    stmt = (
        update(DispatcherLease)
        .where(
            DispatcherLease.id == 1,
            or_(
                DispatcherLease.expires_at.is_(None),
                DispatcherLease.expires_at < now,
                DispatcherLease.holder == holder,
            ),
        )
        .values(holder=holder, expires_at=now + timedelta(seconds=ttl_s))
        .execution_options(synchronize_session=False)
    )
    if rows_matched(session, stmt) == 1:
        return True
    if session.get(DispatcherLease, 1) is not None:
        return False
    # First pass ever: create the row, held. A concurrent creator wins the primary key.
    try:
        with session.begin_nested():
            session.add(
                DispatcherLease(id=1, holder=holder, expires_at=now + timedelta(seconds=ttl_s))
            )
    except IntegrityError:
        return False
    return True


def cancel_orphans(session: Session, now: datetime) -> int:
    """Mark cancelled the cancel-requested running runs whose worker died (lease expired)."""
    stmt = (
        update(Run)
        .where(
            Run.cancel_requested.is_(True),
            Run.status == RunStatus.RUNNING,
            Run.lease_expires_at < now,
        )
        .values(status=RunStatus.CANCELLED, finished_at=now, lease_token=None)
        .returning(Run.id)
        .execution_options(synchronize_session=False)
    )
    ids = list(session.scalars(stmt))
    for run_id in ids:
        webhooks_repo.enqueue_run_ended(session, run_id)  # each may end its sweep
    return len(ids)


def release_dispatch_lease(session: Session, holder: str) -> None:
    """Let the lease go (only if `holder` still has it)."""
    session.execute(
        update(DispatcherLease)
        .where(DispatcherLease.id == 1, DispatcherLease.holder == holder)
        .values(expires_at=None)
        .execution_options(synchronize_session=False)
    )
