"""The Settings page's token table, pure: API tokens (dicts from GET /tokens) in, a DataFrame and
select-box labels out."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

import pandas as pd

from dashboard.times import DASH, when

COLUMNS = ["name", "user", "id", "state", "created", "last used", "expires", "revoked"]
NEVER = "never"


def label(token: dict[str, Any]) -> str:
    """`laptop (1a2b3c4d)`: the name, or `unnamed`, and the id's first 8 characters."""
    return f"{token.get('name') or 'unnamed'} ({str(token.get('id') or '')[:8]})"


def active(tokens: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tokens that still authenticate (neither revoked nor expired)."""
    return [t for t in tokens if t.get("state") == "active"]


def tokens_table(tokens: list[dict[str, Any]], now: datetime, tz: tzinfo) -> pd.DataFrame:
    """One row per token, in the order given (newest first): never its secret or hash."""
    rows = [
        {
            "name": t.get("name") or DASH,
            "user": t.get("user") or DASH,
            "id": str(t.get("id") or "")[:8],
            "state": t.get("state") or DASH,
            "created": when(t.get("created_at"), now, tz),
            "last used": when(t.get("last_used_at"), now, tz),
            "expires": when(t.get("expires_at"), now, tz) if t.get("expires_at") else NEVER,
            "revoked": when(t.get("revoked_at"), now, tz),
        }
        for t in tokens
    ]
    return pd.DataFrame(rows, columns=COLUMNS)
