"""create_app(): the FastAPI application under /api/v1, docs at /docs and /redoc (served
from the installed package, no CDN: api.docs_ui)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import cache
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from sqlalchemy.orm import Session, sessionmaker
from starlette.routing import BaseRoute

from api import access_log, docs_ui, errors
from api.input_text import QueryTextCheck
from api.limits import BodyLimit, Limits
from api.openapi import build_openapi
from api.operations import OperationTable
from api.routes import health
from api.v1 import API_PREFIX, v1_router
from fedgen import plugins
from lab.config import Settings, get_settings
from lab.db import make_engine, make_sessionmaker
from lab.queue import Enqueue, Sender

__all__ = ["create_app"]


class AllowedMethods:
    """`Allow` lists every method of the path: OPTIONS answers 204 with it, and so does each 405.

    (Starlette's 405 names only the methods of the first route matching the path.) The
    methods are those the OpenAPI document lists (api.operations), so `Allow` and the
    document cannot disagree. CORS preflights never get here: CORSMiddleware answers them first.
    """

    def __init__(self, app: Any, table: Callable[[], OperationTable]) -> None:
        self.app = app
        self._table = table

    def allowed(self, path: str) -> list[str]:
        return self._table().allowed(path)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        allow = self.allowed(scope["path"])
        if scope["method"] == "OPTIONS" and allow:
            await send(
                {
                    "type": "http.response.start",
                    "status": 204,
                    "headers": [(b"allow", ", ".join(allow).encode())],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return

        async def send_allow(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] == 405 and allow:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
                message = {**message, "headers": [*headers, (b"allow", ", ".join(allow).encode())]}
            await send(message)

        await self.app(scope, receive, send_allow)


def _add_middleware(app: FastAPI, s: Settings) -> None:
    """The middleware stack, innermost first (each added one wraps the ones before it)."""
    # Inside AllowedMethods: OPTIONS and 405 answer before a body is looked at.
    table = cache(lambda: OperationTable.of(app))  # the routes are all added by the first request
    app.add_middleware(errors.JsonBodyCheck, table=table)
    # A NUL or lone surrogate in any query parameter: a 422 naming it, for every route.
    app.add_middleware(QueryTextCheck)
    app.add_middleware(AllowedMethods, table=table)
    app.add_middleware(
        CORSMiddleware, allow_origins=s.cors_origins, allow_methods=["*"], allow_headers=["*"]
    )
    app.add_middleware(BodyLimit, max_bytes=s.max_body_bytes)


@cache
def v1_routes() -> tuple[BaseRoute, ...]:
    """The /api/v1 routes, built once a process. Including a router analyses every route's
    parameters (about 0.5 s for the whole API); the built routes hold no app or settings (they
    read `request.app.state`), so every app of the process (tests build hundreds) shares them."""
    holder = APIRouter()
    holder.include_router(v1_router())
    return tuple(holder.routes)


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
        # Installed plugins (fedgen.plugins): which loaded, and each that failed, on stderr.
        plugins.announce(loaded_too=True)
        engine = None
        if session_factory is None:
            s.ensure_dirs()
            if s.auto_upgrade:
                from migrations.apply import upgrade

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
        docs_url=None,  # /docs and /redoc come from api.docs_ui: no CDN, they work offline
        redoc_url=None,
    )
    app.state.settings = s
    app.state.sessionmaker = session_factory
    sender = Sender(s)  # builds its Celery producer only when first used
    app.state.enqueue = enqueue or sender.send
    app.state.broker_check = broker_check or sender.check
    app.state.settings_sse_poll_s = sse_poll_s
    app.state.limits = Limits(s.submit_rate, s.auth_fail_rate, s.webhook_test_rate)
    access_log.install()  # stream tokens (`?token=`) never reach a log line
    errors.install(app)
    _add_middleware(app, s)
    app.router.routes.extend(v1_routes())  # authenticated unless declared public there
    docs_ui.install(app)
    # Probes also at the root, where load balancers and compose healthchecks look for them.
    app.add_api_route(
        "/health", health.health, methods=["GET"], tags=["health"], include_in_schema=False
    )
    app.add_api_route(
        "/ready", health.ready, methods=["GET"], tags=["health"], include_in_schema=False
    )
    # FastAPI's documented way to replace the schema generator; its type declares a method.
    app.openapi = lambda: build_openapi(app, s)  # type: ignore[method-assign]
    return app
