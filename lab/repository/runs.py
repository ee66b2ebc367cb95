"""Runs: create, read, filter, cancel, delete, and the worker's lease protocol.

A running run is held by the worker whose lease token it carries until the lease expires, or
until its holder is gone (`Liveness`): the run's heartbeat missed twice and no live `workers`
row of the holder's name started before that heartbeat (a restarted slot with the same name
does not count). Such a run is waiting again at once: it no longer takes a slot, the dispatcher
sends it, and another worker may claim it without waiting for the lease to expire.

The dispatch state (queue snapshot, sends, the dispatcher's lease) lives in
lab.repository.dispatch_state and `Liveness` in lab.repository.liveness.
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Select,
    Update,
    case,
    delete,
    func,
    select,
    update,
)
from sqlalchemy.orm import Session, contains_eager

from lab.db import db_now
from lab.models import RoundMetrics, Run
from lab.repository import run_limits
from lab.repository import webhooks as webhooks_repo
from lab.repository.annotations import tags_csv
from lab.repository.liveness import Liveness
from lab.repository.liveness import unheld as _unheld
from lab.repository.rowcount import rows_matched
from vocab.run_status import TERMINAL, Priority, RunStatus


def create_run(
    session: Session,
    *,
    spec: dict[str, Any],
    spec_hash: str,
    owner_id: uuid.UUID,
    queue: str,
    sweep_id: uuid.UUID | None = None,
    versions: dict[str, Any] | None = None,
    priority: Priority = Priority.NORMAL,
    estimated_bytes: int | None = None,
) -> Run:
    """Insert a queued run (flushed, not committed); `estimated_bytes`: its footprint."""
    run = Run(
        spec=spec,
        spec_hash=spec_hash,
        algorithm=spec["algorithm"]["name"],
        dataset=spec["data"]["name"],
        tags_csv=tags_csv(spec.get("tags", [])),
        note=spec.get("note") or "",  # the annotation starts as the submitted note
        rounds=spec["rounds"],
        queue=queue,
        owner_id=owner_id,
        sweep_id=sweep_id,
        status=RunStatus.QUEUED,
        priority=priority,
        dispatch_count=0,
        attempt=0,
        current_round=-1,
        cancel_requested=False,
        versions=versions or {},
        stored_bytes=0,
        estimated_bytes=estimated_bytes,
    )
    session.add(run)
    session.flush()
    return run


def with_owner() -> Select[Run]:
    """SELECT runs with their owner (lab.repository.run_list pages through it)."""
    # One query: the owner row comes with the run (Run.owner is then loaded, never lazily).
    return select(Run).join(Run.owner).options(contains_eager(Run.owner))


def get_run(session: Session, run_id: uuid.UUID, *, in_trash: bool | None = None) -> Run | None:
    """A run (its owner loaded), or None. `in_trash`: None, wherever it is (the worker's view);
    False, only outside the trash (what the API shows); True, only in the trash."""
    stmt = with_owner().where(Run.id == run_id)
    if in_trash is not None:
        stmt = stmt.where(Run.deleted_at.is_not(None) if in_trash else Run.deleted_at.is_(None))
    return session.scalar(stmt)


def get_runs(session: Session, run_ids: list[uuid.UUID]) -> list[Run]:
    """Several runs outside the trash (owners loaded), in the order asked (missing or trashed
    ids left out)."""
    stmt = with_owner().where(Run.id.in_(run_ids), Run.deleted_at.is_(None))
    by_id = {r.id: r for r in session.scalars(stmt)}
    return [by_id[i] for i in run_ids if i in by_id]


def request_cancel(session: Session, run_id: uuid.UUID) -> None:
    """Flag a run for cancel; a queued run is cancelled at once, a running one between rounds."""
    now = db_now(session)
    flagged = rows_matched(
        session,
        update(Run)
        .where(Run.id == run_id, Run.status.not_in(TERMINAL))
        .values(
            cancel_requested=True,
            status=case((Run.status == RunStatus.QUEUED, RunStatus.CANCELLED), else_=Run.status),
            finished_at=case((Run.status == RunStatus.QUEUED, now), else_=Run.finished_at),
        ),
    )
    if flagged == 1:
        webhooks_repo.enqueue_run_ended(session, run_id)  # a cancelled run may end its sweep


def delete_run(session: Session, run_id: uuid.UUID) -> None:
    """Delete a run and (by cascade) its metrics and checkpoint rows, for good (the API moves
    runs to the trash instead: lab.repository.trash; this is for tests and tools)."""
    sweep_id = session.scalar(select(Run.sweep_id).where(Run.id == run_id))
    session.execute(delete(Run).where(Run.id == run_id))
    webhooks_repo.enqueue_sweep_if_finished(session, sweep_id)  # it may have been the last one


def claim(
    session: Session,
    run_id: uuid.UUID,
    *,
    worker: str,
    token: str,
    device: str,
    lease_s: float,
    live: Liveness | None = None,
    max_attempts: int | None = None,
) -> bool:
    """Take the lease of a queued run, or of a running one whose lease expired or (with `live`)
    whose holder is gone. With `max_attempts`, a holder that died is counted first (a run
    whose worker died that many times in a row fails instead: lab.repository.run_limits)."""
    now = db_now(session)
    if max_attempts is not None:
        run_limits.count_deaths(session, now, live, max_attempts, run_id)
    stmt = _update_unheld(run_id, now, cancel_requested=False, live=live).values(
        status=RunStatus.RUNNING,
        attempt=Run.attempt + 1,
        worker=worker,
        device=device,
        lease_token=token,
        lease_expires_at=now + timedelta(seconds=lease_s),
        heartbeat_at=now,
        started_at=func.coalesce(Run.started_at, now),
        error=None,
        # Claimed: no longer on its way; the next send (after a lease expiry) starts afresh.
        dispatched_at=None,
        dispatch_count=0,
        next_dispatch_at=None,
        dispatched_to=None,
    )
    return rows_matched(session, stmt) == 1


def cancel_orphan(session: Session, run_id: uuid.UUID) -> bool:
    """Mark cancelled a cancel-requested run that no live worker holds."""
    now = db_now(session)
    stmt = _update_unheld(run_id, now, cancel_requested=True).values(
        status=RunStatus.CANCELLED, finished_at=now, lease_token=None
    )
    if rows_matched(session, stmt) != 1:
        return False
    webhooks_repo.enqueue_run_ended(session, run_id)
    return True


def _update_unheld(
    run_id: uuid.UUID, now: datetime, *, cancel_requested: bool, live: Liveness | None = None
) -> Update:
    """An UPDATE of the run if no live worker holds it (`_unheld`)."""
    return (
        update(Run)
        .where(
            Run.id == run_id,
            Run.cancel_requested.is_(cancel_requested),
            _unheld(now, live),
        )
        .execution_options(synchronize_session=False)
    )


def heartbeat(
    session: Session,
    run_id: uuid.UUID,
    token: str,
    lease_s: float,
    cost: dict[str, Any] | None = None,
) -> bool:
    """Renew the lease (and store `cost`, the run's cost columns so far: fedgen.resources);
    False when the lease was lost to another worker."""
    now = db_now(session)
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.lease_token == token)
        .values(heartbeat_at=now, lease_expires_at=now + timedelta(seconds=lease_s), **(cost or {}))
        .execution_options(synchronize_session=False)
    )
    return rows_matched(session, stmt) == 1


# What must agree between two segments for the run to be bit-for-bit one computation.
NUMERICS = ("torch_threads", "cpu_capability", "torch")


def record_start(
    session: Session, run_id: uuid.UUID, token: str, *, info: dict[str, Any], device: str
) -> bool:
    """Store the RunInfo (partition fingerprint, versions, device) of a started segment and
    append the segment to the run's `segments`.

    A resume whose numerics (torch threads, CPU kernels, torch) differ from an earlier segment's
    is marked: `versions.numerics_changed` lists each change and the round it began at, since
    the curve is then no longer bit-for-bit the one an uninterrupted run would give.
    """
    row = session.execute(
        select(Run.segments, Run.versions, Run.worker, Run.attempt, Run.info).where(
            Run.id == run_id, Run.lease_token == token
        )
    ).first()
    if row is None:
        return False
    if (row.info or {}).get("oom"):
        # A run that ran out of GPU memory keeps needing a bigger GPU (the dispatcher reads it).
        info = {**info, "oom": row.info["oom"]}
    if (row.info or {}).get("deaths"):
        info = {**info, "deaths": row.info["deaths"]}  # counted across claims (run_limits)
    segments = list(row.segments or [])
    versions = dict(info.get("versions") or {})
    start = int(info.get("start_round") or 0)
    changes = list((row.versions or {}).get("numerics_changed") or [])
    if segments:
        # The segment before ends at the last round it stored (a killed worker may have stored
        # rounds past the checkpoint this one resumes from: they are computed again here).
        stored, stored_at = session.execute(
            select(func.max(RoundMetrics.round), func.max(RoundMetrics.created_at)).where(
                RoundMetrics.run_id == run_id
            )
        ).one()
        segments[-1] = {**segments[-1], "last_round": stored}
        if "ended_at" not in segments[-1]:  # its running time (FEDGEN_MAX_RUN_HOURS) ends there
            segments[-1]["ended_at"] = run_limits.segment_end(segments[-1], stored_at)
        before = segments[-1]
        diff = {k: [before.get(k), versions.get(k)] for k in NUMERICS}
        diff = {k: v for k, v in diff.items() if v[0] != v[1]}
        if diff:
            changes.append({"round": start, **diff})
    if changes:
        versions["numerics_changed"] = changes
    segments.append(_segment(session, row.worker, row.attempt, versions, device, start))
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.lease_token == token)
        .values(
            info=info,
            partition_fingerprint=info.get("partition_fingerprint"),
            versions=versions,
            segments=segments,
            device=device,
        )
        .execution_options(synchronize_session=False)
    )
    return rows_matched(session, stmt) == 1


def _segment(
    session: Session,
    worker: str | None,
    attempt: int,
    versions: dict[str, Any],
    device: str,
    start: int,
) -> dict[str, Any]:
    """The segment a started attempt appends: where it runs, on what code, from which round."""
    slot, _, host = (worker or "").partition("@")
    return {
        "attempt": attempt,
        "worker": worker,
        "host": host or None,
        "slot": slot or None,
        "code_version": versions.get("code"),
        "device": device,
        "start_round": start,
        "resumed_from": start - 1 if start > 0 else None,  # the checkpoint's round
        "started_at": db_now(session).isoformat(),
        **{k: versions.get(k) for k in ("fedgen", *NUMERICS)},
    }


def hand_back(
    session: Session,
    run_id: uuid.UUID,
    token: str,
    notice: str,
    cost: dict[str, Any] | None = None,
) -> bool:
    """Give a claimed run back to the queue (this worker cannot run it): queued again when it
    has no round yet, else a running run without a lease (the dispatcher sends it on at once,
    to resume elsewhere); `notice` says why on the run; `cost`: its cost columns so far."""
    now = db_now(session)
    fresh = Run.current_round < 0
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.lease_token == token)
        .values(
            status=case((fresh, RunStatus.QUEUED), else_=Run.status),
            started_at=case((fresh, None), else_=Run.started_at),
            lease_token=None,
            lease_expires_at=now,
            error=notice,
            **(cost or {}),
        )
        .execution_options(synchronize_session=False)
    )
    return rows_matched(session, stmt) == 1


def set_notice(session: Session, run_id: uuid.UUID, token: str, text: str) -> bool:
    """Show `text` as the running run's error (why it is retrying); cleared by a success."""
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.lease_token == token)
        .values(error=text)
        .execution_options(synchronize_session=False)
    )
    return rows_matched(session, stmt) == 1


