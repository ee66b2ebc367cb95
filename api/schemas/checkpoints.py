"""A run's stored checkpoints."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from api.schemas.base import FromRow, IdStr


class CheckpointPublic(FromRow):
    """A stored checkpoint (download it from .../download)."""

    id: IdStr
    round: int
    kind: str
    size: int
    sha256: str
    created_at: datetime


class CheckpointsPublic(BaseModel):
    """GET /runs/{id}/checkpoints."""

    data: list[CheckpointPublic]
