"""Health, readiness, the spec schema and validation, the timing table (GET /me: usage.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from api import readiness, service
from api.deps import SessionDep, SettingsDep, UserDep, parse_uuid
from api.schemas.analysis import TimingTable
from api.schemas.base import NO_NUL
from api.schemas.errors import AUTHED, BODY, error_responses
from api.schemas.spec import (
    AlgorithmInfo,
    SpecDefaults,
    SpecJsonSchema,
    SpecValidate,
    SpecValidated,
    SpecWarning,
)
from api.schemas.users import Health
from fedgen.algorithms.registry import algorithms
from fedgen.spec import ExperimentSpec
from lab import analysis

router = APIRouter()


@router.get("/health", tags=["health"])
def health() -> Health:
    """The process is up."""
    return Health(status="ok")


@router.get(
    "/ready",
    tags=["health"],
    description=readiness.READY_DESCRIPTION,
    responses={
        200: {
            "description": "ready",
            "content": {"application/json": {"schema": readiness.READY_SCHEMA}},
        },
        503: {
            "description": "database or broker unreachable (which, only with a valid token)",
            "content": {"application/json": {"schema": readiness.READY_SCHEMA}},
        },
    },
)
def ready(request: Request) -> JSONResponse:
    """The database and the broker are reachable; the detail only for a lab member."""
    return readiness.ready(request)


@router.post("/spec/validate", tags=["spec"], responses=error_responses(*AUTHED, *BODY))
def validate_spec(body: SpecValidate, _user: UserDep, settings: SettingsDep) -> SpecValidated:
    """Validate a spec; returns its canonical form (every default written out) and, for a
    `folder` dataset, what its files look like from the server's host (`warnings`).

    `data.root` and `data.folder.path` must resolve inside the lab's data roots
    (FEDGEN_DATA_ROOTS), else 422 naming the field: nothing is said about other folders."""
    spec = service.validate_spec(body.spec)
    service.check_data_paths(spec, settings)
    return SpecValidated(
        ok=True,
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        warnings=[SpecWarning(field=f, msg=m) for f, m in service.host_warnings(spec)],
    )


@router.get("/spec/defaults", tags=["spec"], responses=error_responses(*AUTHED))
def spec_defaults(_user: UserDep) -> SpecDefaults:
    """The full spec an empty submission (`{"spec": {}}`) gets: every default written out.

    The same as `fedgen validate` of an empty file; the Submit form starts from it.
    `algorithms`: every algorithm this server knows (built-ins, then installed plugins:
    `fedgen.algorithms.registry`) with its label, colour, what it can share, where it comes
    from and its own defaults (the `algorithm` section a spec naming only it gets).
    """
    spec = service.validate_spec({})
    return SpecDefaults(
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        algorithms=[
            AlgorithmInfo(
                name=d.name,
                label=d.label,
                paper_label=d.paper_label,
                colour=d.colour,
                shares=sorted(d.shares),
                source=d.source,
                defaults=d.params_cls(name=d.name).model_dump(mode="json"),
            )
            for d in algorithms()
        ],
    )


@router.get("/spec/schema", tags=["spec"], responses=error_responses(*AUTHED))
def spec_schema(_user: UserDep) -> SpecJsonSchema:
    """The JSON schema of ExperimentSpec (the dashboard builds its form from it)."""
    return SpecJsonSchema.model_validate(ExperimentSpec.model_json_schema())


@router.get("/timing", tags=["metrics"], responses=error_responses(*AUTHED, 404, 422))
def timing(
    session: SessionDep,
    _user: UserDep,
    sweep_id: str | None = None,
    algorithm: Annotated[str | None, Query(max_length=100, pattern=NO_NUL)] = None,
) -> TimingTable:
    """ms per user local update (Table 3): one row per group of finished runs, with its setting.

    Runs are grouped by every spec field but the seed, so a row never mixes two settings
    (dataset, model, batch size, T, users per round, device, FedGen's B_G, ...).
    """
    sid = parse_uuid(sweep_id, "sweep") if sweep_id else None
    return TimingTable.model_validate(analysis.timing_table(session, sid, algorithm))
