"""Compare: overlay runs, group seeds into mean ± std bands, smooth, x by round or wall-clock."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import charts, loaders, ui
from dashboard.difference import difference_block
from dashboard.frames import compare_long
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
GROUP_MODES = [
    "Every spec field except the seed",
    "Chosen fields",
    "No grouping (one line per run)",
]

st.title("Compare")
url, token = ui.connection()

runs = ui.call(loaders.runs, url, token)
if not runs:
    st.info("No runs to compare yet. Submit a sweep on the **Submit** page.")
    st.stop()
by_id = {str(r["id"]): r for r in runs}

sweeps = ui.try_call(loaders.sweeps, url, token) or []
sweep_names = {"": "—", **{str(s["id"]): f"{s['name']} ({s['count']} runs)" for s in sweeps}}
sweep_id = st.selectbox(
    "Take all runs of a sweep",
    list(sweep_names),
    key="cmp_sweep",
    format_func=lambda k: sweep_names[k],
)
if sweep_id:
    default = [i for i, r in by_id.items() if str(r.get("sweep_id")) == sweep_id]
else:
    from_query = [i for i in st.query_params.get("runs", "").split(",") if i in by_id]
    default = from_query or [i for i in st.session_state.get("compare_ids", []) if i in by_id]
    default = default or [i for i, r in by_id.items() if (r.get("current_round") or 0) > 0][:10]
chosen: list[str] = st.multiselect(
    "Runs", list(by_id), default=default, key=f"cmp_runs_{sweep_id}",
    format_func=lambda i: ui.run_label(by_id[i]),
)  # fmt: skip
if not chosen:
    st.info("Pick runs above (or select them on the **Runs** page).")
    st.stop()
st.query_params["runs"] = ",".join(chosen)

c1, c2, c3, c4 = st.columns(4)
metric = c1.selectbox("Metric", METRICS, key="cmp_metric")
x_axis = c2.radio("x axis", ["round", "wall-clock"], horizontal=True, key="cmp_x")
smoothing = c3.slider("Smoothing (EMA)", 0.0, 0.99, 0.0, 0.01, key="cmp_smooth")
max_points = c4.number_input("Max points per run", 20, 2000, 200, 20, key="cmp_points")
mode = st.radio("Group", GROUP_MODES, horizontal=True, key="cmp_group_mode")
chosen_runs = [by_id[i] for i in chosen]
by: list[str] | None = None
if mode == GROUP_MODES[1]:
    fields = groupable_fields(chosen_runs)
    varying = groupable_fields(chosen_runs, varying_only=True)
    by = st.multiselect("Group by", fields, default=varying, key="cmp_group_by")

# Wall-clock needs every round's duration (a downsampled point hides the rounds it stands for).
points = 0 if x_axis == "wall-clock" else int(max_points)
payload: dict[str, Any] = ui.call(loaders.compare, url, token, tuple(chosen), points)
long = compare_long(payload, metric)
if long.empty:
    st.info("The chosen runs have no rounds yet.")
    st.stop()
if any(r.get("downsampled") for r in payload.get("runs", [])):
    st.caption(f"Curves downsampled by the server to at most {max_points} points per run.")
labels = group_labels(chosen_runs, by)
for label, differ in group_warnings(chosen_runs, by).items():
    st.warning(f"Group {label!r} mixes runs that differ in {', '.join(differ)}.")
long["group"] = long["run_id"].map(lambda i: labels.get(str(i), str(i)))
smoothed = smooth(long, smoothing)
x = "wall_s" if x_axis == "wall-clock" else "round"
title = f"{metric}" + (f" (EMA {smoothing:g})" if smoothing else "")
if mode == GROUP_MODES[2]:
    fig = charts.run_lines(smoothed, labels, title, x=x)
    agg = None
else:
    agg = aggregate(smoothed)
    fig = charts.band_chart(agg, f"{title}: mean ± std over seeds", metric, x=x)
st.plotly_chart(fig, key="cmp_chart")
if agg is not None:
    changes = n_changes(agg)
    st.caption(
        "Bands: finished runs only, each round over the runs that reached it. n per group: "
        + "; ".join(f"{g}: " + ", ".join(f"n={n} from round {r}" for r, n in zip(d["round"], d["n"], strict=True))
                    for g, d in changes.groupby("group"))
    )  # fmt: skip

st.subheader("Time to target accuracy")
target = st.number_input(
    "Target", 0.0, 1.0, 0.8, 0.01, key="cmp_target", disabled=metric != "test_acc"
)
if metric == "test_acc":
    ttt = time_to_target(long, float(target), "group" if mode != GROUP_MODES[2] else "run_id")
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
if agg is not None:
    st.download_button(
        "Download mean ± std curves (CSV)", agg.to_csv(index=False), "compare.csv", "text/csv",
        key="cmp_csv",
    )  # fmt: skip
if mode != GROUP_MODES[2]:
    difference_block(
        {g: [str(i) for i in ids] for g, ids in long.groupby("group")["run_id"].unique().items()}
    )
