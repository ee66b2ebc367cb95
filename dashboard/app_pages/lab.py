"""Lab: the live workers (host, slot, devices, code, datasets, what each runs now), the slots
busy, and the runs that no live worker can take, refreshed every few seconds; then what each
member's runs store against their quota (dashboard/lab_page/usage_view.py).

A worker is live while its heartbeat is younger than the API's worker TTL (FEDGEN_WORKER_TTL_S);
one row per worker process (a slot).
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

import streamlit as st

from dashboard import api_client, lab_view, loaders, runs_table, table_columns, times
from dashboard.lab_page import usage_view
from vocab.schemas.workers import WorkerPublic

REFRESH_S = 5
EMPTY = (
    "No live worker. Start one with `fedgen-lab worker` on a machine that reaches this lab's "
    "database and broker (`--slots N` for N runs at once, `--devices 0,1` for GPUs); "
    "`fedgen-lab up` starts one next to the API. Queued runs wait until a worker is up."
)


def workers_table(workers: list[WorkerPublic], now: datetime, tz: tzinfo) -> None:
    """The live workers, the code they run, and links to the runs they hold."""
    st.dataframe(
        lab_view.table(workers, now, tz),
        hide_index=True,
        key="lab_workers",
        column_config=table_columns.text_columns(
            {
                "slot": "The worker process (its node name is slot@host)",
                "queues": "The runs it takes: cpu or gpu (the broker's queue names add the "
                "lab's FEDGEN_QUEUE_PREFIX)",
                "threads": "Torch threads per run",
                "code version": "git:<first 12 of the commit>[+dirty] or src:<hash of the "
                "sources>; the full values are under the table",
                "datasets": "The datasets it can load (it is sent only runs on these)",
                "running": "Short run id, algorithm · dataset, rounds done / rounds",
                "heartbeat": "When it last said it is alive; one silent for longer than the "
                "worker TTL drops out",
            }
        ),
    )
    line = lab_view.versions_line(workers)
    if line:
        st.caption(line)
    held = lab_view.running_runs(workers)
    if held:
        cols = st.columns(min(len(held), 4))
        for i, (w, r) in enumerate(held):
            cols[i % len(cols)].page_link(
                "app_pages/live.py",
                label=f"Watch {lab_view.run_text(r)}",
                icon=":material/monitoring:",
                query_params={"run": r.id},
                help=f"Live run page of run {r.id} on {w.name}",
            )


def waiting(now: datetime, tz: tzinfo) -> None:
    """The runs no live worker can take, with what each waits for."""
    url, token = api_client.connection()
    stuck = lab_view.waiting_runs(api_client.call(loaders.runs, url, token))
    if not stuck:
        return
    st.subheader("Runs no live worker can take")
    df = runs_table.table(stuck, now, tz)[["run", "status", "waiting for", "age", "owner", "id"]]
    st.dataframe(df.rename(columns={"age": "submitted"}), hide_index=True, key="lab_waiting")


def panel() -> None:
    """Summary, workers and waiting runs (a fragment: reruns by itself every few seconds)."""
    url, token = api_client.connection()
    body = api_client.call(loaders.workers, url, token)
    workers = body.workers
    now = datetime.now(UTC)
    tz = times.zone(st.context.timezone)
    if workers:
        st.markdown(f"**{lab_view.summary(body)}**")
        st.caption(
            f"Live workers, refreshed every {REFRESH_S} s · times in {getattr(tz, 'key', 'UTC')}"
        )
        workers_table(workers, now, tz)
    else:
        st.info(EMPTY, icon=":material/power_off:")
    waiting(now, tz)


def storage() -> None:
    """What each member's runs store against their quota (GET /usage: an admin sees every
    member, a member themselves); read once per page load, it changes slowly."""
    url, token = api_client.connection()
    body = api_client.try_call(loaders.usage, url, token)
    if body is None:
        return
    st.subheader("Storage")
    st.caption(usage_view.summary(body))
    st.dataframe(
        usage_view.table(body),
        hide_index=True,
        key="lab_usage",
        column_config=table_columns.text_columns(usage_view.HELP),
    )


def render() -> None:
    """The page: its title, the panel that refreshes itself, then storage per member."""
    st.title("Lab")
    st.fragment(run_every=f"{REFRESH_S}s")(panel)()
    storage()


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
