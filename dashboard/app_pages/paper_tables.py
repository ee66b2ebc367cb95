"""Sweep tables: a sweep as the paper's Table 1 matrix and the Table 3 timing view, beside the paper.

The view lives in the URL (`?sweep=<id>&statistic=final`). While the sweep's runs are queued
or running the tables refresh by themselves (a fragment), cells filling in as runs finish,
and stop once every run has ended. Final and best are the one meaning (docs/metrics.md):
the last model the run's protocol evaluates, its round named when it is not the last.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import api_client, loaders, study_view, times, url_state
from dashboard.paper_tables_page import sweep_plot
from dashboard.paper_tables_page.versus_paper import NO_PAPER, number, versus_paper
from dashboard.sweep_tables import (
    cost_frame,
    frame_latex,
    noisy_timing,
    summary_groups,
    swept_fields,
    table1_latex,
    table1_long,
    table1_matrix,
    table3_frame,
    tune_frame,
)
from dashboard.table_csv import TABLE3_NUMBERS, table1_csv_frame, table3_csv_frame
from fedgen import paper
from fedgen.stats import CURVE_STATISTICS, STATISTIC_LABELS
from vocab.run_names import algorithm_name, paper_column
from vocab.run_status import ACTIVE
from vocab.safe_csv import frame_csv
from vocab.schemas.results import PlotData
from vocab.schemas.runs import RunPublic
from vocab.schemas.sweeps import SweepPublic, SweepSummary

REFRESH_S = 3
# The tables' statistics: a run's own figure (time to target is the plot's alone).
STATISTICS: dict[str, str] = {
    k: label for k, label in STATISTIC_LABELS.items() if k in CURVE_STATISTICS
}
STATISTIC_HELP = (
    "top-5 mean: mean ± std of each seed's 5 best rounds, pooled (the official code's number). "
    "final: the accuracy of the last model the run's protocol evaluates (round R, or R-1 under "
    "the official before_training timing, which never evaluates the model after the last "
    "aggregation: then named '@R-1'). best: the highest accuracy over the same rounds."
)


@dataclass(frozen=True)
class Pick:
    """The sweep and statistic picked above the tables, and the API they are read from."""

    url: str
    token: str
    sweeps: list[SweepPublic]
    sweep_id: str | None
    statistic: str
    in_flight: bool = False  # a run of the sweep was queued or running when the page ran

    def to_url(self) -> None:
        """The query string of the whole view (defaults left out)."""
        stat = self.statistic if self.statistic != "top5" else None
        # Before the tune picker first ran (it needs the summary's fields), the link's own
        # `tune` stays: the picker reads it from the address.
        if "tables_tune" in st.session_state:
            tune = ",".join(st.session_state["tables_tune"]) or None
        else:
            tune = st.query_params.get("tune") or None
        url_state.to_url({"sweep": self.sweep_id, "statistic": stat, "tune": tune, **plot_url()})


def pick(url: str, token: str) -> Pick:
    """The sweep and the statistic, seeded from the URL."""
    sweeps = api_client.call(loaders.sweeps, url, token)
    if not sweeps:
        st.info(
            "No sweeps yet. Submit one on the **Submit** page (e.g. algorithms × α × seeds 0, "
            "1, 2); the paper's published numbers are shown below for reference."
        )
    now = datetime.now(UTC)
    tz = times.zone(st.context.timezone)
    names = {s.id: study_view.sweep_label(s, now, tz) for s in sweeps}
    url_state.from_url("tables_sweep", "sweep", next(iter(names), None), choices=list(names))
    sweep_id = (
        st.selectbox("Sweep", list(names), key="tables_sweep", format_func=lambda k: names[k])
        if names
        else None
    )
    url_state.from_url("tables_stat", "statistic", "top5", choices=list(STATISTICS))
    statistic = st.radio(
        "Statistic",
        list(STATISTICS),
        horizontal=True,
        key="tables_stat",
        format_func=lambda k: STATISTICS[k],
        help=STATISTIC_HELP,
    )
    return Pick(url, token, sweeps, sweep_id, str(statistic))


def seed_plot_pickers() -> None:
    """The sweep plot's pickers, seeded from the URL (x and by are checked against the sweep
    where the plot is drawn)."""
    url_state.from_url("tables_plot_x", "x", None)
    url_state.from_url("tables_plot_by", "by", None)
    url_state.from_url("tables_plot_stat", "plot_stat", "top5", choices=list(sweep_plot.STATISTICS))
    url_state.from_url(
        "tables_plot_interval", "interval", "std", choices=list(sweep_plot.INTERVALS)
    )
    url_state.from_url("tables_plot_target", "target_pct", 70.0, cast=float)


def plot_url() -> dict[str, Any]:
    """The sweep plot's state for the URL (defaults left out)."""
    ss = st.session_state
    stat, interval = ss.get("tables_plot_stat"), ss.get("tables_plot_interval")
    return {
        "x": ss.get("tables_plot_x"),
        "by": ss.get("tables_plot_by"),
        "plot_stat": stat if stat != "top5" else None,
        "interval": interval if interval != "std" else None,
        "target_pct": ss.get("tables_plot_target") if stat == "time_to_target" else None,
    }


