"""Compare: overlay runs, group seeds into mean ± std bands, smooth, x by round or wall-clock.

The whole view lives in the URL (`?sweep=<id>` or `?runs=a,b`, `metric`, `x`, `group`,
`by`, `show`, `smooth`, `points`, `log`, `target`), so the address bar is a link that
reproduces it. With neither, it opens on the member's newest sweep (or, with none, says
how to pick): never on the lab's newest runs, which mix members and split seed groups. A
group of one run is drawn as its line and named "n = 1: no band"; without grouping each run
has a style of its own. Only the plotted metric (and the round times when needed) is fetched.

Live: running runs are drawn with the finished ones (bands over the runs that reached each
round, their latest points marked). While any shown run is queued or running, the data
part below the controls is an `st.fragment` that reruns itself every REFRESH_S seconds
and asks the server only for the new rounds of those runs (GET /compare?since_round=k),
merged into a per-session cache (dashboard.compare_page.compare_view); ended runs are never fetched
again, and the refreshing stops when every shown run has ended.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import api_client, charts, loaders, run_name, url_state
from dashboard.charts import TraceStyle
from dashboard.compare_page import compare_view
from dashboard.compare_page.compare_view import CachedRun, CompareCache
from dashboard.compare_page.curves import (
    STOPPED,
    aggregate,
    compare_long,
    group_labels,
    group_warnings,
    groupable_fields,
    smooth,
    time_to_target,
)
from dashboard.compare_page.difference import difference_block
from fedgen import durations, metric_names
from vocab.run_status import RunStatus
from vocab.schemas.results import ComparePublic
from vocab.schemas.runs import RunPublic
from vocab.schemas.sweeps import SweepPublic

METRICS = list(metric_names.COMPARE_METRICS)
GROUP_MODES = {
    "seed": "Every spec field except the seed",
    "fields": "Chosen fields",
    "none": "No grouping (one line per run)",
}
X_AXES = ["round", "wall-clock", "bytes", "compute"]
# How each x axis is named, and the long frame's column it reads (dashboard.compare_page.curves).
X_LABELS = {
    "round": "round",
    "wall-clock": durations.TRAINING_TIME,
    "bytes": "cumulative MB",
    "compute": "cumulative compute",
}
X_COLUMN = {"round": "round", "wall-clock": "wall_s", "bytes": "mb", "compute": "compute_s"}
# The per-round metrics the cost axes are summed from (fedgen.cost).
COST_FETCH = {
    "bytes": ("bytes_up", "bytes_down"),
    "compute": ("time_train_ms", "time_server_ms"),
}
COMPACT = 12  # more chosen runs than this: a summary line instead of the run chips
REFRESH_S = 2.0  # how often the data part reruns while a shown run is queued or running
CACHE_KEY = "cmp_cache"  # session state: a compare_view.CompareCache


@dataclass
class View:
    """What the controls chose, and what the data part draws from it."""

    url: str
    token: str
    sweep_id: str
    by_id: dict[str, RunPublic]
    chosen: list[str]
    metric: str
    x_axis: str
    smoothing: float
    max_points: int
    log_y: bool
    mode: str
    by: list[str] | None
    run_names: dict[str, str]  # one name per run, for marks and hovers
    names: dict[str, str]  # the line (run or group) each run is drawn in
    styles: dict[str, TraceStyle]
    shown: list[str]
    options: list[str]
    cache: dict[str, CachedRun] = field(default_factory=dict)
    shown_ids: list[str] = field(default_factory=list)
    points: int = 0
    wanted: tuple[str, ...] = ()

    @property
    def y_title(self) -> str:
        """The plotted metric's axis label."""
        return metric_names.label(self.metric)

    @property
    def percent(self) -> bool:
        """Whether the metric is drawn in % (stored as a fraction)."""
        return metric_names.is_percent(self.metric)

    def url_params(self) -> dict[str, Any]:
        """The query string of this view (defaults left out), the target as the field holds it."""
        target = float(st.session_state["cmp_target"])
        return {
            "sweep": self.sweep_id,
            "runs": None if self.sweep_id else self.chosen,
            "metric": self.metric if self.metric != METRICS[0] else None,
            "x": self.x_axis if self.x_axis != X_AXES[0] else None,
            "group": self.mode if self.mode != "seed" else None,
            "by": self.by if self.mode == "fields" else None,
            "show": "|".join(self.shown) if len(self.shown) < len(self.options) else None,
            "smooth": self.smoothing or None,
            "points": self.max_points if self.max_points != 500 else None,
            "log": True if self.log_y else None,
            "target": target if target != 80 else None,
        }

    def status(self, rid: str) -> str | None:
        """The run's latest known status: the cache's, else the listed one."""
        entry = self.cache.get(rid)
        return entry.status if entry else self.by_id[rid].status

    def fetch(self, ids: list[str], since: int, pts: int) -> ComparePublic:
        """GET /compare for `ids` (rounds after `since`; a whole fetch when it is negative)."""
        if since < 0 and not self.cache:  # the first whole fetch: shared with others for 5 s
            return api_client.call(
                loaders.compare, self.url, self.token, tuple(ids), pts, self.wanted
            )
        return api_client.call(
            loaders.compare_since, self.url, self.token, tuple(ids), since, pts, self.wanted
        )


