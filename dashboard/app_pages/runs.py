"""Runs: status counts, the filterable table (live while any run is active); compare, watch,
cancel, clone or delete the runs picked in the table; one picked run's details, note and tags.

The filters live in the URL (`?status=running&algorithm=fedgen&owner=...&where=...&q=...`), so
a link reproduces the view. Each run is named by the spec fields that differ among the runs
shown, abbreviated, seed last (`run_name.compact_names`: "FedProx · FMNIST · T=40 · s1"). Cancel and delete ask first, and are
offered for the signed-in user's own runs (any run for an admin). Queued runs show their queue position and expected start as the API
reports them, and, when no live worker can take them, what they wait for (the API's
waiting_reason); running runs an ETA from their own median round time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

import streamlit as st
import yaml

from dashboard import (
    annotate,
    loaders,
    permissions,
    run_failures,
    run_filters,
    run_name,
    runs_csv,
    runs_table,
    status_counts,
    times,
    trash_view,
    ui,
)
from dashboard.client import ApiError, LabClient
from dashboard.frames import any_active
from fedgen.csv_cells import frame_csv
from fedgen.status import ACTIVE, RUN_STATUSES, RUNNING

STATUSES = ["", *RUN_STATUSES]


@dataclass(frozen=True)
class Listing:
    """The filters picked above the table, and the API the runs are read from."""

    url: str
    token: str
    filters: dict[str, Any]

    @property
    def status(self) -> str:
        """The status filter ("" for any): the counts line counts every status regardless."""
        return str(self.filters.get("status") or "")


def filter_choices(url: str, token: str) -> dict[str, tuple[str, list[str] | None]]:
    """Widget key -> (query parameter, choices or None for free text). The algorithms and
    datasets are those the server knows, plugins included, as the Submit form offers them
    (cached a minute); none when the API cannot be read (the table says why)."""
    try:
        choices = loaders.spec_choices(url, token)
    except ApiError:
        choices = {}
    return {
        "runs_status": ("status", STATUSES),
        "runs_alg": ("algorithm", ["", *choices.get("algorithm.name", [])]),
        "runs_data": ("dataset", ["", *choices.get("data.name", [])]),
        "runs_owner": ("owner", None),
        "runs_tag": ("tag", None),
    }


def seed_from_link(filters: dict[str, tuple[str, list[str] | None]]) -> None:
    """Seed the filters from the link once per session; a value not among the choices is
    dropped."""
    for key, (param, choices) in filters.items():
        if key not in st.session_state:
            raw = st.query_params.get(param, "")
            st.session_state[key] = raw if choices is None or raw in choices else ""
    if "runs_where" not in st.session_state:
        st.session_state["runs_where"] = "; ".join(st.query_params.get_all("where"))
    if "runs_q" not in st.session_state:
        st.session_state["runs_q"] = st.query_params.get("q", "")


def _or_any(value: str) -> str:
    """A choice filter's label: its value, or 'any' for none."""
    return value or "any"


def filter_controls(url: str, token: str) -> dict[str, Any]:
    """The filter widgets (seeded from the link); the URL follows what they hold."""
    choices = filter_choices(url, token)
    seed_from_link(choices)
    c1, c2, c3, c4, c5 = st.columns(5)
    status = c1.selectbox("Status", STATUSES, key="runs_status", format_func=_or_any)
    algorithm = c2.selectbox(
        "Algorithm", choices["runs_alg"][1] or [], key="runs_alg", format_func=_or_any
    )
    dataset = c3.selectbox(
        "Dataset", choices["runs_data"][1] or [], key="runs_data", format_func=_or_any
    )
    owner = c4.text_input("Owner", key="runs_owner")
    tag = c5.text_input("Tag", key="runs_tag")
    w1, w2 = st.columns([3, 2])
    where = run_filters.where_clauses(
        w1.text_input(
            "Spec fields",
            key="runs_where",
            placeholder="algorithm.gen_batch_size=32; partition.alpha=0.1",
            help="Runs whose spec has these values: dotted spec fields, `;` between them (32 "
            "also matches 32.0; text is matched exactly)",
        )
    )
    q = w2.text_input(
        "Search notes and tags", key="runs_q", help="Text in a run's note or tags, any case"
    )
    filters: dict[str, Any] = {
        "status": status,
        "algorithm": algorithm,
        "dataset": dataset,
        "owner": owner,
        "tag": tag,
        "where": where,
        "q": q,
    }
    wanted = {k: v for k, v in filters.items() if v}
    in_url = {k: st.query_params.get_all(k) for k in st.query_params}
    if in_url != {k: v if isinstance(v, list) else [v] for k, v in wanted.items()}:
        st.query_params.from_dict(wanted)
    return filters


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


