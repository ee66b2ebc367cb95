"""A bounded in-process cache of runs' full metric histories, in columnar form.

Rounds are written once and never change (idempotent by (run, round)), and a run's
`current_round` moves in the same transaction as each new round, so the history of
a run read at a given `current_round` is immutable: one entry per run, tagged with the
`current_round` it was read at, is valid exactly while that round is the run's last. Comparisons of finished runs, polled again and again by the
dashboard, then cost no query and no JSON parsing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.orm import Session

from lab.downsample import Columns, to_columns
from lab.repository import metrics as metrics_repo
from lab.versioned_lru import VersionedLru

MAX_ENTRIES = 2000  # runs
History = tuple[list[int], Columns]

# run id -> history, at the current_round it was read at: one entry per run, replaced as rounds land.
_cache: VersionedLru[uuid.UUID, History] = VersionedLru(MAX_ENTRIES)


def histories(session: Session, runs: Sequence[tuple[uuid.UUID, int]]) -> dict[uuid.UUID, History]:
    """Full columnar history of each (run id, current_round); only misses are read from the DB."""
    out: dict[uuid.UUID, History] = {}
    missing: list[tuple[uuid.UUID, int]] = []
    for rid, current in runs:
        hit = _cache.get(rid, current)
        if hit is None:
            missing.append((rid, current))
        else:
            out[rid] = hit
    if missing:
        rows = metrics_repo.round_history(session, [rid for rid, _ in missing])
        for rid, current in missing:
            hist = to_columns(rows[rid])
            out[rid] = hist
            # Only what the key promises: rounds 0..current, all present.
            if current >= 0 and hist[0] and hist[0][-1] == current:
                _cache.put(rid, current, hist)
    return out


def clear() -> None:
    """Forget everything (tests)."""
    _cache.clear()
