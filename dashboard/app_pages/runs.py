"""Runs: status counts, the filterable table (live while any run is active); compare, watch,
cancel or clone the runs picked in the table.

The filters live in the URL (`?status=running&algorithm=fedgen&owner=...`), so a link
reproduces the view. Queued runs show their queue position and expected start as the API
reports them, and, when no live worker can take them, what they wait for (the API's
waiting_reason); running runs an ETA from their own median round time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import streamlit as st
import yaml

from dashboard import loaders, runs_view, ui
from dashboard.client import ApiError, LabClient
from dashboard.frames import any_active
from dashboard.spec_form import ALGORITHM_NAMES, DATASETS
from fedgen import specdict
from fedgen.status import ACTIVE, RUN_STATUSES

STATUSES = ["", *RUN_STATUSES]
# widget key -> (query parameter, choices or None for free text)
FILTERS: dict[str, tuple[str, list[str] | None]] = {
    "runs_status": ("status", STATUSES),
    "runs_alg": ("algorithm", ["", *ALGORITHM_NAMES]),
    "runs_data": ("dataset", ["", *DATASETS]),
    "runs_owner": ("owner", None),
    "runs_tag": ("tag", None),
}

st.title("Runs")
url, token = ui.connection()

# Seed the filters from the link once per session; a value not among the choices is dropped.
for key, (param, choices) in FILTERS.items():
    if key not in st.session_state:
        raw = st.query_params.get(param, "")
        st.session_state[key] = raw if choices is None or raw in choices else ""

c1, c2, c3, c4, c5 = st.columns(5)
status = c1.selectbox("Status", STATUSES, key="runs_status", format_func=lambda s: s or "any")
algorithm = c2.selectbox(
    "Algorithm", FILTERS["runs_alg"][1] or [], key="runs_alg", format_func=lambda s: s or "any"
)
dataset = c3.selectbox(
    "Dataset", FILTERS["runs_data"][1] or [], key="runs_data", format_func=lambda s: s or "any"
)
owner = c4.text_input("Owner", key="runs_owner")
tag = c5.text_input("Tag", key="runs_tag")
filters = {"status": status, "algorithm": algorithm, "dataset": dataset, "owner": owner, "tag": tag}
wanted = {k: v for k, v in filters.items() if v}
if dict(st.query_params) != wanted:
    st.query_params.from_dict(wanted)


@st.cache_data(ttl=10, show_spinner=False)
def round_times(
    url: str,
    token: str,
    run_id: str,
    current_round: int,  # noqa: ARG001 (a cache key)
) -> list[float | None]:
    """time_total_ms per round of one run (for its ETA); cached per round reached."""
    with LabClient(url, token) as c:
        return list((c.metrics(run_id).get("metrics") or {}).get("time_total_ms") or [])


def actions(picked: list[dict[str, Any]], me: str | None) -> None:
    """Compare / watch / cancel / clone the runs picked in the table."""
    ids = [str(r["id"]) for r in picked]
    b1, b2, b3, b4 = st.columns(4)
    b1.page_link(
        "app_pages/compare.py",
        label=f"Compare {len(ids)} runs" if ids else "Compare (pick runs in the table)",
        icon=":material/compare_arrows:",
        query_params=runs_view.compare_params(ids) if ids else None,
        disabled=not ids,
    )
    b2.page_link(
        "app_pages/live.py",
        label="Watch live",
        icon=":material/monitoring:",
        query_params={"run": ids[0]} if len(ids) == 1 else None,
        disabled=len(ids) != 1,
    )
    own = [r for r in picked if r.get("owner") == me]
    cancellable = [r for r in own if r.get("status") in ACTIVE]
    if b3.button(
        f"Cancel {len(cancellable)}" if cancellable else "Cancel",
        key="runs_cancel",
        disabled=not cancellable,
        help="Your own queued or running runs among those picked",
    ):
        for run in cancellable:
            if ui.try_call(ui.client().cancel_run, str(run["id"])) is not None:
                st.toast(f"Cancel requested for {ui.run_label(run)}")
        loaders.runs.clear()
    with b4.popover("Clone…", disabled=len(picked) != 1):
        changes_text = st.text_area(
            "Changes (YAML)",
            "seed: 1\n",
            key="runs_clone_changes",
            help="Nested spec fields to change",
        )
        if st.button("Clone run", key="runs_clone"):
            try:
                changes = yaml.safe_load(changes_text) or {}
            except yaml.YAMLError as exc:
                st.error(f"Not valid YAML: {exc}")
                return
            new = ui.try_call(ui.client().clone_run, ids[0], changes)
            if new:
                st.success(f"Queued clone {new['id']}")
                loaders.runs.clear()


def failures(runs: list[dict[str, Any]], now: datetime) -> None:
    """The newest failed runs with their error and the round they stopped at (open while one
    failed in the last day), each linked to its Live page."""
    shown, total, recent = runs_view.recent_failures(runs, now)
    if not shown:
        return
    more = f" (the newest {len(shown)})" if total > len(shown) else ""
    with st.expander(
        f":red[{total} failed {'run' if total == 1 else 'runs'}]{more}", expanded=recent
    ):
        for run in shown:
            st.page_link(
                "app_pages/live.py",
                label=f"{specdict.run_label(run.get('spec') or {})} · {str(run['id'])[:8]} "
                f"failed {runs_view.failure(run)}",
                icon=":material/error:",
                query_params={"run": str(run["id"])},
            )


def table() -> None:
    """Counts, the runs table and its actions (a fragment: reruns alone while runs are active)."""
    everything = ui.call(loaders.runs, url, token, **{**filters, "status": ""})
    runs = [r for r in everything if not status or r.get("status") == status]
    if not everything:
        st.info(
            "No runs yet. Submit one on the **Submit** page, run `make demo` (a FedGen vs "
            "FedAvg sweep), or POST a spec to `/api/v1/runs` (the API docs are at `/docs`; "
            "start the lab with `fedgen-lab up`)."
        )
        return
    counts = runs_view.status_counts(everything)
    st.markdown(runs_view.counts_line(counts), help="Runs per status under the other filters")
    now = datetime.now(UTC)
    tz = runs_view.zone(st.context.timezone)
    times = {
        str(r["id"]): round_times(url, token, str(r["id"]), int(r.get("current_round") or 0))
        for r in runs
        if r.get("status") == "running"
    }
    df = runs_view.table(runs, now, tz, times)
    active = any_active(runs)
    st.caption(
        f"{len(df)} runs shown · times in {getattr(tz, 'key', 'UTC')}"
        + (" · refreshing every 3 s while runs are active" if active else "")
        + " · tick rows to compare, watch, cancel or clone them"
    )
    failures(runs, now)
    stuck = sum(1 for r in runs if r.get("waiting_reason"))
    if stuck:
        st.page_link(
            "app_pages/lab.py",
            label=f"{stuck} {'run' if stuck == 1 else 'runs'} no live worker can take (see "
            "“waiting for”) · the live workers are on the Lab page",
            icon=":material/warning:",
        )
    event = st.dataframe(
        df,
        hide_index=True,
        key="runs_table",
        on_select="rerun",
        selection_mode="multi-row",
        column_order=runs_view.shown_columns(df),
        column_config={
            # no widths: Streamlit sizes the columns to their content
            "ETA": st.column_config.TextColumn(
                "ETA", help="Running runs: median round time × rounds left (finish time)"
            ),
            "queue": st.column_config.TextColumn("queue", help="Position among queued runs"),
            "waiting for": st.column_config.TextColumn(
                "waiting for",
                help="A run that no live worker can take: the worker it needs (a dataset, a "
                "queue). It starts once such a worker is up.",
            ),
            "id": st.column_config.TextColumn("id", width="small"),
            "error": st.column_config.TextColumn(
                "error", help="A failed run: the round it stopped at and its error"
            ),
            "status": st.column_config.TextColumn(
                "status",
                help="claimed: a worker took it, no round stored yet; cancelling: a cancel was "
                "asked, it stops after its current round",
            ),
            "best acc (%)": st.column_config.NumberColumn("best acc (%)", format="%.2f"),
            "last acc (%)": st.column_config.NumberColumn("last acc (%)", format="%.2f"),
        },
    )
    rows = [i for i in event.selection.rows if 0 <= i < len(runs)]
    picked = [runs[i] for i in rows]
    me = None
    try:
        me = loaders.me(url, token).get("name")
    except ApiError:  # identity is optional for read-only use
        me = None
    actions(picked, me)
    with st.expander("Export"):
        st.download_button(
            "Download table as CSV", df.to_csv(index=False), "runs.csv", "text/csv", key="runs_csv"
        )


runs_now = ui.call(loaders.runs, url, token, **{**filters, "status": ""})
interval = "3s" if any_active(runs_now) else None
st.fragment(run_every=interval)(table)()