def finish(
    session: Session,
    run_id: uuid.UUID,
    token: str,
    *,
    status: str,
    error: str | None = None,
    summary: dict[str, Any] | None = None,
    cost: dict[str, Any] | None = None,
) -> bool:
    """Mark the end state and drop the lease (storing `cost`, the run's cost columns); only the
    lease holder may."""
    values: dict[str, Any] = {"status": status, "finished_at": db_now(session), "lease_token": None}
    values.update(cost or {})
    if error is not None or status == RunStatus.SUCCEEDED:
        values["error"] = error  # a success clears a notice left by a retried storage error
    if summary is not None:
        values["summary"] = summary
        values |= figures_of(summary)
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.lease_token == token)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if rows_matched(session, stmt) != 1:
        return False
    webhooks_repo.enqueue_run_ended(session, run_id)  # in the transaction that ends the run
    return True


def figures_of(summary: dict[str, Any]) -> dict[str, float | None]:
    """The run row's last_acc and best_acc from its summary: final_acc and best_acc, so the
    row and the summary are one figure each (docs/metrics.md), never two definitions."""

    def finite(v: Any) -> float | None:
        return float(v) if isinstance(v, int | float) and math.isfinite(v) else None

    return {
        "last_acc": finite(summary.get("final_acc")),
        "best_acc": finite(summary.get("best_acc")),
    }


