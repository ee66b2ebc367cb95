"""Live run: curves that extend as rounds land, read from the run's SSE event stream.

Each tick of the fragment opens GET /runs/{id}/events?since_round=<last cached round>, takes
what the server has (rounds after that one, then the status) and lets go after about a
second without news, so one request per tick replaces polling its metrics and its users.
Per-user rows are fetched only when new rounds arrived; the run itself (where it ran: its
segments, why it waits) at most every 5 s.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import live_view, loaders, runs_view, ui
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
STATUS = f"live_status_{run_id}"


def pull(run_id: str) -> str:
    """Take the stream's new rounds into the cached history; return the run's status."""
    c = ui.client()
    hist = st.session_state.get(HIST)
    since = last_round(hist)
    events = ui.call(c.events, run_id, since_round=since, wait_s=1.0)
    payload = live_view.events_payload(events)
    if payload["rounds"] or hist is None:
        st.session_state[HIST] = merge_history(hist, payload)
    status = live_view.last_status(events) or st.session_state.get(STATUS)
    status = status or by_id[run_id].get("status") or "?"
    st.session_state[STATUS] = status
    users = st.session_state.get(USERS)
    if payload["rounds"] or users is None:
        first = int(users["round"].max()) + 1 if users is not None and not users.empty else None
        new_users = users_frame(ui.call(c.users, run_id, round_from=first))
        if users is None or users.empty:
            st.session_state[USERS] = new_users
        elif not new_users.empty:
            st.session_state[USERS] = pd.concat([users, new_users]).drop_duplicates(
                ["round", "user"], keep="last"
            )
    return str(status)


def pct(value: Any) -> str:
    """An accuracy as the tables show it: percent with two decimals."""
    return "–" if value is None or pd.isna(value) else f"{100 * float(value):.2f} %"


def where_it_ran(run: dict[str, Any]) -> None:
    """Why a run waits, a notice left on it, and its segments (each start and resume)."""
    waiting = live_view.waiting_note(run)
    if waiting:
        st.warning(waiting, icon=":material/hourglass_empty:")
    note = live_view.notice(run)
    if note:
        st.info(note, icon=":material/info:")
    segments = list(run.get("segments") or [])
    if not segments:
        return
    resumed = live_view.resume_caption(segments)
    if resumed:
        st.caption(resumed)
    numerics = live_view.numerics_note(run.get("versions"))
    if numerics:
        st.caption(f":orange[{numerics}]")
    with st.expander(live_view.segments_label(segments), expanded=len(segments) > 1):
        now = datetime.now(UTC)
        tz = runs_view.zone(st.context.timezone)
        st.dataframe(
            live_view.segments_frame(segments, now, tz),
            hide_index=True,
            key="live_segments",
            column_config={
                "attempt": st.column_config.TextColumn("attempt", help="The run's claim count"),
                "resumed from": st.column_config.TextColumn(
                    "resumed from", help="The checkpoint the segment started from"
                ),
                "code version": st.column_config.TextColumn(
                    "code version", help="git:<first 12 of the commit>[+dirty] or src:<hash>"
                ),
            },
        )


def panel() -> None:
    """Progress and charts; re-run by the fragment while the run is active."""
    status = pull(run_id)
    run = by_id[run_id]
    rounds = int(run.get("rounds") or 0)
    df = metrics_frame(st.session_state[HIST])
    # current_round is -1 before round 0 lands (queued): the bar starts at 0.
    current = int(df["round"].max()) if not df.empty else max(int(run.get("current_round") or 0), 0)
    st.progress(
        min(current / rounds, 1.0) if rounds else 0.0, f"{status} · round {current} of {rounds}"
    )
    # The run itself (segments, waiting reason, notices): at most one request per 5 s, and
    # afresh when the stream reports another status than the cached copy (started, failed).
    full = ui.try_call(loaders.run, url, token, run_id) or run
    if full.get("status") != status:
        loaders.run.clear(url, token, run_id)
        full = ui.try_call(loaders.run, url, token, run_id) or run
    if status == "failed" and full.get("error"):
        st.error(f"The run failed: {full['error']}")
    where_it_ran({**full, "status": status})
    if status not in ACTIVE and st.session_state.get("live_was_active") == run_id:
        st.session_state["live_was_active"] = None
        loaders.runs.clear()
        st.rerun(scope="app")  # stop the timer: the page re-renders without run_every
    if df.empty:
        st.info("No rounds yet: the run is queued or still at round 0.")
        return
    m = st.columns(4)
    m[0].metric("test accuracy", pct(df["test_acc"].iloc[-1]) if "test_acc" in df else "–")
    m[1].metric("best test accuracy", pct(df["test_acc"].max()) if "test_acc" in df else "–")
    m[2].metric("rounds shown", len(df))
    if "time_total_ms" in df:
        m[3].metric("wall-clock", f"{df['time_total_ms'].sum() / 1000:.1f} s")
    rev = f"live-{run_id}"
    c1, c2 = st.columns(2)
    c1.plotly_chart(live_view.accuracy_chart(df, rev), key="live_acc")
    c2.plotly_chart(live_view.loss_chart(df, rev), key="live_loss")
    users = st.session_state.get(USERS)
    c3, c4 = st.columns(2)
    if users is not None and not users.empty:
        c3.plotly_chart(live_view.user_spread_chart(user_band(users), rev), key="live_users")
        c3.caption("Worst users in the latest round")
        worst = worst_users(users)
        c3.dataframe(
            worst.assign(test_acc=worst["test_acc"] * 100),
            hide_index=True,
            key="live_worst",
            column_config={
                "test_acc": st.column_config.NumberColumn("test accuracy (%)", format="%.2f"),
                "test_loss": st.column_config.NumberColumn("test loss", format="%.4f"),
                "num_test": st.column_config.NumberColumn("test samples"),
            },
        )
    c4.plotly_chart(live_view.timing_chart(df, rev), key="live_timing")
    if live_view.has_generator(df):
        g1, g2 = st.columns(2)
        g1.plotly_chart(live_view.generator_loss_chart(df, rev), key="live_gen_loss")
        g2.plotly_chart(live_view.generator_acc_chart(df, rev), key="live_gen_acc")


active = by_id[run_id].get("status") in ACTIVE
if active:
    st.session_state["live_was_active"] = run_id
st.fragment(run_every="2s" if active else None)(panel)()