def own_latest_sweep(url: str, token: str, sweeps: list[SweepPublic]) -> str:
    """The sweep the page starts on: the member's newest one, unless a link (`?runs=`) or the
    Runs page chose runs; "" when so, or when the member has no sweep (never the lab's
    newest runs, which mix other members' runs and split seed groups)."""
    if st.query_params.get("runs") or st.session_state.get("compare_ids"):
        return ""
    me = api_client.try_call(loaders.me, url, token)
    mine = [s for s in sweeps if me is not None and s.owner == me.name]
    return max(mine, key=lambda s: s.created_at).id if mine else ""


def pick_sweep(url: str, token: str) -> str:
    """The sweep whose runs are all taken ("" for none), from the URL or the select box; the
    member's newest sweep at first."""
    sweeps = api_client.try_call(loaders.sweeps, url, token) or []
    sweep_names = {"": "—", **{s.id: f"{s.name} ({s.count} runs)" for s in sweeps}}
    if "cmp_sweep" not in st.session_state and st.query_params.get("sweep") is None:
        st.session_state["cmp_sweep"] = own_latest_sweep(url, token, sweeps)
    url_state.from_url("cmp_sweep", "sweep", "", choices=list(sweep_names))
    return str(
        st.selectbox(
            "Take all runs of a sweep",
            list(sweep_names),
            key="cmp_sweep",
            format_func=lambda k: sweep_names[k],
        )
    )


def pick_runs(url: str, token: str, sweep_id: str) -> tuple[dict[str, RunPublic], list[str]]:
    """The runs listed (by id) and the ids chosen; stops the page when there is none."""
    if sweep_id:
        by_id = {r.id: r for r in api_client.call(loaders.runs, url, token, sweep_id=sweep_id)}
        st.caption(f"All {len(by_id)} runs of the sweep. Clear the sweep to pick single runs.")
        return by_id, list(by_id)
    runs = api_client.call(loaders.runs, url, token)
    if not runs:
        st.info("No runs to compare yet. Submit a sweep on the **Submit** page.")
        st.stop()
    by_id = {r.id: r for r in runs}
    picked_elsewhere = [i for i in st.session_state.get("compare_ids", []) if i in by_id]
    names_all = run_name.compact_names(runs)  # the one display name (Runs, Live, ...)
    # Nothing chosen stays nothing (the page says how to pick): no guess from the lab's newest.
    chosen = url_state.list_from_url("cmp_selection", "runs", picked_elsewhere, list(by_id))
    # A long selection (a shared link) stays a one-line summary until asked for: 50 chips
    # cost the browser more than the chart does.
    if len(chosen) <= COMPACT or st.toggle(f"Edit the {len(chosen)} chosen runs", key="cmp_edit"):
        st.session_state.setdefault("cmp_runs", chosen)
        chosen = st.multiselect(
            "Runs", list(by_id), key="cmp_runs", format_func=lambda i: names_all[i]
        )
        st.session_state["cmp_selection"] = chosen
    else:
        st.caption(f"{len(chosen)} runs: " + "; ".join(names_all[i] for i in chosen[:3]) + " …")
    return by_id, chosen


