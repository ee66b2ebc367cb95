"""The queries behind /studies: a study's launched sweeps and the table of one of them.

The definitions, the paper's numbers and the verdicts live in `fedgen.studies`; this module
reads the rows they need (routes only translate HTTP: api/routes/studies.py).
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from sqlalchemy.orm import Session

from fedgen.spec import SpecError, parse_spec
from fedgen.studies.registry import Study, study_of_base
from fedgen.studies.verdicts import RunResult, study_table
from lab import curve_cache
from lab.models import Sweep
from lab.repository import metrics as metrics_repo
from lab.repository import sweeps as sweeps_repo
from vocab.run_status import RunStatus

MAX_STUDY_SWEEPS_SCANNED = 1000


def sweeps_of(session: Session, study: Study) -> list[tuple[Sweep, str]]:
    """The study's sweeps (any version) with their owners, newest first."""
    rows, _ = sweeps_repo.list_sweeps(session, MAX_STUDY_SWEEPS_SCANNED, 0)
    return [(s, o) for s, o in rows if (study_of_base(s.base) or ("", 0))[0] == study.name]


def sweep_of_study(session: Session, study: Study, sweep_id: uuid.UUID) -> Sweep | None:
    """The sweep `sweep_id` if it is a sweep of `study`, else None."""
    found = sweeps_repo.get_sweep(session, sweep_id)
    if found is None or (study_of_base(found[0].base) or ("", 0))[0] != study.name:
        return None
    return found[0]


def launched(session: Session, sweep: Sweep, owner: str) -> dict[str, Any]:
    """One launched sweep of a study: its version, dataset, size and status counts."""
    runs = sweeps_repo.runs_of_sweep(session, sweep.id)
    found = study_of_base(sweep.base)
    return {
        "sweep_id": str(sweep.id),
        "name": sweep.name,
        "owner": owner,
        "version": found[1] if found else None,
        "dataset": (sweep.base.get("data") or {}).get("name"),
        "count": len(runs),
        "status_counts": dict(Counter(r.status for r in runs)),
        "created_at": sweep.created_at.isoformat(),
    }


def results(session: Session, study: Study, sweep: Sweep) -> dict[str, Any]:
    """The study's table for `sweep`: per cell ours, the paper's, Δ and the verdict."""
    runs = sweeps_repo.runs_of_sweep(session, sweep.id)
    ids: list[uuid.UUID] = [r.id for r in runs]
    curves = metrics_repo.acc_curves(session, ids)
    user_ms = (
        metrics_repo.metric_values(session, ids, "time_user_ms")
        if study.statistic == "ms_per_update"
        else {}
    )
    # Validation curves (a tuned study, val_best) and cost totals: the sweep summary's reader
    # (`curve_cache.val_and_cost`, `fedgen.cost.run_cost`), for the runs that count.
    extras = curve_cache.val_and_cost(session, [r for r in runs if r.status == RunStatus.SUCCEEDED])
    found: list[RunResult] = []
    for r in runs:
        try:
            spec = parse_spec(r.spec)
        except SpecError:  # a row from an older schema: it fits no cell
            continue
        vals, cost = extras.get(r.id, ([], None))
        found.append(
            RunResult(
                spec,
                r.status == RunStatus.SUCCEEDED,
                curves[r.id],
                user_ms.get(r.id, []),
                vals,
                cost,
            )
        )
    dataset = str((sweep.base.get("data") or {}).get("name") or study.paper_dataset)
    table = study_table(study, dataset, found)
    version = study_of_base(sweep.base)
    return {
        **table.to_dict(),
        "sweep_id": str(sweep.id),
        "sweep_name": sweep.name,
        "sweep_version": version[1] if version else None,
        "status_counts": dict(Counter(r.status for r in runs)),
    }
