"""Auth is on by default under /api/v1: every route but the declared exceptions answers 401
without a token, a route added without asking for a user included (api.v1)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi import APIRouter
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from api import v1
from api.main import create_app, v1_routes
from lab.config import Settings

# A run that does not exist: a route that forgot auth would answer 404 or 422, not 401.
SOME_ID = "00000000-0000-0000-0000-000000000001"
# Served outside the v1 router by FastAPI itself; public today.
OUTSIDE_V1 = {f"{v1.API_PREFIX}/openapi.json"}
pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def _client(settings: Settings, factory: sessionmaker[Session]) -> TestClient:
    # Every unauthenticated call counts as a failure: lift the limit so the walk sees 401s.
    s = settings.model_copy(update={"auth_fail_rate": "100000/minute"})
    return TestClient(
        create_app(s, session_factory=factory, enqueue=lambda *_: None, broker_check=lambda: None)
    )


@pytest.fixture
def anon(settings: Settings, factory: sessionmaker[Session]) -> Iterator[TestClient]:
    with _client(settings, factory) as c:
        yield c


def _v1_operations(client: TestClient) -> list[tuple[str, str]]:
    """(method, path template) of every route under /api/v1."""
    ops = []
    for ctx in iter_route_contexts(client.app.routes):  # type: ignore[attr-defined]
        path = ctx.path or ""
        if not path.startswith(v1.API_PREFIX + "/"):
            continue
        for method in sorted((ctx.methods or set()) - {"HEAD", "OPTIONS"}):
            ops.append((method, path))
    return ops


def test_every_v1_route_but_the_declared_exceptions_answers_401(anon: TestClient) -> None:
    ops = _v1_operations(anon)
    assert len(ops) > 30  # the walk found the routers
    public = {v1.API_PREFIX + p for p in v1.PUBLIC} | OUTSIDE_V1
    wrong = []
    for method, path in ops:
        if path in public:
            continue
        url = re.sub(r"\{[^}/]+\}", SOME_ID, path)
        r = anon.request(method, url, json={} if method in ("POST", "PUT", "PATCH") else None)
        if r.status_code != 401 or r.headers.get("www-authenticate") != "Bearer":
            wrong.append(f"{method} {path}: {r.status_code}")
    assert wrong == []


def test_the_declared_exceptions_answer_without_a_token(anon: TestClient) -> None:
    for path in v1.PUBLIC:
        assert anon.get(v1.API_PREFIX + path).status_code == 200, path
    assert anon.get(f"{v1.API_PREFIX}/openapi.json").status_code == 200
    # Self-authenticated: 401 without credentials, but it takes a stream token instead.
    r = anon.get(f"{v1.API_PREFIX}/runs/{SOME_ID}/events", params={"token": "x"})
    assert r.status_code == 401
    assert r.json()["detail"] == "invalid or expired stream token"


def test_a_new_route_is_authenticated_without_asking(
    settings: Settings, factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = APIRouter()

    @extra.get("/forgot-auth")
    def forgot_auth() -> dict[str, str]:
        return {"secret": "yes"}

    monkeypatch.setattr(v1, "ROUTERS", (*v1.ROUTERS, extra))
    v1_routes.cache_clear()  # the process builds the routes once; this app must see `extra`
    try:
        with _client(settings, factory) as c:
            assert c.get(f"{v1.API_PREFIX}/forgot-auth").status_code == 401
    finally:
        v1_routes.cache_clear()


def test_every_exception_is_a_route(anon: TestClient) -> None:
    """A renamed probe or stream path must not leave a stale exception behind."""
    paths = {p for _, p in _v1_operations(anon)}
    declared = {v1.API_PREFIX + p for p in (*v1.PUBLIC, *v1.SELF_AUTHENTICATED)}
    assert declared <= paths
    assert all(isinstance(r, APIRoute) for m in v1.ROUTERS for r in m.routes)
