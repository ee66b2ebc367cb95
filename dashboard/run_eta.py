"""A running run's ETA: its own median round time times the rounds left (the median, so one
slow first round with start-up work does not skew it). No Streamlit.
"""

from __future__ import annotations

import statistics

from vocab.schemas.runs import RunPublic


def median_round_s(round_ms: list[float | None] | None) -> float | None:
    """The median time of the run's rounds after round 0 (round 0 only evaluates), in s."""
    vals = [float(v) for v in (round_ms or [])[1:] if v is not None and v == v]
    return statistics.median(vals) / 1000.0 if vals else None


def eta_seconds(run: RunPublic, round_ms: list[float | None] | None) -> float | None:
    """Seconds until a running run finishes: median round time x rounds left."""
    per_round = median_round_s(round_ms)
    if per_round is None or not run.rounds:
        return None
    return per_round * max(run.rounds - max(run.current_round, 0), 0)
