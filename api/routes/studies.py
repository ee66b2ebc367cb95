"""Studies: the paper's experiments as one-request sweeps, and their tables with verdicts.

GET  /studies                      every study: what it reproduces, runs, estimated CPU time
GET  /studies/{name}               definition, the sweep it expands to, the paper's numbers and
                                   the sweeps launched for it (query: dataset, seeds, rounds)
POST /studies/{name}               create the study's sweep in one request (body: optional
                                   {"dataset", "seeds", "rounds"}); the usual sweep path
GET  /studies/{name}/results       the study's table for one of its sweeps (default: newest)

The definitions, the paper's numbers and the verdicts live in `fedgen.studies`.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import ValidationError
from sqlalchemy.orm import Session

from api import service
from api.deps import SessionDep, SubmitterDep, UserDep, parse_uuid
from api.errors import FieldErrors
from api.models import Sweep
from api.repository import metrics as metrics_repo
from api.repository import sweeps as sweeps_repo
from api.routes.sweeps import _public as sweep_public
from api.schemas import AUTHED, BODY, error_responses
from fedgen.spec import SpecError, format_validation_error, parse_spec
from fedgen.studies import (
    STUDIES,
    Plan,
    RunResult,
    Study,
    StudyOverrides,
    UnknownStudy,
    get_study,
    plan,
    study_dict,
    study_of_base,
    study_table,
)

router = APIRouter(prefix="/studies", tags=["studies"])
MAX_STUDY_SWEEPS_SCANNED = 1000


def _study(name: str) -> Study:
    try:
        return get_study(name)
    except UnknownStudy as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, exc.message) from None


def _plan(study: Study, overrides: StudyOverrides) -> Plan:
    try:
        return plan(study, overrides)
    except SpecError as exc:  # a study that does not expand on this dataset: say where
        raise FieldErrors(exc.errors) from None


def _overrides(dataset: str | None, seeds: int | None, rounds: int | None) -> StudyOverrides:
    try:
        return StudyOverrides.model_validate({"dataset": dataset, "seeds": seeds, "rounds": rounds})
    except ValidationError as exc:
        raise FieldErrors(format_validation_error(exc)) from None


def _sweeps_of(session: Session, study: Study) -> list[tuple[Sweep, str]]:
    """The study's sweeps (any version), newest first."""
    rows, _ = sweeps_repo.list_sweeps(session, MAX_STUDY_SWEEPS_SCANNED, 0)
    return [(s, o) for s, o in rows if (study_of_base(s.base) or ("", 0))[0] == study.name]


def _launched(session: Session, sweep: Sweep, owner: str) -> dict[str, Any]:
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


@router.get("", responses=error_responses(*AUTHED))
def list_studies(_user: UserDep) -> dict[str, Any]:
    """Every study with its defaults, number of runs and estimated CPU time (one core)."""
    data = []
    for s in STUDIES.values():
        p = plan(s)
        data.append({**study_dict(s), "runs": p.runs, "est_cpu_s": round(p.est_cpu_s, 1)})
    return {"data": data, "count": len(data)}


@router.get("/{name}", responses=error_responses(*AUTHED, 404, 422))
def get_study_definition(
    name: str,
    session: SessionDep,
    _user: UserDep,
    dataset: str | None = None,
    seeds: int | None = None,
    rounds: int | None = None,
) -> dict[str, Any]:
    """Definition, the sweep for these overrides, the paper's numbers, the launched sweeps."""
    study = _study(name)
    p = _plan(study, _overrides(dataset, seeds, rounds))
    launched = [_launched(session, s, o) for s, o in _sweeps_of(session, study)]
    return {**p.to_dict(), "launched": launched}


@router.post(
    "/{name}",
    status_code=status.HTTP_202_ACCEPTED,
    responses=error_responses(*AUTHED, *BODY, 404),
)
def launch_study(
    name: str, sub: SubmitterDep, body: StudyOverrides | None = None
) -> dict[str, Any]:
    """Create the study's sweep (the paper's original, or the overrides) and queue its runs."""
    study = _study(name)
    p = _plan(study, body or StudyOverrides())
    sweep, _ = service.submit_sweep(sub, p.sweep.name, p.sweep.base, p.sweep.grid)
    return {
        "study": study.name,
        "version": study.version,
        "dataset": p.dataset,
        "seeds": p.seeds,
        "rounds": p.rounds,
        "runs": p.runs,
        "est_cpu_s": round(p.est_cpu_s, 1),
        "sweep": sweep_public(sub.session, sweep, sub.user.name).model_dump(mode="json"),
    }


@router.get("/{name}/results", responses=error_responses(*AUTHED, 404, 422))
def study_results(
    name: str,
    session: SessionDep,
    _user: UserDep,
    sweep_id: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:
    """The study's table for a sweep of it: per cell ours, the paper's, Δ and the verdict."""
    study = _study(name)
    sweep: Sweep | None = None
    if sweep_id:
        found = sweeps_repo.get_sweep(session, parse_uuid(sweep_id, "sweep"))
        if found is None or (study_of_base(found[0].base) or ("", 0))[0] != study.name:
            raise HTTPException(
                status.HTTP_404_NOT_FOUND, f"sweep {sweep_id} is not a sweep of study {name}"
            )
        sweep = found[0]
    else:
        mine = _sweeps_of(session, study)
        if not mine:
            raise HTTPException(
                status.HTTP_404_NOT_FOUND, f"study {name} has not been launched yet"
            )
        sweep = mine[0][0]
    runs = sweeps_repo.runs_of_sweep(session, sweep.id)
    ids: list[uuid.UUID] = [r.id for r in runs]
    curves = metrics_repo.acc_curves(session, ids)
    user_ms = (
        metrics_repo.metric_values(session, ids, "time_user_ms")
        if study.statistic == "ms_per_update"
        else {}
    )
    results: list[RunResult] = []
    for r in runs:
        try:
            spec = parse_spec(r.spec)
        except SpecError:  # a row from an older schema: it fits no cell
            continue
        results.append(
            RunResult(spec, r.status == "succeeded", curves[r.id], user_ms.get(r.id, []))
        )
    dataset = str((sweep.base.get("data") or {}).get("name") or study.paper_dataset)
    table = study_table(study, dataset, results)
    found_version = study_of_base(sweep.base)
    return {
        **table.to_dict(),
        "sweep_id": str(sweep.id),
        "sweep_name": sweep.name,
        "sweep_version": found_version[1] if found_version else None,
        "status_counts": dict(Counter(r.status for r in runs)),
    }
