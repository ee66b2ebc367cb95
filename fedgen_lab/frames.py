"""The client's tables: the API's typed answers as pandas DataFrames, one row per run, per
round, per (round, user), per (run, round, metric) or per checkpoint (the notebooks' and the
dashboard's alike)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from fedgen.cost import COST_TOTALS
from fedgen.specdict import flatten
from vocab.schemas.checkpoints import CheckpointsPublic
from vocab.schemas.results import ComparePublic, Curves, PlotData, UsersPublic
from vocab.schemas.runs import RunPublic
from vocab.schemas.sweeps import SweepSummary

# A run row's own columns, before the spec's flattened fields and the summary's statistics.
RUN_COLUMNS = (
    "id",
    "status",
    "owner",
    "sweep_id",
    "rounds",
    "current_round",
    "last_acc",
    "best_acc",
    "tags",
    "note",
    "error",
    "spec_hash",
    "created_at",
    "started_at",
    "finished_at",
)


def run_row(run: RunPublic) -> dict[str, Any]:
    """One run as a flat row: its own fields, `spec.<dotted field>` for every spec field and
    `summary.<statistic>` for each number of its summary (NaN before it ends)."""
    row: dict[str, Any] = {name: getattr(run, name) for name in RUN_COLUMNS}
    row["status"] = str(run.status)
    row["tags"] = ",".join(run.tags)
    for key, value in flatten(run.spec).items():
        row[f"spec.{key}"] = value
    for key, value in (run.summary or {}).items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            row[f"summary.{key}"] = value
    return row


def runs_frame(runs: Iterable[RunPublic]) -> pd.DataFrame:
    """One row per run (see `run_row`), newest first as the API pages them."""
    rows = [run_row(r) for r in runs]
    frame = pd.DataFrame(rows, columns=None if rows else list(RUN_COLUMNS))
    for column in ("created_at", "started_at", "finished_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


def curves_frame(curves: Curves) -> pd.DataFrame:
    """One row per round: `round` and a column per metric."""
    frame = pd.DataFrame({"round": curves.rounds, **curves.metrics})
    return frame.astype(dict.fromkeys(curves.metrics, "float64"))


def users_frame(users: UsersPublic) -> pd.DataFrame:
    """One row per (round, user): the per-user test accuracy, loss, test size, selection and
    training time and loss."""
    columns = [
        "round",
        "user",
        "test_acc",
        "test_loss",
        "num_test",
        "selected",
        "train_ms",
        "train_loss",
    ]
    return pd.DataFrame([u.model_dump() for u in users.data], columns=columns)


def compare_frame(compare: ComparePublic) -> pd.DataFrame:
    """Long form: one row per (run, round, metric) with its value, plus the run's algorithm,
    dataset and seed to group by."""
    rows = [
        {
            "run": run.id,
            "round": rnd,
            "metric": metric,
            "value": values[i],
            "algorithm": run.algorithm,
            "dataset": run.dataset,
            "seed": run.seed,
        }
        for run in compare.runs
        for metric, values in run.metrics.items()
        for i, rnd in enumerate(run.rounds)
    ]
    columns = ["run", "round", "metric", "value", "algorithm", "dataset", "seed"]
    return pd.DataFrame(rows, columns=columns)


COST_COLUMNS = [f"{c}_{s}" for c in COST_TOTALS for s in ("mean", "seed_std")]


def summary_frame(summary: SweepSummary) -> pd.DataFrame:
    """One row per group of a sweep: its label, fields (`field.<dotted>`), n and mean ± std of
    the final, best, top-5 and val_best accuracies, the seed stds, the cost columns, and with
    `tune` the chosen values (`tuned.<dotted>`), their validation figure and the budget."""
    rows = []
    for g in summary.groups:
        row: dict[str, Any] = {"label": g.label}
        row.update({f"field.{k}": v for k, v in g.fields.items()})
        row.update(
            n=g.n,
            n_total=g.n_total,
            final_mean=g.final_mean,
            final_std=g.final_std,
            final_round=g.final_round,
            best_mean=g.best_mean,
            best_std=g.best_std,
            top5_mean=g.top5_mean,
            top5_std=g.top5_std,
            val_best_mean=g.val_best_mean,
            val_best_std=g.val_best_std,
            n_seeds=g.n_seeds,
            final_seed_std=g.final_seed_std,
            best_seed_std=g.best_seed_std,
            top5_seed_std=g.top5_seed_std,
            val_best_seed_std=g.val_best_seed_std,
        )
        # Cost per run (docs/metrics.md, Cost): MB up/down/total, clients' and server's seconds.
        row.update({c: getattr(g, c) for c in COST_COLUMNS})
        if g.tune is not None:  # tune=: the values chosen by validation and the budget
            row.update({f"tuned.{f}": (g.tune.chosen or {}).get(f) for f in g.tune.fields})
            row.update(tune_val_mean=g.tune.val_mean, tune_budget=g.tune.budget)
        row["run_ids"] = list(g.run_ids)
        rows.append(row)
    return pd.DataFrame(rows)


def plot_frame(data: PlotData) -> pd.DataFrame:
    """One row per (series, point): `by`, `x`, mean, std, the interval's ends, n."""
    rows = [
        {
            "by": series.by_value,
            "x": p.x,
            "mean": p.mean,
            "std": p.std,
            "lo": p.lo,
            "hi": p.hi,
            "n": p.n,
            "n_total": p.n_total,
            "round": p.round,
            "run_ids": list(p.run_ids),
        }
        for series in data.series
        for p in series.points
    ]
    columns = ["by", "x", "mean", "std", "lo", "hi", "n", "n_total", "round", "run_ids"]
    return pd.DataFrame(rows, columns=columns)


def checkpoints_frame(checkpoints: CheckpointsPublic) -> pd.DataFrame:
    """One row per stored checkpoint (id, round, kind, size, sha256), by round."""
    columns = ["id", "round", "kind", "size", "sha256"]
    frame = pd.DataFrame([c.model_dump() for c in checkpoints.data], columns=columns)
    return frame.sort_values("round").reset_index(drop=True)
