"""Bodies of the trash: GET /trash (what a member deleted, until when it can be restored) and
the answers of POST /runs/{id}/restore and /sweeps/{id}/restore."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from vocab.schemas.base import IdStr, OptionalIdStr


class TrashedRun(BaseModel):
    """A run in the trash."""

    id: IdStr
    owner: str
    algorithm: str
    dataset: str
    status: str = Field(description="as it was left: a run deleted unfinished was cancelled")
    sweep_id: OptionalIdStr
    created_at: datetime
    deleted_at: datetime
    deleted_by: str
    purge_after: datetime = Field(description="deleted for good at the first pass after this")


class TrashedSweep(BaseModel):
    """A sweep in the trash (its runs trashed with it are not listed apart)."""

    id: IdStr
    name: str
    owner: str
    runs: int = Field(description="runs trashed with the sweep (restored with it)")
    created_at: datetime
    deleted_at: datetime
    deleted_by: str
    purge_after: datetime


class TrashPublic(BaseModel):
    """The member's trash (an admin's: everyone's, or one owner's), newest deletion first."""

    runs: list[TrashedRun]
    sweeps: list[TrashedSweep]
    trash_days: float = Field(description="FEDGEN_TRASH_DAYS: how long a deletion can be undone")


class SweepRestored(BaseModel):
    """A sweep taken out of the trash, with the runs trashed with it."""

    id: IdStr
    name: str
    runs_restored: int
