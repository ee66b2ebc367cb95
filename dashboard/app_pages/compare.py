"""Compare: overlay runs, group seeds into mean ± std bands, smooth, x by round or wall-clock.

The whole view lives in the URL (`?sweep=<id>` or `?runs=a,b`, `metric`, `x`, `group`,
`by`, `show`, `smooth`, `points`, `log`, `target`), so the address bar is a link that
reproduces it. Only the plotted metric (and the round times when needed) is fetched.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import charts, compare_view, loaders, ui
from dashboard.difference import difference_block
from dashboard.frames import compare_long
from dashboard.live_view import ACC_LINES
from dashboard.tables import (
    aggregate,
    group_labels,
    group_warnings,
    groupable_fields,
    n_changes,
    smooth,
    time_to_target,
)

METRICS = ["test_acc", "test_loss", "user_acc_mean", "user_acc_min", "train_loss"]
METRIC_TITLES = {
    "test_acc": "test accuracy",
    "test_loss": "test loss",
    "user_acc_mean": "mean per-user accuracy",
    "user_acc_min": "worst user's accuracy",
    "train_loss": "training loss",
}
GROUP_MODES = {
    "seed": "Every spec field except the seed",
    "fields": "Chosen fields",
    "none": "No grouping (one line per run)",
}
PERCENT = frozenset(ACC_LINES)  # the accuracies: stored as fractions, shown in % (as on Live)
X_AXES = ["round", "wall-clock"]
COMPACT = 12  # more chosen runs than this: a summary line instead of the run chips
TIME_METRIC = "time_total_ms"  # the wall-clock axis and seconds-to-target come from it

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
metric: str = c1.selectbox("Metric", METRICS, key="cmp_metric")
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
if mode == "none":
    names = compare_view.seed_names(chosen_runs, groups)
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

ui.to_url(
    {
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
        "target": st.session_state["cmp_target"] if st.session_state["cmp_target"] != 80 else None,
    }
)
if not shown:
    st.info("Every group is hidden: pick some under **Show**.")
    st.stop()

# Wall-clock needs every round's duration (a downsampled point hides the rounds it stands for).
points = 0 if x_axis == "wall-clock" else int(max_points)
wanted = (metric, TIME_METRIC) if x_axis == "wall-clock" or metric == "test_acc" else (metric,)
payload: dict[str, Any] = ui.call(loaders.compare, url, token, tuple(chosen), points, wanted)
long = compare_long(payload, metric)
if long.empty:
    st.info("The chosen runs have no rounds yet.")
    st.stop()
if metric in PERCENT:
    long["value"] = long["value"] * 100.0
long["group"] = long["run_id"].map(lambda i: names.get(str(i), str(i)))
long = long[long["group"].isin(set(shown))]
if any(r.get("downsampled") for r in payload.get("runs", [])):
    st.caption(f"Curves downsampled by the server to at most {max_points} points per run.")
if mode == "fields":
    for label, differ in group_warnings(chosen_runs, by).items():
        st.warning(f"Group {label!r} mixes runs that differ in {', '.join(differ)}.")
smoothed = smooth(long, smoothing)
x = "wall_s" if x_axis == "wall-clock" else "round"
y_title = METRIC_TITLES.get(metric, metric) + (" (%)" if metric in PERCENT else "")
title = y_title + (f" (EMA {smoothing:g})" if smoothing else "")
if mode == "none":
    fig = charts.run_lines(smoothed, names, title, x=x, styles=styles, log_y=log_y, y_title=y_title)
    csv = compare_view.runs_csv(smoothed, names, metric + ("_pct" if metric in PERCENT else ""))
    agg = None
else:
    agg = aggregate(smoothed)
    fig = charts.band_chart(
        agg, f"{title}: mean ± std over seeds", y_title, x=x, styles=styles, log_y=log_y
    )
    csv = compare_view.grouped_csv(agg)
st.plotly_chart(fig, key="cmp_chart")
if agg is not None:
    changes = n_changes(agg)
    st.caption(
        "Bands: finished runs only, each round over the runs that reached it. n per group: "
        + "; ".join(f"{g}: " + ", ".join(f"n={n} from round {r}" for r, n in zip(d["round"], d["n"], strict=True))
                    for g, d in changes.groupby("group"))
    )  # fmt: skip
st.download_button(
    "Download these curves (CSV)", csv, "compare.csv", "text/csv", key="cmp_csv",
    help="The mean ± std per group and round" if mode != "none" else "Every run's curve",
)  # fmt: skip

st.subheader("Time to target accuracy")
target = st.number_input(
    "Target test accuracy (%)", 0.0, 100.0, step=1.0, key="cmp_target",
    disabled=metric != "test_acc",
)  # fmt: skip
if metric == "test_acc":
    ttt = time_to_target(long, float(target), "group")
    st.dataframe(
        ttt[["group", "runs", "reached_text", "round_median_text", "seconds_median_text", "unfinished"]],
        hide_index=True, key="cmp_ttt",
        column_config={"runs": "n finished", "reached_text": "reached", "round_median_text": "median rounds",
                       "seconds_median_text": "median seconds", "unfinished": "not finished"},
    )  # fmt: skip
    st.caption("Median over finished runs; a run that never reached the target counts as beyond "
               "its last round (\"> R\" when the median is such a run).")  # fmt: skip
else:
    st.caption("Time to target is computed on test_acc.")
if mode != "none":
    difference_block(
        {g: [str(i) for i in ids] for g, ids in long.groupby("group")["run_id"].unique().items()}
    )
