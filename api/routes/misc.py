"""Health, readiness, the spec schema and validation, the current user, the timing table."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, status
from fastapi.responses import JSONResponse
from sqlalchemy import text

from api import analysis, service
from api.deps import SessionDep, UserDep, parse_uuid
from api.errors import RETRY_AFTER_S
from api.routes.runs import NO_NUL
from api.schemas import AUTHED, BODY, Health, SpecValidate, UserPublic, error_responses
from api.schemas_analysis import TimingTable
from api.schemas_spec import (
    AlgorithmInfo,
    SpecDefaults,
    SpecJsonSchema,
    SpecValidated,
    SpecWarning,
)
from fedgen.algorithms.registry import algorithms
from fedgen.spec import ExperimentSpec

router = APIRouter()
READY = {
    "type": "object",
    "required": ["status", "database", "broker"],
    "properties": {
        "status": {"type": "string", "enum": ["ok", "unavailable"]},
        "database": {"type": "string", "description": "ok, or the error"},
        "broker": {"type": "string", "description": "ok, or the error"},
    },
}


@router.get("/health", tags=["health"])
def health() -> Health:
    """The process is up."""
    return Health(status="ok")


def _why(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return (
        f"error: {type(exc).__name__}: {first}"[:200] if first else f"error: {type(exc).__name__}"
    )


@router.get(
    "/ready",
    tags=["health"],
    responses={
        200: {"description": "ready", "content": {"application/json": {"schema": READY}}},
        503: {
            "description": "database or broker unreachable",
            "content": {"application/json": {"schema": READY}},
        },
    },
)
def ready(request: Request) -> JSONResponse:
    """The database and the broker are reachable; 503 says which is not, and why."""
    checks: dict[str, str] = {}
    try:
        with request.app.state.sessionmaker() as s:
            s.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except Exception as exc:  # any failure means not ready
        checks["database"] = _why(exc)
    try:
        request.app.state.broker_check()
        checks["broker"] = "ok"
    except Exception as exc:
        checks["broker"] = _why(exc)
    ok = all(v == "ok" for v in checks.values())
    if ok:
        return JSONResponse({"status": "ok", **checks})
    down = [k for k, v in checks.items() if v != "ok"]
    return JSONResponse(
        {"status": "unavailable", "detail": f"{' and '.join(down)} unavailable", **checks},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


@router.post("/spec/validate", tags=["spec"], responses=error_responses(*AUTHED, *BODY))
def validate_spec(body: SpecValidate, _user: UserDep) -> SpecValidated:
    """Validate a spec; returns its canonical form (every default written out) and, for a
    `folder` dataset, what its files look like from the server's host (`warnings`)."""
    spec = service.validate_spec(body.spec)
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
                defaults=d.params_cls().model_dump(mode="json"),
            )
            for d in algorithms()
        ],
    )


@router.get("/spec/schema", tags=["spec"], responses=error_responses(*AUTHED))
def spec_schema(_user: UserDep) -> SpecJsonSchema:
    """The JSON schema of ExperimentSpec (the dashboard builds its form from it)."""
    return SpecJsonSchema.model_validate(ExperimentSpec.model_json_schema())


@router.get("/me", tags=["users"], responses=error_responses(*AUTHED))
def me(user: UserDep) -> UserPublic:
    """The token's user."""
    return UserPublic.model_validate(user)


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
