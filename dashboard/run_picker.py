"""The run picker of the pages that show one run (Live, Inspect): the `?run=` link or the last
watched run first, the list read afresh, and a rerun when the lab's runs change."""

from __future__ import annotations

import zlib
from typing import Any

import streamlit as st

from dashboard import api_client
from vocab.schemas.runs import RunPublic, RunsPublic

# Session key of the run this browser last watched (Live, Inspect) or just submitted: a page
# opened without a link shows it.
WATCHED = "live_run_id"


def linked_run_id() -> str | None:
    """The run the address names (`?run=`), if any."""
    return st.query_params.get("run")


def watched_run_id() -> str | None:
    """The run this browser last watched or submitted, if any."""
    run_id = st.session_state.get(WATCHED)
    return str(run_id) if run_id else None


def watch(run_id: str | None) -> None:
    """Remember `run_id` as the run a page without a link shows (None: forget it)."""
    if run_id is None:
        st.session_state.pop(WATCHED, None)
    else:
        st.session_state[WATCHED] = run_id


def run_label(run: RunPublic, name: str | None = None) -> str:
    """A run for select boxes: its name among the runs listed (`run_name.compact_names`; the
    run alone when not given), its status, the short id last."""
    if name is None:
        from dashboard.run_name import compact_names

        name = compact_names([run]).get(run.id, "?")
    return f"{name} · {run.status} · {run.id[:8]}"


def runs_now(url: str, token: str, limit: int) -> RunsPublic:
    """GET /runs, the newest `limit`, uncached (a picker that follows the lab)."""
    with api_client.open_client(url, token) as c:
        return c.list_runs(limit=limit)


def lab_state(listed: RunsPublic) -> tuple[Any, ...]:
    """What changes when any run of the lab is added, starts or ends: the count, the runs per
    status and the newest run's id (GET /runs with limit=1 answers it cheaply)."""
    newest = listed.data[0].id if listed.data else ""
    return (
        listed.count,
        tuple(sorted((str(k), v) for k, v in listed.status_counts.items())),
        newest,
    )


def _picked(key: str, by_id: dict[str, RunPublic], ids: list[str], widget: str) -> str:
    """The run the picker shows: a link or another page's choice made since this picker last
    showed a run (the Submit page's new run, the Runs page's "Watch live") first, then the
    picker's own last choice, then the link or the last watched run, else the newest."""
    shown = st.session_state.get(f"{key}_shown")
    linked = linked_run_id()
    remembered = watched_run_id()
    previous = st.session_state.get(st.session_state.get(f"{key}_widget") or widget)
    for wanted in (
        linked if linked != shown else None,
        remembered if remembered != shown else None,
        previous,
        linked,
        remembered,
    ):
        if wanted in by_id:
            return str(wanted)
    return ids[0]


def pick_run(url: str, token: str, key: str) -> tuple[str, dict[str, RunPublic]]:
    """The shared run picker: the `?run=` link or the last watched run first; stops on no runs.

    The list is read afresh on every rerun (no cache: a run that started or ended a moment
    ago is listed as it is now), and `lab_state` of it is kept under `{key}_lab` for
    `follow_lab`. Returns the chosen run id and every listed run by id (a linked run that is
    not on the first page of the list is fetched and added).
    """
    listed = api_client.call(runs_now, url, token, 500)
    st.session_state[f"{key}_lab"] = lab_state(listed)
    runs = listed.data
    if not runs:
        st.info("No runs yet. Submit one on the **Submit** page.")
        st.stop()
    by_id = {r.id: r for r in runs}
    wanted = linked_run_id() or watched_run_id()
    if wanted and wanted not in by_id:
        extra = api_client.try_call(api_client.client().get_run, wanted)
        if extra:
            by_id = {wanted: extra, **by_id}
    ids = list(by_id)
    from dashboard.run_name import compact_names

    names = compact_names(list(by_id.values()))  # the Runs table's names for the same runs
    labels = {i: run_label(by_id[i], names.get(i)) for i in ids}
    # Streamlit's frontend does not always redraw a kept select box whose labels alone
    # changed (a run that ended still said "running"): the widget's key follows the labels,
    # and the choice is carried over from the last one.
    widget = f"{key}_{zlib.crc32(chr(10).join(labels.values()).encode()):08x}"
    st.session_state[widget] = _picked(key, by_id, ids, widget)
    st.session_state[f"{key}_widget"] = widget
    run_id: str = st.selectbox("Run", ids, key=widget, format_func=lambda i: labels[i])
    watch(run_id)
    st.session_state[f"{key}_shown"] = run_id
    st.query_params["run"] = run_id  # the address bar links to this run's view
    return run_id, by_id


def follow_lab(url: str, token: str, key: str) -> None:
    """Rerun the whole page when the lab's runs changed since `pick_run(key=key)` listed them
    (a run added, started or ended): call it in a fragment that reruns every few seconds."""
    listed = api_client.try_call(runs_now, url, token, 1)
    if listed is not None and lab_state(listed) != st.session_state.get(f"{key}_lab"):
        st.rerun(scope="app")
