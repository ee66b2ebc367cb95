"""Sweeps: a grid that expanded into runs."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import and_, func, or_, select, true
from sqlalchemy.orm import Session, load_only

from lab.models import Run, Sweep, User
from lab.repository.annotations import matches_text


def create_sweep(
    session: Session, *, name: str, base: dict[str, Any], grid: dict[str, Any], owner_id: uuid.UUID
) -> Sweep:
    """Insert a sweep row (flushed, not committed)."""
    sweep = Sweep(name=name, base=base, grid=grid, owner_id=owner_id)
    session.add(sweep)
    session.flush()
    return sweep


def get_sweep(
    session: Session, sweep_id: uuid.UUID, *, in_trash: bool = False
) -> tuple[Sweep, str] | None:
    """A sweep and its owner's name: outside the trash, or (`in_trash`) in it."""
    trashed = Sweep.deleted_at.is_not(None) if in_trash else Sweep.deleted_at.is_(None)
    row = session.execute(
        select(Sweep, User.name)
        .join(User, User.id == Sweep.owner_id)
        .where(Sweep.id == sweep_id, trashed)
    ).first()
    return (row[0], row[1]) if row else None


def list_sweeps(
    session: Session, limit: int, offset: int, *, q: str | None = None
) -> tuple[list[tuple[Sweep, str]], int]:
    """A page of sweeps outside the trash, newest first, and the total count; `q`: text in the
    name, the note or the tags (any case)."""
    cond = and_(
        Sweep.deleted_at.is_(None),
        or_(
            matches_text(Sweep.note, Sweep.tags_csv, q),
            func.lower(Sweep.name).contains(q.lower(), autoescape=True),
        )
        if q
        else true(),
    )
    count = session.scalar(select(func.count()).select_from(Sweep).where(cond)) or 0
    stmt = (
        select(Sweep, User.name)
        .join(User, User.id == Sweep.owner_id)
        .where(cond)
        .order_by(Sweep.created_at.desc())
        .limit(limit)
        .offset(offset)
    )
    return [(r[0], r[1]) for r in session.execute(stmt).all()], count


# What a sweep's summary and plot data read of each run (lab.analysis, lab.plot_data).
ANALYSIS_COLUMNS = (Run.id, Run.status, Run.current_round, Run.spec, Run.summary, Run.created_at)


def runs_of_sweep(session: Session, sweep_id: uuid.UUID, *, analysis: bool = False) -> list[Run]:
    """The runs a sweep expanded into, outside the trash, in creation order.

    `analysis`: only ANALYSIS_COLUMNS are loaded (another attribute loads when first read):
    the run's other JSON columns were a third of what a 1,000-run sweep's summary decoded.
    """
    stmt = (
        select(Run)
        .where(Run.sweep_id == sweep_id, Run.deleted_at.is_(None))
        .order_by(Run.created_at, Run.id)
    )
    if analysis:
        stmt = stmt.options(load_only(*ANALYSIS_COLUMNS))
    return list(session.scalars(stmt))


def run_states(
    session: Session, sweep_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[tuple[uuid.UUID, str]]]:
    """(id, status) of the runs of each sweep outside the trash, in creation order, in one
    query: a page of sweeps lists its runs without loading them (specs and all)."""
    out: dict[uuid.UUID, list[tuple[uuid.UUID, str]]] = {sid: [] for sid in sweep_ids}
    if not sweep_ids:
        return out
    stmt = (
        select(Run.sweep_id, Run.id, Run.status)
        .where(Run.sweep_id.in_(sweep_ids), Run.deleted_at.is_(None))
        .order_by(Run.sweep_id, Run.created_at, Run.id)
    )
    for sweep_id, run_id, status in session.execute(stmt):
        if sweep_id is not None:  # always (the IN above); narrows the column's type
            out[sweep_id].append((run_id, status))
    return out


def runs_for_timing(
    session: Session, sweep_id: uuid.UUID | None, algorithm: str | None
) -> list[Run]:
    """Runs that can contribute to the timing table (any status that wrote rounds)."""
    stmt = select(Run).where(Run.current_round >= 1, Run.deleted_at.is_(None))
    if sweep_id:
        stmt = stmt.where(Run.sweep_id == sweep_id)
    if algorithm:
        stmt = stmt.where(Run.algorithm == algorithm)
    return list(session.scalars(stmt.limit(5000)))
