"""Pure chart builders: DataFrame in, plotly Figure out (no Streamlit, no network).

`uirevision` is set on every figure so that Streamlit re-renders (live polling) keep
the user's zoom and legend selection. Legends sit outside the plot area, at the right
(never over the curves or the title, however many entries).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from fedgen import durations
from vocab.run_status import RunStatus


class TraceStyle(NamedTuple):
    """How one curve (a group or a run) is drawn: its colour, dash and marker symbol."""

    color: str
    dash: str = "solid"
    symbol: str = "circle"


# Above this many points in one figure, line traces are WebGL (Scattergl) instead of SVG.
GL_POINTS = 20_000
# Legend at the right of the plot area, entries top-down (plotly scrolls a long legend).
LEGEND_RIGHT = {
    "orientation": "v",
    "x": 1.02,
    "xanchor": "left",
    "y": 1.0,
    "yanchor": "top",
    "font": {"size": 11},
    "tracegroupgap": 2,
}

PALETTE = qualitative.Plotly
# Mean lines drawn earlier are wider, so a curve that another (nearly equal) one covers still
# shows as a rim around it: FedAvg under FedProx with a tiny mu, say.
MEAN_WIDTH, MEAN_WIDTH_STEP, MEAN_WIDTH_MAX = 2.0, 1.25, 6.0


def mean_width(i: int, groups: int) -> float:
    """The width of the i-th of `groups` mean lines (the last drawn, on top, is the thinnest)."""
    return min(MEAN_WIDTH_MAX, MEAN_WIDTH + MEAN_WIDTH_STEP * (groups - 1 - i))


def _layout(fig: go.Figure, title: str, x: str, y: str, revision: str) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left", "y": 0.98, "yanchor": "top"},
        xaxis_title=x,
        yaxis_title=y,
        uirevision=revision,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend=LEGEND_RIGHT,
        height=400,
    )
    if x == "round":
        xs = [v for t in fig.data if getattr(t, "x", None) is not None for v in t.x]
        if xs and max(xs) <= 15:
            fig.update_xaxes(dtick=1)
    return fig


def _rgba(color: str, alpha: float) -> str:
    color = color.lstrip("#")
    r, g, b = (int(color[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def metric_lines(
    df: pd.DataFrame, metrics: list[str], title: str, y_title: str = "", revision: str = "live"
) -> go.Figure:
    """One line per metric column of a per-round frame (`round` + metric columns)."""
    fig = go.Figure()
    for i, name in enumerate(m for m in metrics if m in df.columns):
        fig.add_trace(
            go.Scatter(
                x=df["round"],
                y=df[name],
                mode="lines+markers" if len(df) < 30 else "lines",
                name=name,
                line={"color": PALETTE[i % len(PALETTE)]},
            )
        )
    return _layout(fig, title, "round", y_title, revision)


def _line_class(points: int) -> type[go.Scatter] | type[go.Scattergl]:
    # plotly ships no type hints: the annotation is what holds the result to a trace class
    line_cls: type[go.Scatter] | type[go.Scattergl] = (
        go.Scattergl if points > GL_POINTS else go.Scatter
    )
    return line_cls


# The x columns of Compare's long frames, as their axis is titled (docs/metrics.md, Cost).
X_TITLES = {
    "wall_s": f"{durations.TRAINING_TIME} (s)",
    "mb": "cumulative MB communicated (up + down)",
    "compute_s": "cumulative compute, s (clients' training + server)",
}


def _x_title(x: str) -> str:
    return X_TITLES.get(x, "round")


def _compare_layout(
    fig: go.Figure, title: str, x: str, y_title: str, revision: str, log_y: bool, entries: int
) -> go.Figure:
    _layout(fig, title, _x_title(x), y_title, revision)
    # Taller with many legend entries, so the legend needs less scrolling (capped).
    fig.update_layout(height=int(min(max(450, 18 * entries + 80), 800)))
    # One hover box lists every curve at that x: two that overlap are both read off.
    fig.update_layout(hovermode="x unified")
    if log_y:
        fig.update_yaxes(type="log")
    return fig


def _heads_trace(heads: pd.DataFrame, x: str) -> go.Scatter:
    """One open marker at the latest point of every running run (one legend entry for all).

    `heads`: run_id, name, color, round, rounds_total, `x`, value. `meta.rounds` maps each
    running run to the round it has reached, so a test can watch it grow in the DOM.
    """
    text = [
        f"{n}: running, round {int(r)}" + (f" of {int(t)}" if pd.notna(t) else "")
        for n, r, t in zip(heads["name"], heads["round"], heads["rounds_total"], strict=True)
    ]
    return go.Scatter(
        x=heads[x].to_numpy(),
        y=heads["value"].to_numpy(),
        mode="markers",
        name="running (latest round)",
        marker={
            "symbol": "circle-open",
            "size": 11,
            "color": list(heads["color"]),
            "line": {"width": 2},
        },
        hovertext=text,
        hoverinfo="text",
        meta={
            "kind": "running",
            "rounds": {
                str(k): int(v) for k, v in zip(heads["run_id"], heads["round"], strict=True)
            },
        },
    )


def _marks(fig: go.Figure, marks: list[tuple[float, str]] | None) -> None:
    """Dotted vertical lines with a label at the top (e.g. the round "final" is taken at)."""
    # Layout shapes written directly: add_vline is several times slower (it re-validates the
    # figure), and this runs on every live refresh.
    if not marks:
        return
    fig.update_layout(
        shapes=[
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": at,
                "x1": at,
                "y0": 0,
                "y1": 1,
                "line": {"dash": "dot", "width": 1, "color": "#666"},
            }
            for at, _ in marks
        ],
        annotations=[
            {
                "x": at,
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "text": text,
                "showarrow": False,
                "xanchor": "right",
                "yanchor": "bottom",
                "font": {"size": 11, "color": "#666"},
            }
            for at, text in marks
        ],
    )


def _entries(fig: go.Figure) -> int:
    """How many entries the legend lists."""
    return sum(1 for t in fig.data if t.showlegend is not False)


def _std_band(gdf: pd.DataFrame, x: str, color: str, group: str) -> go.Scatter:
    """The filled mean ± std band of one group (no legend entry: its mean line has it)."""
    xs = np.concatenate([gdf[x].to_numpy(), gdf[x].to_numpy()[::-1]])
    upper = (gdf["mean"] + gdf["std"]).to_numpy()
    lower = (gdf["mean"] - gdf["std"]).to_numpy()[::-1]
    return go.Scatter(
        x=xs,
        y=np.concatenate([upper, lower]),
        fill="toself",
        fillcolor=_rgba(color, 0.15),
        line={"width": 0},
        hoverinfo="skip",
        showlegend=False,
        legendgroup=group,
    )


def _stopped_lines(
    stopped: pd.DataFrame, x: str, styles: dict[str, TraceStyle]
) -> list[go.Scatter]:
    """A thin dotted line per failed or cancelled run, in its group's colour."""
    traces = []
    for run_id, rdf in stopped.groupby("run_id", sort=False):
        rdf = rdf.sort_values("round")
        first = rdf.iloc[0]
        style = styles.get(str(first["group"]))
        color = style.color if style else "#888888"
        traces.append(
            go.Scatter(
                x=rdf[x].to_numpy(),
                y=rdf["value"].to_numpy(),
                mode="lines",
                name=f"{first['name']} ({first['status']} @{int(rdf['round'].max())})",
                line={"color": color, "dash": "dot", "width": 1},
                opacity=0.7,
                meta={"kind": "stopped", "run_id": str(run_id), "status": first["status"]},
            )
        )
    return traces