def sweep_runs(p: Pick) -> list[RunPublic]:
    """The chosen sweep's runs (none without a sweep)."""
    return api_client.call(loaders.runs, p.url, p.token, sweep_id=p.sweep_id) if p.sweep_id else []


def progress_part(p: Pick, members: list[RunPublic]) -> None:
    """The sweep's progress; the whole page again once a run ended (so the picker follows)."""
    active = any(r.status in ACTIVE for r in members)
    if members:
        counts = study_view.status_counts(r.status for r in members)
        fraction, text = study_view.progress(counts, len(members))
        st.progress(fraction, text + (f" · refreshing every {REFRESH_S} s" if active else ""))
    ended = sum(r.status not in ACTIVE for r in members)
    listed = next((study_view.done(s) for s in p.sweeps if s.id == p.sweep_id), ended)
    changed = ended != listed or (not active and p.in_flight)
    if changed and st.session_state.get("tables_ended") != (p.sweep_id, ended):
        # A run ended (or every run did): the whole page again, so the picker's count follows
        # and, once all ended, the timer stops.
        st.session_state["tables_ended"] = (p.sweep_id, ended)
        loaders.sweeps.clear()
        st.rerun(scope="app")


def tune_part(p: Pick, summary: SweepSummary) -> SweepSummary | None:
    """The "Tune by validation over" picker: with fields chosen, the summary tuned over them
    (each group of the other fields at the values with the best mean validation statistic)
    and what was chosen, with each group's budget; None when the lab refused (said why)."""
    swept = swept_fields(summary)
    url_state.list_from_url("tables_tune", "tune", [], choices=swept)
    # Another sweep picked: the fields it does not sweep leave the picker.
    st.session_state["tables_tune"] = [f for f in st.session_state["tables_tune"] if f in swept]
    tune = st.multiselect(
        "Tune by validation over",
        swept,
        key="tables_tune",
        format_func=sweep_plot.picker_label,
        help="For every group of the other fields, the values of these fields whose runs have "
        "the best mean validation figure (the statistic above, on the validation data: "
        "partition.val_fraction > 0); the table then shows the test statistic there. The "
        "test set is never used to choose (docs/metrics.md, Tuning).",
    )
    p.to_url()
    if not tune:
        return summary
    tuned = api_client.try_call(
        loaders.sweep_summary, p.url, p.token, str(p.sweep_id), p.statistic, ",".join(tune)
    )
    if tuned is None:
        return None
    chosen = tune_frame(tuned)
    st.dataframe(
        chosen,
        hide_index=True,
        key="tables_tune_chosen",
        column_config={
            "budget": st.column_config.NumberColumn(
                "budget", format="%d", help="configurations of the tuned fields the group had"
            ),
            **{
                c: st.column_config.NumberColumn(c, format="%.2f")
                for c in ("validation", "test", "test_seed_std")
            },
        },
        placeholder=times.DASH,
    )
    budgets = sorted({int(b) for b in chosen["budget"]}) if not chosen.empty else []
    st.caption(
        f"Chosen by validation ({STATISTICS[p.statistic]} on the validation data, mean over "
        "seeds); validation and test in %, test ± seed std. "
        + (
            f"Budgets differ ({', '.join(map(str, budgets))} configurations): compare rows "
            "with equal budgets."
            if len(budgets) > 1
            else "Every group had the same budget."
        )
    )
    for w in tuned.warnings:
        st.warning(w)
    return tuned


