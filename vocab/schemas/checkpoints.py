"""A run's stored checkpoints."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from vocab.schemas.base import FromRow, IdStr


class CheckpointPublic(FromRow):
    """A stored checkpoint (download it from .../download)."""

    id: IdStr
    round: int
    kind: str
    size: int
    sha256: str
    created_at: datetime


class PrunedPublic(BaseModel):
    """Checkpoints of one kind the run wrote and no longer has, and the rule that removed them."""

    kind: str
    rounds: list[int]
    reason: str


class CheckpointsPublic(BaseModel):
    """GET /runs/{id}/checkpoints: those stored, and those pruned under the retention rules."""

    data: list[CheckpointPublic]
    pruned: list[PrunedPublic] = []
