"""served_queues: which queues a live worker consumes now (to refuse runs nobody would take)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import inspect, text
from sqlalchemy.orm import Session

from api.models import utcnow

#: A worker row older than this counts as dead.
WORKER_TTL_S = 120.0


def served_queues(session: Session, ttl_s: float = WORKER_TTL_S) -> set[str] | None:
    """Queue names with a live worker (heartbeat within `ttl_s`), or None when this database has
    no `workers` table (workers do not record themselves yet: nothing can be refused)."""
    bind = session.get_bind()
    if not inspect(bind).has_table("workers"):
        return None
    since = utcnow() - timedelta(seconds=ttl_s)
    rows = session.execute(
        text("SELECT DISTINCT queue FROM workers WHERE heartbeat_at >= :since"), {"since": since}
    )
    return {str(q) for (q,) in rows}