def band_chart(
    agg: pd.DataFrame,
    title: str,
    y_title: str = "test accuracy",
    x: str = "round",
    revision: str = "compare",
    styles: dict[str, TraceStyle] | None = None,
    log_y: bool = False,
    legend: dict[str, str] | None = None,
    heads: pd.DataFrame | None = None,
    stopped: pd.DataFrame | None = None,
    marks: list[tuple[float, str]] | None = None,
) -> go.Figure:
    """Mean line and mean ± std band per group (`group, round|wall_s, mean, std, n`).

    `styles`: group -> its `TraceStyle` (default: the palette in order, solid lines).
    `legend`: group -> legend name (default "group (n=N)"). The hover of a mean line gives
    each round's n. `heads`: running runs' latest points (see `_heads_trace`); `stopped`:
    failed or cancelled runs (run_id, name, status, group, `x`, value), drawn as thin
    dotted lines of their own, outside the bands; `marks`: vertical lines (x, label).
    Every trace carries `meta` (kind "mean", "running" or "stopped") for tests in the DOM.
    """
    fig = go.Figure()
    styles = styles or {}
    legend = legend or {}
    line_cls = _line_class(len(agg))
    groups = list(agg.groupby("group", sort=False))
    x_name = _x_title(x)
    for i, (group, gdf) in enumerate(groups):
        gdf = gdf.sort_values(x)
        style = styles.get(str(group)) or TraceStyle(PALETTE[i % len(PALETTE)])
        color = style.color
        n = int(gdf["n"].max()) if "n" in gdf else 1
        if n > 1:
            fig.add_trace(_std_band(gdf, x, color, str(group)))
        fig.add_trace(
            line_cls(
                x=gdf[x].to_numpy(),
                y=gdf["mean"].to_numpy(),
                mode="lines" if len(gdf) > 1 else "lines+markers",
                name=legend.get(str(group), f"{group} (n={n})"),
                line={
                    "color": color,
                    "dash": style.dash,
                    "width": mean_width(i, len(groups)),
                },
                legendgroup=str(group),
                customdata=gdf["n"].to_numpy() if "n" in gdf else None,
                hovertemplate=f"{x_name} %{{x}}: %{{y:.2f}} (n=%{{customdata}})",
                meta={
                    "kind": "mean",
                    "group": str(group),
                    "points": len(gdf),
                    "last_round": int(gdf["round"].max()) if "round" in gdf else None,
                },
            )
        )
    if stopped is not None and not stopped.empty:
        fig.add_traces(_stopped_lines(stopped, x, styles))
    if heads is not None and not heads.empty:
        fig.add_trace(_heads_trace(heads, x))
    _marks(fig, marks)
    return _compare_layout(fig, title, x, y_title, revision, log_y, _entries(fig))


