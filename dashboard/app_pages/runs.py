"""Runs: filterable table, live while any run is active; compare, watch, cancel, clone."""

from __future__ import annotations

from typing import Any

import streamlit as st
import yaml

from dashboard import loaders, ui
from dashboard.client import ApiError
from dashboard.frames import any_active, runs_frame
from dashboard.spec_form import ALGORITHMS, DATASETS
from fedgen.status import ACTIVE, RUN_STATUSES

STATUSES = ["", *RUN_STATUSES]

st.title("Runs")
url, token = ui.connection()

c1, c2, c3, c4, c5 = st.columns(5)
status = c1.selectbox("Status", STATUSES, key="runs_status", format_func=lambda s: s or "any")
algorithm = c2.selectbox(
    "Algorithm", ["", *ALGORITHMS], key="runs_alg", format_func=lambda s: s or "any"
)
dataset = c3.selectbox(
    "Dataset", ["", *DATASETS], key="runs_data", format_func=lambda s: s or "any"
)
owner = c4.text_input("Owner", key="runs_owner")
tag = c5.text_input("Tag", key="runs_tag")
filters = {"status": status, "algorithm": algorithm, "dataset": dataset, "owner": owner, "tag": tag}


def actions(runs: list[dict[str, Any]], me: str | None) -> None:
    """Compare / watch / cancel / clone the runs picked below the table."""
    by_id = {str(r["id"]): r for r in runs}
    picked = st.multiselect(
        "Selected runs",
        list(by_id),
        key="runs_selected",
        format_func=lambda i: ui.run_label(by_id[i]),
    )
    b1, b2, b3, b4 = st.columns(4)
    if b1.button("Compare selected", key="runs_compare", disabled=not picked):
        st.session_state["compare_ids"] = picked
        st.switch_page("app_pages/compare.py")
    if b2.button("Watch live", key="runs_watch", disabled=len(picked) != 1):
        st.session_state["live_run_id"] = picked[0]
        st.switch_page("app_pages/live.py")
    own = [i for i in picked if by_id[i].get("owner") == me]
    if b3.button(
        "Cancel", key="runs_cancel", disabled=not own, help="Your own queued or running runs"
    ):
        for run_id in own:
            if by_id[run_id]["status"] not in ACTIVE:
                continue
            if ui.try_call(ui.client().cancel_run, run_id) is not None:
                st.toast(f"Cancel requested for {run_id[:8]}")
        loaders.runs.clear()
    with b4.popover("Clone…", disabled=len(own) != 1):
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
            new = ui.try_call(ui.client().clone_run, own[0], changes)
            if new:
                st.success(f"Queued clone {new['id']}")
                loaders.runs.clear()


def table() -> None:
    """The runs table and its actions (a fragment: reruns alone while runs are active)."""
    runs = ui.call(loaders.runs, url, token, **filters)
    if not runs:
        st.info("No runs yet. Submit one on the **Submit** page or with `fedgen-lab submit`.")
        return
    df = runs_frame(runs)
    active = any_active(runs)
    st.caption(
        f"{len(df)} runs" + (" · refreshing every 3 s while runs are active" if active else "")
    )
    st.dataframe(
        df.drop(columns=["current_round", "rounds", "created_at"]),
        hide_index=True,
        key="runs_table",
        column_config={
            "id": st.column_config.TextColumn("id", width="small"),
            "best_acc": st.column_config.NumberColumn("best acc", format="%.4f"),
            "last_acc": st.column_config.NumberColumn("last acc", format="%.4f"),
        },
    )
    me = None
    try:
        me = loaders.me(url, token).get("name")
    except ApiError:  # identity is optional for read-only use
        me = None
    actions(runs, me)
    with st.expander("Export"):
        st.download_button(
            "Download table as CSV", df.to_csv(index=False), "runs.csv", "text/csv", key="runs_csv"
        )


runs_now = ui.call(loaders.runs, url, token, **filters)
interval = "3s" if any_active(runs_now) else None
st.fragment(run_every=interval)(table)()
