"""create_app(): the FastAPI application under /api/v1, docs at /docs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from sqlalchemy.orm import Session, sessionmaker

from api import errors
from api.config import Settings, get_settings
from api.db import make_engine, make_sessionmaker
from api.limits import BodyLimit
from api.queue import Enqueue, Sender
from api.routes import checkpoints, difference, events, metrics, misc, runs, studies, sweeps

API_PREFIX = "/api/v1"


def create_app(
    settings: Settings | None = None,
    *,
    session_factory: sessionmaker[Session] | None = None,
    enqueue: Enqueue | None = None,
    broker_check: Callable[[], None] | None = None,
    sse_poll_s: float = 0.5,
) -> FastAPI:
    """Build the app; the engine is created in the lifespan unless a sessionmaker is given."""
    s = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = None
        if session_factory is None:
            s.ensure_dirs()
            if s.auto_upgrade:
                from api.migrate import upgrade

                upgrade(s.database_url)
            engine = make_engine(s.database_url)
            app.state.sessionmaker = make_sessionmaker(engine)
        yield
        if engine is not None:
            engine.dispose()

    app = FastAPI(
        title="FedGen Lab",
        version="0.1.0",
        description="Submit federated runs and sweeps, follow them round by round, compare results.",
        lifespan=lifespan,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url="/docs",
    )
    app.state.settings = s
    app.state.sessionmaker = session_factory
    sender = Sender(s)  # builds its Celery producer only when first used
    app.state.enqueue = enqueue or sender.send
    app.state.broker_check = broker_check or sender.check
    app.state.settings_sse_poll_s = sse_poll_s
    errors.install(app)
    app.add_middleware(
        CORSMiddleware, allow_origins=s.cors_origins, allow_methods=["*"], allow_headers=["*"]
    )
    app.add_middleware(BodyLimit, max_bytes=s.max_body_bytes)
    v1 = APIRouter(prefix=API_PREFIX)
    for r in (
        misc.router,
        runs.router,
        metrics.router,
        difference.router,
        events.router,
        checkpoints.router,
        sweeps.router,
        studies.router,
    ):
        v1.include_router(r)
    app.include_router(v1)
    # Probes also at the root, where load balancers and compose healthchecks look for them.
    app.add_api_route(
        "/health", misc.health, methods=["GET"], tags=["health"], include_in_schema=False
    )
    app.add_api_route(
        "/ready", misc.ready, methods=["GET"], tags=["health"], include_in_schema=False
    )
    return app
