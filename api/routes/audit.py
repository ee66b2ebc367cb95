"""The audit log: GET /audit, who deleted, restored, cancelled, purged or revoked what, when,
and from which address. An admin reads every act; a member only their own."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from api.deps import SessionDep, SettingsDep, UserDep, check_page_size
from api.errors import FieldErrors
from lab.repository import audit
from vocab.schemas.audit import AuditEventPublic, AuditPublic
from vocab.schemas.base import NO_NUL, IsoDatetime
from vocab.schemas.errors import AUTHED, error_responses

# Details only admins read: `address` of webhook.create is what the URL's name resolved to (a
# member must not learn the lab's internal names' addresses from their own acts).
ADMIN_ONLY_DETAIL = frozenset({"address"})

router = APIRouter(prefix="/audit", tags=["audit"])


@router.get("", responses=error_responses(*AUTHED, 403, 422))
def list_audit(
    session: SessionDep,
    settings: SettingsDep,
    user: UserDep,
    actor: Annotated[
        str | None,
        Query(max_length=100, pattern=NO_NUL, description="a member's name, or `system`"),
    ] = None,
    action: Annotated[
        str | None,
        Query(
            max_length=32,
            pattern=NO_NUL,
            description="one of " + ", ".join(audit.ACTIONS),
            # Declared as the enum it is; checked below, so a wrong one is told the known ones.
            json_schema_extra={"enum": list(audit.ACTIONS)},
        ),
    ] = None,
    subject: Annotated[
        str | None, Query(max_length=64, pattern=NO_NUL, description="a run's, sweep's... id")
    ] = None,
    before: Annotated[
        IsoDatetime | None, Query(description="only acts before this time (the next page)")
    ] = None,
    limit: Annotated[int, Query(ge=1, description="at most FEDGEN_MAX_PAGE_SIZE")] = 50,
) -> AuditPublic:
    """Recorded acts, newest first; filters `actor`, `action`, `subject`; the next page with
    `before=` the `next_before` of this one. Admins see everyone's acts, members their own
    (an `actor` naming someone else is a 403)."""
    check_page_size(limit, settings)
    if action is not None and action not in audit.ACTIONS:
        raise FieldErrors(
            [("action", f"unknown action {action!r}; known: {', '.join(audit.ACTIONS)}")]
        )
    if not user.is_admin:
        if actor is not None and actor != user.name:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN, "actor: only an admin may read another member's acts"
            )
    rows = audit.list_events(
        session,
        actor_id=None if user.is_admin else user.id,
        actor_name=actor if user.is_admin else None,
        action=action,
        subject_id=subject,
        before=before,
        limit=limit,
    )
    events = [AuditEventPublic.model_validate(r) for r in rows]
    if not user.is_admin:
        for e in events:
            e.detail = {k: v for k, v in e.detail.items() if k not in ADMIN_ONLY_DETAIL}
    return AuditPublic(
        data=events,
        next_before=rows[-1].at if len(rows) == limit else None,
    )