def plot_controls() -> tuple[str, str, float, int, bool]:
    """Metric, x axis, smoothing, points per run and log y, each seeded from the URL."""
    # "Log y" gets room for its label beside its switch at 1,280 px (a 1-part column cut it).
    c1, c2, c3, c4, c5 = st.columns([3, 2, 3, 2, 1.6])
    url_state.from_url("cmp_metric", "metric", METRICS[0], choices=METRICS)
    metric = c1.selectbox("Metric", METRICS, key="cmp_metric", format_func=metric_names.title)
    url_state.from_url("cmp_x", "x", X_AXES[0], choices=X_AXES)
    # The time axis is the runs' training time (fedgen.durations); "wall-clock" stays its
    # value in links made before. bytes and compute: the cost so far (docs/metrics.md, Cost).
    x_axis = c2.radio(
        "x axis",
        X_AXES,
        horizontal=True,
        key="cmp_x",
        format_func=X_LABELS.__getitem__,
        help="round; training time (each round's time_total_ms summed); cumulative MB "
        "communicated (bytes up + down); cumulative compute in s (the clients' training + the "
        "server's step, evaluation not counted)",
    )
    url_state.from_url("cmp_smooth", "smooth", 0.0, float)
    st.session_state["cmp_smooth"] = min(max(float(st.session_state["cmp_smooth"]), 0.0), 0.99)
    smoothing = c3.slider("Smoothing (EMA)", 0.0, 0.99, step=0.01, key="cmp_smooth")
    url_state.from_url("cmp_points", "points", 500, int)
    st.session_state["cmp_points"] = min(max(int(st.session_state["cmp_points"]), 20), 5000)
    max_points = c4.number_input("Max points per run", 20, 5000, step=20, key="cmp_points")
    url_state.from_url("cmp_log", "log", False, lambda v: v == "1")
    log_y = c5.toggle("Log y", key="cmp_log")
    return str(metric), str(x_axis), float(smoothing), int(max_points), bool(log_y)


def group_controls(chosen_runs: list[RunPublic]) -> tuple[str, list[str] | None]:
    """The grouping mode and, when grouping by chosen fields, those fields."""
    url_state.from_url("cmp_group_mode", "group", "seed", choices=list(GROUP_MODES))
    mode = str(
        st.radio(
            "Group",
            list(GROUP_MODES),
            horizontal=True,
            key="cmp_group_mode",
            format_func=lambda m: GROUP_MODES[m],
        )
    )
    if mode != "fields":
        return mode, None
    fields = groupable_fields(chosen_runs)
    varying = groupable_fields(chosen_runs, varying_only=True)
    url_state.list_from_url("cmp_group_by", "by", varying, fields)
    return mode, st.multiselect("Group by", fields, key="cmp_group_by")


def shown_lines(options: list[str], what: str) -> list[str]:
    """The runs or groups drawn: all, or those the filter keeps (`?show=a|b`)."""
    url_state.list_from_url("cmp_shown", "show", options, options, sep="|")
    shown: list[str] = [g for g in st.session_state["cmp_shown"] if g in options] or options
    if st.toggle(f"Filter {what}", key="cmp_filter", value=len(shown) < len(options)):
        st.session_state.setdefault("cmp_show", shown)
        st.session_state["cmp_show"] = [g for g in st.session_state["cmp_show"] if g in options]
        shown = st.multiselect(f"Show {what}", options, key="cmp_show")
    else:
        shown = options
    st.session_state["cmp_shown"] = shown
    return shown


def controls(url: str, token: str) -> View:
    """Every control above the chart, in page order; stops the page when nothing is chosen."""
    sweep_id = pick_sweep(url, token)
    by_id, chosen = pick_runs(url, token, sweep_id)
    if not chosen:
        st.info(
            "No runs chosen. Take all runs of a sweep above, pick single runs under **Runs**, "
            "or tick runs on the **Runs** page and press its Compare button."
        )
        st.stop()

    chosen_runs = [by_id[i] for i in chosen]
    metric, x_axis, smoothing, max_points, log_y = plot_controls()
    mode, by = group_controls(chosen_runs)
    groups = group_labels(chosen_runs, by if mode == "fields" else None)
    run_names = run_name.compact_names(chosen_runs)
    names = run_names if mode == "none" else groups
    styles = (
        compare_view.run_styles(chosen_runs, names)
        if mode == "none"
        else compare_view.trace_styles(chosen_runs, names, by)
    )
    options = list(dict.fromkeys(names[i] for i in chosen))
    shown = shown_lines(options, "runs" if mode == "none" else "groups")
    # The target is in % like the chart (a link from before, with a fraction such as 0.8,
    # still works).
    url_state.from_url(
        "cmp_target", "target", 80.0, lambda v: float(v) * 100 if float(v) <= 1 else float(v)
    )
    st.session_state["cmp_target"] = min(max(float(st.session_state["cmp_target"]), 0.0), 100.0)
    return View(
        url,
        token,
        sweep_id,
        by_id,
        chosen,
        metric,
        x_axis,
        smoothing,
        max_points,
        log_y,
        mode,
        by,
        run_names,
        names,
        styles,
        shown,
        options,
    )


