"""The trash: runs and sweeps a member deleted, kept whole (rounds, per-user rows, checkpoints)
until restored or purged.

A trashed row only carries `deleted_at` / `deleted_by`; nothing under it changes. A sweep and
the runs trashed with it share one `deleted_at`, which is how restoring the sweep knows which
runs to bring back (a run trashed on its own before stays in the trash).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from lab.models import Run, Sweep, User
from lab.repository import checkpoints as ckpt_repo
from lab.repository.rowcount import rows_matched


def trash_run(session: Session, run_id: uuid.UUID, by: str, at: datetime) -> bool:
    """Move a run to the trash; False when it is there already (or gone)."""
    done = rows_matched(
        session,
        update(Run)
        .where(Run.id == run_id, Run.deleted_at.is_(None))
        .values(deleted_at=at, deleted_by=by)
        .execution_options(synchronize_session=False),
    )
    return done == 1


def trash_sweep(session: Session, sweep_id: uuid.UUID, by: str, at: datetime) -> list[uuid.UUID]:
    """Move a sweep and its runs not already in the trash there, all at `at`; the runs moved."""
    ids = list(
        session.scalars(select(Run.id).where(Run.sweep_id == sweep_id, Run.deleted_at.is_(None)))
    )
    session.execute(
        update(Sweep)
        .where(Sweep.id == sweep_id)
        .values(deleted_at=at, deleted_by=by)
        .execution_options(synchronize_session=False)
    )
    if ids:
        session.execute(
            update(Run)
            .where(Run.id.in_(ids))
            .values(deleted_at=at, deleted_by=by)
            .execution_options(synchronize_session=False)
        )
    return ids


def restore_run(session: Session, run_id: uuid.UUID) -> None:
    """Take a run out of the trash, as it was."""
    session.execute(
        update(Run)
        .where(Run.id == run_id)
        .values(deleted_at=None, deleted_by=None)
        .execution_options(synchronize_session=False)
    )


def restore_sweep(session: Session, sweep: Sweep) -> int:
    """Take a sweep and the runs trashed with it (same `deleted_at`) out of the trash; how
    many runs came back."""
    assert sweep.deleted_at is not None
    done = rows_matched(
        session,
        update(Run)
        .where(Run.sweep_id == sweep.id, Run.deleted_at == sweep.deleted_at)
        .values(deleted_at=None, deleted_by=None)
        .execution_options(synchronize_session=False),
    )
    session.execute(
        update(Sweep)
        .where(Sweep.id == sweep.id)
        .values(deleted_at=None, deleted_by=None)
        .execution_options(synchronize_session=False)
    )
    return done


def list_trash(
    session: Session, owner: str | None, limit: int
) -> tuple[list[tuple[Run, str]], list[tuple[Sweep, str]]]:
    """(runs, sweeps) in the trash with their owners' names, newest deletion first, of one
    owner (by name) or all."""
    runs = select(Run, User.name).join(User, User.id == Run.owner_id)
    runs = runs.where(Run.deleted_at.is_not(None))
    sweeps = select(Sweep, User.name).join(User, User.id == Sweep.owner_id)
    sweeps = sweeps.where(Sweep.deleted_at.is_not(None))
    if owner is not None:
        runs, sweeps = runs.where(User.name == owner), sweeps.where(User.name == owner)
    run_rows = session.execute(runs.order_by(Run.deleted_at.desc(), Run.id).limit(limit))
    sweep_rows = session.execute(sweeps.order_by(Sweep.deleted_at.desc(), Sweep.id).limit(limit))
    return (
        [(r[0], r[1]) for r in run_rows.all()],
        [(w[0], w[1]) for w in sweep_rows.all()],
    )


def runs_due(session: Session, cutoff: datetime, limit: int) -> list[uuid.UUID]:
    """Ids of runs trashed before `cutoff`, oldest first."""
    stmt = (
        select(Run.id)
        .where(Run.deleted_at.is_not(None), Run.deleted_at < cutoff)
        .order_by(Run.deleted_at, Run.id)
        .limit(limit)
    )
    return list(session.scalars(stmt))


def purge_run(session: Session, run_id: uuid.UUID, cutoff: datetime) -> list[str] | None:
    """Delete a run trashed before `cutoff` with its rounds, per-user rows and checkpoints (by
    cascade); its legacy checkpoint file paths, or None when another pass took it (or it was
    restored meanwhile). The conditional DELETE is what makes two passes at once safe."""
    paths = ckpt_repo.legacy_paths_of_run(session, run_id)
    done = rows_matched(
        session,
        delete(Run).where(Run.id == run_id, Run.deleted_at.is_not(None), Run.deleted_at < cutoff),
    )
    return paths if done == 1 else None


def sweeps_due(session: Session, cutoff: datetime, limit: int) -> list[uuid.UUID]:
    """Ids of sweeps trashed before `cutoff` that have no run left (their runs, trashed with
    them, are purged first, a bounded number per pass)."""
    has_runs = select(Run.id).where(Run.sweep_id == Sweep.id).exists()
    stmt = (
        select(Sweep.id)
        .where(Sweep.deleted_at.is_not(None), Sweep.deleted_at < cutoff, ~has_runs)
        .order_by(Sweep.deleted_at, Sweep.id)
        .limit(limit)
    )
    return list(session.scalars(stmt))


def purge_sweep(session: Session, sweep_id: uuid.UUID, cutoff: datetime) -> bool:
    """Delete a trashed sweep row (its runs are gone already); False when another pass did."""
    done = rows_matched(
        session,
        delete(Sweep).where(
            Sweep.id == sweep_id, Sweep.deleted_at.is_not(None), Sweep.deleted_at < cutoff
        ),
    )
    return done == 1


def runs_trashed_with(session: Session, sweep: Sweep) -> int:
    """How many of the sweep's runs were trashed with it (and come back with it)."""
    stmt = select(func.count()).where(Run.sweep_id == sweep.id, Run.deleted_at == sweep.deleted_at)
    return session.scalar(stmt) or 0
