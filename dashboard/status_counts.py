"""Runs per status, in the lifecycle order, and the line that says them. No Streamlit."""

from __future__ import annotations

from collections import Counter
from typing import Any

from fedgen.status import RUN_STATUSES


def status_counts(runs: list[dict[str, Any]]) -> dict[str, int]:
    """Runs per status, in the lifecycle order, statuses with no run left out."""
    counts = Counter(str(r.get("status")) for r in runs)
    return {s: counts[s] for s in RUN_STATUSES if counts[s]}


def counts_line(counts: dict[str, int]) -> str:
    """`2 queued · 1 running · 40 succeeded` (or `no runs`)."""
    return " · ".join(f"{n} {s}" for s, n in counts.items()) or "no runs"
