"""Live run: curves that extend as rounds land, read from the run's SSE event stream; the run's
note and tags above them (editable by its owner or an admin).

Each tick of the fragment opens GET /runs/{id}/events?since_round=<last cached round>, takes
what the server has (rounds after that one, then the status) and lets go after 0.3 s
without news, so one request per tick replaces polling its metrics and its users.
Per-user rows are fetched only when new rounds arrived; the run itself (where it ran: its
segments, why it waits) at most every 5 s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from dashboard import (
    annotate,
    api_client,
    live_view,
    loaders,
    run_failures,
    run_picker,
    run_state,
    times,
)
from dashboard.live_history import (
    last_round,
    merge_history,
    metrics_frame,
    user_band,
    worst_users,
)
from fedgen import durations, metric_names
from fedgen_lab.errors import LabError, LabNotFound
from fedgen_lab.frames import users_frame
from vocab.run_status import ACTIVE, RunStatus
from vocab.schemas.runs import RunPublic


@dataclass(frozen=True)
class Watch:
    """The watched run as the picker listed it, and the API it is read from."""

    url: str
    token: str
    run_id: str
    run: RunPublic

    @property
    def hist(self) -> str:
        """Session key of the rounds taken from the stream so far."""
        return f"live_hist_{self.run_id}"

    @property
    def users(self) -> str:
        """Session key of the per-user rows read so far."""
        return f"live_users_{self.run_id}"

    @property
    def status(self) -> str:
        """Session key of the last status the stream reported."""
        return f"live_status_{self.run_id}"


def linked_run_status(url: str, token: str) -> str | None:
    """The status of the run the link (`?run=`) or the last view names; None when there is
    none. A link to a run that no longer exists is said on the page, and the page stops; a
    remembered run that was deleted since is forgotten quietly."""
    linked = run_picker.linked_run_id()
    wanted = linked or run_picker.watched_run_id()
    if not wanted:
        return None
    try:
        return loaders.run(url, token, str(wanted)).status
    except LabNotFound:
        if not linked:
            run_picker.watch(None)
            return None
        st.warning(live_view.gone_note(str(wanted)), icon=":material/delete:")
        st.page_link("app_pages/runs.py", label="Runs", icon=":material/table_rows:")
        st.stop()
    except LabError:
        return None  # said by the picker's own call below
    return None


def note_and_tags(w: Watch) -> None:
    """The run's tags and note, and (in an expander) the editor: the owner or an admin saves."""
    run = w.run
    line = annotate.summary(run)
    if line:
        st.markdown(line)
    try:
        me = loaders.me(w.url, w.token)
    except LabError:  # without an identity the editor says who may edit
        me = None
    with st.expander("Note and tags" if line else "Add a note or tags"):
        if annotate.editor(run, me, key="live") is not None:
            st.rerun()


def pull(w: Watch) -> str:
    """Take the stream's new rounds into the cached history; return the run's status."""
    c = api_client.client()
    hist = st.session_state.get(w.hist)
    since = last_round(hist)
    # Each tick takes what the server has and waits only briefly for more: the next tick
    # (2 s on) asks again from the last round, so a longer wait would only keep the script
    # running (a second of every two) without showing rounds much sooner.
    events = c.events_now(w.run_id, since_round=since, wait_s=0.3)
    payload = live_view.events_payload(events)
    if payload.rounds or hist is None:
        st.session_state[w.hist] = merge_history(hist, payload)
    status = live_view.last_status(events) or st.session_state.get(w.status)
    status = status or w.run.status
    st.session_state[w.status] = status
    users = st.session_state.get(w.users)
    if payload.rounds or users is None:
        first = int(users["round"].max()) + 1 if users is not None and not users.empty else None
        new_users = users_frame(api_client.call(c.users, w.run_id, round_from=first))
        if users is None or users.empty:
            st.session_state[w.users] = new_users
        elif not new_users.empty:
            st.session_state[w.users] = pd.concat([users, new_users]).drop_duplicates(
                ["round", "user"], keep="last"
            )
    return str(status)


