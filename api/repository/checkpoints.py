"""Checkpoint rows (the bytes live in the file store, see api/store.py)."""

from __future__ import annotations

import uuid

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from api.models import CheckpointRow


def list_checkpoints(session: Session, run_id: uuid.UUID) -> list[CheckpointRow]:
    """All checkpoints of a run, by round then kind."""
    stmt = select(CheckpointRow).where(CheckpointRow.run_id == run_id)
    return list(session.scalars(stmt.order_by(CheckpointRow.round, CheckpointRow.kind)))


def get_checkpoint(session: Session, run_id: uuid.UUID, ckpt_id: uuid.UUID) -> CheckpointRow | None:
    """One checkpoint of a run, or None."""
    stmt = select(CheckpointRow).where(CheckpointRow.run_id == run_id, CheckpointRow.id == ckpt_id)
    return session.scalar(stmt)


def latest_full(session: Session, run_id: uuid.UUID) -> CheckpointRow | None:
    """The newest 'full' (resumable) checkpoint of a run."""
    stmt = (
        select(CheckpointRow)
        .where(CheckpointRow.run_id == run_id, CheckpointRow.kind == "full")
        .order_by(CheckpointRow.round.desc())
        .limit(1)
    )
    return session.scalar(stmt)


def paths_of_run(session: Session, run_id: uuid.UUID) -> list[str]:
    """Store paths of a run's checkpoints (to delete the files with the run)."""
    return list(session.scalars(select(CheckpointRow.path).where(CheckpointRow.run_id == run_id)))


def delete_of_run(session: Session, run_id: uuid.UUID) -> list[str]:
    """Delete a run's checkpoint rows; returns their store paths (to remove the files)."""
    paths = paths_of_run(session, run_id)
    session.execute(delete(CheckpointRow).where(CheckpointRow.run_id == run_id))
    return paths
