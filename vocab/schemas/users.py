"""The lab's user as GET /me shows it, and GET /health."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from vocab.schemas.base import FromRow, IdStr


class Health(BaseModel):
    """GET /health: the process is up (readiness, with the database and broker: GET /ready)."""

    status: Literal["ok"]


class UserPublic(FromRow):
    """GET /me."""

    id: IdStr
    name: str
    is_admin: bool