def _forget_selection() -> None:
    """A fresh table widget (no rows ticked): after a delete the old row numbers would point
    at other runs."""
    st.session_state["runs_table_gen"] = st.session_state.get("runs_table_gen", 0) + 1


def _why_not(picked: list[dict[str, Any]], allowed: list[dict[str, Any]], what: str) -> str:
    if not picked:
        return f"Tick runs in the table to {what} them"
    if not allowed:
        return f"Only a run's owner or an admin may {what} it: none of the runs picked is yours"
    return f"{what.capitalize()} the runs picked that are yours ({len(allowed)} of {len(picked)})"


def cancel(picked: list[dict[str, Any]], me: dict[str, Any] | None, slot: Any) -> None:
    """Cancel the picked active runs the user may change, after a confirmation."""
    mine = [r for r in picked if permissions.may_change(r, me)]
    active = [r for r in mine if r.get("status") in ACTIVE]
    label = f"Cancel {len(active)}…" if active else "Cancel…"
    with slot.popover(label, disabled=not active, help=_why_not(picked, active, "cancel")):
        st.markdown(
            f"Cancel {len(active)} {'run' if len(active) == 1 else 'runs'}? A queued run stops "
            "at once, a running one after its current round."
        )
        if st.button("Yes, cancel", key="runs_cancel", type="primary"):
            for run in active:
                if ui.try_call(ui.client().cancel_run, str(run["id"])) is not None:
                    st.toast(f"Cancel requested for {run['_name']}")
            loaders.runs.clear()


def delete(picked: list[dict[str, Any]], me: dict[str, Any] | None, slot: Any) -> None:
    """Delete the picked runs the user may change (one or many), after a confirmation."""
    mine = [r for r in picked if permissions.may_change(r, me)]
    label = f"Delete {len(mine)}…" if mine else "Delete…"
    with slot.popover(label, disabled=not mine, help=_why_not(picked, mine, "delete")):
        others = len(picked) - len(mine)
        st.markdown(
            f"Move {len(mine)} {'run' if len(mine) == 1 else 'runs'} to the Trash? Unfinished "
            "ones are cancelled; each can be restored, with its metrics and checkpoints, "
            "from the Trash page until it is purged."
            + (f" The {others} picked that are not yours stay." if others else "")
        )
        for run in mine[:5]:
            st.caption(f"{run['_name']} · {runs_table.short_id(run['id'])}")
        if len(mine) > 5:
            st.caption(f"… and {len(mine) - 5} more")
        if st.button("Yes, delete", key="runs_delete", type="primary"):
            gone = sum(_delete(str(r["id"])) for r in mine)
            st.toast(trash_note(gone))
            loaders.runs.clear()
            _forget_selection()
            st.rerun(scope="fragment")


def trash_note(moved: int) -> str:
    """`Moved 2 runs to Trash (restorable for 7 days)`: FEDGEN_TRASH_DAYS, as the API says."""
    body = ui.try_call(ui.client().trash, limit=1)
    days = trash_view.days_text(float(body["trash_days"])) if body else "a few days"
    return f"Moved {moved} {'run' if moved == 1 else 'runs'} to Trash (restorable for {days})"


def _delete(run_id: str) -> bool:
    """DELETE one run; False after saying why it could not be deleted."""
    try:
        ui.client().delete_run(run_id)
    except ApiError as exc:
        ui.show_error(exc)
        return False
    return True


def actions(picked: list[dict[str, Any]], me: dict[str, Any] | None) -> None:
    """Compare / watch / cancel / clone / delete the runs picked in the table."""
    ids = [str(r["id"]) for r in picked]
    b1, b2, b3, b4, b5 = st.columns([3, 2, 2, 2, 2])  # room for "Compare (pick runs in the table)"
    b1.page_link(
        "app_pages/compare.py",
        label=f"Compare {len(ids)} runs" if ids else "Compare (pick runs in the table)",
        icon=":material/compare_arrows:",
        query_params={"runs": ",".join(ids)} if ids else None,
        disabled=not ids,
    )
    b2.page_link(
        "app_pages/live.py",
        label="Watch live",
        icon=":material/monitoring:",
        query_params={"run": ids[0]} if len(ids) == 1 else None,
        disabled=len(ids) != 1,
    )
    cancel(picked, me, b3)
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
                st.success(f"Queued clone {runs_table.short_id(new['id'])}")
                loaders.runs.clear()
    delete(picked, me, b5)


