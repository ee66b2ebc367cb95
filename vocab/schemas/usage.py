"""What a member's runs store against their quota: GET /me and GET /usage (the Lab page)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from vocab.schemas.base import IdStr


class MemberUsage(BaseModel):
    """One member's storage and queued runs (GET /usage: one per member)."""

    model_config = ConfigDict(from_attributes=True, use_attribute_docstrings=True)

    name: str
    is_admin: bool
    usage_bytes: int = Field(ge=0)
    """What the member's runs store now: rounds and checkpoints; a trashed run counts until it
    is purged."""
    reserved_bytes: int = Field(ge=0)
    """What their queued and running runs are still estimated to add; a submission is refused
    (422) when its estimate would take usage + reserved past the quota."""
    quota_bytes: int = Field(ge=0)
    """Their quota: their own (`fedgen-lab quota set`), else FEDGEN_QUOTA_BYTES."""
    quota_is_default: bool
    """True when quota_bytes is the lab's FEDGEN_QUOTA_BYTES, not their own."""
    queued_runs: int = Field(ge=0)
    runs: int = Field(ge=0)
    """Their runs in the database, trashed ones included."""


class MePublic(MemberUsage):
    """GET /me: who the token is, what their runs store and may store, what they may queue."""

    id: IdStr
    max_queued_runs: int = Field(ge=1)
    """FEDGEN_MAX_QUEUED_RUNS_PER_MEMBER: a submission that would queue more is refused (429)."""


class UsageList(BaseModel):
    """GET /usage: every member's usage for an admin, the caller's own for a member."""

    data: list[MemberUsage]
    count: int
