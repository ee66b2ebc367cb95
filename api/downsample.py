"""Columnar metrics and server-side downsampling (last / min / max per bucket); pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Columns = dict[str, list[float | None]]


def to_columns(rows: Sequence[tuple[int, dict[str, Any]]]) -> tuple[list[int], Columns]:
    """(round, metrics) rows -> rounds list and one list per metric name (None where absent)."""
    rounds = [r for r, _ in rows]
    names: dict[str, None] = {}
    for _, m in rows:
        for k in m:
            names.setdefault(k, None)
    cols: Columns = {k: [m.get(k) for _, m in rows] for k in names}
    return rounds, cols


def downsample(
    rounds: list[int], cols: Columns, max_points: int
) -> tuple[list[int], Columns, Columns | None, Columns | None, bool]:
    """At most `max_points` buckets: each reports its last round, last value, min and max.

    Returns (rounds, last, min, max, downsampled); min/max are None when nothing was merged.
    """
    n = len(rounds)
    if max_points <= 0 or n <= max_points:
        return rounds, cols, None, None, False
    bounds = [(i * n) // max_points for i in range(max_points + 1)]
    out_rounds = [rounds[bounds[i + 1] - 1] for i in range(max_points)]
    last: Columns = {}
    lo: Columns = {}
    hi: Columns = {}
    for name, values in cols.items():
        lv: list[float | None] = []
        mn: list[float | None] = []
        mx: list[float | None] = []
        for i in range(max_points):
            chunk = [v for v in values[bounds[i] : bounds[i + 1]] if v is not None]  # NaN never stored
            if chunk:
                lv.append(chunk[-1])
                mn.append(min(chunk))
                mx.append(max(chunk))
            else:
                lv.append(None)
                mn.append(None)
                mx.append(None)
        last[name], lo[name], hi[name] = lv, mn, mx
    return out_rounds, last, lo, hi, True
