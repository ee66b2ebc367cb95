"""What each member's runs store, against their quota, and how many of their runs wait.

A member's usage is the sum of `runs.stored_bytes` over their runs that exist: a trashed run
still holds its rounds and checkpoints, so it counts until it is purged (its row goes, and its
bytes with it). `stored_bytes` is kept by the transactions that change what a run stores
(`add_stored`: a round written, full checkpoints pruned). Runs that have not ended also reserve
what they are still estimated to store (`estimated_bytes - stored_bytes`), so a member cannot
queue past their quota one submission at a time.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import BigInteger, Connection, case, cast, func, select, update
from sqlalchemy.orm import Session

from fedgen.status import ACTIVE, RunStatus
from lab.models import Run, User

UNFINISHED = ACTIVE


@dataclass(frozen=True)
class Usage:
    """One member's figures (bytes, runs)."""

    user_id: uuid.UUID
    name: str
    is_admin: bool
    usage_bytes: int  # what their runs hold now (stored_bytes), trashed ones until purged
    reserved_bytes: int  # what their queued and running runs are still estimated to add
    quota_bytes: int  # their own quota, else the lab's
    quota_is_default: bool
    queued_runs: int
    runs: int

    @property
    def committed_bytes(self) -> int:
        """Stored now plus still to come: what a new submission's estimate is added to."""
        return self.usage_bytes + self.reserved_bytes


def _figures() -> tuple[object, ...]:
    """SUM/COUNT columns over a member's runs (Run joined to User, grouped by user)."""
    still = func.coalesce(Run.estimated_bytes, 0) - Run.stored_bytes
    reserved = case((Run.status.in_(UNFINISHED) & (still > 0), still), else_=0)
    return (
        func.coalesce(func.sum(Run.stored_bytes), 0),
        func.coalesce(func.sum(reserved), 0),
        func.coalesce(func.sum(case((Run.status == RunStatus.QUEUED, 1), else_=0)), 0),
        func.count(Run.id),
    )


def _usage(row: tuple[object, ...], default_quota: int) -> Usage:
    user_id, name, is_admin, quota, stored, reserved, queued, runs = row
    assert isinstance(user_id, uuid.UUID)
    return Usage(
        user_id=user_id,
        name=str(name),
        is_admin=bool(is_admin),
        usage_bytes=int(stored),  # type: ignore[call-overload]
        reserved_bytes=int(reserved),  # type: ignore[call-overload]
        quota_bytes=default_quota if quota is None else int(quota),  # type: ignore[call-overload]
        quota_is_default=quota is None,
        queued_runs=int(queued),  # type: ignore[call-overload]
        runs=int(runs),  # type: ignore[call-overload]
    )


def _rows(session: Session, user_id: uuid.UUID | None) -> list[tuple[object, ...]]:
    """(user id, name, admin, quota, *figures) of one member, or of every member."""
    stmt = (
        select(User.id, User.name, User.is_admin, User.quota_bytes, *_figures())
        .select_from(User)
        .outerjoin(Run, Run.owner_id == User.id)
        .group_by(User.id, User.name, User.is_admin, User.quota_bytes)
    )
    if user_id is not None:
        stmt = stmt.where(User.id == user_id)
    return [tuple(r) for r in session.execute(stmt)]


def member_usage(session: Session, user_id: uuid.UUID, default_quota: int) -> Usage:
    """One member's usage (their runs' rows only: the owner index)."""
    [row] = _rows(session, user_id)
    return _usage(row, default_quota)


def all_usage(session: Session, default_quota: int) -> list[Usage]:
    """Every member's usage, largest first, then by name."""
    out = [_usage(r, default_quota) for r in _rows(session, None)]
    return sorted(out, key=lambda u: (-u.usage_bytes, u.name))


def add_stored(conn: Connection | Session, run_id: uuid.UUID, delta: int) -> None:
    """Change a run's stored_bytes by `delta` in the caller's transaction (never below 0)."""
    if delta == 0:
        return
    new = Run.stored_bytes + cast(delta, BigInteger)
    conn.execute(
        update(Run)
        .where(Run.id == run_id)
        .values(stored_bytes=case((new > 0, new), else_=0))
        .execution_options(synchronize_session=False)
    )


def set_quota(session: Session, user: User, quota_bytes: int | None) -> None:
    """Give `user` their own quota (None: back to FEDGEN_QUOTA_BYTES)."""
    user.quota_bytes = quota_bytes
    session.flush()
