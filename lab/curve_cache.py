"""A bounded in-process cache of finished runs' accuracy curves (test_acc by round).

A sweep's summary, its plot data and a difference of two groups read the curve of every
succeeded run they count: a 1,000-run sweep is 201,000 values read and converted again on
each request. As in `lab.history_cache`, rounds are written once and `current_round` moves
in the transaction that writes each, so a run's curve read at a given `current_round` is
immutable; only succeeded runs are kept (their rounds are over), one entry per run tagged
with that round, as compact float arrays (8 bytes a value).
"""

from __future__ import annotations

import threading
import uuid
from array import array
from collections import OrderedDict
from collections.abc import Sequence

from sqlalchemy.orm import Session

from fedgen.status import RunStatus
from lab.models import Run
from lab.repository import metrics as metrics_repo

MAX_ENTRIES = 5000  # runs: ~8 MB of 201-round curves

_lock = threading.Lock()
# run id -> (the current_round it was read at, its curve)
_cache: OrderedDict[uuid.UUID, tuple[int, array[float]]] = OrderedDict()


def acc_curves(session: Session, runs: Sequence[Run]) -> dict[uuid.UUID, list[float]]:
    """`metrics_repo.acc_curves` of the runs (fresh lists); only misses are read from the DB."""
    out: dict[uuid.UUID, list[float]] = {}
    missing: list[Run] = []
    with _lock:
        for r in runs:
            hit = _cache.get(r.id)
            if hit is None or hit[0] != r.current_round:
                missing.append(r)
            else:
                _cache.move_to_end(r.id)
                out[r.id] = hit[1].tolist()
    if missing:
        read = metrics_repo.acc_curves(session, [r.id for r in missing])
        out.update(read)
        with _lock:
            for r in missing:
                if r.status == RunStatus.SUCCEEDED:  # a running run's curve still grows
                    _cache[r.id] = (r.current_round, array("d", read[r.id]))
                    _cache.move_to_end(r.id)
            while len(_cache) > MAX_ENTRIES:
                _cache.popitem(last=False)
    return out


def clear() -> None:
    """Forget everything (tests)."""
    with _lock:
        _cache.clear()
