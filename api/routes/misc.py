"""Health, readiness, the spec schema and validation, the current user, the timing table."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, status
from fastapi.responses import JSONResponse
from sqlalchemy import text

from api import analysis, service
from api.deps import SessionDep, UserDep, parse_uuid
from api.errors import RETRY_AFTER_S
from api.schemas import SpecValidate, UserPublic
from fedgen.spec import ExperimentSpec

router = APIRouter()


@router.get("/health", tags=["health"])
def health() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


def _why(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return (
        f"error: {type(exc).__name__}: {first}"[:200] if first else f"error: {type(exc).__name__}"
    )


@router.get("/ready", tags=["health"])
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


@router.post("/spec/validate", tags=["spec"])
def validate_spec(body: SpecValidate, _user: UserDep) -> dict[str, Any]:
    """Validate a spec; returns its canonical form (every default written out)."""
    spec = service.validate_spec(body.spec)
    return {"ok": True, "spec": spec.model_dump(mode="json"), "spec_hash": spec.spec_hash()}


@router.get("/spec/schema", tags=["spec"])
def spec_schema(_user: UserDep) -> dict[str, Any]:
    """The JSON schema of ExperimentSpec (the dashboard builds its form from it)."""
    return ExperimentSpec.model_json_schema()


@router.get("/me", tags=["users"])
def me(user: UserDep) -> UserPublic:
    """The token's user."""
    return UserPublic.model_validate(user)


@router.get("/timing", tags=["metrics"])
def timing(
    session: SessionDep, _user: UserDep, sweep_id: str | None = None, algorithm: str | None = None
) -> dict[str, Any]:
    """ms per user local update by algorithm, and FedGen by gen_batch_size (Table 3)."""
    sid = parse_uuid(sweep_id, "sweep") if sweep_id else None
    return analysis.timing_table(session, sid, algorithm)
