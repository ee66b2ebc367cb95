"""Columnar metrics and server-side downsampling (last / min / max per bucket); pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

Columns = dict[str, list[float | None]]


def to_columns(rows: Sequence[tuple[int, dict[str, Any]]]) -> tuple[list[int], Columns]:
    """(round, metrics) rows -> rounds list and one list per metric name (None where absent)."""
    rounds = [r for r, _ in rows]
    names: dict[str, None] = {}
    for _, m in rows:
        names.update(dict.fromkeys(m))
    cols: Columns = {k: [m.get(k) for _, m in rows] for k in names}
    return rounds, cols


def _nan_to_none(values: list[float]) -> list[float | None]:
    return [None if v != v else v for v in values]  # noqa: PLR0124 - NaN test


def _downsample_python(
    values: list[float | None], bounds: list[int], max_points: int
) -> tuple[list[float | None], list[float | None], list[float | None]]:
    lv: list[float | None] = []
    mn: list[float | None] = []
    mx: list[float | None] = []
    for i in range(max_points):
        chunk = [v for v in values[bounds[i] : bounds[i + 1]] if v is not None]
        if chunk:
            lv.append(chunk[-1])
            mn.append(min(chunk))
            mx.append(max(chunk))
        else:
            lv.append(None)
            mn.append(None)
            mx.append(None)
    return lv, mn, mx


def downsample(
    rounds: list[int], cols: Columns, max_points: int
) -> tuple[list[int], Columns, Columns | None, Columns | None, bool]:
    """At most `max_points` buckets: each reports its last round, last value, min and max.

    Returns (rounds, last, min, max, downsampled); min/max are None when nothing was merged.
    Buckets are [i*n//max_points, (i+1)*n//max_points); None values are skipped, a bucket with
    none left reports None. Numeric columns (write_round stores only floats) are reduced with numpy,
    all metrics of the run at once (np.fmin/np.fmax/np.maximum.reduceat); a non-numeric value
    falls back to the plain loop.
    """
    n = len(rounds)
    if max_points <= 0 or n <= max_points:
        return rounds, cols, None, None, False
    bounds_np = (np.arange(max_points + 1, dtype=np.int64) * n) // max_points
    starts = bounds_np[:-1]
    out_rounds = [rounds[e - 1] for e in bounds_np[1:].tolist()]
    names = list(cols)
    last: Columns = {}
    lo: Columns = {}
    hi: Columns = {}
    try:  # None -> NaN; the schema's values are floats (write_round stores only finite floats)
        m = np.array([cols[k] for k in names], dtype=np.float64).reshape(len(names), n)
    except (TypeError, ValueError):  # a non-numeric value: the exact per-bucket loop
        bounds = bounds_np.tolist()
        for k in names:
            last[k], lo[k], hi[k] = _downsample_python(cols[k], bounds, max_points)
        return out_rounds, last, lo, hi, True
    valid = ~np.isnan(m)
    mn = np.fmin.reduceat(m, starts, axis=1)  # fmin/fmax skip NaN; an all-NaN bucket stays NaN
    mx = np.fmax.reduceat(m, starts, axis=1)
    idx = np.where(valid, np.arange(n), -1)
    last_idx = np.maximum.reduceat(
        idx, starts, axis=1
    )  # last valid index in each bucket, or < start
    lv = np.take_along_axis(m, np.maximum(last_idx, 0), axis=1)
    lv[last_idx < starts] = np.nan
    holes = cast("list[bool]", np.isnan(lv).any(axis=1).tolist())
    lv_l, mn_l, mx_l = lv.tolist(), mn.tolist(), mx.tolist()
    for j, k in enumerate(names):
        if holes[j]:
            last[k], lo[k], hi[k] = (
                _nan_to_none(lv_l[j]),
                _nan_to_none(mn_l[j]),
                _nan_to_none(mx_l[j]),
            )
        else:
            last[k], lo[k], hi[k] = lv_l[j], mn_l[j], mx_l[j]
    return out_rounds, last, lo, hi, True
