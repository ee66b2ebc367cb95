"""The line that says the lab's runs per status (the API's counts), in the lifecycle order.
No Streamlit."""

from __future__ import annotations

from collections.abc import Mapping

from vocab.run_status import RUN_STATUSES, RunStatus


def counts_line(counts: Mapping[RunStatus, int], exact: bool = True) -> str:
    """`2 queued · 1 running · 40 succeeded` (statuses with no run left out; `no runs`); `about`
    before the counts when the server estimated some of them."""
    line = " · ".join(f"{counts[s]:,} {s}" for s in RUN_STATUSES if counts.get(s))
    if not line:
        return "no runs"
    return line if exact else f"about {line}"
