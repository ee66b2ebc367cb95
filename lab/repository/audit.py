"""The audit log: who deleted, restored, cancelled or revoked what, created which webhook or
token, when and from which address. Rows are written in the transaction of the act they
record, so an act and its record commit (or roll back) together."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from lab.models import AuditEvent, User

# The acts recorded, one name each (the `action` column; GET /audit?action=).
ACTIONS: tuple[str, ...] = (
    "run.delete",
    "run.restore",
    "run.cancel",
    "run.purge",
    "sweep.delete",
    "sweep.restore",
    "sweep.purge",
    "token.create",
    "token.revoke",
    "webhook.create",
    "webhook.delete",
    "quota.set",
)


@dataclass(frozen=True)
class Actor:
    """Who acts: a member (id and name) or the lab itself (`system`, id None), and from where."""

    id: uuid.UUID | None
    name: str
    address: str | None = None

    @classmethod
    def of(cls, user: User, address: str | None) -> Actor:
        """A member acting from a client address."""
        return cls(user.id, user.name, address)


SYSTEM = Actor(None, "system", None)


def record(
    session: Session,
    actor: Actor,
    action: str,
    subject_kind: str,
    subject_id: uuid.UUID | str,
    **detail: Any,
) -> AuditEvent:
    """Add one audit row in the caller's transaction (not committed here)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    row = AuditEvent(
        actor_id=actor.id,
        actor_name=actor.name,
        action=action,
        subject_kind=subject_kind,
        subject_id=str(subject_id),
        address=(actor.address or None) and actor.address[:64],
        detail=detail,
    )
    session.add(row)
    session.flush()
    return row


def list_events(
    session: Session,
    *,
    actor_id: uuid.UUID | None = None,
    actor_name: str | None = None,
    action: str | None = None,
    subject_id: str | None = None,
    before: datetime | None = None,
    limit: int = 100,
) -> list[AuditEvent]:
    """Audit rows, newest first, optionally of one actor, one action or one subject."""
    stmt = select(AuditEvent).order_by(AuditEvent.at.desc(), AuditEvent.id.desc())
    if actor_id is not None:
        stmt = stmt.where(AuditEvent.actor_id == actor_id)
    if actor_name is not None:  # `system` has no id: the lab's own acts are found by name
        stmt = stmt.where(AuditEvent.actor_name == actor_name)
    if action is not None:
        stmt = stmt.where(AuditEvent.action == action)
    if subject_id is not None:
        stmt = stmt.where(AuditEvent.subject_id == subject_id)
    if before is not None:
        stmt = stmt.where(AuditEvent.at < before)
    return list(session.scalars(stmt.limit(limit)))
