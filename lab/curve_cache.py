"""A bounded in-process cache of finished runs' accuracy curves (test_acc by round), and of
their validation curves and cost totals (`val_and_cost`).

A sweep's summary, its plot data and a difference of two groups read the curve of every
succeeded run they count: a 1,000-run sweep is 201,000 values read and converted again on
each request. As in `lab.history_cache`, rounds are written once and `current_round` moves
in the transaction that writes each, so a run's curve read at a given `current_round` is
immutable; only succeeded runs are kept (their rounds are over), one entry per run tagged
with that round, as compact float arrays (8 bytes a value).
"""

from __future__ import annotations

import math
import uuid
from array import array
from collections.abc import Sequence
from typing import TypeVar

from sqlalchemy.orm import Session

from fedgen.cost import COST_METRICS, COST_TOTALS, run_cost
from lab.models import Run
from lab.repository import metrics as metrics_repo
from lab.versioned_lru import VersionedLru
from vocab.run_status import RunStatus

V = TypeVar("V")

MAX_ENTRIES = 5000  # runs: ~8 MB of 201-round curves
READ = ("val_acc", *COST_METRICS)  # the per-round metrics `val_and_cost` reads

# run id -> its curve, at the current_round it was read at
_cache: VersionedLru[uuid.UUID, array[float]] = VersionedLru(MAX_ENTRIES)


def _split(
    cache: VersionedLru[uuid.UUID, V], runs: Sequence[Run]
) -> tuple[dict[uuid.UUID, V], list[Run]]:
    """The runs' entries kept at their current round, and the runs to read afresh."""
    hits: dict[uuid.UUID, V] = {}
    missing: list[Run] = []
    for r in runs:
        hit = cache.get(r.id, r.current_round)
        if hit is None:
            missing.append(r)
        else:
            hits[r.id] = hit
    return hits, missing


def acc_curves(session: Session, runs: Sequence[Run]) -> dict[uuid.UUID, list[float]]:
    """`metrics_repo.acc_curves` of the runs (fresh lists); only misses are read from the DB."""
    hits, missing = _split(_cache, runs)
    out = {rid: curve.tolist() for rid, curve in hits.items()}
    if missing:
        read = metrics_repo.acc_curves(session, [r.id for r in missing])
        out.update(read)
        for r in missing:
            if r.status == RunStatus.SUCCEEDED:  # a running run's curve still grows
                _cache.put(r.id, r.current_round, array("d", read[r.id]))
    return out


# run id -> (val_acc by round, its cost totals in COST_TOTALS order), at its current_round:
# what a sweep summary reads beside the curve (validation for val_best and tune=, the cost
# columns), kept small (the packed rounds are unpacked once per finished run, not per request).
_extras: VersionedLru[uuid.UUID, tuple[array[float], tuple[float, ...]]] = VersionedLru(MAX_ENTRIES)


def val_and_cost(
    session: Session, runs: Sequence[Run]
) -> dict[uuid.UUID, tuple[list[float], dict[str, float]]]:
    """Each run's val_acc by round (`metrics_repo.val_curves`'s shape: NaN where a round has
    none, empty without validation data) and its cost (`fedgen.cost.run_cost`), fresh
    objects; only misses are read from the DB, in one pass over their rounds."""
    hits, missing = _split(_extras, runs)
    out = {
        rid: (vals.tolist(), dict(zip(COST_TOTALS, totals, strict=True)))
        for rid, (vals, totals) in hits.items()
    }
    if missing:
        read = metrics_repo.metric_curves(session, [r.id for r in missing], READ)
        for r in missing:
            curves = read[r.id]
            vals = curves["val_acc"]
            if all(math.isnan(v) for v in vals):
                vals = []
            cost = run_cost(curves)
            out[r.id] = (vals, cost)
            if r.status == RunStatus.SUCCEEDED:  # a running run's rounds still grow
                totals = tuple(cost[c] for c in COST_TOTALS)
                _extras.put(r.id, r.current_round, (array("d", vals), totals))
    return out


def clear() -> None:
    """Forget everything (tests)."""
    _cache.clear()
    _extras.clear()
