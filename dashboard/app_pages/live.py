"""Live run: curves that extend as rounds land, fetching only new rounds (`since_round`)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard import charts, loaders, ui
from dashboard.frames import (
    last_round,
    merge_history,
    metrics_frame,
    user_band,
    users_frame,
    worst_users,
)
from fedgen.status import ACTIVE

st.title("Live run")
url, token = ui.connection()

run_id, by_id = ui.pick_run(url, token, key="live_run")
HIST = f"live_hist_{run_id}"
USERS = f"live_users_{run_id}"


def poll(run_id: str) -> dict[str, Any]:
    """Fetch the run, then only the rounds after the cached ones; return the run."""
    c = ui.client()
    run = ui.call(c.get_run, run_id)
    hist = st.session_state.get(HIST)
    payload = ui.call(c.metrics, run_id, since_round=last_round(hist))
    st.session_state[HIST] = merge_history(hist, payload)
    users = st.session_state.get(USERS)
    since = int(users["round"].max()) + 1 if users is not None and not users.empty else None
    new_users = users_frame(ui.call(c.users, run_id, round_from=since))
    if users is None or users.empty:
        st.session_state[USERS] = new_users
    elif not new_users.empty:
        st.session_state[USERS] = pd.concat([users, new_users]).drop_duplicates(
            ["round", "user"], keep="last"
        )
    return run


def panel() -> None:
    """Progress and charts; polled by the fragment while the run is active."""
    run = poll(run_id)
    status = run["status"]
    rounds = int(run.get("rounds") or 0)
    current = int(run.get("current_round") or 0)
    st.progress(
        min(current / rounds, 1.0) if rounds else 0.0, f"{status} · round {current}/{rounds}"
    )
    if run.get("error"):
        st.error(f"The run failed: {run['error']}")
    if status not in ACTIVE and st.session_state.get("live_was_active") == run_id:
        st.session_state["live_was_active"] = None
        loaders.runs.clear()
        st.rerun(scope="app")  # stop polling: the page re-renders without run_every
    df = metrics_frame(st.session_state[HIST])
    if df.empty:
        st.info("No rounds yet: the run is queued or still at round 0.")
        return
    m = st.columns(4)
    m[0].metric("test acc", f"{df['test_acc'].iloc[-1]:.4f}" if "test_acc" in df else "–")
    m[1].metric("best acc", f"{df['test_acc'].max():.4f}" if "test_acc" in df else "–")
    m[2].metric("rounds shown", len(df))
    if "time_total_ms" in df:
        m[3].metric("wall-clock", f"{df['time_total_ms'].sum() / 1000:.1f} s")
    rev = f"live-{run_id}"
    c1, c2 = st.columns(2)
    c1.plotly_chart(
        charts.metric_lines(
            df, ["test_acc", "user_acc_mean", "user_acc_min"], "Accuracy", "accuracy", rev
        ),
        key="live_acc",
    )
    c2.plotly_chart(
        charts.metric_lines(df, ["test_loss", "train_loss"], "Loss", "loss", rev), key="live_loss"
    )
    users = st.session_state.get(USERS)
    c3, c4 = st.columns(2)
    if users is not None and not users.empty:
        c3.plotly_chart(charts.user_spread(user_band(users), rev), key="live_users")
        c3.caption("Worst users in the latest round")
        c3.dataframe(worst_users(users), hide_index=True, key="live_worst")
    c4.plotly_chart(charts.timing_breakdown(df, rev), key="live_timing")
    if any(name.startswith("gen_") for name in df.columns):
        st.plotly_chart(charts.generator_losses(df, rev), key="live_gen")


active = by_id[run_id].get("status") in ACTIVE
if active:
    st.session_state["live_was_active"] = run_id
st.fragment(run_every="2s" if active else None)(panel)()