def prepare_cache(v: View) -> None:
    """Tie the view to its per-session cache of fetched rounds (reset when what is fetched
    changes; runs no longer shown dropped, so they are fetched afresh if shown again)."""
    # Wall-clock needs every round's duration (a downsampled point hides the rounds it
    # stands for).
    v.points = 0 if v.x_axis != "round" else v.max_points
    with_time = v.x_axis == "wall-clock" or v.metric == "test_acc"
    v.wanted = (v.metric, metric_names.ROUND_TIME) if with_time else (v.metric,)
    v.wanted += tuple(m for m in COST_FETCH.get(v.x_axis, ()) if m not in v.wanted)
    store = st.session_state.get(CACHE_KEY)
    if not isinstance(store, CompareCache) or store.key != (v.points, v.wanted):
        store = CompareCache(key=(v.points, v.wanted))
        st.session_state[CACHE_KEY] = store
    v.cache = store.runs
    v.shown_ids = [i for i in v.chosen if v.names.get(i) in set(v.shown)]
    for rid in set(v.cache) - set(v.shown_ids):
        del v.cache[rid]


def bands_figure(
    v: View,
    agg: pd.DataFrame,
    smoothed: pd.DataFrame,
    statuses: dict[str, str | None],
    title: str,
    x: str,
    heads: pd.DataFrame,
    marks: list[tuple[float, str]],
) -> go.Figure:
    """Mean ± std bands over each group's runs, a legend entry counting each group's runs."""
    counts = compare_view.status_counts(statuses, v.names)
    legend = {
        g: compare_view.group_legend(g, int(d["n"].max()), counts.get(g))
        for g, d in agg.groupby("group")
    }
    # A group of one run has no spread: the title says so rather than "mean ± std".
    single = all(int(n) == 1 for n in agg.groupby("group")["n"].max())
    return charts.band_chart(
        agg,
        f"{title}: one run per group (n = 1: no band)"
        if single
        else f"{title}: mean ± std over seeds",
        v.y_title,
        x=x,
        styles=v.styles,
        log_y=v.log_y,
        legend=legend,
        heads=heads,
        marks=marks,
        stopped=compare_view.stopped_rows(smoothed, statuses, v.run_names),
    )


def chart_part(
    v: View, long: pd.DataFrame, statuses: dict[str, str | None], live: bool, waiting: list[str]
) -> pd.DataFrame | None:
    """The chart (one line per run, or mean ± std bands), its caption and its CSV; returns
    the bands (None with one line per run)."""
    if any(v.cache[i].downsampled for i in v.shown_ids if i in v.cache):
        st.caption(f"Curves downsampled by the server to at most {v.max_points} points per run.")
    smoothed = smooth(long, v.smoothing)
    x = X_COLUMN[v.x_axis]
    title = v.y_title + (f" (EMA {v.smoothing:g})" if v.smoothing else "")
    heads = compare_view.running_heads(smoothed, statuses, v.run_names, v.styles, v.names, v.cache)
    final_rounds = compare_view.final_rounds([v.by_id[i] for i in v.shown_ids])
    marks = compare_view.final_marks(final_rounds, long, x)
    if v.mode == "none":
        fig = charts.run_lines(
            smoothed,
            v.names,
            title,
            x=x,
            styles=v.styles,
            log_y=v.log_y,
            y_title=v.y_title,
            statuses=statuses,
            heads=heads,
            marks=marks,
        )
        csv = compare_view.runs_csv(
            smoothed, v.names, metric_names.metric_name(v.metric).csv_column
        )
        agg = None
    else:
        agg = aggregate(smoothed)
        fig = bands_figure(v, agg, smoothed, statuses, title, x, heads, marks)
        csv = compare_view.grouped_csv(agg)
    st.plotly_chart(fig, key="cmp_chart")
    stopped = sum(1 for i in set(long["run_id"].astype(str)) if statuses.get(i) in STOPPED)
    st.caption(compare_view.chart_caption(agg, len(heads), stopped, waiting, live, marks))
    st.download_button(
        "Download these curves (CSV)",
        csv,
        "compare.csv",
        "text/csv",
        key="cmp_csv",
        help="The mean ± std per group and round" if v.mode != "none" else "Every run's curve",
    )
    return agg


