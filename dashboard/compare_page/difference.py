"""The difference between two groups of runs, for people: one line and a small Compare block.

`format_difference` is pure: GET /difference's body -> "FedGen − FedAvg: +3.9 points
[2.1, 5.6], p = 0.003, n = 3 vs 3". `difference_block` is the Streamlit block the Compare
page calls with its groups (label -> run ids); the statistics are the server's (Welch).
By default the better group comes first (a positive difference), and the statistic is
named with its round ("final @199") as everywhere else (`fedgen.stats.format_acc`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from fedgen.paper import PAPER_LABELS
from fedgen_lab.errors import LabError
from vocab.schemas.analysis import Difference

POINTS = 100.0  # accuracies are stored as fractions; the page speaks in percentage points


def short_name(label: str) -> str:
    """A group label as a name: "algorithm=fedgen" -> "FedGen"; other labels stay as they are."""
    if label.startswith("algorithm=") and "," not in label:
        name = label.split("=", 1)[1]
        return PAPER_LABELS.get(name, name)
    return label


def format_p(p: float | None) -> str:
    """ "p = 0.003", "p < 0.001", or "p n/a" (no spread on either side)."""
    if p is None or math.isnan(p):
        return "p n/a"
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.3f}"


def format_difference(d: Difference, name_a: str | None = None, name_b: str | None = None) -> str:
    """ "FedGen − FedAvg: +3.9 points [2.1, 5.6], p = 0.003, n = 3 vs 3" (95 % CI in brackets)."""
    a = name_a or short_name(d.label_a or "a")
    b = name_b or short_name(d.label_b or "b")
    lo, hi = d.ci
    return (
        f"{a} − {b}: {POINTS * d.diff:+.1f} points "
        f"[{POINTS * lo:.1f}, {POINTS * hi:.1f}], {format_p(d.p_value)}, "
        f"n = {d.n_a} vs {d.n_b}"
    )


STATISTICS = ["final", "best", "top5"]


def default_pair(
    labels: list[str], swapped: bool | None, hint: dict[str, float] | None = None
) -> tuple[str, str]:
    """The first two groups, the better one first: as the server ordered them (`swapped`), or,
    when it could not say (too few finished runs yet, `swapped` None), the one with the
    higher `hint` (the chart's current mean accuracy) first."""
    a, b = labels[0], labels[1]
    if swapped is None and hint and a in hint and b in hint:
        swapped = hint[b] > hint[a]
    return (b, a) if swapped else (a, b)


def round_note(d: Difference) -> str:
    """What the statistic's round is, when it is not the chart's last round (else "")."""
    at, last = d.round, d.last_round
    if at is None or last is None or at == last:
        return ""
    return (
        f" Final @{at}: round {at}'s accuracy, the last model the runs' protocol evaluates "
        f"(the official protocol never evaluates the model after the last aggregation, "
        f"round {last}; the dotted line on the chart)."
    )


def _asked(
    key: str,
    finished: frozenset[str] | None,
    question: tuple[str, ...],
    ask: Callable[[], Difference],
) -> Difference:
    """The server's answer to `question`, kept in the session while `finished` is unchanged.

    Only succeeded runs count on the server, so the answer (or its 409) cannot change until
    another run finishes; a LabError is raised again from the memo as well.
    """
    import streamlit as st

    if finished is None:
        return ask()
    memo: dict[Any, Any] = st.session_state.setdefault(f"{key}_memo", {})
    found = memo.get(question)
    if found is None or found[0] != finished:
        try:
            found = (finished, ask())
        except LabError as exc:  # remembered too (e.g. the 409 until a run ends)
            found = (finished, exc)
        memo.clear()  # one question at a time is enough
        memo[question] = found
    if isinstance(found[1], Exception):
        raise found[1]
    answer: Difference = found[1]
    return answer


def name_sides(message: str, a: str, b: str) -> str:
    """The server's message with its sides 'a:' / 'b:' named by the groups that were sent
    (the page may show them in the other order)."""
    return re.sub(
        r"(^|; )([ab]): ", lambda m: f"{m.group(1)}{a if m.group(2) == 'a' else b}: ", message
    )


def difference_block(
    groups: dict[str, list[str]],
    key: str = "cmp_diff",
    finished: frozenset[str] | None = None,
    hint: dict[str, float] | None = None,
) -> Difference | None:
    """Pick two groups and a statistic; show their difference with its 95 % CI and p-value.

    `groups`: group label -> run ids (unfinished runs may be among them: the server counts
    succeeded runs only). Until the user picks the groups, the first two are shown with the
    better one first (a positive difference: GET /difference?order=better_first). Returns
    the server's answer (None when nothing was computed). `finished`: the succeeded run ids
    among them when the caller knows them; the server's answer is then kept for this session
    until that set changes (a live page asks again only when a run has finished). `hint`:
    group -> the chart's current mean accuracy, which orders the default pair while the
    server cannot (mid-sweep).
    """
    import streamlit as st

    labels = list(groups)
    st.subheader("Difference between two groups")
    if len(labels) < 2:
        st.caption("Needs at least two groups.")
        return None
    ka, kb, picked = f"{key}_a", f"{key}_b", f"{key}_picked"
    for k in (ka, kb):  # a group that is no longer shown: back to the default
        if k in st.session_state and st.session_state[k] not in labels:
            st.session_state.pop(picked, None)
    c1, c2, c3 = st.columns([2, 2, 2])
    statistic = c3.radio("Per run", STATISTICS, key=f"{key}_stat", horizontal=True)
    d: Difference | None = None
    failure: LabError | None = None
    sent = (labels[0], labels[1])  # the groups the server calls a and b in its messages
    if not st.session_state.get(picked):
        d, failure = _difference(groups, sent, statistic, key, finished, "better_first")
        st.session_state[ka], st.session_state[kb] = default_pair(
            labels, d.swapped if d else None, hint
        )

    def _picked() -> None:
        st.session_state[picked] = True

    a = c1.selectbox("Group A", labels, key=ka, on_change=_picked)
    b = c2.selectbox("minus group B", labels, key=kb, on_change=_picked)
    if a == b:
        st.caption("Pick two different groups.")
        return None
    if st.session_state.get(picked):
        sent = (a, b)
        d, failure = _difference(groups, sent, statistic, key, finished)
    if d is None:
        _not_computed(failure, sent)
        return None
    _show(d, a, b, statistic)
    return d


def _difference(
    groups: dict[str, list[str]],
    sides: tuple[str, str],
    statistic: str,
    key: str,
    finished: frozenset[str] | None,
    order: str = "given",
) -> tuple[Difference | None, LabError | None]:
    """The server's difference of the groups `sides` (A − B; with order="better_first" the
    better one first), or its error."""
    from dashboard import api_client

    a, b = groups[sides[0]], groups[sides[1]]
    try:
        return _asked(
            key,
            finished,
            (statistic, order, *a, "|", *b),
            lambda: api_client.client().difference(a, b, statistic, order),
        ), None
    except LabError as exc:
        return None, exc


def _not_computed(failure: LabError | None, sent: tuple[str, str]) -> None:
    """Why no difference is shown: too few finished runs yet (409), or the server's error."""
    import streamlit as st

    if failure is not None and failure.status == 409:  # too few finished runs (yet)
        why = failure.detail if isinstance(failure.detail, str) else failure.message
        st.info(f"Not computed yet: {name_sides(why, *sent)}. Runs count once they succeed.")
    else:
        st.warning(failure.message if failure else "No difference computed.")


def _show(d: Difference, a: str, b: str, statistic: str) -> None:
    """The difference A − B with its interval and p-value, what it means, and its warnings."""
    import streamlit as st

    label = d.statistic_label or statistic
    st.markdown(f"**{format_difference(d, short_name(a), short_name(b))}** ({label})")
    st.caption(
        f"{label} accuracy per run, mean of A minus mean of B; 95 % confidence interval "
        "(Welch–Satterthwaite) and Welch's t-test p-value; n = finished runs (running runs "
        "count once they finish)." + round_note(d)
    )
    for w in d.warnings:
        st.warning(w)
