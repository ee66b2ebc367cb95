"""The per-run limits of a shared lab: how long a run may run, how often its worker may die.

- Time (FEDGEN_MAX_RUN_HOURS): a run's running time is the sum of its segments' (one per
  start: lab.repository.runs.record_start). A segment that ended has `ended_at` (set when the
  next one starts: the time its last round was stored, so time spent queued between two
  segments never counts); the run's current segment runs until `until` (the database's clock
  on the worker, the last heartbeat in the dispatcher). Segments recorded before segments kept
  their end count nothing (never more than the run really ran).
- Deaths (FEDGEN_MAX_ATTEMPTS): a worker died holding the run when the run is found unheld
  (lease expired, or holder gone) with its lease token still set: every way a worker lets a
  run go on purpose (finish, hand back for a dataset or out of memory, the hand-back of a
  database outage) clears the token. The death is counted once per lease (info['deaths'] =
  {count, round, worker, lease}: the lease token it was counted for); the token itself is left
  alone, so a holder that was only slow to beat (a loaded machine) keeps its run if it renews
  before another worker claims it. The count restarts when the
  run stored a new round since the last death, so a run that progresses between worker
  restarts (a deploy, a rebooted host) is never failed by it: only one that dies
  FEDGEN_MAX_ATTEMPTS times in a row at the same place (it kills its worker) fails.
Both are checked by the dispatcher's pass (lab.dispatch) and the death also at claim time
(lab.repository.runs.claim), since a redelivered message may reach a worker first.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from lab.models import Run
from lab.repository import webhooks as webhooks_repo
from lab.repository.liveness import Liveness, unheld
from lab.repository.rowcount import rows_matched
from vocab.run_status import RunStatus


def _when(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return None


def running_seconds(
    segments: list[dict[str, Any]] | None, attempt: int, until: datetime | None
) -> float:
    """Seconds the run has run over its segments; the last one, when it is the current claim's
    (`attempt`), runs until `until` (see the module docstring)."""
    segs = segments or []
    total = 0.0
    for i, seg in enumerate(segs):
        start, end = _when(seg.get("started_at")), _when(seg.get("ended_at"))
        if end is None and i + 1 == len(segs) and seg.get("attempt") == attempt:
            end = until
        if start is None or end is None:
            continue
        total += max(0.0, (end - start).total_seconds())
    return total


def segment_end(segment: dict[str, Any], last_stored_at: datetime | None) -> str | None:
    """When a segment that just ended stopped running (ISO): when the run's last round was
    stored, or its start when it stored none; None when its start is unknown."""
    start = _when(segment.get("started_at"))
    if start is None:
        return None
    end = max(start, last_stored_at) if last_stored_at is not None else start
    return end.isoformat()


def overrun(seconds: float, max_hours: float, segments: int) -> str | None:
    """The error of a run that ran `seconds` over `segments` segments, past `max_hours`; None
    while it is within the limit."""
    if seconds <= max_hours * 3600:
        return None
    over = f"{seconds / 3600:.2f} h over {segments} segment{'s' if segments != 1 else ''}"
    return f"ran longer than FEDGEN_MAX_RUN_HOURS={max_hours:g} h ({over})"


def died_too_often(count: int, max_attempts: int, worker: str | None, round_: int) -> str:
    """The error of a run whose worker died `count` times in a row at the same round."""
    where = f"round {round_}" if round_ >= 0 else "its start"
    return (
        f"its worker died {count} times (FEDGEN_MAX_ATTEMPTS={max_attempts}); last on "
        f"{worker or 'an unnamed worker'} (no new round stored in between; the run was at "
        f"{where})"
    )


def _fail(session: Session, run_id: uuid.UUID, error: str, now: datetime, **where: Any) -> bool:
    """Mark a running run failed with `error` (if it still matches `where`)."""
    conds = [Run.id == run_id, Run.status == RunStatus.RUNNING]
    conds += [getattr(Run, k) == v for k, v in where.items()]
    stmt = (
        update(Run)
        .where(*conds)
        .values(status=RunStatus.FAILED, error=error, finished_at=now, lease_token=None)
        .execution_options(synchronize_session=False)
    )
    if rows_matched(session, stmt) != 1:
        return False
    webhooks_repo.enqueue_run_ended(session, run_id)  # it may end its sweep
    return True


def count_deaths(
    session: Session,
    now: datetime,
    live: Liveness | None,
    max_attempts: int,
    run_id: uuid.UUID | None = None,
) -> list[uuid.UUID]:
    """Count the death of each run whose worker died holding it (of `run_id` only, if given);
    fail those that reached `max_attempts` deaths in a row; the ids failed."""
    stmt = select(Run.id, Run.lease_token, Run.worker, Run.current_round, Run.info).where(
        Run.status == RunStatus.RUNNING,
        Run.lease_token.is_not(None),
        Run.cancel_requested.is_(False),
        unheld(now, live),
    )
    if run_id is not None:
        stmt = stmt.where(Run.id == run_id)
    failed = []
    for row in session.execute(stmt).all():
        info = dict(row.info or {})
        last = info.get("deaths") or {}
        if last.get("lease") == row.lease_token:
            continue  # this lease's death is counted already
        same = last.get("round") == row.current_round
        count = int(last.get("count") or 0) + 1 if same else 1
        if count >= max_attempts:
            why = died_too_often(count, max_attempts, row.worker, row.current_round)
            if _fail(session, row.id, why, now, lease_token=row.lease_token):
                failed.append(row.id)
            continue
        # The lease is left as it is: a holder that was only slow (a loaded machine missing
        # heartbeats) keeps its run if it renews before another worker claims it.
        info["deaths"] = {
            "count": count,
            "round": row.current_round,
            "worker": row.worker,
            "lease": row.lease_token,
        }
        session.execute(
            update(Run)
            .where(Run.id == row.id, Run.lease_token == row.lease_token)
            .values(info=info)
            .execution_options(synchronize_session=False)
        )
    return failed


def end_overruns(session: Session, now: datetime, max_hours: float) -> list[uuid.UUID]:
    """Fail each running run whose running time (to its last heartbeat) passed `max_hours`,
    held or not: one stuck in a round never reaches the worker's check between rounds, and
    one whose worker is gone must not be sent again; the ids failed."""
    stmt = select(Run.id, Run.segments, Run.attempt, Run.heartbeat_at).where(
        Run.status == RunStatus.RUNNING, Run.cancel_requested.is_(False)
    )
    failed = []
    for row in session.execute(stmt).all():
        ran = running_seconds(row.segments, row.attempt, row.heartbeat_at)
        why = overrun(ran, max_hours, len(row.segments or []))
        if why is not None and _fail(session, row.id, why, now, attempt=row.attempt):
            failed.append(row.id)
    return failed


def check_run(
    session: Session, run_id: uuid.UUID, attempt: int, now: datetime, max_hours: float
) -> tuple[bool, str | None]:
    """For the worker between rounds: (cancel requested or run gone, the overrun error or
    None) of the run as held by claim number `attempt`."""
    row = session.execute(
        select(Run.cancel_requested, Run.segments).where(Run.id == run_id)
    ).first()
    if row is None:
        return True, None
    ran = running_seconds(row.segments, attempt, now)
    return bool(row.cancel_requested), overrun(ran, max_hours, len(row.segments or []))


def give_back(session: Session, run_id: uuid.UUID, now: datetime, token: str) -> bool:
    """Hand a held lease back (a worker that lost the database does, once it answers again):
    the run may be claimed at once, and the token is cleared, so it is not counted as a death."""
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.lease_token == token)
        .values(lease_token=None, lease_expires_at=now)
        .execution_options(synchronize_session=False)
    )
    return rows_matched(session, stmt) == 1