COST_COLUMNS = ("cpu_s", "peak_rss_bytes", "gpu_peak_bytes")


def cost_of(session: Session, run_id: uuid.UUID) -> dict[str, Any]:
    """The run's cost columns as stored (what its earlier segments recorded; None: not yet)."""
    row = session.execute(select(*(getattr(Run, c) for c in COST_COLUMNS)).where(Run.id == run_id))
    first = row.first()
    return dict(zip(COST_COLUMNS, first, strict=True)) if first else {}


def record_oom(session: Session, run_id: uuid.UUID, token: str, oom: dict[str, Any]) -> int | None:
    """Count a CUDA out-of-memory of the held run and keep where it happened in info['oom']
    (worker, device, free_bytes, total_bytes: the dispatcher then wants a GPU with more free
    memory); the new count, or None when the lease is lost."""
    row = session.execute(
        select(Run.oom_count, Run.info).where(Run.id == run_id, Run.lease_token == token)
    ).first()
    if row is None:
        return None
    count = int(row.oom_count or 0) + 1
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.lease_token == token)
        .values(oom_count=count, info={**(row.info or {}), "oom": oom})
        .execution_options(synchronize_session=False)
    )
    session.execute(stmt)
    return count


def status_of(session: Session, run_id: uuid.UUID) -> tuple[str, int] | None:
    """(status, current_round) of a run, cheap enough to poll."""
    row = session.execute(select(Run.status, Run.current_round).where(Run.id == run_id)).first()
    return (row[0], row[1]) if row else None
