"""Pure helpers of the Live page: SSE events to a metrics payload, and its charts.

Charts show accuracy in percent (as the tables do), times in seconds, and name their axes
in words with units. No Streamlit, no network.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard import charts

ACC_LINES = {
    "test_acc": "global model (test set)",
    "user_acc_mean": "mean over users",
    "user_acc_min": "worst user",
}
LOSS_LINES = {"test_loss": "test loss", "train_loss": "training loss"}
GEN_LOSSES = {"gen_teacher_loss": "teacher loss", "gen_diversity_loss": "diversity loss"}
GEN_ACC = {"gen_ensemble_acc": "generator ensemble accuracy"}
ROUND_AXIS = "round"
ACC_AXIS = "test accuracy (%)"


def events_payload(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """`round` events -> `{"rounds": [...], "metrics": {name: [...]}}` (as GET /metrics)."""
    rows = [d for name, d in events if name == "round" and "round" in d]
    names = sorted({k for d in rows for k in (d.get("metrics") or {})})
    return {
        "rounds": [int(d["round"]) for d in rows],
        "metrics": {n: [(d.get("metrics") or {}).get(n) for d in rows] for n in names},
    }


def last_status(events: list[tuple[str, dict[str, Any]]]) -> str | None:
    """The newest status the stream reported, or None."""
    statuses = [d.get("status") for name, d in events if name == "status"]
    return statuses[-1] if statuses else None


def _renamed(df: pd.DataFrame, names: dict[str, str], scale: float = 1.0) -> pd.DataFrame:
    cols = [c for c in names if c in df.columns]
    out = df[["round", *cols]].copy()
    out[cols] = out[cols] * scale
    return out.rename(columns=names)


def accuracy_chart(df: pd.DataFrame, revision: str) -> go.Figure:
    """Global, mean-user and worst-user test accuracy in %."""
    part = _renamed(df, ACC_LINES, 100.0)
    cols = [c for c in part.columns if c != "round"]
    return charts.metric_lines(part, cols, "Test accuracy", ACC_AXIS, revision)


def loss_chart(df: pd.DataFrame, revision: str) -> go.Figure:
    """Test and training loss (cross-entropy)."""
    part = _renamed(df, LOSS_LINES)
    cols = [c for c in part.columns if c != "round"]
    return charts.metric_lines(part, cols, "Loss", "cross-entropy loss", revision)


def user_spread_chart(band: pd.DataFrame, revision: str) -> go.Figure:
    """Per-user test accuracy (min-max band, mean, worst) in %."""
    scaled = band.copy()
    for col in ("min", "mean", "max"):
        if col in scaled:
            scaled[col] = scaled[col] * 100.0
    fig = charts.user_spread(scaled, revision)
    return fig.update_layout(yaxis_title=ACC_AXIS)


def timing_chart(df: pd.DataFrame, revision: str) -> go.Figure:
    """Seconds per round by phase (local training, server, evaluation, other)."""
    ms = [c for c in [*charts.PHASES, "time_total_ms"] if c in df.columns]
    secs = df[["round", *ms]].copy()
    secs[ms] = secs[ms] / 1000.0
    fig = charts.timing_breakdown(secs, revision)
    return fig.update_layout(yaxis_title="time per round (s)")


def generator_loss_chart(df: pd.DataFrame, revision: str) -> go.Figure:
    """FedGen's generator losses (teacher, diversity) per round."""
    part = _renamed(df, GEN_LOSSES)
    cols = [c for c in part.columns if c != "round"]
    return charts.metric_lines(part, cols, "FedGen generator losses", "loss", revision)


def generator_acc_chart(df: pd.DataFrame, revision: str) -> go.Figure:
    """How often the user ensemble classifies the generator's samples as intended, in %."""
    part = _renamed(df, GEN_ACC, 100.0)
    cols = [c for c in part.columns if c != "round"]
    return charts.metric_lines(
        part, cols, "FedGen generator: ensemble accuracy", "accuracy (%)", revision
    )


def has_generator(df: pd.DataFrame) -> bool:
    """True when the run logs FedGen's generator metrics."""
    return any(c in df.columns for c in (*GEN_LOSSES, *GEN_ACC))
