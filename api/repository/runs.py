"""Runs: create, read, filter, cancel, delete, and the worker's lease protocol."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, and_, case, delete, func, or_, select, update
from sqlalchemy.orm import Session, contains_eager

from api.models import Run, User, utcnow
from fedgen.status import TERMINAL


@dataclass(frozen=True)
class RunFilters:
    """Filters of GET /runs; None means no filter."""

    status: str | None = None
    algorithm: str | None = None
    dataset: str | None = None
    tag: str | None = None
    owner: str | None = None
    sweep_id: uuid.UUID | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


def tags_csv(tags: list[str]) -> str:
    """The stored form of a tag list: ',a,b,' (a LIKE on ',a,' matches one tag exactly)."""
    return "," + ",".join(t.replace(",", " ") for t in tags) + ","


def create_run(
    session: Session,
    *,
    spec: dict[str, Any],
    spec_hash: str,
    owner_id: uuid.UUID,
    queue: str,
    sweep_id: uuid.UUID | None = None,
    versions: dict[str, Any] | None = None,
) -> Run:
    """Insert a queued run (flushed, not committed)."""
    run = Run(
        spec=spec,
        spec_hash=spec_hash,
        algorithm=spec["algorithm"]["name"],
        dataset=spec["data"]["name"],
        tags_csv=tags_csv(spec.get("tags", [])),
        rounds=spec["rounds"],
        queue=queue,
        owner_id=owner_id,
        sweep_id=sweep_id,
        status="queued",
        attempt=0,
        current_round=-1,
        cancel_requested=False,
        versions=versions or {},
    )
    session.add(run)
    session.flush()
    return run


def _with_owner() -> Select[Run]:
    # One query: the owner row comes with the run (Run.owner is then loaded, never lazily).
    return select(Run).join(Run.owner).options(contains_eager(Run.owner))


def get_run(session: Session, run_id: uuid.UUID) -> Run | None:
    """A run (its owner loaded), or None."""
    return session.scalar(_with_owner().where(Run.id == run_id))


def get_runs(session: Session, run_ids: list[uuid.UUID]) -> list[Run]:
    """Several runs (owners loaded), in the order asked (missing ids left out)."""
    by_id = {r.id: r for r in session.scalars(_with_owner().where(Run.id.in_(run_ids)))}
    return [by_id[i] for i in run_ids if i in by_id]


def list_runs(
    session: Session, filters: RunFilters, limit: int, offset: int
) -> tuple[list[Run], int]:
    """One page of runs, newest first, and the total count under the filters."""
    conds = []
    f = filters
    if f.status:
        conds.append(Run.status == f.status)
    if f.algorithm:
        conds.append(Run.algorithm == f.algorithm)
    if f.dataset:
        conds.append(Run.dataset == f.dataset)
    if f.tag:
        conds.append(Run.tags_csv.contains(f",{f.tag},", autoescape=True))
    if f.owner:
        conds.append(User.name == f.owner)
    if f.sweep_id:
        conds.append(Run.sweep_id == f.sweep_id)
    if f.created_after:
        conds.append(Run.created_at >= f.created_after)
    if f.created_before:
        conds.append(Run.created_at < f.created_before)
    where = and_(True, *conds)
    count_stmt = (
        select(func.count()).select_from(Run).join(User, User.id == Run.owner_id).where(where)
    )
    count = session.scalar(count_stmt) or 0
    stmt = (
        _with_owner()
        .where(where)
        .order_by(Run.created_at.desc(), Run.id)
        .limit(limit)
        .offset(offset)
    )
    return list(session.scalars(stmt)), count


def request_cancel(session: Session, run_id: uuid.UUID) -> None:
    """Flag a run for cancel; a queued run is cancelled at once, a running one between rounds."""
    now = utcnow()
    session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status.not_in(TERMINAL))
        .values(
            cancel_requested=True,
            status=case((Run.status == "queued", "cancelled"), else_=Run.status),
            finished_at=case((Run.status == "queued", now), else_=Run.finished_at),
        )
    )


def delete_run(session: Session, run_id: uuid.UUID) -> None:
    """Delete a run and (by cascade) its metrics and checkpoint rows."""
    session.execute(delete(Run).where(Run.id == run_id))


def is_cancel_requested(session: Session, run_id: uuid.UUID) -> bool:
    """True once someone asked to cancel (or the run is gone)."""
    flag = session.scalar(select(Run.cancel_requested).where(Run.id == run_id))
    return flag is None or bool(flag)


def claim(
    session: Session, run_id: uuid.UUID, *, worker: str, token: str, device: str, lease_s: float
) -> bool:
    """Take the lease of a queued run, or of a running one whose lease expired (rule 16)."""
    now = utcnow()
    stmt = (
        update(Run)
        .where(
            Run.id == run_id,
            Run.cancel_requested.is_(False),
            or_(Run.status == "queued", and_(Run.status == "running", Run.lease_expires_at < now)),
        )
        .values(
            status="running",
            attempt=Run.attempt + 1,
            worker=worker,
            device=device,
            lease_token=token,
            lease_expires_at=now + timedelta(seconds=lease_s),
            heartbeat_at=now,
            started_at=func.coalesce(Run.started_at, now),
            error=None,
        )
        .execution_options(synchronize_session=False)
    )
    return session.execute(stmt).rowcount == 1  # type: ignore[attr-defined]


def cancel_orphan(session: Session, run_id: uuid.UUID) -> bool:
    """Mark cancelled a cancel-requested run that no live worker holds."""
    now = utcnow()
    stmt = (
        update(Run)
        .where(
            Run.id == run_id,
            Run.cancel_requested.is_(True),
            or_(Run.status == "queued", and_(Run.status == "running", Run.lease_expires_at < now)),
        )
        .values(status="cancelled", finished_at=now, lease_token=None)
        .execution_options(synchronize_session=False)
    )
    return session.execute(stmt).rowcount == 1  # type: ignore[attr-defined]


def heartbeat(session: Session, run_id: uuid.UUID, token: str, lease_s: float) -> bool:
    """Renew the lease; False when the lease was lost to another worker."""
    now = utcnow()
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.lease_token == token)
        .values(heartbeat_at=now, lease_expires_at=now + timedelta(seconds=lease_s))
        .execution_options(synchronize_session=False)
    )
    return session.execute(stmt).rowcount == 1  # type: ignore[attr-defined]


def record_start(
    session: Session, run_id: uuid.UUID, token: str, *, info: dict[str, Any], device: str
) -> bool:
    """Store the RunInfo (partition fingerprint, versions, device) of a started segment."""
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.lease_token == token)
        .values(
            info=info,
            partition_fingerprint=info.get("partition_fingerprint"),
            versions=info.get("versions") or {},
            device=device,
        )
        .execution_options(synchronize_session=False)
    )
    return session.execute(stmt).rowcount == 1  # type: ignore[attr-defined]


def finish(
    session: Session,
    run_id: uuid.UUID,
    token: str,
    *,
    status: str,
    error: str | None = None,
    summary: dict[str, Any] | None = None,
) -> bool:
    """Mark the end state and drop the lease; only the lease holder may."""
    values: dict[str, Any] = {"status": status, "finished_at": utcnow(), "lease_token": None}
    if error is not None:
        values["error"] = error
    if summary is not None:
        values["summary"] = summary
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.lease_token == token)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return session.execute(stmt).rowcount == 1  # type: ignore[attr-defined]


def status_of(session: Session, run_id: uuid.UUID) -> tuple[str, int] | None:
    """(status, current_round) of a run, cheap enough to poll."""
    row = session.execute(select(Run.status, Run.current_round).where(Run.id == run_id)).first()
    return (row[0], row[1]) if row else None


def stale_runs(session: Session) -> list[tuple[uuid.UUID, str]]:
    """(id, device) of running runs whose lease expired: their worker died."""
    stmt = select(Run.id, Run.spec).where(Run.status == "running", Run.lease_expires_at < utcnow())
    return [(rid, str(spec.get("device", "cpu"))) for rid, spec in session.execute(stmt).all()]
