"""What each member's runs store, against their quota, and how many of their runs wait.

A member's usage is the sum of `runs.stored_bytes` over their runs that exist: a trashed run
still holds its rounds and checkpoints, so it counts until it is purged (its row goes, and its
bytes with it). `stored_bytes` is kept by the transactions that change what a run stores
(`add_stored`: a round written, full checkpoints pruned). Runs that have not ended also reserve
what they are still estimated to store (`estimated_bytes - stored_bytes`), so a member cannot
queue past their quota one submission at a time. `pending_cpu_s` is the same for CPU time: what
their queued and running runs are estimated to take (FEDGEN_MAX_MEMBER_CPU_S).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import BigInteger, Connection, case, cast, func, select, update
from sqlalchemy.orm import Session

from lab.models import Run, User
from vocab.run_status import ACTIVE, RunStatus

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


def _stored(session: Session, user_id: uuid.UUID | None) -> dict[uuid.UUID, tuple[int, int]]:
    """owner -> (bytes stored, runs) over all their runs (one member's, or everyone's)."""
    stmt = select(Run.owner_id, func.coalesce(func.sum(Run.stored_bytes), 0), func.count())
    if user_id is not None:
        stmt = stmt.where(Run.owner_id == user_id)
    rows = session.execute(stmt.group_by(Run.owner_id))
    return {owner: (int(stored), int(runs)) for owner, stored, runs in rows}


def _pending(session: Session, user_id: uuid.UUID | None) -> dict[uuid.UUID, tuple[int, int]]:
    """owner -> (bytes still to come, queued runs) over their queued and running runs (the
    owner/status index: a few rows however many runs have ended)."""
    still = func.coalesce(Run.estimated_bytes, 0) - Run.stored_bytes
    stmt = select(
        Run.owner_id,
        func.coalesce(func.sum(case((still > 0, still), else_=0)), 0),
        func.coalesce(func.sum(case((Run.status == RunStatus.QUEUED, 1), else_=0)), 0),
    ).where(Run.status.in_(UNFINISHED))
    if user_id is not None:
        stmt = stmt.where(Run.owner_id == user_id)
    rows = session.execute(stmt.group_by(Run.owner_id))
    return {owner: (int(reserved), int(queued)) for owner, reserved, queued in rows}


def _usage(
    user: User,
    stored: dict[uuid.UUID, tuple[int, int]],
    pending: dict[uuid.UUID, tuple[int, int]],
    default_quota: int,
) -> Usage:
    usage_bytes, runs = stored.get(user.id, (0, 0))
    reserved, queued = pending.get(user.id, (0, 0))
    return Usage(
        user_id=user.id,
        name=user.name,
        is_admin=bool(user.is_admin),
        usage_bytes=usage_bytes,
        reserved_bytes=reserved,
        quota_bytes=default_quota if user.quota_bytes is None else user.quota_bytes,
        quota_is_default=user.quota_bytes is None,
        queued_runs=queued,
        runs=runs,
    )


def member_usage(session: Session, user_id: uuid.UUID, default_quota: int) -> Usage:
    """One member's usage (their runs' rows only: the owner indexes)."""
    user = session.get(User, user_id)
    if user is None:
        raise LookupError(f"no user {user_id}")
    return _usage(user, _stored(session, user_id), _pending(session, user_id), default_quota)


def all_usage(session: Session, default_quota: int) -> list[Usage]:
    """Every member's usage, largest first, then by name."""
    stored, pending = _stored(session, None), _pending(session, None)
    users = session.scalars(select(User))
    out = [_usage(u, stored, pending, default_quota) for u in users]
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


# The spec fields fedgen.studies.costs.estimate_cpu_s reads: runs equal in these have one
# estimate.
_CPU_FIELDS = (
    ("algorithm", "name"),
    ("data", "name"),
    ("model", "name"),
    ("users_per_round",),
    ("local_steps",),
    ("rounds",),
)


def pending_cpu_s(session: Session, user_id: uuid.UUID) -> float:
    """Estimated CPU seconds (one core, `estimate_cpu_s`) of the member's queued and running
    runs, a running one counted whole. The runs are grouped in the database by the fields the
    estimate reads and each group's estimate is read off one of its specs, so a thousand queued
    runs of one sweep cost a handful of parses."""
    fields = [Run.spec[path].as_string().label(f"f{i}") for i, path in enumerate(_CPU_FIELDS)]
    active = select(*fields).where(Run.owner_id == user_id, Run.status.in_(UNFINISHED)).subquery()
    cols = [active.c[f"f{i}"] for i in range(len(_CPU_FIELDS))]
    groups = session.execute(select(*cols, func.count()).group_by(*cols)).all()
    total = 0.0
    for *values, runs in groups:
        one = session.scalar(
            select(Run.spec)
            .where(
                Run.owner_id == user_id,
                Run.status.in_(UNFINISHED),
                *(
                    Run.spec[path].as_string() == value
                    if value is not None
                    else Run.spec[path].as_string().is_(None)
                    for path, value in zip(_CPU_FIELDS, values, strict=True)
                ),
            )
            .limit(1)
        )
        if one is None:  # ended between the two reads
            continue
        total += _estimate(one) * int(runs)
    return total


def _estimate(spec: dict[str, object]) -> float:
    """`estimate_cpu_s` of a stored spec; 0 for one that no longer parses (an algorithm whose
    plugin is gone: it cannot run here either)."""
    from fedgen.spec import SpecError, parse_spec
    from fedgen.studies.costs import estimate_cpu_s

    try:
        return estimate_cpu_s(parse_spec(spec))
    except (SpecError, KeyError, ValueError):
        return 0.0
