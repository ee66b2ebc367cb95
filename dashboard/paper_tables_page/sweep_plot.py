"""Sweep plots: `GET /sweeps/{id}/plot-data` in, plotly figures out (no Streamlit, no network).

`plot_figure` draws a statistic against a swept field, one line per value of another, each
point the mean over seeds with its bar (± std or the 95 % interval, as the server sent it);
α gets a log x axis; a non-numeric x (algorithms, datasets) is a category axis with markers
and no joining line. Runs without the x field (FedAvg in a B_G sweep) become a level line.
`parcoords_figure` shows every group of a sweep where three or more fields vary.
`pick_fields` chooses the pickers' options and defaults from the fields that vary, and offers
after them round, bytes and compute: each line's test accuracy per round against the round,
the cumulative MB communicated or the cumulative compute (docs/metrics.md, Cost).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from dashboard.charts import LEGEND_RIGHT, PALETTE
from fedgen.cost import AXIS_LABELS, CURVE_AXES
from fedgen.specdict import SHORT_NAMES, format_value
from fedgen.stats import STATISTIC_LABELS
from vocab.schemas.results import PlotData, PlotPoint

STATISTICS = STATISTIC_LABELS  # the plot offers every statistic
INTERVALS = {"std": "± std", "ci95": "95 % interval"}
# How axes name the fields people sweep most.
FIELD_LABELS = {
    "partition.alpha": "α",
    "algorithm.name": "algorithm",
    "algorithm.gen_batch_size": "B_G",
    "data.name": "dataset",
    "local_steps": "T",
    # Not spec fields: x=round|bytes|compute draws each round's accuracy (docs/metrics.md, Cost).
    "round": "accuracy per round",
    "bytes": "accuracy vs cumulative MB",
    "compute": "accuracy vs cumulative compute",
}
# The fields the x picker offers first, in this order (α is Table 1's sweep, B_G Table 3's).
PREFERRED_X = ("partition.alpha", "algorithm.gen_batch_size")
DEFAULT_BY = "algorithm.name"
FALLBACK_BY = "data.name"  # a field every spec has: one line when nothing else can split
PARCOORDS_MIN_FIELDS = 3


def field_label(field: str) -> str:
    """ "partition.alpha" -> "α" (axes and legends); other fields as they are spelled."""
    return FIELD_LABELS.get(field, SHORT_NAMES.get(field, field))


def picker_label(field: str) -> str:
    """ "α · partition.alpha": the short name and the spec field (the pickers' options)."""
    short = field_label(field)
    return field if short == field else f"{short} · {field}"


@dataclass(frozen=True)
class Fields:
    """What the pickers offer: x among the varying fields, by among the others."""

    x_options: list[str]
    x_default: str | None
    by_options: list[str]
    by_default: str


def pick_fields(varying: list[str], x: str | None = None) -> Fields:
    """Options and defaults for x and by from the sweep's varying fields (x: the current pick)."""

    def rank(f: str) -> tuple[int, int, str]:
        # α, then B_G, then the others; the algorithm last (it is the default line split).
        if f in PREFERRED_X:
            return (0, PREFERRED_X.index(f), f)
        return (1, int(f == DEFAULT_BY), f)

    xs = sorted(varying, key=rank)
    x_default = xs[0] if xs else None
    xs += list(CURVE_AXES)  # the curves, against rounds or cost, after the swept fields
    chosen = x if x in xs else x_default
    others = [f for f in varying if f != chosen]
    by_options = [DEFAULT_BY] if chosen != DEFAULT_BY else []
    by_options += [f for f in others if f not in by_options]
    if not by_options:
        by_options = [FALLBACK_BY]
    return Fields(xs, x_default, by_options, by_options[0])


def _scale(data: PlotData) -> float:
    """Accuracies are fractions on the wire and % on the axis; rounds stay rounds."""
    return 100.0 if data.unit == "fraction" else 1.0


def y_title(data: PlotData) -> str:
    """ "top-5 mean accuracy (%)" or "rounds to 70% accuracy"."""
    if data.x_axis != "field":
        return "test accuracy (%)"
    if data.statistic == "time_to_target":
        return f"rounds to {float(data.target or 0) * 100:g}% accuracy"
    return f"{STATISTICS.get(str(data.statistic), data.statistic)} accuracy (%)"


def _hover(p: PlotPoint, scale: float, unit: str) -> str:
    if p.mean is None:
        return f"no finished run yet (0 of {p.n_total})"
    digits = 2 if unit == "fraction" else 1
    text = f"{'≥ ' if p.censored else ''}{p.mean * scale:.{digits}f}"
    if p.lo is not None and p.hi is not None:
        text += f" [{p.lo * scale:.{digits}f}, {p.hi * scale:.{digits}f}]"
    text += f"<br>n = {p.n} of {p.n_total} runs"
    if p.reached is not None:
        text += f", {p.reached} reached the target"
    return text


def _series_name(by_value: Any, points: list[PlotPoint]) -> str:
    """ "fedgen (n=3)", or "(n=2–3)" while some points have fewer finished runs."""
    name = format_value(by_value)
    n = [p.n for p in points if p.x is not None] or [p.n for p in points]
    return (
        f"{name} (n={min(n)}–{max(n)})" if n and min(n) != max(n) else f"{name} (n={max(n or [0])})"
    )


def _series_trace(
    placed: list[PlotPoint],
    by_value: Any,
    name: str,
    color: str,
    scale: float,
    unit: str,
    numeric: bool,
) -> go.Scatter:
    """One series' line: its points at their x, bars from lo/hi, "n/n_total" beside a point
    not yet complete, an open marker where the value is censored. On a categorical x
    (algorithms, datasets) markers only: a line would claim an order between categories."""
    return go.Scatter(
        x=[p.x if numeric else format_value(p.x) for p in placed],
        y=[_mean(p) * scale for p in placed],
        mode="lines+markers+text" if numeric else "markers+text",
        name=name,
        line={"color": color, "width": 2},
        marker={
            "size": 8,
            "symbol": ["circle-open" if p.censored else "circle" for p in placed],
        },
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [_bar(p, "hi", scale) for p in placed],
            "arrayminus": [_bar(p, "lo", scale) for p in placed],
            "thickness": 1.5,
            "width": 6,
            "color": color,
        },
        text=[f"{p.n}/{p.n_total}" if p.n < p.n_total else "" for p in placed],
        textposition="top right",
        textfont={"size": 10, "color": color},
        hovertext=[_hover(p, scale, unit) for p in placed],
        hovertemplate="%{x}: %{hovertext}<extra>" + name + "</extra>",
        meta={"kind": "series", "by_value": by_value, "points": len(placed)},
    )


