"""A bounded in-process cache of runs' full metric histories, in columnar form.

Rounds are written once and never change (idempotent by (run, round)), and a run's
`current_round` moves in the same transaction as each new round, so the history of
a run read at a given `current_round` is immutable: (run id, current_round) is a
correct cache key. Comparisons of finished runs, polled again and again by the
dashboard, then cost no query and no JSON parsing.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence

from sqlalchemy.orm import Session

from api.downsample import Columns, to_columns
from api.repository import metrics as metrics_repo

MAX_ENTRIES = 2000
History = tuple[list[int], Columns]

_lock = threading.Lock()
_cache: OrderedDict[tuple[uuid.UUID, int], History] = OrderedDict()


def histories(session: Session, runs: Sequence[tuple[uuid.UUID, int]]) -> dict[uuid.UUID, History]:
    """Full columnar history of each (run id, current_round); only misses are read from the DB."""
    out: dict[uuid.UUID, History] = {}
    missing: list[tuple[uuid.UUID, int]] = []
    with _lock:
        for key in runs:
            hit = _cache.get(key)
            if hit is None:
                missing.append(key)
            else:
                _cache.move_to_end(key)
                out[key[0]] = hit
    if missing:
        rows = metrics_repo.round_history(session, [rid for rid, _ in missing])
        with _lock:
            for rid, current in missing:
                hist = to_columns(rows[rid])
                out[rid] = hist
                # Only what the key promises: rounds 0..current, all present.
                if current >= 0 and hist[0] and hist[0][-1] == current:
                    _cache[(rid, current)] = hist
            while len(_cache) > MAX_ENTRIES:
                _cache.popitem(last=False)
    return out


def clear() -> None:
    """Forget everything (tests)."""
    with _lock:
        _cache.clear()
