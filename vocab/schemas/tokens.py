"""API tokens' request and response bodies (POST/GET/DELETE /tokens): never the stored hash;
the secret only in the answer to the POST that created it."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from vocab.schemas.base import IdStr, In

MAX_NAME_CHARS = 100  # the column's length

MAX_DAYS = 36500  # FEDGEN_TOKEN_MAX_DAYS caps it further


class TokenCreate(In):
    """POST /tokens: a new token of the caller's, with a name and an optional lifetime."""

    name: str = Field(
        "", max_length=MAX_NAME_CHARS, description="What the token is for, e.g. `laptop`"
    )
    expires_days: int | None = Field(
        None,
        ge=1,
        le=MAX_DAYS,
        description="Days until the token expires; at most FEDGEN_TOKEN_MAX_DAYS when the lab "
        "sets it (and that cap when omitted); omitted without a cap: never",
    )


class TokenPublic(BaseModel):
    """A token as listed: who holds it, what it is called, when it was made, last used, when it
    expires or was revoked, and so whether it authenticates now (`state`)."""

    id: IdStr
    user: str
    name: str
    created_at: datetime
    last_used_at: datetime | None = Field(description="Recorded at most once a minute")
    expires_at: datetime | None
    revoked_at: datetime | None
    state: Literal["active", "expired", "revoked"]
    current: bool = Field(
        default=False,
        description="In GET /tokens: the token this very request was made with (revoking it "
        "signs that client out)",
    )


class TokenCreated(TokenPublic):
    """A new token, with its secret: shown this once, only its hash is stored."""

    token: str = Field(description="The bearer token; it cannot be shown again")


class TokensPublic(BaseModel):
    """Tokens, newest first."""

    data: list[TokenPublic]
    count: int