def _curve_trace(
    placed: list[PlotPoint], name: str, color: str, scale: float, unit: str
) -> go.Scatter:
    """One series' accuracy curve (x=round|bytes|compute): a point per round, its spread in
    the hover rather than a bar on every point."""
    return go.Scatter(
        x=[p.x for p in placed],
        y=[_mean(p) * scale for p in placed],
        mode="lines",
        name=name,
        line={"color": color, "width": 2},
        hovertext=[f"round {p.round}: {_hover(p, scale, unit)}" for p in placed],
        hovertemplate="%{x:.4g}: %{hovertext}<extra>" + name + "</extra>",
        meta={"kind": "curve", "points": len(placed)},
    )


def plot_figure(data: PlotData, revision: str = "sweep-plot") -> go.Figure:
    """The statistic against x, one line per series, bars from each point's lo/hi.

    A point with no finished run yet is left out (the sweep is still running); one that is
    not yet complete says n of n_total next to it. Points of runs without the x field are
    drawn as a dashed level line across the plot, with the band of their bar.
    """
    fig = go.Figure()
    scale = _scale(data)
    unit = data.unit
    all_x = [p.x for s in data.series for p in s.points if p.x is not None]
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in all_x)
    for i, s in enumerate(data.series):
        color = PALETTE[i % len(PALETTE)]
        pts = [p for p in s.points if p.mean is not None]
        name = _series_name(s.by_value, s.points)
        placed = [p for p in pts if p.x is not None]
        if placed and data.x_axis != "field":
            fig.add_trace(_curve_trace(placed, name, color, scale, unit))
        elif placed:
            fig.add_trace(_series_trace(placed, s.by_value, name, color, scale, unit, numeric))
        for p in pts:
            if p.x is None and all_x:
                note = f"{name}, no {field_label(data.x)}"
                ends = (
                    [min(all_x), max(all_x)]
                    if numeric
                    else [format_value(all_x[0]), format_value(all_x[-1])]
                )
                _level_line(fig, p, note, color, scale, unit, ends)
    curve = data.x_axis != "field"
    title = (
        f"test accuracy vs {AXIS_LABELS[data.x_axis]} (mean over each line's runs)"
        if curve
        else f"{STATISTICS.get(str(data.statistic), data.statistic)} vs {field_label(data.x)}"
    )
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left"},
        xaxis_title=AXIS_LABELS[data.x_axis] if curve else field_label(data.x),
        yaxis_title=y_title(data),
        uirevision=revision,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend=LEGEND_RIGHT | {"title": {"text": field_label(data.by)}},
        height=420,
    )
    if data.log_x and numeric:
        fig.update_xaxes(type="log")
    if not numeric:  # categories in the server's order; series side by side, not on top
        fig.update_xaxes(type="category")
        fig.update_layout(scattermode="group")
    ticks = sorted(set(all_x)) if numeric and not curve else []
    if 0 < len(ticks) <= 12:  # the swept values themselves, as the grid spelled them
        fig.update_xaxes(tickvals=ticks, ticktext=[format_value(v) for v in ticks])
    return fig