def cost_part(summary: SweepSummary) -> None:
    """Each group's cost per run beside its accuracy (MB, clients' and server's seconds)."""
    with st.expander("Cost per run: bytes communicated and compute"):
        st.dataframe(cost_frame(summary), hide_index=True, key="tables_cost")
        st.caption(
            "Per run, mean ± seed std over the group's finished runs: MB (10^6 bytes) sent up "
            "and down over every trained round, the clients' local training and the server's "
            "steps in seconds (docs/metrics.md, Cost)."
        )


def table1_part(p: Pick, members: list[RunPublic]) -> None:
    """Our Table 1 beside the paper's numbers (matrix, versus list, CSV and LaTeX)."""
    summary = tune_part(p, api_client.call(loaders.sweep_summary, p.url, p.token, p.sweep_id))
    if summary is None:
        return
    runs = {r.id: r for r in members}
    groups = summary_groups(summary, runs, p.statistic)
    long = table1_long(groups)
    long = long[long["mean"].notna()]
    if long.empty:
        st.info("No finished runs in this sweep yet: the table fills in as runs succeed.")
        return
    text, mask = table1_matrix(long)
    for rec in long.to_dict("records"):
        if math.isnan(number(rec["paper_mean"])):  # say so rather than leave a bare cell
            key = (rec["dataset"], rec["setting"], rec["T"])
            col = algorithm_name(rec["algorithm"])
            text.loc[key, col] = f"{text.loc[key, col]} ({NO_PAPER})"
    styled = text.style.apply(
        lambda col: ["font-weight: bold" if b else "" for b in mask[col.name]], axis=0
    )
    st.dataframe(styled, key="tables_t1")
    named = groups.loc[groups["mean"].notna(), "statistic"] if "statistic" in groups else []
    stat = " / ".join(dict.fromkeys(str(x) for x in named)) or STATISTICS[p.statistic]
    st.caption(
        f"Cells: ours, the mean ± std over each group's runs of their {stat} (paper mean, "
        "Δ = ours − paper). Bold: best of our runs per row."
    )
    st.dataframe(versus_paper(long), hide_index=True, key="tables_t1_vs")
    st.caption(
        "n: finished runs (seeds) in the group. Within the paper's ±: |ours − paper| is at "
        "most the paper's std."
    )
    d1, d2 = st.columns(2)
    d1.download_button(
        "CSV",
        frame_csv(table1_csv_frame(long)),
        "table1.csv",
        "text/csv",
        key="tables_t1_csv",
        help="Accuracies in percent (the _pct columns), rounded as shown; a column per spec "
        "field that varies across the rows",
    )
    d2.download_button("LaTeX", table1_latex(long), "table1.tex", "text/x-tex", key="tables_t1_tex")
    with st.expander("LaTeX source"):
        st.code(table1_latex(long), language="latex")
    cost_part(summary)