def where_it_ran(w: Watch, run: RunPublic) -> None:
    """Why a run waits, a notice left on it, and its segments (each start and resume)."""
    waiting = live_view.waiting_note(run)
    if waiting:
        st.warning(waiting, icon=":material/hourglass_empty:")
    note = live_view.notice(run)
    if note:
        st.info(note, icon=":material/info:")
    segments = run.segments
    if not segments:
        return
    resumed = live_view.resume_caption(segments)
    if resumed:
        st.caption(resumed)
    numerics = live_view.numerics_note(run.versions)
    if numerics:
        st.caption(f":orange[{numerics}]")
    cost = live_view.cost_caption(run)
    if cost:
        st.caption(cost)
    with st.expander(live_view.segments_label(segments), expanded=len(segments) > 1):
        now = datetime.now(UTC)
        tz = times.zone(st.context.timezone)
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
    info_part(w)


def info_part(w: Watch) -> None:
    """How its clients trained and the files its data was read from (its info), when the
    run recorded them."""
    info = api_client.try_call(loaders.info, w.url, w.token, w.run_id)
    trained = live_view.execution_caption(info) if info else None
    if trained:
        st.caption(trained)
    files = info.data_files if info else []
    if not files:
        return
    with st.expander(live_view.data_files_label(files)):
        st.dataframe(
            live_view.data_files_frame(files),
            hide_index=True,
            key="live_data_files",
            column_config={
                "root": st.column_config.TextColumn(
                    "root", help="The data root it was found under (or Debian's folder)"
                ),
                "sha256": st.column_config.TextColumn(
                    "sha256", help="Of the bytes on disk: compare with your copy's"
                ),
            },
        )


def state_part(w: Watch, shown: RunPublic, status: str, error: str | None) -> None:
    """The run's failure (message and traceback) or its state in words, then where it ran."""
    if status == RunStatus.FAILED:
        message, trace = run_failures.split_error(error)
        st.error(
            f"The run failed {run_state.stopped_at(shown)}: "
            f"{message or 'the worker recorded no error message'}",
            icon=":material/error:",
        )
        if trace:
            with st.expander("The worker's traceback"):
                st.code(trace, language=None)
    else:
        note = live_view.state_note(
            shown, status, datetime.now(UTC), times.zone(st.context.timezone)
        )
        if note:
            st.info(note, icon=":material/info:")
    where_it_ran(w, shown)


def figures_part(df: pd.DataFrame, run: RunPublic, status: str) -> None:
    """The run's accuracy figures so far, its last round stored, its running and training
    time (fedgen.durations: the names and definitions every page uses)."""
    rounds = run.rounds
    figures = live_view.accuracy_figures(df, run.spec, rounds, status == RunStatus.SUCCEEDED)
    m = st.columns(len(figures) + 3)
    for col, (label, value) in zip(m, figures, strict=False):
        col.metric(label, value, help=live_view.figure_help(label, run.spec, rounds))
    m[-3].metric("last round", live_view.last_round(df, rounds), help=live_view.ROUND_HELP)
    running = durations.between(run.started_at, run.finished_at or datetime.now(UTC))
    m[-2].metric(
        durations.RUNNING_TIME,
        durations.format_s(running),
        help=durations.HELP[durations.RUNNING_TIME],
    )
    if metric_names.ROUND_TIME in df:
        m[-1].metric(
            durations.TRAINING_TIME,
            durations.format_s(durations.training_s(df[metric_names.ROUND_TIME].tolist())),
            help=durations.HELP[durations.TRAINING_TIME],
        )


def users_part(users: pd.DataFrame | None, rev: str) -> None:
    """The per-user spread chart and the latest round's worst users."""
    if users is None or users.empty:
        return
    st.plotly_chart(live_view.user_spread_chart(user_band(users), rev), key="live_users")
    st.caption("Worst users in the latest round")
    worst = worst_users(users)
    st.dataframe(
        worst.assign(test_acc=worst["test_acc"] * 100),
        hide_index=True,
        key="live_worst",
        column_config={
            "test_acc": st.column_config.NumberColumn(
                metric_names.label("test_acc"), format="%.2f"
            ),
            "test_loss": st.column_config.NumberColumn(
                metric_names.label("test_loss"), format="%.4f"
            ),
            "num_test": st.column_config.NumberColumn("test samples"),
        },
    )


