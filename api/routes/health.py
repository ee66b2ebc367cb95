"""The probes: /health (the process is up) and /ready (the database and the broker are
reachable), both public; api.main repeats them at the root for load balancers."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from api import readiness
from vocab.schemas.users import Health

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
