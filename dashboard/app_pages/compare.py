"""Compare: overlay runs, group seeds into mean ± std bands, smooth, x by round or wall-clock.

The whole view lives in the URL (`?sweep=<id>` or `?runs=a,b`, `metric`, `x`, `group`,
`by`, `show`, `smooth`, `points`, `log`, `target`), so the address bar is a link that
reproduces it. Only the plotted metric (and the round times when needed) is fetched.

Live: running runs are drawn with the finished ones (bands over the runs that reached each
round, their latest points marked). While any shown run is queued or running, the data
part below the controls is an `st.fragment` that reruns itself every REFRESH_S seconds
and asks the server only for the new rounds of those runs (GET /compare?since_round=k),
merged into a per-session cache (dashboard.compare_view); ended runs are never fetched
again, and the refreshing stops when every shown run has ended.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard import charts, compare_view, loaders, ui
from dashboard.difference import difference_block
from dashboard.frames import compare_long
from dashboard.tables import (
    aggregate,
    group_labels,
    group_warnings,
    groupable_fields,
    smooth,
    time_to_target,
)
from fedgen import metric_names
from fedgen.status import SUCCEEDED

METRICS = list(metric_names.COMPARE_METRICS)
GROUP_MODES = {
    "seed": "Every spec field except the seed",
    "fields": "Chosen fields",
    "none": "No grouping (one line per run)",
}
X_AXES = ["round", "wall-clock"]
COMPACT = 12  # more chosen runs than this: a summary line instead of the run chips
TIME_METRIC = "time_total_ms"  # the wall-clock axis and seconds-to-target come from it
REFRESH_S = 2.0  # how often the data part reruns while a shown run is queued or running
CACHE_KEY = "cmp_cache"  # session state: {"key": (points, metrics), "runs": {id: entry}}

st.title("Compare")
url, token = ui.connection()

sweeps = ui.try_call(loaders.sweeps, url, token) or []
sweep_names = {"": "—", **{str(s["id"]): f"{s['name']} ({s['count']} runs)" for s in sweeps}}
ui.from_url("cmp_sweep", "sweep", "", choices=list(sweep_names))
sweep_id: str = st.selectbox(
    "Take all runs of a sweep", list(sweep_names), key="cmp_sweep",
    format_func=lambda k: sweep_names[k],
)  # fmt: skip

if sweep_id:
    runs = ui.call(loaders.runs, url, token, sweep_id=sweep_id)
    by_id = {str(r["id"]): r for r in runs}
    chosen = list(by_id)
    st.caption(f"All {len(chosen)} runs of the sweep. Clear the sweep to pick single runs.")
else:
    runs = ui.call(loaders.runs, url, token)
    if not runs:
        st.info("No runs to compare yet. Submit a sweep on the **Submit** page.")
        st.stop()
    by_id = {str(r["id"]): r for r in runs}
    picked_elsewhere = [i for i in st.session_state.get("compare_ids", []) if i in by_id]
    started = [i for i, r in by_id.items() if (r.get("current_round") or 0) > 0][:10]
    names_all = compare_view.run_names(runs)
    chosen = ui.list_from_url("cmp_selection", "runs", picked_elsewhere or started, list(by_id))
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
if not chosen:
    st.info("Pick runs above (or select them on the **Runs** page).")
    st.stop()
chosen_runs = [by_id[i] for i in chosen]

c1, c2, c3, c4, c5 = st.columns([3, 2, 3, 2, 1])
ui.from_url("cmp_metric", "metric", METRICS[0], choices=METRICS)
metric: str = c1.selectbox("Metric", METRICS, key="cmp_metric", format_func=metric_names.title)
ui.from_url("cmp_x", "x", X_AXES[0], choices=X_AXES)
x_axis: str = c2.radio("x axis", X_AXES, horizontal=True, key="cmp_x")
ui.from_url("cmp_smooth", "smooth", 0.0, float)
st.session_state["cmp_smooth"] = min(max(float(st.session_state["cmp_smooth"]), 0.0), 0.99)
smoothing = c3.slider("Smoothing (EMA)", 0.0, 0.99, step=0.01, key="cmp_smooth")
ui.from_url("cmp_points", "points", 500, int)
st.session_state["cmp_points"] = min(max(int(st.session_state["cmp_points"]), 20), 5000)
max_points = c4.number_input("Max points per run", 20, 5000, step=20, key="cmp_points")
ui.from_url("cmp_log", "log", False, lambda v: v == "1")
log_y = c5.toggle("Log y", key="cmp_log")

ui.from_url("cmp_group_mode", "group", "seed", choices=list(GROUP_MODES))
mode: str = st.radio(
    "Group", list(GROUP_MODES), horizontal=True, key="cmp_group_mode",
    format_func=lambda m: GROUP_MODES[m],
)  # fmt: skip
by: list[str] | None = None
if mode == "fields":
    fields = groupable_fields(chosen_runs)
    varying = groupable_fields(chosen_runs, varying_only=True)
    ui.list_from_url("cmp_group_by", "by", varying, fields)
    by = st.multiselect("Group by", fields, key="cmp_group_by")

groups = group_labels(chosen_runs, by if mode == "fields" else None)
run_names = compare_view.seed_names(chosen_runs, groups)  # one name per run, for marks and hovers
if mode == "none":
    names = run_names
    styles = compare_view.trace_styles(chosen_runs, names)
else:
    names = groups
    styles = compare_view.trace_styles(chosen_runs, names, by)
options = list(dict.fromkeys(names[i] for i in chosen))
what = "runs" if mode == "none" else "groups"
ui.list_from_url("cmp_shown", "show", options, options, sep="|")
shown: list[str] = [g for g in st.session_state["cmp_shown"] if g in options] or options
if st.toggle(f"Filter {what}", key="cmp_filter", value=len(shown) < len(options)):
    st.session_state.setdefault("cmp_show", shown)
    st.session_state["cmp_show"] = [g for g in st.session_state["cmp_show"] if g in options]
    shown = st.multiselect(f"Show {what}", options, key="cmp_show")
else:
    shown = options
st.session_state["cmp_shown"] = shown
# The target is in % like the chart (a link from before, with a fraction such as 0.8, still works).
ui.from_url("cmp_target", "target", 80.0, lambda v: float(v) * 100 if float(v) <= 1 else float(v))
st.session_state["cmp_target"] = min(max(float(st.session_state["cmp_target"]), 0.0), 100.0)

view: dict[str, Any] = {
    "sweep": sweep_id,
    "runs": None if sweep_id else chosen,
    "metric": metric if metric != METRICS[0] else None,
    "x": x_axis if x_axis != X_AXES[0] else None,
    "group": mode if mode != "seed" else None,
    "by": by if mode == "fields" else None,
    "show": "|".join(shown) if len(shown) < len(options) else None,
    "smooth": smoothing or None,
    "points": max_points if max_points != 500 else None,
    "log": True if log_y else None,
}


def _target_param() -> float | None:
    target = float(st.session_state["cmp_target"])
    return target if target != 80 else None


ui.to_url({**view, "target": _target_param()})
if not shown:
    st.info("Every group is hidden: pick some under **Show**.")
    st.stop()
if mode == "fields":
    for label, differ in group_warnings(chosen_runs, by).items():
        st.warning(f"Group {label!r} mixes runs that differ in {', '.join(differ)}.")

# Wall-clock needs every round's duration (a downsampled point hides the rounds it stands for).
points = 0 if x_axis == "wall-clock" else int(max_points)
wanted = (metric, TIME_METRIC) if x_axis == "wall-clock" or metric == "test_acc" else (metric,)
store = st.session_state.get(CACHE_KEY)
if not store or store.get("key") != (points, wanted):
    store = {"key": (points, wanted), "runs": {}}
    st.session_state[CACHE_KEY] = store
cache: dict[str, dict[str, Any]] = store["runs"]
shown_ids = [i for i in chosen if names.get(i) in set(shown)]
for rid in set(cache) - set(shown_ids):  # runs no longer shown: fetched afresh if shown again
    del cache[rid]


def _status(rid: str) -> str | None:
    entry = cache.get(rid)
    return entry["status"] if entry else by_id[rid].get("status")


def _fetch(ids: list[str], since: int, pts: int) -> dict[str, Any]:
    if since < 0 and not cache:  # the first whole fetch: shared with other viewers for 5 s
        return ui.call(loaders.compare, url, token, tuple(ids), pts, wanted)
    return ui.call(loaders.compare_since, url, token, tuple(ids), since, pts, wanted)


live_at_start = any(compare_view.in_flight(_status(i)) for i in shown_ids)
y_title = metric_names.label(metric)
percent = metric_names.is_percent(metric)
final_rounds = compare_view.final_rounds([by_id[i] for i in shown_ids])


def chart_part(
    long: pd.DataFrame, statuses: dict[str, str | None], live: bool, waiting: list[str]
) -> pd.DataFrame | None:
    """The chart (one line per run, or mean ± std bands), its caption and its CSV; returns
    the bands (None with one line per run)."""
    if any(cache[i].get("downsampled") for i in shown_ids if i in cache):
        st.caption(f"Curves downsampled by the server to at most {max_points} points per run.")
    smoothed = smooth(long, smoothing)
    x = "wall_s" if x_axis == "wall-clock" else "round"
    title = y_title + (f" (EMA {smoothing:g})" if smoothing else "")
    heads = compare_view.running_heads(smoothed, statuses, run_names, styles, names, cache)
    marks = compare_view.final_marks(final_rounds, long, x)
    counts = compare_view.status_counts(statuses, names)
    if mode == "none":
        fig = charts.run_lines(
            smoothed, names, title, x=x, styles=styles, log_y=log_y, y_title=y_title,
            statuses=statuses, heads=heads, marks=marks,
        )  # fmt: skip
        csv = compare_view.runs_csv(smoothed, names, metric_names.metric_name(metric).csv_column)
        agg = None
    else:
        agg = aggregate(smoothed)
        legend = {
            g: compare_view.group_legend(g, int(d["n"].max()), counts.get(g))
            for g, d in agg.groupby("group")
        }
        fig = charts.band_chart(
            agg, f"{title}: mean ± std over seeds", y_title, x=x, styles=styles, log_y=log_y,
            legend=legend, heads=heads, marks=marks,
            stopped=compare_view.stopped_rows(smoothed, statuses, run_names),
        )  # fmt: skip
        csv = compare_view.grouped_csv(agg)
    st.plotly_chart(fig, key="cmp_chart")
    stopped = sum(
        1 for i in set(long["run_id"].astype(str)) if statuses.get(i) in compare_view.STOPPED
    )
    st.caption(compare_view.chart_caption(agg, len(heads), stopped, waiting, live, marks))
    st.download_button(
        "Download these curves (CSV)", csv, "compare.csv", "text/csv", key="cmp_csv",
        help="The mean ± std per group and round" if mode != "none" else "Every run's curve",
    )  # fmt: skip
    return agg


def target_part(long: pd.DataFrame, statuses: dict[str, str | None]) -> None:
    """Time to the target test accuracy per group (median over finished runs)."""
    st.subheader("Time to target accuracy")
    target = st.number_input(
        "Target test accuracy (%)", 0.0, 100.0, step=1.0, key="cmp_target",
        disabled=metric != "test_acc",
    )  # fmt: skip
    ui.to_url({**view, "target": _target_param()})
    if metric != "test_acc":
        st.caption("Time to target is computed on test accuracy.")
        return
    members = pd.DataFrame(
        {"run_id": shown_ids, "group": [names[i] for i in shown_ids],
         "status": [statuses[i] for i in shown_ids]}
    )  # fmt: skip
    ttt = time_to_target(long, float(target), "group", members)
    st.dataframe(
        ttt[["group", "runs", "reached_text", "round_median_text", "seconds_median_text", "unfinished"]],
        hide_index=True, key="cmp_ttt",
        column_config={"runs": "n finished", "reached_text": "reached", "round_median_text": "median rounds",
                       "seconds_median_text": "median seconds", "unfinished": "not finished"},
    )  # fmt: skip
    st.caption("Median over finished runs; a run that never reached the target counts as beyond "
               "its last round (\"> R\" when the median is such a run). Queued, running, failed "
               "and cancelled runs are counted under \"not finished\" until they succeed.")  # fmt: skip


def live_part() -> None:
    """Fetch what is new, draw the chart, time to target and the difference."""
    compare_view.refresh_cache(cache, shown_ids, _fetch, points)
    statuses = {i: _status(i) for i in shown_ids}
    live = any(compare_view.in_flight(s) for s in statuses.values())
    if live_at_start and not live:
        st.rerun()  # every shown run has ended: redraw once without the timer
    long = compare_long(compare_view.cached_payload(cache, shown_ids), metric)
    waiting = compare_view.not_started([by_id[i] for i in shown_ids], cache, run_names)
    if long.empty:
        st.info(
            f"No round yet: {len(waiting)} runs not started ({'; '.join(waiting[:6])}"
            + (" …" if len(waiting) > 6 else "") + ")."
            + (" This page refreshes by itself." if live else "")
        )  # fmt: skip
        return
    if percent:
        long["value"] = long["value"] * 100.0
    long["group"] = long["run_id"].map(lambda i: names.get(str(i), str(i)))
    agg = chart_part(long, statuses, live, waiting)
    target_part(long, statuses)
    if mode != "none":
        members_of: dict[str, list[str]] = {}
        for i in shown_ids:
            members_of.setdefault(names[i], []).append(i)
        done = frozenset(i for i in shown_ids if statuses[i] == SUCCEEDED)
        hint = compare_view.mean_at_common_round(agg) if percent and agg is not None else None
        difference_block(members_of, finished=done, hint=hint)


# A fragment only while something may change: its timer reruns just this part (the widgets
# above keep their state); a view of ended runs is drawn once, as a plain part of the page.
if live_at_start:
    st.fragment(run_every=REFRESH_S)(live_part)()
else:
    live_part()