def _mean(p: PlotPoint) -> float:
    """A drawn point's mean (callers draw only points with a finished run: NaN never shows)."""
    return p.mean if p.mean is not None else math.nan


def _bar(p: PlotPoint, end: str, scale: float) -> float:
    """The bar's length above (hi) or below (lo) the mean; 0 where there is no interval."""
    value = p.hi if end == "hi" else p.lo
    if value is None or p.mean is None:
        return 0.0
    return abs(value - p.mean) * scale


def _level_line(
    fig: go.Figure,
    p: PlotPoint,
    name: str,
    color: str,
    scale: float,
    unit: str,
    ends: list[Any],
) -> None:
    """A series without the x field: its value as a dashed line (and band) across the plot."""
    y = _mean(p) * scale
    if p.lo is not None and p.hi is not None:
        fig.add_trace(
            go.Scatter(
                x=[ends[0], ends[1], ends[1], ends[0]],
                y=[p.hi * scale, p.hi * scale, p.lo * scale, p.lo * scale],
                fill="toself",
                fillcolor=_rgba(color, 0.08),
                mode="lines",
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                meta={"kind": "level-band"},
            )
        )
    fig.add_trace(
        go.Scatter(
            x=ends,
            y=[y, y],
            mode="lines",
            name=name,
            line={"color": color, "dash": "dash", "width": 2},
            hovertext=[_hover(p, scale, unit)] * 2,
            hovertemplate="%{hovertext}<extra></extra>",
            meta={"kind": "level"},
        )
    )


def _rgba(color: str, alpha: float) -> str:
    color = color.lstrip("#")
    r, g, b = (int(color[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _dimension(field: str, values: list[Any]) -> dict[str, Any]:
    """One parcoords axis: numbers as they are (α on log10), anything else as ticked codes."""
    nums = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    if nums and field == "partition.alpha" and all(v > 0 for v in values):
        ticks = sorted(set(values))
        return {
            "label": field_label(field),
            "values": [math.log10(v) for v in values],
            "tickvals": [math.log10(v) for v in ticks],
            "ticktext": [format_value(v) for v in ticks],
        }
    if nums:
        return {"label": field_label(field), "values": values}
    names = sorted({format_value(v) for v in values})
    codes = {n: i for i, n in enumerate(names)}
    return {
        "label": field_label(field),
        "values": [codes[format_value(v)] for v in values],
        "tickvals": list(range(len(names))),
        "ticktext": names,
    }


def parcoords_figure(data: PlotData, revision: str = "sweep-parcoords") -> go.Figure | None:
    """Every group with a finished run as one line across the varying fields and the statistic.

    None unless at least three fields vary (two are the line chart's x and by).
    """
    fields = list(data.varying)
    groups = [(g, g.mean) for g in data.groups if g.mean is not None]
    if len(fields) < PARCOORDS_MIN_FIELDS or not groups:
        return None
    scale = _scale(data)
    stat = [mean * scale for _, mean in groups]
    dims = [_dimension(f, [g.fields.get(f) for g, _ in groups]) for f in fields]
    dims.append({"label": y_title(data), "values": stat, "tickformat": ".1f"})
    fig = go.Figure(
        go.Parcoords(
            line={"color": stat, "colorscale": "Viridis", "showscale": True},
            dimensions=dims,
        )
    )
    fig.update_layout(
        title={"text": f"{len(groups)} groups, {len(fields)} fields vary", "x": 0, "y": 0.99},
        uirevision=revision,
        margin={"l": 110, "r": 40, "t": 110, "b": 30},
        height=460,
    )
    return fig
