"""The Live page's history of a run, kept in the session between ticks: the rounds read off
the event stream merged into one `History` (rounds and metric columns, as GET
/runs/{id}/metrics answers), its table, and the per-user rows' band and worst users. Pure
(no Streamlit, no network)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class History:
    """A run's rounds and, per metric, one value a round (None or NaN where it has none)."""

    rounds: list[int] = field(default_factory=list)
    metrics: dict[str, list[float | None]] = field(default_factory=dict)


def metrics_frame(history: History) -> pd.DataFrame:
    """The history as one row per round, one column per metric (None as NaN)."""
    rounds = list(history.rounds)
    data: dict[str, Any] = {"round": rounds}
    for name, values in history.metrics.items():
        vals = list(values)
        if len(vals) == len(rounds):
            data[name] = [np.nan if v is None else v for v in vals]
    return pd.DataFrame(data)


def merge_history(history: History | None, payload: History) -> History:
    """The history with a `since_round` payload appended (rounds sorted, no duplicates; a
    round sent again takes its new values).

    Metrics that first appear later are back-filled with NaN so every list stays as long as
    `rounds`.
    """
    old = history or History()
    old_metrics = old.metrics
    by_round: dict[int, dict[str, float | None]] = {}
    for i, rnd in enumerate(old.rounds):
        by_round[int(rnd)] = {k: v[i] for k, v in old_metrics.items() if i < len(v)}
    new_rounds = payload.rounds
    new_metrics = payload.metrics
    for i, rnd in enumerate(new_rounds):
        row = by_round.setdefault(int(rnd), {})
        for k, vals in new_metrics.items():
            if i < len(vals):
                row[k] = math.nan if vals[i] is None else vals[i]
    names = sorted(set(old_metrics) | set(new_metrics))
    rounds = sorted(by_round)
    metrics = {n: [by_round[r].get(n, math.nan) for r in rounds] for n in names}
    return History(rounds, metrics)


def last_round(history: History | None) -> int | None:
    """The highest round in the history, or None when empty."""
    return int(max(history.rounds)) if history and history.rounds else None


def user_band(users: pd.DataFrame) -> pd.DataFrame:
    """Per round: min, mean and max of the per-user test accuracy."""
    if users.empty:
        return pd.DataFrame(columns=["round", "min", "mean", "max"])
    g = users.groupby("round")["test_acc"]
    return pd.DataFrame({"min": g.min(), "mean": g.mean(), "max": g.max()}).reset_index()


def worst_users(users: pd.DataFrame, k: int = 5) -> pd.DataFrame:
    """The k users with the lowest accuracy in the latest round."""
    if users.empty:
        return users
    latest = users[users["round"] == users["round"].max()]
    return latest.nsmallest(k, "test_acc")[["round", "user", "test_acc", "test_loss", "num_test"]]
