"""Bodies of GET /audit: who deleted, restored, cancelled, purged or revoked what, when, from
which address."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from vocab.schemas.base import FromRow


class AuditEventPublic(FromRow):
    """One recorded act."""

    at: datetime
    actor: str = Field(validation_alias="actor_name", description="a member, or `system`")
    action: str = Field(description="e.g. run.delete, run.restore, run.cancel, run.purge")
    subject_kind: str = Field(description="run, sweep, token or webhook")
    subject_id: str
    address: str | None = Field(description="the client's address (FEDGEN_TRUSTED_PROXIES)")
    detail: dict[str, Any]


class AuditPublic(BaseModel):
    """A page of the audit log, newest first."""

    data: list[AuditEventPublic]
    next_before: datetime | None = Field(
        description="pass as `before=` for the next page; null on the last page"
    )
