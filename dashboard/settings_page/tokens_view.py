"""The Settings page's token table, pure: API tokens (GET /tokens' TokenPublic) in, a DataFrame
and select-box labels out."""

from __future__ import annotations

from datetime import datetime, tzinfo

import pandas as pd

from dashboard.times import when
from vocab.schemas.tokens import TokenPublic

COLUMNS = ["name", "user", "id", "used by", "state", "created", "last used", "expires", "revoked"]
NEVER = "never"


THIS_BROWSER = "this browser"


def label(token: TokenPublic) -> str:
    """`laptop (1a2b3c4d)`: the name, or `unnamed`, and the id's first 8 characters; the token
    this page is signed in with says so: `laptop (1a2b3c4d) · this browser`."""
    mark = f" · {THIS_BROWSER}" if token.current else ""
    return f"{token.name or 'unnamed'} ({token.id[:8]}){mark}"


def active(tokens: list[TokenPublic]) -> list[TokenPublic]:
    """The tokens that still authenticate (neither revoked nor expired)."""
    return [t for t in tokens if t.state == "active"]


def tokens_table(tokens: list[TokenPublic], now: datetime, tz: tzinfo) -> pd.DataFrame:
    """One row per token, in the order given (newest first): never its secret or hash."""
    rows = [
        {
            "name": t.name,
            "user": t.user,
            "id": t.id[:8],
            "used by": THIS_BROWSER if t.current else "",
            "state": t.state,
            "created": when(t.created_at, now, tz),
            "last used": when(t.last_used_at, now, tz),
            "expires": when(t.expires_at, now, tz) if t.expires_at else NEVER,
            "revoked": when(t.revoked_at, now, tz),
        }
        for t in tokens
    ]
    return pd.DataFrame(rows, columns=COLUMNS)
