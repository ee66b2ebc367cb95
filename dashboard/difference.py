"""The difference between two groups of runs, for people: one line and a small Compare block.

`format_difference` is pure: GET /difference's body -> "FedGen − FedAvg: +3.9 points
[2.1, 5.6], p = 0.003, n = 3 vs 3". `difference_block` is the Streamlit block the Compare
page calls with its groups (label -> run ids); the statistics are the server's (Welch).
"""

from __future__ import annotations

import math
from typing import Any

from fedgen.paper import ALGORITHMS

POINTS = 100.0  # accuracies are stored as fractions; the page speaks in percentage points


def short_name(label: str) -> str:
    """A group label as a name: "algorithm=fedgen" -> "FedGen"; other labels stay as they are."""
    if label.startswith("algorithm=") and "," not in label:
        name = label.split("=", 1)[1]
        return ALGORITHMS.get(name, name)
    return label


def format_p(p: float | None) -> str:
    """ "p = 0.003", "p < 0.001", or "p n/a" (no spread on either side)."""
    if p is None or math.isnan(p):
        return "p n/a"
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.3f}"


def format_difference(
    d: dict[str, Any], name_a: str | None = None, name_b: str | None = None
) -> str:
    """ "FedGen − FedAvg: +3.9 points [2.1, 5.6], p = 0.003, n = 3 vs 3" (95 % CI in brackets)."""
    a = name_a or short_name(str(d.get("label_a") or "a"))
    b = name_b or short_name(str(d.get("label_b") or "b"))
    lo, hi = d["ci"]
    return (
        f"{a} − {b}: {POINTS * d['diff']:+.1f} points "
        f"[{POINTS * lo:.1f}, {POINTS * hi:.1f}], {format_p(d.get('p_value'))}, "
        f"n = {d['n_a']} vs {d['n_b']}"
    )


def difference_block(groups: dict[str, list[str]], key: str = "cmp_diff") -> dict[str, Any] | None:
    """Pick two groups and a statistic; show their difference with its 95 % CI and p-value.

    `groups`: group label -> run ids (unfinished runs may be among them: the server counts
    succeeded runs only). Returns the server's answer (None when nothing was computed).
    """
    import streamlit as st

    from dashboard import ui
    from dashboard.client import ApiError

    labels = list(groups)
    st.subheader("Difference between two groups")
    if len(labels) < 2:
        st.caption("Needs at least two groups.")
        return None
    c1, c2, c3 = st.columns([2, 2, 1])
    a = c1.selectbox("Group A", labels, index=0, key=f"{key}_a")
    b = c2.selectbox("minus group B", labels, index=1, key=f"{key}_b")
    statistic = c3.radio("Per run", ["final", "top5"], key=f"{key}_stat", horizontal=True)
    if a == b:
        st.caption("Pick two different groups.")
        return None
    try:
        d = ui.client().difference(groups[a], groups[b], statistic)
    except ApiError as exc:
        st.warning(exc.message)
        return None
    st.markdown(f"**{format_difference(d, short_name(a), short_name(b))}**")
    st.caption(
        f"{statistic} accuracy per run, mean of A minus mean of B; 95 % confidence interval "
        "(Welch–Satterthwaite) and Welch's t-test p-value; n = finished runs."
    )
    for w in d.get("warnings") or []:
        st.warning(w)
    return d
