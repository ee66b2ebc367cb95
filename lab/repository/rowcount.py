"""How many rows an UPDATE or DELETE run through a Session matched.

The repository's conditional writes (claims, leases, sends, trash, webhook deliveries) tell
success by that count. Session.execute is typed as returning a Result, which has no rowcount;
for an UPDATE or DELETE without RETURNING it returns a CursorResult, which has. This narrows it,
checked, so the callers read an int instead of an attribute the types do not know.
"""

from __future__ import annotations

from sqlalchemy import Delete, Update
from sqlalchemy.engine import CursorResult
from sqlalchemy.orm import Session


def rows_matched(session: Session, stmt: Update | Delete) -> int:
    """Execute `stmt` in the session's transaction; the number of rows its WHERE matched."""
    result = session.execute(stmt)
    if not isinstance(result, CursorResult):
        raise TypeError(f"{type(stmt).__name__} returned a {type(result).__name__}, no row count")
    return result.rowcount
