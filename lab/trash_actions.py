"""Deleting, restoring and purging runs and sweeps: the trash, and the audit record of each act.

DELETE moves a run (or a sweep with its runs) to the trash: it is hidden from every list and
404 to GET, but every round, per-user row and checkpoint stays, so a restore brings it back
exactly as it was. Deleting a queued or running run also cancels it (the dispatcher sends no
trashed run; a running one stops between rounds). After FEDGEN_TRASH_DAYS the workers'
periodic pass (`purge_pass`, worker/reaper.py) deletes it for good, a bounded number per pass.

Each act is recorded in the audit log in the transaction that does it (lab.repository.audit).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from lab.config import Settings
from lab.db import db_now, session_scope
from lab.models import Run, Sweep
from lab.repository import audit
from lab.repository import runs as runs_repo
from lab.repository import sweeps as sweeps_repo
from lab.repository import trash as trash_repo
from lab.store import CheckpointStore

log = logging.getLogger(__name__)

# At most this many runs (and as many sweeps) are purged by one pass: a pass stays short.
PURGE_BATCH = 50


def purge_after(deleted_at: datetime, settings: Settings) -> datetime:
    """When a row trashed at `deleted_at` is purged (at the first pass after this time)."""
    return deleted_at + timedelta(days=settings.trash_days)


def delete_run(session: Session, run: Run, actor: audit.Actor) -> None:
    """Cancel `run` if it has not ended, move it to the trash and record run.delete (committed
    by the request's session)."""
    was = run.status
    runs_repo.request_cancel(session, run.id)
    trash_repo.trash_run(session, run.id, actor.name, db_now(session))
    audit.record(session, actor, "run.delete", "run", run.id, status=was, owner=run.owner.name)


def restore_run(session: Session, run: Run, actor: audit.Actor) -> None:
    """Take `run` out of the trash as it was (a cancelled run stays cancelled); run.restore."""
    trash_repo.restore_run(session, run.id)
    audit.record(session, actor, "run.restore", "run", run.id, owner=run.owner.name)
    session.flush()
    session.refresh(run)


def delete_sweep(session: Session, sweep: Sweep, owner: str, actor: audit.Actor) -> int:
    """Cancel the sweep's unfinished runs and move it to the trash with its runs; sweep.delete.
    How many runs went with it."""
    ids = [r.id for r in sweeps_repo.runs_of_sweep(session, sweep.id)]
    for rid in ids:
        runs_repo.request_cancel(session, rid)
    moved = trash_repo.trash_sweep(session, sweep.id, actor.name, db_now(session))
    audit.record(session, actor, "sweep.delete", "sweep", sweep.id, owner=owner, runs=len(moved))
    return len(moved)


def restore_sweep(session: Session, sweep: Sweep, owner: str, actor: audit.Actor) -> int:
    """Take the sweep and the runs trashed with it out of the trash; sweep.restore. How many
    runs came back (runs deleted on their own before the sweep stay in the trash)."""
    count = trash_repo.restore_sweep(session, sweep)
    audit.record(session, actor, "sweep.restore", "sweep", sweep.id, owner=owner, runs=count)
    session.flush()
    session.refresh(sweep)
    return count


@dataclass
class PurgeReport:
    """What one purge pass deleted for good."""

    runs: int = 0
    sweeps: int = 0


def purge_pass(
    factory: sessionmaker[Session], settings: Settings, *, older_than_days: float | None = None
) -> PurgeReport:
    """Delete for good runs and sweeps trashed more than FEDGEN_TRASH_DAYS ago (or
    `older_than_days`), at most PURGE_BATCH of each, one transaction each; each is recorded
    (run.purge / sweep.purge, by `system`). Safe to run in several processes at once."""
    days = settings.trash_days if older_than_days is None else older_than_days
    report = PurgeReport()
    store = CheckpointStore(settings.checkpoint_root)
    with factory() as s:
        cutoff = db_now(s) - timedelta(days=days)
        run_ids = trash_repo.runs_due(s, cutoff, PURGE_BATCH)
    for rid in run_ids:
        with session_scope(factory) as s:
            paths = trash_repo.purge_run(s, rid, cutoff)
            if paths is None:
                continue
            audit.record(s, audit.SYSTEM, "run.purge", "run", rid, older_than_days=days)
        # The files go only once no row points at them (legacy file checkpoints).
        store.delete(paths)
        store.delete_run(str(rid))
        report.runs += 1
    with factory() as s:
        sweep_ids = trash_repo.sweeps_due(s, cutoff, PURGE_BATCH)
    for sid in sweep_ids:
        with session_scope(factory) as s:
            if trash_repo.purge_sweep(s, sid, cutoff):
                audit.record(s, audit.SYSTEM, "sweep.purge", "sweep", sid, older_than_days=days)
                report.sweeps += 1
    if report.runs or report.sweeps:
        log.info("trash: purged %d runs and %d sweeps", report.runs, report.sweeps)
    return report
