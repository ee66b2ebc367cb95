"""Pure chart builders: DataFrame in, plotly Figure out (no Streamlit, no network).

`uirevision` is set on every figure so that Streamlit re-renders (live polling) keep
the user's zoom and legend selection.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

PALETTE = qualitative.Plotly
PHASES = {
    "time_train_ms": "local training",
    "time_server_ms": "server",
    "time_eval_ms": "evaluation",
}
GEN_METRICS = ("gen_teacher_loss", "gen_diversity_loss", "gen_ensemble_acc")


def _layout(fig: go.Figure, title: str, x: str, y: str, revision: str) -> go.Figure:
    fig.update_layout(
        title={"text": title, "y": 0.98, "yanchor": "top"},
        xaxis_title=x,
        yaxis_title=y,
        uirevision=revision,
        margin={"l": 50, "r": 20, "t": 80, "b": 40},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
        height=400,
    )
    if x == "round":
        xs = [v for t in fig.data if getattr(t, "x", None) is not None for v in t.x]
        if xs and max(xs) <= 15:
            fig.update_xaxes(dtick=1)
    return fig


def _line(x: Any, y: Any, name: str, color: str, **extra: Any) -> go.Scatter:
    """A line trace in `color`; `extra` are further go.Scatter arguments."""
    return go.Scatter(x=x, y=y, mode="lines", name=name, line={"color": color}, **extra)


def _x_title(x: str) -> str:
    return "wall-clock (s)" if x == "wall_s" else "round"


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


def band_chart(
    agg: pd.DataFrame,
    title: str,
    y_title: str = "test accuracy",
    x: str = "round",
    revision: str = "compare",
) -> go.Figure:
    """Mean line and mean ± std band per group (`group, round|wall_s, mean, std, n`)."""
    fig = go.Figure()
    for i, (group, gdf) in enumerate(agg.groupby("group", sort=False)):
        gdf = gdf.sort_values(x)
        color = PALETTE[i % len(PALETTE)]
        n = int(gdf["n"].max()) if "n" in gdf else 1
        if n > 1:
            xs = np.concatenate([gdf[x].to_numpy(), gdf[x].to_numpy()[::-1]])
            upper = (gdf["mean"] + gdf["std"]).to_numpy()
            lower = (gdf["mean"] - gdf["std"]).to_numpy()[::-1]
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=np.concatenate([upper, lower]),
                    fill="toself",
                    fillcolor=_rgba(color, 0.2),
                    line={"width": 0},
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=str(group),
                )
            )
        fig.add_trace(_line(gdf[x], gdf["mean"], f"{group} (n={n})", color, legendgroup=str(group)))
    return _layout(fig, title, _x_title(x), y_title, revision)


def run_lines(
    long: pd.DataFrame,
    labels: dict[str, str],
    title: str,
    x: str = "round",
    revision: str = "compare",
) -> go.Figure:
    """One line per run (`run_id, round, value, wall_s`), named by `labels`."""
    fig = go.Figure()
    for i, (run_id, rdf) in enumerate(long.groupby("run_id", sort=False)):
        rdf = rdf.sort_values("round")
        name = f"{labels.get(str(run_id), str(run_id))} [{str(run_id)[:8]}]"
        fig.add_trace(_line(rdf[x], rdf["value"], name, PALETTE[i % len(PALETTE)]))
    return _layout(fig, title, _x_title(x), "test accuracy", revision)


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


def timing_breakdown(df: pd.DataFrame, revision: str = "live") -> go.Figure:
    """Stacked bars of the time per phase per round; 'other' is the rest of time_total_ms."""
    fig = go.Figure()
    present = [p for p in PHASES if p in df.columns]
    for i, name in enumerate(present):
        fig.add_trace(go.Bar(x=df["round"], y=df[name], name=PHASES[name], marker_color=PALETTE[i]))
    if "time_total_ms" in df.columns and present:
        other = (df["time_total_ms"] - df[present].sum(axis=1)).clip(lower=0)
        fig.add_trace(go.Bar(x=df["round"], y=other, name="other", marker_color="#bbbbbb"))
    fig.update_layout(barmode="stack")
    return _layout(fig, "Time per round by phase", "round", "ms", revision)


def generator_losses(df: pd.DataFrame, revision: str = "live") -> go.Figure:
    """FedGen's generator terms per round (teacher loss, diversity loss, ensemble accuracy)."""
    return metric_lines(df, list(GEN_METRICS), "FedGen generator", "value", revision)


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
