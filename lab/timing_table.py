"""Table 3 from a sweep's runs: ms per local update, one row per setting and algorithm
(`GET /timing`). Runs are grouped as every aggregate groups them (`lab.analysis`)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from fedgen.algorithms.registry import find_algorithm
from fedgen.specdict import (
    group_key,
)
from fedgen.stats import (
    mean_std,
)
from lab.analysis import flat_spec, group_runs, groups_finished, nan_none
from lab.repository import metrics as metrics_repo
from lab.repository import sweeps as sweeps_repo

# The setting a timing row was measured in (the minimum; the group key holds the rest).
TIMING_SETTING = (
    "data.name",
    "model.name",
    "batch_size",
    "local_steps",
    "users_per_round",
    "device",
)


def setting_key(flat: dict[str, Any]) -> str:
    """The group key without the algorithm: rows of one setting share it (FedAvg is the reference)."""
    return group_key({k: v for k, v in flat.items() if not k.startswith("algorithm.")})


def timing_table(
    session: Session,
    sweep_id: uuid.UUID | None,
    algorithm: str | None,
    metric: str = "time_user_ms",
) -> dict[str, Any]:
    """ms per user local update, mean ± std over the rounds of finished runs, one row per group.

    Runs are grouped by every spec field but the seed, so a row never mixes datasets,
    models, batch sizes, devices or FedGen's B_G; each row carries that setting.
    """
    runs = sweeps_repo.runs_for_timing(session, sweep_id, algorithm)
    groups = group_runs(runs)
    values = metrics_repo.metric_values(session, [r.id for r in groups_finished(groups)], metric)
    rows: list[dict[str, Any]] = []
    for g in groups:
        timed = [r for r in g.finished if values.get(r.id)]
        flat = flat_spec(g.members[0])
        setting = {f: flat.get(f) for f in TIMING_SETTING}
        alg = flat.get("algorithm.name")
        decl = find_algorithm(alg)
        for told_apart_by in decl.timing_fields if decl is not None else ():
            setting[told_apart_by] = flat.get(told_apart_by)
        pooled = [v for r in timed for v in values[r.id]]
        m, s = mean_std(pooled)
        rows.append(
            {
                "label": g.label,
                "fields": g.fields,
                "algorithm": alg,
                "gen_batch_size": setting.get("algorithm.gen_batch_size"),
                "setting": setting,
                "setting_key": setting_key(flat),
                "n": len(timed),
                "n_runs": len(timed),
                "n_rounds": len(pooled),
                "mean_ms": nan_none(m),
                "std_ms": nan_none(s),
                "excluded": g.excluded(),
                "run_ids": [str(r.id) for r in timed],
            }
        )
    settings = {r["setting_key"] for r in rows}
    return {
        "metric": metric,
        "rows": rows,
        "settings": len(settings),
        "warnings": (
            [f"{len(settings)} settings: compare rows only within one setting (setting_key)"]
            if len(settings) > 1
            else []
        ),
    }