TTT_COLUMNS = {
    "group": "group",
    "runs": "n finished",
    "reached_text": "reached",
    "round_median_text": "median rounds",
    "seconds_median_text": f"median {durations.TRAINING_TIME} (s)",
    "unfinished": "not finished",
}


def target_part(v: View, long: pd.DataFrame, statuses: dict[str, str | None]) -> None:
    """Time to the target test accuracy per group (median over finished runs)."""
    st.subheader("Time to target accuracy")
    target = st.number_input(
        "Target test accuracy (%)",
        0.0,
        100.0,
        step=1.0,
        key="cmp_target",
        disabled=v.metric != "test_acc",
    )
    url_state.to_url(v.url_params())
    if v.metric != "test_acc":
        st.caption("Time to target is computed on test accuracy.")
        return
    members = pd.DataFrame(
        {
            "run_id": v.shown_ids,
            "group": [v.names[i] for i in v.shown_ids],
            "status": [statuses[i] for i in v.shown_ids],
        }
    )
    ttt = time_to_target(long, float(target), "group", members)
    st.dataframe(
        ttt[list(TTT_COLUMNS)],
        hide_index=True,
        key="cmp_ttt",
        column_config={k: label for k, label in TTT_COLUMNS.items() if k != label},
    )
    st.caption(
        "Median over finished runs; a run that never reached the target counts as beyond "
        'its last round ("> R" when the median is such a run). Queued, running, failed '
        'and cancelled runs are counted under "not finished" until they succeed.'
    )


def no_round_note(waiting: list[str], live: bool) -> str:
    """What the page says while no shown run has a round yet."""
    more = " …" if len(waiting) > 6 else ""
    refresh = " This page refreshes by itself." if live else ""
    return (
        f"No round yet: {len(waiting)} runs not started ({'; '.join(waiting[:6])}{more}).{refresh}"
    )


def live_part(v: View, live_at_start: bool) -> None:
    """Fetch what is new, draw the chart, time to target and the difference."""
    compare_view.refresh_cache(v.cache, v.shown_ids, v.fetch, v.points)
    statuses = {i: v.status(i) for i in v.shown_ids}
    live = any(compare_view.in_flight(s) for s in statuses.values())
    if live_at_start and not live:
        st.rerun()  # every shown run has ended: redraw once without the timer
    long = compare_long(compare_view.cached_runs(v.cache, v.shown_ids), v.metric)
    waiting = compare_view.not_started([v.by_id[i] for i in v.shown_ids], v.cache, v.run_names)
    if long.empty:
        st.info(no_round_note(waiting, live))
        return
    if v.percent:
        long["value"] = long["value"] * 100.0
    long["group"] = long["run_id"].map(lambda i: v.names.get(str(i), str(i)))
    agg = chart_part(v, long, statuses, live, waiting)
    target_part(v, long, statuses)
    if v.mode != "none":
        members_of: dict[str, list[str]] = {}
        for i in v.shown_ids:
            members_of.setdefault(v.names[i], []).append(i)
        done = frozenset(i for i in v.shown_ids if statuses[i] == RunStatus.SUCCEEDED)
        hint = compare_view.mean_at_common_round(agg) if v.percent and agg is not None else None
        difference_block(members_of, finished=done, hint=hint)


def render() -> None:
    """The page: the controls, the URL that reproduces them, then the data part."""
    st.title("Compare")
    url, token = api_client.connection()
    v = controls(url, token)
    url_state.to_url(v.url_params())
    if not v.shown:
        st.info("Every group is hidden: pick some under **Show**.")
        st.stop()
    if v.mode == "fields":
        for label, differ in group_warnings([v.by_id[i] for i in v.chosen], v.by).items():
            st.warning(f"Group {label!r} mixes runs that differ in {', '.join(differ)}.")
    prepare_cache(v)
    live_at_start = any(compare_view.in_flight(v.status(i)) for i in v.shown_ids)
    # A fragment only while something may change: its timer reruns just this part (the
    # widgets above keep their state); a view of ended runs is drawn once, as a plain part.
    if live_at_start:
        st.fragment(run_every=REFRESH_S)(live_part)(v, live_at_start)
    else:
        live_part(v, live_at_start)


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