def _run_state(name: str, status: str | None, dash: str, last_round: int) -> tuple[str, str]:
    """A run line's legend name and dash for its status: "… · failed @R" dotted when it
    stopped, "… · running" dashed while in flight, as is once it succeeded."""
    if status in (RunStatus.FAILED, RunStatus.CANCELLED):
        return f"{name} · {status} @{last_round}", "dot"
    if status not in (None, RunStatus.SUCCEEDED):
        # Dashed until it finishes (a dash that already tells a field's value stays).
        return f"{name} · {status}", "dash" if dash == "solid" else dash
    return name, dash


def run_lines(
    long: pd.DataFrame,
    labels: dict[str, str],
    title: str,
    x: str = "round",
    revision: str = "compare",
    styles: dict[str, TraceStyle] | None = None,
    log_y: bool = False,
    y_title: str = "test accuracy",
    statuses: dict[str, str | None] | None = None,
    heads: pd.DataFrame | None = None,
    marks: list[tuple[float, str]] | None = None,
) -> go.Figure:
    """One line per run (`run_id, round, value, wall_s`), named by `labels` (run id -> name).

    `styles`: name -> its `TraceStyle`; runs of one style share a legend group.
    `statuses`: run id -> status: a run still in flight is named "… · running" and dashed
    (its latest point marked through `heads`), a failed or cancelled one "… · failed @R",
    dotted.
    """
    fig = go.Figure()
    styles = styles or {}
    statuses = statuses or {}
    line_cls = _line_class(len(long))
    runs = list(long.groupby("run_id", sort=False))
    for i, (run_id, rdf) in enumerate(runs):
        rdf = rdf.sort_values("round")
        name = labels.get(str(run_id), str(run_id))
        style = styles.get(name) or TraceStyle(PALETTE[i % len(PALETTE)])
        status = statuses.get(str(run_id))
        shown, dash = _run_state(name, status, style.dash, int(rdf["round"].max()))
        fig.add_trace(
            line_cls(
                x=rdf[x].to_numpy(),
                y=rdf["value"].to_numpy(),
                mode="lines" if len(rdf) > 1 else "lines+markers",
                name=shown,
                line={
                    "color": style.color,
                    "dash": dash,
                    "width": 1.5,
                },
                meta={
                    "kind": "run",
                    "run_id": str(run_id),
                    "status": status,
                    "points": len(rdf),
                    "last_round": int(rdf["round"].max()),
                },
            )
        )
    if heads is not None and not heads.empty:
        fig.add_trace(_heads_trace(heads, x))
    _marks(fig, marks)
    return _compare_layout(fig, title, x, y_title, revision, log_y, _entries(fig))


