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

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from api import service
from api.deps import SessionDep, SubmitterDep, UserDep, parse_uuid
from api.errors import FieldErrors
from api.routes.sweeps import _public as sweep_public
from fedgen.spec import SpecError
from fedgen.studies import registry
from lab import study_queries
from vocab.schemas.errors import AUTHED, BODY, error_responses
from vocab.schemas.studies import (
    StudiesPublic,
    StudyDefinition,
    StudyLaunched,
    StudyResults,
    StudySummary,
)

router = APIRouter(prefix="/studies", tags=["studies"])


def _study(name: str) -> registry.Study:
    try:
        return registry.get_study(name)
    except registry.UnknownStudy as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, exc.message) from None


def _plan(study: registry.Study, overrides: registry.StudyOverrides) -> registry.Plan:
    try:
        return registry.plan(study, overrides)
    except SpecError as exc:  # a study that does not expand on this dataset: say where
        raise FieldErrors(exc.errors) from None


@router.get("", responses=error_responses(*AUTHED))
def list_studies(_user: UserDep) -> StudiesPublic:
    """Every study with its defaults, number of runs and estimated CPU time (one core)."""
    data = []
    for s in registry.STUDIES.values():
        p = registry.plan(s)
        data.append(
            StudySummary.model_validate(
                {**registry.study_dict(s), "runs": p.runs, "est_cpu_s": round(p.est_cpu_s, 1)}
            )
        )
    return StudiesPublic(data=data, count=len(data))


@router.get("/{name}", responses=error_responses(*AUTHED, 404, 422))
def get_study_definition(
    name: str,
    session: SessionDep,
    _user: UserDep,
    overrides: Annotated[registry.StudyOverrides, Query()],
) -> StudyDefinition:
    """Definition, the sweep for these overrides (the query takes POST's body fields: dataset,
    seeds, rounds), the paper's numbers, the launched sweeps."""
    study = _study(name)
    p = _plan(study, overrides)
    launched = [
        study_queries.launched(session, s, o) for s, o in study_queries.sweeps_of(session, study)
    ]
    return StudyDefinition.model_validate({**p.to_dict(), "launched": launched})


@router.post(
    "/{name}",
    status_code=status.HTTP_202_ACCEPTED,
    responses=error_responses(*AUTHED, *BODY, 404),
)
def launch_study(
    name: str, sub: SubmitterDep, body: registry.StudyOverrides | None = None
) -> StudyLaunched:
    """Create the study's sweep (the paper's original, or the overrides) and queue its runs."""
    p = _plan(_study(name), body or registry.StudyOverrides())
    sweep, _ = service.submit_sweep(sub, p.sweep.name, p.sweep.base, p.sweep.grid)
    return StudyLaunched.of_plan(p, sweep_public(sub.session, sweep, sub.user.name))


@router.get("/{name}/results", responses=error_responses(*AUTHED, 404, 422))
def study_results(
    name: str,
    session: SessionDep,
    _user: UserDep,
    sweep_id: Annotated[str | None, Query()] = None,
) -> StudyResults:
    """The study's table for a sweep of it: per cell ours, the paper's, Δ and the verdict."""
    study = _study(name)
    if sweep_id:
        sweep = study_queries.sweep_of_study(session, study, parse_uuid(sweep_id, "sweep"))
        if sweep is None:
            raise HTTPException(
                status.HTTP_404_NOT_FOUND, f"sweep {sweep_id} is not a sweep of study {name}"
            )
    else:
        mine = study_queries.sweeps_of(session, study)
        if not mine:
            raise HTTPException(
                status.HTTP_404_NOT_FOUND, f"study {name} has not been launched yet"
            )
        sweep = mine[0][0]
    return StudyResults.model_validate(study_queries.results(session, study, sweep))