def table3_part(p: Pick) -> None:
    """Table 3: ms per local update, ours beside the paper's (CSV and LaTeX)."""
    st.header("Table 3: ms per local update")
    timing = api_client.try_call(loaders.timing, p.url, p.token, p.sweep_id) if p.sweep_id else None
    t3 = table3_frame(timing)
    if t3.empty:
        st.info("No timing yet: runs report time_user_ms from round 1 on.")
        return
    if noisy := noisy_timing(t3):
        st.warning(noisy, icon=":material/speed:")
    st.dataframe(
        t3,
        hide_index=True,
        key="tables_t3",
        column_config={
            **{c: st.column_config.NumberColumn(c, format="%.2f") for c in TABLE3_NUMBERS},
            "n": st.column_config.NumberColumn("n", format="%d", help="runs measured"),
        },
        placeholder=times.DASH,  # a row without a paper number: a dash, not "None"
    )
    if t3["paper_ms"].isna().any():
        st.caption(
            "Rows without paper_ms: the paper reports no number for them (Table 3 has FedAvg "
            "and FedGen by B_G only)."
        )
    st.caption(
        "Absolute ms depend on the machine; compare the ratio to FedAvg "
        f"(paper: FedAvg {paper.TABLE3_FEDAVG[0]:.2f} ms, EMNIST α=0.1)."
    )
    d1, d2 = st.columns(2)
    d1.download_button(
        "CSV",
        frame_csv(table3_csv_frame(t3)),
        "table3.csv",
        "text/csv",
        key="tables_t3_csv",
        help="ms and ratios rounded as shown; a column per spec field that varies across the rows",
    )
    d2.download_button("LaTeX", frame_latex(t3), "table3.tex", "text/x-tex", key="tables_t3_tex")


def published_table1() -> pd.DataFrame:
    """The paper's Table 1, a row per dataset, setting and T."""
    rows = []
    for k, v in paper.TABLE1.items():
        cells = {paper_column(a): f"{m:.2f} ± {s:.2f}" for a, (m, s) in v.items()}
        rows.append({"dataset": k.dataset, "setting": k.setting, "T": k.local_steps, **cells})
    return pd.DataFrame(rows)


def panel(p: Pick) -> None:
    """Table 1 and Table 3 (a fragment: reruns by itself while the sweep's runs are active)."""
    members = sweep_runs(p)
    progress_part(p, members)
    st.header("Table 1: accuracy (%)")
    if p.sweep_id:
        table1_part(p, members)
    with st.expander("The paper's Table 1", expanded=not p.sweep_id):
        st.dataframe(published_table1(), hide_index=True, key="tables_t1_paper")
    table3_part(p)


@st.cache_data(ttl=2, show_spinner=False)
def plot_data(url: str, token: str, sweep_id: str, **query: Any) -> PlotData:
    """GET /sweeps/{id}/plot-data."""
    with api_client.open_client(url, token) as c:
        return c.plot_data(sweep_id, **query)


@st.cache_data(ttl=2, show_spinner=False)
def plot_csv(url: str, token: str, sweep_id: str, **query: Any) -> str:
    """GET /sweeps/{id}/plot-data?format=csv: the plot's points as a CSV file."""
    with api_client.open_client(url, token) as c:
        return c.plot_csv(sweep_id, **query)