# Drawn always, in this layout; every other declared Live chart (fedgen.metric_names) below
# them, two a row, once the run has logged one of its metrics.
FIRST_ROW = ("accuracy", "loss")
BESIDE_USERS = "timing"


def charts_part(w: Watch, df: pd.DataFrame) -> None:
    """The declared Live charts and the per-user spread."""
    rev = f"live-{w.run_id}"
    for col, chart in zip(st.columns(2), FIRST_ROW, strict=True):
        col.plotly_chart(live_view.live_chart(df, chart, rev), key=f"live_{chart}")
    c3, c4 = st.columns(2)
    with c3:
        users_part(st.session_state.get(w.users), rev)
    c4.plotly_chart(live_view.live_chart(df, BESIDE_USERS, rev), key=f"live_{BESIDE_USERS}")
    fixed = {*FIRST_ROW, BESIDE_USERS}
    more = [c for c in live_view.CHARTS if c not in fixed and live_view.has_data(df, c)]
    for i in range(0, len(more), 2):
        for col, chart in zip(st.columns(2), more[i : i + 2], strict=False):
            col.plotly_chart(live_view.live_chart(df, chart, rev), key=f"live_{chart}")


def panel(w: Watch) -> None:
    """Progress and charts; re-run by the fragment while the run is active."""
    run, run_id, url, token = w.run, w.run_id, w.url, w.token
    try:
        status = pull(w)
    except LabNotFound:  # deleted while watched
        st.warning(live_view.gone_note(run_id), icon=":material/delete:")
        return
    except LabError as exc:
        api_client.show_error(exc)
        return
    # A status other than the listed one (a worker took it, it ended): the whole page again,
    # once, so the picker's label and the refresh timer follow (the list is read afresh).
    if status != run.status and st.session_state.get("live_seen") != (run_id, status):
        st.session_state["live_seen"] = (run_id, status)
        loaders.runs.clear()
        loaders.run.clear()
        st.rerun(scope="app")
    rounds = run.rounds
    df = metrics_frame(st.session_state[w.hist])
    # The run itself (segments, waiting reason, notices, cancel asked): at most one request
    # per 5 s, and afresh when the stream reports another status than the cached copy.
    full = api_client.try_call(loaders.run, url, token, run_id) or run
    if full.status != status:
        loaders.run.clear(url, token, run_id)
        full = api_client.try_call(loaders.run, url, token, run_id) or run
    current = int(df["round"].max()) if not df.empty else full.current_round
    # The stream's status and round are newer than the stored run's.
    shown = full.model_copy(update={"status": status, "current_round": current})
    st.progress(
        min(max(current, 0) / rounds, 1.0) if rounds else 0.0,
        live_view.headline(shown, status, current),
    )
    state_part(w, shown, status, full.error)
    if df.empty:
        st.caption(live_view.no_rounds_note(shown, status))
        return
    figures_part(df, run, status)
    charts_part(w, df)


PICKER = "live_run"  # the run picker's key (`run_picker.pick_run`)
FOLLOW_S = 3.0  # how often the picker checks the lab for runs added, started or ended


def render() -> None:
    """The page: pick a run, its note and tags, then the panel that follows it."""
    st.title("Live run")
    url, token = api_client.connection()
    linked_run_status(url, token)  # a link to a deleted run: said, and the page stops
    run_id, by_id = run_picker.pick_run(url, token, key=PICKER)
    # The picker follows the lab: a run added, started or ended anywhere reruns the page.
    st.fragment(run_every=FOLLOW_S)(run_picker.follow_lab)(url, token, PICKER)
    w = Watch(url, token, run_id, by_id[run_id])
    note_and_tags(w)
    active = w.run.status in ACTIVE
    st.fragment(run_every="2s" if active else None)(panel)(w)


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
