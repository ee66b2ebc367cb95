"""Pure conversions from API JSON to pandas DataFrames (no Streamlit, no network)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from api.schemas.checkpoints import CheckpointsPublic
from api.schemas.results import UsersPublic
from fedgen.specdict import get_dotted
from fedgen.status import ACTIVE

RUN_COLUMNS = [
    "id",
    "status",
    "progress",
    "algorithm",
    "dataset",
    "alpha",
    "seed",
    "owner",
    "best_acc",
    "last_acc",
    "started_at",
    "finished_at",
    "created_at",
    "sweep_id",
    "current_round",
    "rounds",
]


def runs_frame(runs: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per run with the columns the Runs table shows."""
    rows = []
    for r in runs:
        spec = r.get("spec") or {}
        rounds = r.get("rounds") or spec.get("rounds") or 0
        current = r.get("current_round") or 0
        rows.append(
            {
                "id": r.get("id"),
                "status": r.get("status"),
                "progress": f"{current}/{rounds}",
                "algorithm": get_dotted(spec, "algorithm.name"),
                "dataset": get_dotted(spec, "data.name"),
                "alpha": get_dotted(spec, "partition.alpha"),
                "seed": spec.get("seed"),
                "owner": r.get("owner"),
                "best_acc": r.get("best_acc"),
                "last_acc": r.get("last_acc"),
                "started_at": r.get("started_at"),
                "finished_at": r.get("finished_at"),
                "created_at": r.get("created_at"),
                "sweep_id": r.get("sweep_id"),
                "current_round": current,
                "rounds": rounds,
            }
        )
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def any_active(runs: list[dict[str, Any]]) -> bool:
    """True while some run is queued or running (the Runs page then refreshes itself)."""
    return any(r.get("status") in ACTIVE for r in runs)


def metrics_frame(payload: dict[str, Any]) -> pd.DataFrame:
    """`{"rounds": [...], "metrics": {name: [...]}}` -> one row per round, one column per metric."""
    rounds = list(payload.get("rounds") or [])
    data: dict[str, Any] = {"round": rounds}
    for name, values in (payload.get("metrics") or {}).items():
        vals = list(values or [])
        if len(vals) == len(rounds):
            data[name] = [np.nan if v is None else v for v in vals]
    return pd.DataFrame(data)


def merge_history(history: dict[str, Any] | None, payload: dict[str, Any]) -> dict[str, Any]:
    """Append a `since_round` metrics payload to a cached history (rounds sorted, no duplicates).

    `history` is `{"rounds": [...], "metrics": {name: [...]}}`; metrics that first appear
    later are back-filled with NaN so every list stays as long as `rounds`.
    """
    old_rounds: list[int] = list((history or {}).get("rounds") or [])
    old_metrics: dict[str, list[float]] = dict((history or {}).get("metrics") or {})
    by_round: dict[int, dict[str, float]] = {}
    for i, rnd in enumerate(old_rounds):
        by_round[int(rnd)] = {k: v[i] for k, v in old_metrics.items() if i < len(v)}
    new_rounds = list(payload.get("rounds") or [])
    new_metrics = payload.get("metrics") or {}
    for i, rnd in enumerate(new_rounds):
        row = by_round.setdefault(int(rnd), {})
        for k, vals in new_metrics.items():
            if i < len(vals):
                row[k] = math.nan if vals[i] is None else vals[i]
    names = sorted(set(old_metrics) | set(new_metrics))
    rounds = sorted(by_round)
    metrics = {n: [by_round[r].get(n, math.nan) for r in rounds] for n in names}
    return {"rounds": rounds, "metrics": metrics}


def last_round(history: dict[str, Any] | None) -> int | None:
    """The highest round in a cached history, or None when empty."""
    rounds = (history or {}).get("rounds") or []
    return int(max(rounds)) if rounds else None


def users_frame(payload: UsersPublic) -> pd.DataFrame:
    """GET /runs/{id}/users -> long frame (round, user, test_acc, ...)."""
    cols = [
        "round",
        "user",
        "test_acc",
        "test_loss",
        "num_test",
        "selected",
        "train_ms",
        "train_loss",
    ]
    return pd.DataFrame([row.model_dump() for row in payload.data], columns=cols)


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


def compare_long(payload: dict[str, Any], metric: str = "test_acc") -> pd.DataFrame:
    """GET /compare -> long frame (run_id, round, value, wall_s, status) for one metric.

    `wall_s` is the cumulative `time_total_ms` in seconds. When the server has
    downsampled, each kept point stands for the rounds since the previous one. `status`
    is the run's: the Compare bands (dashboard.tables.aggregate) count succeeded and running
    runs, the per-run statistics (time to target) succeeded runs only.
    """
    frames = []
    for run in payload.get("runs") or []:
        rounds = np.asarray(run.get("rounds") or [], dtype=float)
        values = (run.get("metrics") or {}).get(metric)
        if values is None or len(values) != len(rounds) or len(rounds) == 0:
            continue
        total = (run.get("metrics") or {}).get("time_total_ms")
        if total is not None and len(total) == len(rounds):
            t = np.nan_to_num(np.asarray(total, dtype=float))
            gaps = np.diff(rounds, prepend=rounds[0] - 1)
            wall = np.cumsum(t * np.maximum(gaps, 1)) / 1000.0
        else:
            wall = np.full(len(rounds), np.nan)
        frames.append(
            pd.DataFrame(
                {
                    "run_id": run.get("id"),
                    "round": rounds.astype(int),
                    "value": np.asarray([np.nan if v is None else v for v in values], dtype=float),
                    "wall_s": wall,
                    "status": run.get("status"),
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=["run_id", "round", "value", "wall_s", "status"])
    return pd.concat(frames, ignore_index=True)


def checkpoints_frame(payload: CheckpointsPublic) -> pd.DataFrame:
    """GET /runs/{id}/checkpoints -> frame sorted by round."""
    cols = ["id", "round", "kind", "size", "sha256"]
    df = pd.DataFrame([c.model_dump() for c in payload.data], columns=cols)
    return df.sort_values("round").reset_index(drop=True)
