"""The /api/v1 router: every route module, authenticated by default.

Every route of the modules in ROUTERS needs a bearer token (a router-level dependency), so a
new route is authenticated without asking for it. The exceptions are declared here, by path
under the prefix, and nowhere else:

- PUBLIC: answers anyone (the probes);
- SELF_AUTHENTICATED: checks its own credentials, because a browser's EventSource cannot send
  an Authorization header: a bearer token or a `?token=` stream token.

Outside this router, FastAPI's /api/v1/openapi.json and the /docs and /redoc pages
(api.docs_ui) are public, and so are the probes repeated at the root (/health, /ready).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.routing import APIRoute

from api.deps import current_user
from api.routes import (
    audit,
    checkpoints,
    difference,
    events,
    health,
    metrics,
    push,
    runs,
    spec,
    studies,
    sweeps,
    timing,
    tokens,
    trash,
    usage,
    webhooks,
    workers,
)

API_PREFIX = "/api/v1"
PUBLIC: tuple[str, ...] = ("/health", "/ready")
SELF_AUTHENTICATED: tuple[str, ...] = ("/runs/{run_id}/events",)
# Included in this order (the declared exceptions go first: no other path matches theirs).
ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    spec.router,
    timing.router,
    push.router,  # POST /runs/push before the run routes' /runs/{run_id} paths
    runs.router,
    metrics.router,
    difference.router,
    events.router,
    checkpoints.router,
    sweeps.router,
    studies.router,
    workers.router,
    webhooks.router,
    tokens.router,
    trash.router,
    audit.router,
    usage.router,
)


def v1_router() -> APIRouter:
    """The routes of ROUTERS under API_PREFIX; all but the declared exceptions authenticated."""
    exempt = set(PUBLIC) | set(SELF_AUTHENTICATED)
    open_routes = APIRouter()
    authed = APIRouter()
    for module_router in ROUTERS:
        for route in module_router.routes:
            path = route.path if isinstance(route, APIRoute) else None
            (open_routes if path in exempt else authed).routes.append(route)
    v1 = APIRouter(prefix=API_PREFIX)
    v1.include_router(open_routes)
    # At inclusion, so the dependency reaches routes that were made before it.
    v1.include_router(authed, dependencies=[Depends(current_user)])
    return v1
