"""Sweep summaries (runs grouped by every field but the seed) and the timing table."""

from __future__ import annotations

import csv
import io
import json
import math
import uuid
from typing import Any

from sqlalchemy.orm import Session

from api.models import Run
from api.repository import metrics as metrics_repo
from api.repository import sweeps as sweeps_repo
from fedgen.fidelity import resolve
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.specdict import differing_fields, group_key, group_label
from fedgen.stats import common_final_round, mean_std, pooled_top5, reported_curve, summarize_curve


def _nan_none(x: float) -> float | None:
    return None if math.isnan(x) else x


def _group_runs(runs: list[Run]) -> dict[str, list[Run]]:
    groups: dict[str, list[Run]] = {}
    for run in runs:
        try:
            key = group_key(parse_spec(run.spec))
        except SpecError:
            key = json.dumps({"invalid": str(run.id)})
        groups.setdefault(key, []).append(run)
    return groups


def sweep_summary(session: Session, sweep_id: uuid.UUID) -> list[dict[str, Any]]:
    """One row per group: label (the differing fields), n, final and top-5 accuracy mean ± std."""
    runs = sweeps_repo.runs_of_sweep(session, sweep_id)
    groups = _group_runs(runs)
    curves = metrics_repo.acc_curves(session, [r.id for r in runs])
    flat = {k: json.loads(k) for k in groups}
    differing = differing_fields(flat.values())
    rows: list[dict[str, Any]] = []
    for key, members in groups.items():
        # The accuracies each run's fidelity profile reports (official: not the post-final model).
        done: list[list[float]] = []
        finals = []
        for r in members:
            if r.status != "succeeded" or not curves[r.id]:
                continue
            spec = ExperimentSpec.model_validate(r.spec)
            timing = resolve(spec).eval_timing
            done.append(reported_curve(curves[r.id], timing, spec.rounds))
            finals.append(summarize_curve(curves[r.id], timing, spec.rounds))
        final_m, final_s = mean_std([c.final for c in finals])
        top_m, top_s = pooled_top5(done)
        fields = {f: flat[key][f] for f in differing if f in flat[key]}
        rows.append(
            {
                "label": group_label(fields),
                "fields": fields,
                "n": len(members),
                "n_succeeded": len(done),
                "seeds": sorted(r.spec.get("seed", 0) for r in members),
                "final_mean": _nan_none(final_m),
                "final_std": _nan_none(final_s),
                # The round the final figures are from (R-1 under before_training, where the
                # official code never evaluates round R); None if the members differ.
                "final_round": common_final_round(finals),
                "top5_mean": _nan_none(top_m),
                "top5_std": _nan_none(top_s),
                "run_ids": [str(r.id) for r in members],
            }
        )
    rows.sort(key=lambda r: r["label"])
    return rows


def summary_csv(rows: list[dict[str, Any]]) -> str:
    """The summary as CSV: one line per group."""
    field_names = sorted({f for r in rows for f in r["fields"]})
    buf = io.StringIO()
    w = csv.writer(buf)
    cols = [
        "label",
        *field_names,
        "n",
        "n_succeeded",
        "final_mean",
        "final_std",
        "final_round",
        "top5_mean",
        "top5_std",
    ]
    w.writerow(cols)
    for r in rows:
        w.writerow(
            [
                r["label"],
                *(r["fields"].get(f) for f in field_names),
                *(r[c] if r[c] is not None else "" for c in cols[1 + len(field_names) :]),
            ]
        )
    return buf.getvalue()


def _stat(values: list[float], n_runs: int) -> dict[str, Any]:
    m, s = mean_std(values)
    return {
        "n_runs": n_runs,
        "n_rounds": len(values),
        "mean_ms": _nan_none(m),
        "std_ms": _nan_none(s),
    }


def timing_table(
    session: Session,
    sweep_id: uuid.UUID | None,
    algorithm: str | None,
    metric: str = "time_user_ms",
) -> dict[str, Any]:
    """ms per user local update, mean ± std over runs and rounds; FedGen also by gen_batch_size."""
    runs = sweeps_repo.runs_for_timing(session, sweep_id, algorithm)
    values = metrics_repo.metric_values(session, [r.id for r in runs], metric)
    by_alg: dict[str, list[Run]] = {}
    by_bg: dict[int, list[Run]] = {}
    for r in runs:
        if not values[r.id]:
            continue
        by_alg.setdefault(r.algorithm, []).append(r)
        if r.algorithm == "fedgen":
            by_bg.setdefault(int(r.spec["algorithm"].get("gen_batch_size", 32)), []).append(r)

    def pooled(members: list[Run]) -> list[float]:
        return [v for r in members for v in values[r.id]]

    return {
        "metric": metric,
        "algorithms": [
            {"algorithm": a, **_stat(pooled(m), len(m))} for a, m in sorted(by_alg.items())
        ],
        "fedgen_by_gen_batch_size": [
            {"gen_batch_size": b, **_stat(pooled(m), len(m))} for b, m in sorted(by_bg.items())
        ],
    }