def plot_panel(p: Pick) -> None:
    """The sweep plot: a statistic against a swept field, a line per value of another (a
    fragment: refreshes with the tables while runs are active; points show n of their runs)."""
    if not p.sweep_id:
        return
    st.header("Plot")
    summary = api_client.call(loaders.sweep_summary, p.url, p.token, p.sweep_id)
    varying = list(dict.fromkeys(f for g in summary.groups for f in g.fields))
    if not varying:
        st.info("Only the seed varies in this sweep: there is no field to plot against.")
        return
    ss = st.session_state
    fields = sweep_plot.pick_fields(varying, ss.get("tables_plot_x"))
    if ss.get("tables_plot_x") not in fields.x_options:
        ss["tables_plot_x"] = fields.x_default
    c1, c2, c3, c4 = st.columns(4)
    label = sweep_plot.picker_label
    x = c1.selectbox("x", fields.x_options, key="tables_plot_x", format_func=label)
    fields = sweep_plot.pick_fields(varying, x)
    if ss.get("tables_plot_by") not in fields.by_options:
        ss["tables_plot_by"] = fields.by_default
    by = c2.selectbox("One line per", fields.by_options, key="tables_plot_by", format_func=label)
    stat, interval, target = plot_statistic(c3, c4)
    p.to_url()
    query = {"x": x, "by": by, "statistic": stat, "interval": interval, "target": target}
    data = api_client.try_call(plot_data, p.url, p.token, p.sweep_id, **query)
    if data is not None:
        plot_result(p, data, query, interval)


def plot_statistic(stat_col: Any, bar_col: Any) -> tuple[str, str, float | None]:
    """The plotted statistic, its bar, and the target (a fraction) for time to target."""
    stat = stat_col.selectbox(
        "Statistic",
        list(sweep_plot.STATISTICS),
        key="tables_plot_stat",
        format_func=lambda k: sweep_plot.STATISTICS[k],
        help="Each run's own figure (docs/metrics.md); time to target: the first round whose "
        "accuracy reaches the target.",
    )
    interval = bar_col.radio(
        "Bar",
        list(sweep_plot.INTERVALS),
        key="tables_plot_interval",
        horizontal=True,
        format_func=lambda k: sweep_plot.INTERVALS[k],
        help="± std over seeds, as the tables (top-5: pooled over each seed's 5 best rounds), "
        "or the 95 % t interval of the mean over seeds.",
    )
    target = None
    if stat == "time_to_target":
        ss = st.session_state
        ss["tables_plot_target"] = min(max(float(ss["tables_plot_target"]), 1.0), 100.0)
        pct = st.number_input("Target accuracy (%)", 1.0, 100.0, step=1.0, key="tables_plot_target")
        target = round(pct / 100, 6)
    return str(stat), str(interval), target


def plot_result(p: Pick, data: PlotData, query: dict[str, Any], interval: str) -> None:
    """The plot, what it counts, its warnings, its CSV and the parallel coordinates."""
    sweep_id = str(p.sweep_id)
    st.plotly_chart(sweep_plot.plot_figure(data, f"plot-{sweep_id}"), key="tables_plot")
    counted = sum(point.n for s in data.series for point in s.points)
    left = ", ".join(f"{n} {s}" for s, n in sorted(data.excluded.counts.items()))
    st.caption(
        f"Each point: the mean over its finished runs (n of the point's runs beside it while some "
        f"are not), bar {sweep_plot.INTERVALS[interval]}. {counted} runs counted"
        + (f"; not counted: {left}." if left else ".")
    )
    for w in data.warnings:
        st.warning(w)
    st.download_button(
        "CSV",
        api_client.call(plot_csv, p.url, p.token, sweep_id, **query),
        f"sweep-{sweep_id}-plot.csv",
        "text/csv",
        key="tables_plot_csv",
    )
    parcoords = sweep_plot.parcoords_figure(data, f"parcoords-{sweep_id}")
    if parcoords is not None:
        st.subheader("Every group (parallel coordinates)")
        st.plotly_chart(parcoords, key="tables_parcoords")


def render() -> None:
    """The page: the pickers, then the tables and the plot (refreshing while runs are active)."""
    st.title("Sweep tables")
    url, token = api_client.connection()
    picked = pick(url, token)
    seed_plot_pickers()
    picked.to_url()
    p = replace(picked, in_flight=any(r.status in ACTIVE for r in sweep_runs(picked)))
    every = f"{REFRESH_S}s" if p.in_flight else None
    st.fragment(run_every=every)(panel)(p)
    st.fragment(run_every=every)(plot_panel)(p)


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