def details(run: dict[str, Any], me: dict[str, Any] | None, now: datetime) -> None:
    """The one picked run: its full id and times, and its note and tags (editable)."""
    tz = times.zone(st.context.timezone)
    st.subheader(run["_name"])
    left, right = st.columns([3, 2])
    with left:
        if annotate.editor(run, me, key="runs") is not None:
            st.rerun(scope="fragment")  # the table shows the new note and tags
    rows = runs_table.details(run, now, tz)
    right.dataframe(
        {"": [k for k, _ in rows], "value": [v for _, v in rows]},
        hide_index=True,
        key="runs_details",
    )


def failures(runs: list[dict[str, Any]], now: datetime) -> None:
    """The newest failed runs, each linked to its Live page, with its whole error message and
    the round it stopped at (the table's error cell is one line, cut to the column's width);
    open while one failed in the last day."""
    shown, total, recent = run_failures.recent_failures(runs, now)
    if not shown:
        return
    more = f" (the newest {len(shown)})" if total > len(shown) else ""
    with st.expander(
        f":red[{total} failed {'run' if total == 1 else 'runs'}]{more}", expanded=recent
    ):
        for run in shown:
            st.page_link(
                "app_pages/live.py",
                label=f"{run['_name']} · {runs_table.short_id(run['id'])}",
                icon=":material/error:",
                query_params={"run": str(run["id"])},
            )
            st.code(run_failures.full_failure(run), language=None, wrap_lines=True)


def load(v: Listing) -> list[dict[str, Any]] | None:
    """The runs under the filters, of every status (the counts line counts them all); None
    after saying why the API refused them (a malformed spec field filter is said under the
    filters)."""
    try:
        return loaders.runs(v.url, v.token, **{**v.filters, "status": ""})
    except ApiError as exc:
        if exc.status == 422:
            problems = run_filters.filter_problems(exc.detail, exc.message)
            st.error(problems, icon=":material/filter_alt_off:")
        else:
            ui.show_error(exc)
        return None


def nothing_shown(v: Listing) -> None:
    """Why the table is empty: the filters, or no run yet (and how to start one)."""
    if any(v.filters.values()):
        st.info("No runs match these filters.")
        return
    st.info(
        "No runs yet. Submit one on the **Submit** page, run `make demo` (a FedGen vs "
        "FedAvg sweep), or POST a spec to `/api/v1/runs` (the API docs are at `/docs`; "
        "start the lab with `fedgen-lab up`)."
    )


def table_caption(shown: int, runs: list[dict[str, Any]], tz: tzinfo) -> str:
    """How many runs, what they share, the time zone, refreshing, what ticking does."""
    shared = runs_table.common_fields(runs)
    return (
        f"{shown} runs shown"
        + (f" · all {shared}" if shared else "")
        + f" · times in {getattr(tz, 'key', 'UTC')}"
        + (" · refreshing every 3 s while runs are active" if any_active(runs) else "")
        + " · tick rows to compare, watch, cancel, clone or delete them; tick one for its "
        "details, note and tags"
    )


def stuck_link(runs: list[dict[str, Any]]) -> None:
    """A link to the Lab page when some runs wait for a worker no live one can be."""
    stuck = sum(1 for r in runs if r.get("waiting_reason"))
    if stuck:
        st.page_link(
            "app_pages/lab.py",
            label=f"{stuck} {'run' if stuck == 1 else 'runs'} no live worker can take (see "
            "“waiting for”) · the live workers are on the Lab page",
            icon=":material/warning:",
        )


