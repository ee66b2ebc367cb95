"""Sweep plots: `GET /sweeps/{id}/plot-data` in, plotly figures out (no Streamlit, no network).

`plot_figure` draws a statistic against a swept field, one line per value of another, each
point the mean over seeds with its bar (± std or the 95 % interval, as the server sent it);
α gets a log x axis; a non-numeric x (algorithms, datasets) is a category axis with markers
and no joining line. Runs without the x field (FedAvg in a B_G sweep) become a level line.
`parcoords_figure` shows every group of a sweep where three or more fields vary.
`pick_fields` chooses the pickers' options and defaults from the fields that vary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from dashboard.charts import LEGEND_RIGHT, PALETTE
from fedgen.specdict import SHORT_NAMES, format_value
from fedgen.stats import STATISTIC_LABELS

STATISTICS = STATISTIC_LABELS  # the plot offers every statistic
INTERVALS = {"std": "± std", "ci95": "95 % interval"}
# How axes name the fields people sweep most.
FIELD_LABELS = {
    "partition.alpha": "α",
    "algorithm.name": "algorithm",
    "algorithm.gen_batch_size": "B_G",
    "data.name": "dataset",
    "local_steps": "T",
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
    chosen = x if x in xs else x_default
    others = [f for f in varying if f != chosen]
    by_options = [DEFAULT_BY] if chosen != DEFAULT_BY else []
    by_options += [f for f in others if f not in by_options]
    if not by_options:
        by_options = [FALLBACK_BY]
    return Fields(xs, x_default, by_options, by_options[0])


def _scale(data: dict[str, Any]) -> float:
    """Accuracies are fractions on the wire and % on the axis; rounds stay rounds."""
    return 100.0 if data.get("unit") == "fraction" else 1.0


def y_title(data: dict[str, Any]) -> str:
    """ "top-5 mean accuracy (%)" or "rounds to 70% accuracy"."""
    if data.get("statistic") == "time_to_target":
        return f"rounds to {float(data.get('target') or 0) * 100:g}% accuracy"
    return f"{STATISTICS.get(str(data.get('statistic')), data.get('statistic'))} accuracy (%)"


def _hover(p: dict[str, Any], scale: float, unit: str) -> str:
    mean = p.get("mean")
    if mean is None:
        return f"no finished run yet (0 of {p.get('n_total')})"
    digits = 2 if unit == "fraction" else 1
    text = f"{'≥ ' if p.get('censored') else ''}{mean * scale:.{digits}f}"
    if p.get("lo") is not None and p.get("hi") is not None:
        text += f" [{p['lo'] * scale:.{digits}f}, {p['hi'] * scale:.{digits}f}]"
    text += f"<br>n = {p.get('n')} of {p.get('n_total')} runs"
    if p.get("reached") is not None:
        text += f", {p['reached']} reached the target"
    return text


def _series_name(by_value: Any, points: list[dict[str, Any]]) -> str:
    """ "fedgen (n=3)", or "(n=2–3)" while some points have fewer finished runs."""
    name = format_value(by_value)
    n = [p.get("n", 0) for p in points if p.get("x") is not None] or [p.get("n", 0) for p in points]
    return (
        f"{name} (n={min(n)}–{max(n)})" if n and min(n) != max(n) else f"{name} (n={max(n or [0])})"
    )


def _series_trace(
    placed: list[dict[str, Any]],
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
        x=[p["x"] if numeric else format_value(p["x"]) for p in placed],
        y=[p["mean"] * scale for p in placed],
        mode="lines+markers+text" if numeric else "markers+text",
        name=name,
        line={"color": color, "width": 2},
        marker={
            "size": 8,
            "symbol": ["circle-open" if p.get("censored") else "circle" for p in placed],
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
        text=[f"{p['n']}/{p['n_total']}" if p["n"] < p["n_total"] else "" for p in placed],
        textposition="top right",
        textfont={"size": 10, "color": color},
        hovertext=[_hover(p, scale, unit) for p in placed],
        hovertemplate="%{x}: %{hovertext}<extra>" + name + "</extra>",
        meta={"kind": "series", "by_value": by_value, "points": len(placed)},
    )


def plot_figure(data: dict[str, Any], revision: str = "sweep-plot") -> go.Figure:
    """The statistic against x, one line per series, bars from each point's lo/hi.

    A point with no finished run yet is left out (the sweep is still running); one that is
    not yet complete says n of n_total next to it. Points of runs without the x field are
    drawn as a dashed level line across the plot, with the band of their bar.
    """
    fig = go.Figure()
    scale = _scale(data)
    unit = str(data.get("unit", "fraction"))
    all_x = [p["x"] for s in data["series"] for p in s["points"] if p["x"] is not None]
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in all_x)
    for i, s in enumerate(data["series"]):
        color = PALETTE[i % len(PALETTE)]
        pts = [p for p in s["points"] if p.get("mean") is not None]
        name = _series_name(s["by_value"], s["points"])
        placed = [p for p in pts if p["x"] is not None]
        if placed:
            fig.add_trace(_series_trace(placed, s["by_value"], name, color, scale, unit, numeric))
        for p in pts:
            if p["x"] is None and all_x:
                note = f"{name}, no {field_label(data['x'])}"
                ends = (
                    [min(all_x), max(all_x)]
                    if numeric
                    else [format_value(all_x[0]), format_value(all_x[-1])]
                )
                _level_line(fig, p, note, color, scale, unit, ends)
    title = (
        f"{STATISTICS.get(str(data['statistic']), data['statistic'])} vs {field_label(data['x'])}"
    )
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left"},
        xaxis_title=field_label(data["x"]),
        yaxis_title=y_title(data),
        uirevision=revision,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend=LEGEND_RIGHT | {"title": {"text": field_label(data["by"])}},
        height=420,
    )
    if data.get("log_x") and numeric:
        fig.update_xaxes(type="log")
    if not numeric:  # categories in the server's order; series side by side, not on top
        fig.update_xaxes(type="category")
        fig.update_layout(scattermode="group")
    ticks = sorted(set(all_x)) if numeric else []
    if 0 < len(ticks) <= 12:  # the swept values themselves, as the grid spelled them
        fig.update_xaxes(tickvals=ticks, ticktext=[format_value(v) for v in ticks])
    return fig


def _bar(p: dict[str, Any], end: str, scale: float) -> float:
    """The bar's length above (hi) or below (lo) the mean; 0 where there is no interval."""
    if p.get(end) is None or p.get("mean") is None:
        return 0.0
    return abs(float(p[end]) - float(p["mean"])) * scale


def _level_line(
    fig: go.Figure,
    p: dict[str, Any],
    name: str,
    color: str,
    scale: float,
    unit: str,
    ends: list[Any],
) -> None:
    """A series without the x field: its value as a dashed line (and band) across the plot."""
    y = p["mean"] * scale
    if p.get("lo") is not None and p.get("hi") is not None:
        fig.add_trace(
            go.Scatter(
                x=[ends[0], ends[1], ends[1], ends[0]],
                y=[p["hi"] * scale, p["hi"] * scale, p["lo"] * scale, p["lo"] * scale],
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


def parcoords_figure(data: dict[str, Any], revision: str = "sweep-parcoords") -> go.Figure | None:
    """Every group with a finished run as one line across the varying fields and the statistic.

    None unless at least three fields vary (two are the line chart's x and by).
    """
    fields = list(data.get("varying") or [])
    groups = [g for g in data.get("groups") or [] if g.get("mean") is not None]
    if len(fields) < PARCOORDS_MIN_FIELDS or not groups:
        return None
    scale = _scale(data)
    stat = [g["mean"] * scale for g in groups]
    dims = [_dimension(f, [g["fields"].get(f) for g in groups]) for f in fields]
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