def user_spread(band: pd.DataFrame, revision: str = "live") -> go.Figure:
    """Per-user accuracy per round: min-max band with the mean line."""
    fig = go.Figure()
    if not band.empty:
        xs = np.concatenate([band["round"].to_numpy(), band["round"].to_numpy()[::-1]])
        ys = np.concatenate([band["max"].to_numpy(), band["min"].to_numpy()[::-1]])
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                fill="toself",
                fillcolor=_rgba(PALETTE[0], 0.2),
                line={"width": 0},
                name="min–max over users",
                hoverinfo="skip",
            )
        )
        fig.add_trace(go.Scatter(x=band["round"], y=band["mean"], name="mean", mode="lines"))
        fig.add_trace(
            go.Scatter(
                x=band["round"],
                y=band["min"],
                name="worst user",
                mode="lines",
                line={"dash": "dot"},
            )
        )
    return _layout(fig, "Per-user test accuracy", "round", "accuracy", revision)


def stacked_parts(
    df: pd.DataFrame,
    parts: dict[str, str],
    total: str,
    title: str,
    y_title: str,
    revision: str = "live",
) -> go.Figure:
    """Stacked bars per round of the `parts` columns (column -> legend name); 'other' is the
    rest of the `total` column (e.g. the phases of a round's time)."""
    fig = go.Figure()
    present = [p for p in parts if p in df.columns]
    for i, name in enumerate(present):
        fig.add_trace(go.Bar(x=df["round"], y=df[name], name=parts[name], marker_color=PALETTE[i]))
    if total in df.columns and present:
        other = (df[total] - df[present].sum(axis=1)).clip(lower=0)
        fig.add_trace(go.Bar(x=df["round"], y=other, name="other", marker_color="#bbbbbb"))
    fig.update_layout(barmode="stack")
    return _layout(fig, title, "round", y_title, revision)


def label_heatmap(hist: list[list[int]] | np.ndarray, revision: str = "inspect") -> go.Figure:
    """Users x classes training-label counts as a heatmap."""
    arr = np.asarray(hist, dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=arr,
            x=[str(c) for c in range(arr.shape[1])] if arr.ndim == 2 else [],
            y=[f"user {u}" for u in range(arr.shape[0])],
            colorscale="Viridis",
            colorbar={"title": "samples"},
        )
    )
    fig = _layout(fig, "Training labels per user", "class", "user", revision)
    fig.update_layout(height=max(300, 18 * arr.shape[0] + 120), yaxis={"autorange": "reversed"})
    return fig


def latent_scatter(points: pd.DataFrame, revision: str = "inspect") -> go.Figure:
    """PCA of generated latents: columns `pc1, pc2, label, round`, one panel per round."""
    rounds = sorted(points["round"].unique()) if not points.empty else []
    fig = go.Figure()
    n = max(len(rounds), 1)
    for j, rnd in enumerate(rounds):
        sub = points[points["round"] == rnd]
        axis = "" if j == 0 else str(j + 1)
        for i, (label, ldf) in enumerate(sub.groupby("label")):
            fig.add_trace(
                go.Scatter(
                    x=ldf["pc1"],
                    y=ldf["pc2"],
                    mode="markers",
                    marker={"color": PALETTE[i % len(PALETTE)], "size": 5},
                    name=f"class {label}",
                    legendgroup=str(label),
                    showlegend=j == 0,
                    xaxis=f"x{axis}",
                    yaxis=f"y{axis}",
                )
            )
        dom = [j / n + 0.02, (j + 1) / n - 0.02]
        fig.update_layout(
            {
                f"xaxis{axis}": {"domain": dom, "anchor": f"y{axis}", "title": f"round {rnd}"},
                f"yaxis{axis}": {"anchor": f"x{axis}"},
            }
        )
    fig.update_layout(title="Generated latents per class (PCA)", uirevision=revision, height=420)
    return fig