def table(v: Listing) -> None:
    """Counts, the runs table and its actions (a fragment: reruns alone while runs are active)."""
    url, token = v.url, v.token
    everything = load(v)
    if everything is None:
        return
    runs = [r for r in everything if not v.status or r.get("status") == v.status]
    if not everything:
        nothing_shown(v)
        return
    counts = status_counts.status_counts(everything)
    st.markdown(status_counts.counts_line(counts), help="Runs per status under the other filters")
    now = datetime.now(UTC)
    tz = times.zone(st.context.timezone)
    round_ms = {
        str(r["id"]): round_times(url, token, str(r["id"]), int(r.get("current_round") or 0))
        for r in runs
        if r.get("status") == RUNNING
    }
    names = run_name.compact_names(runs)
    runs = [{**r, "_name": names[str(r["id"])]} for r in runs]
    df = runs_table.table(runs, now, tz, round_ms, names)
    st.caption(table_caption(len(df), runs, tz))
    failures(runs, now)
    stuck_link(runs)
    gen = st.session_state.get("runs_table_gen", 0)
    event = st.dataframe(
        df,
        hide_index=True,
        key="runs_table" if not gen else f"runs_table_{gen}",
        on_select="rerun",
        selection_mode="multi-row",
        column_order=runs_table.shown_columns(df),
        column_config=COLUMNS,
        placeholder=times.DASH,
    )
    rows = [i for i in event.selection.rows if 0 <= i < len(runs)]
    picked = [runs[i] for i in rows]
    me = None
    try:
        me = loaders.me(url, token)
    except ApiError:  # identity is optional for read-only use
        me = None
    actions(picked, me)
    if len(picked) == 1:
        details(picked[0], me, now)
    with st.expander("Export"):
        st.download_button(
            "Download table as CSV",
            frame_csv(runs_csv.csv_frame(runs, now, names)),
            "runs.csv",
            "text/csv",
            key="runs_csv",
            help="Numbers, ISO-8601 UTC times, full ids; empty where there is no value",
        )


_PCT = "%.2f"
COLUMNS = {
    # no widths: Streamlit sizes the columns to their content; the name stays while scrolling
    "run": st.column_config.TextColumn(
        "run",
        pinned=True,
        help="Named by what differs among the runs shown, abbreviated, and the seed last ("
        + run_name.LEGEND
        + "); the caption says what they all share",
    ),
    "seed": st.column_config.NumberColumn("seed", format="%d"),
    **ui.text_columns(
        {
            "status": "claimed: a worker took it, no round stored yet; cancelling: a cancel was "
            "asked, it stops after its current round",
            "progress": "The last round stored / the run's rounds R (round 0 is the initial "
            "model's evaluation, round r the model after r aggregations: a finished run reads "
            "R/R)",
            "duration": "Start to finish (to now while running); queued: how long it waits",
            "age": "Since submission; tick the run for the full times (local and UTC)",
            "ETA": "Running runs: median round time × rounds left (finish time)",
            "queue": "Position among queued runs",
            "waiting for": "A run that no live worker can take: the worker it needs (a dataset, "
            "a queue). It starts once such a worker is up.",
            "error": "A failed run: the round it stopped at and its error's first line; the "
            "whole message is in the failed runs list above the table",
            "note": "Its first line; tick the run for all",
            "id": "The first 8 characters; tick the run for the full id (the CSV has it too)",
        }
    ),
    "final acc (%)": st.column_config.NumberColumn(
        "final acc (%)",
        format=_PCT,
        help="Test accuracy of the last round the protocol evaluates (succeeded runs)",
    ),
    "best acc (%)": st.column_config.NumberColumn("best acc (%)", format=_PCT),
    "last acc (%)": st.column_config.NumberColumn(
        "last acc (%)", format=_PCT, help="The newest stored round's test accuracy"
    ),
    "peak RSS (MiB)": st.column_config.NumberColumn(
        "peak RSS (MiB)", format="%.0f", help="Largest resident memory of a worker running it"
    ),
    "CPU (s)": st.column_config.NumberColumn("CPU (s)", format="%.1f"),
    "GPU peak (MiB)": st.column_config.NumberColumn("GPU peak (MiB)", format="%.0f"),
}


def render() -> None:
    """The page: the filters, then the table that refreshes itself while runs are active."""
    st.title("Runs")
    url, token = ui.connection()
    v = Listing(url, token, filter_controls(url, token))
    try:  # whether to refresh: any run active (the fragment says why a load failed)
        runs_now = loaders.runs(url, token, **{**v.filters, "status": ""})
    except ApiError:
        runs_now = []
    interval = "3s" if any_active(runs_now) else None
    st.fragment(run_every=interval)(table)(v)


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
