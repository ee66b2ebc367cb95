"""Runs: the lab's runs per status, the filterable table a page at a time (live while any run
is active); compare, watch, cancel, clone or delete the runs picked
(`dashboard.runs_page.runs_actions`).

The counts line is the server's: every run of the lab under the filters but the status, not
those of the page shown. The table pages back through every run, newest first: each page is
read after the previous page's last run (the API's cursor), so the oldest page costs what the
first does. The filters live in the URL (`?status=running&algorithm=fedgen&owner=...&where=
...&q=...`), so a link reproduces the view. Each run is named by the spec fields that differ
among the runs shown, abbreviated, seed last (`run_name.compact_names`). Queued runs show
their queue position and expected start as the API reports them, and, when no live worker can
take them, what they wait for; running runs an ETA from their own median round time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo

import streamlit as st

from dashboard import api_client, loaders, run_failures, run_name, runs_table, table_columns, times
from dashboard.runs_page import run_filters, runs_actions, runs_csv, status_counts
from dashboard.spec_form import SpecChoices
from fedgen import durations
from fedgen.metric_names import ROUND_TIME
from fedgen_lab.errors import LabError
from vocab import run_names
from vocab.run_status import ACTIVE, RUN_STATUSES, RunStatus
from vocab.safe_csv import frame_csv
from vocab.schemas.runs import RunPublic, RunsPublic
from vocab.schemas.users import UserPublic

STATUSES = ["", *RUN_STATUSES]
PAGE_SIZES = [25, 100, 500]
FAILURES_LISTED = 5


@dataclass(frozen=True)
class Listing:
    """The filters picked above the table, and the API the runs are read from."""

    url: str
    token: str
    filters: run_filters.RunFilters
    page_size: int

    @property
    def status(self) -> str:
        """The status filter ("" for any): the counts line counts every status regardless."""
        return str(self.filters.status or "")

    @property
    def cursors_key(self) -> str:
        """What the page stack belongs to: other filters or page size start again at page 1."""
        return repr((sorted(self.filters.params().items()), self.page_size))


def filter_choices(url: str, token: str) -> dict[str, tuple[str, list[str] | None]]:
    """Widget key -> (query parameter, choices or None for free text). The algorithms and
    datasets are those the server knows, plugins included, as the Submit form offers them
    (cached a minute); none when the API cannot be read (the table says why)."""
    try:
        choices = loaders.spec_choices(url, token)
    except LabError:
        choices = SpecChoices()
    return {
        "runs_status": ("status", STATUSES),
        "runs_alg": ("algorithm", ["", *choices.algorithms]),
        "runs_data": ("dataset", ["", *choices.datasets]),
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


def filter_controls(url: str, token: str) -> tuple[run_filters.RunFilters, int]:
    """The filter widgets (seeded from the link; the URL follows what they hold) and the runs
    per page."""
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
    # "Per page" gets room for its widest choice: a narrow box showed "10" while 100 applied.
    w1, w2, w3 = st.columns([6, 4, 2])
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
    per_page = w3.selectbox("Per page", PAGE_SIZES, index=1, key="runs_per_page")
    filters = run_filters.RunFilters(status, algorithm, dataset, owner, tag, tuple(where), q)
    wanted = {k: v for k, v in filters.params().items() if v}
    in_url = {k: st.query_params.get_all(k) for k in st.query_params}
    if in_url != {k: v if isinstance(v, list) else [v] for k, v in wanted.items()}:
        st.query_params.from_dict(wanted)
    return filters, per_page


@st.cache_data(ttl=10, show_spinner=False)
def round_times(
    url: str,
    token: str,
    run_id: str,
    current_round: int,  # noqa: ARG001 (a cache key)
) -> list[float | None]:
    """time_total_ms per round of one run (for its ETA); cached per round reached."""
    with api_client.open_client(url, token) as c:
        return list(c.metrics(run_id).metrics.get(ROUND_TIME) or [])


def failures(v: Listing, page: RunsPublic, now: datetime) -> None:
    """The lab's newest failed runs under the filters, each linked to its Live page, with its
    whole error message and the round it stopped at (the table's error cell is one line, cut
    to the column's width); open while one failed in the last day."""
    total = page.status_counts.get(RunStatus.FAILED, 0)
    if not total or v.status not in ("", RunStatus.FAILED):
        return
    try:
        failed = replace(v.filters, status=RunStatus.FAILED)
        newest = loaders.runs(v.url, v.token, limit=FAILURES_LISTED, **failed.params())
    except LabError:
        return  # the table above already says what the API refused
    shown, _, recent = run_failures.recent_failures(newest, now, FAILURES_LISTED)
    names = run_name.compact_names(shown)
    more = f" (the newest {len(shown)})" if total > len(shown) else ""
    with st.expander(
        f":red[{total:,} failed {'run' if total == 1 else 'runs'}]{more}", expanded=recent
    ):
        for run in shown:
            st.page_link(
                "app_pages/live.py",
                label=f"{names[run.id]} · {runs_table.short_id(run.id)}",
                icon=":material/error:",
                query_params={"run": run.id},
            )
            st.code(run_failures.full_failure(run), language=None, wrap_lines=True)


def cursor_stack(v: Listing) -> list[str | None]:
    """The cursors of the pages walked so far (page 1's is None), this session's, for these
    filters and page size (others start again at page 1)."""
    held = st.session_state.get("runs_cursors")
    if held and held[0] == v.cursors_key:
        stack: list[str | None] = held[1]
        return stack
    stack = [None]
    st.session_state["runs_cursors"] = (v.cursors_key, stack)
    return stack


def load(v: Listing) -> RunsPublic | None:
    """The page of runs under the filters the reader walked to, with the lab's counts; None
    after saying why the API refused them (a malformed spec field filter is said under the
    filters)."""
    try:
        return loaders.runs_page(
            v.url, v.token, cursor_stack(v)[-1], v.page_size, **v.filters.params()
        )
    except LabError as exc:
        if exc.status == 422:
            problems = run_filters.filter_problems(exc.detail, exc.message)
            st.error(problems, icon=":material/filter_alt_off:")
        else:
            api_client.show_error(exc)
        return None


def nothing_shown(v: Listing) -> None:
    """Why the table is empty: the filters, or no run yet (and how to start one)."""
    if any(v.filters.params().values()):
        st.info("No runs match these filters.")
        return
    st.info(
        "No runs yet. Submit one on the **Submit** page, run `make demo` (a FedGen vs "
        "FedAvg sweep), or POST a spec to `/api/v1/runs` (the API docs are at `/docs`; "
        "start the lab with `fedgen-lab up`)."
    )


def active(page: RunsPublic) -> bool:
    """Whether any run under the filters is queued or running (the page then refreshes)."""
    return any(page.status_counts.get(s, 0) for s in ACTIVE)


def shown_line(v: Listing, page: RunsPublic) -> str:
    """`runs 101–200 of 1,234, newest first` (`of about` when the server estimated)."""
    first = (len(cursor_stack(v)) - 1) * v.page_size
    of = f"{page.count:,}" if page.count_exact else f"about {page.count:,}"
    return f"runs {first + 1:,}–{first + len(page.data):,} of {of}, newest first"


def table_caption(v: Listing, page: RunsPublic, tz: tzinfo) -> str:
    """Which runs are shown, what they share, the time zone, refreshing, what ticking does."""
    shared = runs_table.common_fields(page.data)
    return (
        shown_line(v, page)
        + (f" · all {shared}" if shared else "")
        + f" · times in {getattr(tz, 'key', 'UTC')}"
        + (" · refreshing every 3 s while runs are active" if active(page) else "")
        + " · tick rows to compare, watch, cancel, clone or delete them; tick one for its "
        "details, note and tags"
    )


def pager(v: Listing, page: RunsPublic) -> None:
    """Newest / newer / older: back through every run under the filters, a page at a time
    (each page is read after the previous page's last run, as fast as the first)."""
    stack = cursor_stack(v)
    top = len(stack) == 1
    c1, c2, c3, _ = st.columns([1, 1, 1, 3])
    c1.button(
        "Newest",
        key="runs_newest",
        disabled=top,
        icon=":material/first_page:",
        on_click=_turn,
        args=(stack, stack[:1]),
    )
    c2.button(
        "Newer",
        key="runs_newer",
        disabled=top,
        icon=":material/chevron_left:",
        on_click=_turn,
        args=(stack, stack[:-1]),
    )
    c3.button(
        "Older",
        key="runs_older",
        disabled=page.next_cursor is None,
        icon=":material/chevron_right:",
        on_click=_turn,
        args=(stack, [*stack, page.next_cursor]),
    )


def _turn(stack: list[str | None], to: list[str | None]) -> None:
    """Another page (the button's callback, before the rerun draws it): no rows ticked."""
    stack[:] = to
    runs_actions.forget_selection()


def stuck_link(runs: list[RunPublic]) -> None:
    """A link to the Lab page when some runs wait for a worker no live one can be."""
    stuck = sum(1 for r in runs if r.waiting_reason)
    if stuck:
        st.page_link(
            "app_pages/lab.py",
            label=f"{stuck} {'run' if stuck == 1 else 'runs'} no live worker can take (see "
            "“waiting for”) · the live workers are on the Lab page",
            icon=":material/warning:",
        )


def me_or_none(url: str, token: str) -> UserPublic | None:
    """Who is signed in; None when the API will not say (identity is optional to read)."""
    try:
        return loaders.me(url, token)
    except LabError:
        return None


def table(v: Listing) -> None:
    """Counts, the runs table and its actions (a fragment: reruns alone while runs are active)."""
    page = load(v)
    if page is None:
        return
    st.markdown(
        status_counts.counts_line(page.status_counts, page.status_counts_exact),
        help="The lab's runs per status under the other filters",
    )
    runs_actions.undo_bar()
    if not page.data:
        nothing_shown(v)
        return
    runs, now, tz = page.data, datetime.now(UTC), times.zone(st.context.timezone)
    round_ms = {
        r.id: round_times(v.url, v.token, r.id, r.current_round)
        for r in runs
        if r.status == RunStatus.RUNNING
    }
    names = run_name.compact_names(runs)
    df = runs_table.table(runs, now, tz, round_ms, names)
    st.caption(table_caption(v, page, tz))
    failures(v, page, now)
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
    pager(v, page)
    picked = runs_actions.Picked(
        [runs[i] for i in event.selection.rows if 0 <= i < len(runs)],
        names,
        me_or_none(v.url, v.token),
    )
    runs_actions.actions(picked)
    if len(picked.runs) == 1:
        runs_actions.details(picked.runs[0], picked, now)
    with st.expander("Export"):
        st.download_button(
            "Download this page as CSV",
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
        + run_names.LEGEND
        + "); the caption says what they all share",
    ),
    "seed": st.column_config.NumberColumn("seed", format="%d"),
    **table_columns.text_columns(
        {
            "status": "claimed: a worker took it, no round stored yet; cancelling: a cancel was "
            "asked, it stops after its current round",
            "progress": "The last round stored / the run's rounds R (round 0 is the initial "
            "model's evaluation, round r the model after r aggregations: a finished run reads "
            "R/R)",
            durations.RUNNING_TIME: f"{durations.HELP[durations.RUNNING_TIME]}; queued: how "
            "long it waits",
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
    "best acc (%)": st.column_config.NumberColumn(
        "best acc (%)",
        format=_PCT,
        help="The best test accuracy over the rounds the protocol counts (not round R under "
        "before_training): the summary's best once the run ends, the same figure as Live's",
    ),
    "last acc (%)": st.column_config.NumberColumn(
        "last acc (%)",
        format=_PCT,
        help="The newest stored round the protocol counts (the final once the run ends)",
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
    url, token = api_client.connection()
    v = Listing(url, token, *filter_controls(url, token))
    try:  # whether to refresh: any run active (the same, cached, read the fragment makes)
        first = loaders.runs_page(
            url, token, cursor_stack(v)[-1], v.page_size, **v.filters.params()
        )
        interval = "3s" if active(first) else None
    except LabError:  # the fragment says why
        interval = None
    st.fragment(run_every=interval)(table)(v)


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
