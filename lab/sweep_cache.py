"""A bounded in-process cache of whole answers about a sweep (its summary, its plot data).

Computing a 1,000-run sweep's summary or plot data reads every run's spec and summary, groups
the runs and aggregates their curves: hundreds of milliseconds, although the dashboard asks the
same question again and again about a sweep that has long finished. What such an answer is
computed from, per run of the sweep outside the trash, is its spec (written once), its status,
its rounds (written once each, `current_round` moving in the transaction that writes one) and
its summary (written with `finished_at` when it ends). So the sweep's *version*, a digest of
(id, status, current_round, finished_at) over those runs, read in one indexed query, changes
whenever an answer could: a run that starts, records a round, ends, is trashed, restored or
purged. An entry is served only under the version it was computed at; anything else recomputes.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Hashable
from typing import TypeVar, cast

from sqlalchemy import select
from sqlalchemy.orm import Session

from lab.models import Run
from lab.versioned_lru import VersionedLru

MAX_ENTRIES = 64  # answers: ~100 KB each for a 1,000-run sweep

T = TypeVar("T")

# (sweep id, the caller's key) -> the answer, at the sweep's version it was computed at
_cache: VersionedLru[tuple[uuid.UUID, Hashable], object] = VersionedLru(MAX_ENTRIES)


def sweep_version(session: Session, sweep_id: uuid.UUID) -> bytes:
    """A digest of what every answer about the sweep depends on (see the module docstring)."""
    rows = session.execute(
        select(Run.id, Run.status, Run.current_round, Run.finished_at)
        .where(Run.sweep_id == sweep_id, Run.deleted_at.is_(None))
        .order_by(Run.id)
    )
    digest = hashlib.blake2b(digest_size=16)
    for rid, status, current_round, finished_at in rows:
        digest.update(f"{rid}|{status}|{current_round}|{finished_at}\n".encode())
    return digest.digest()


def answer(session: Session, sweep_id: uuid.UUID, key: Hashable, compute: Callable[[], T]) -> T:
    """`compute()`'s answer for (sweep, key), computed again only when the sweep's version moved.

    The answer is shared between requests: callers must not change it (bytes or text suit).
    An exception from `compute` propagates and nothing is kept.
    """
    # Read before computing: an answer computed from newer rows than its version says is only
    # ever replaced, never served in place of a newer one.
    version = sweep_version(session, sweep_id)
    slot = (sweep_id, key)
    hit = _cache.get(slot, version)
    if hit is not None:
        return cast(T, hit)
    value = compute()
    _cache.put(slot, version, value)
    return value


def clear() -> None:
    """Forget everything (tests)."""
    _cache.clear()
