"""GET /ready: only ready or not for a stranger; which and why for a lab member (issue 28)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from api.main import create_app
from api.readiness import hide_passwords
from lab.config import Settings
from lab.db import make_engine, make_sessionmaker

BROKER = "redis://:hunter2@redis.lab.internal:6379/0"


def _broker_down() -> None:
    raise ConnectionError(f"Error connecting to {BROKER}: connection refused")


@pytest.fixture
def broker_down(settings: Settings, factory: sessionmaker[Session]) -> Iterator[TestClient]:
    """The app on a working database whose broker is unreachable."""
    app = create_app(
        settings, session_factory=factory, enqueue=lambda *_: None, broker_check=_broker_down
    )
    with TestClient(app) as c:
        yield c


@pytest.mark.parametrize("path", ["/ready", "/api/v1/ready"])
def test_a_stranger_learns_only_that_it_is_unavailable(
    broker_down: TestClient, tokens: dict[str, str], path: str
) -> None:
    """No token, or a wrong one: 503 {"status": "unavailable"}, no host, no error text."""
    for headers in ({}, {"Authorization": "Bearer fgl_wrong"}):
        r = broker_down.get(path, headers=headers)
        assert (r.status_code, r.json()) == (503, {"status": "unavailable"})
        assert "redis" not in r.text
        assert int(r.headers["Retry-After"]) > 0


def test_a_member_sees_which_and_why_without_the_password(
    broker_down: TestClient, tokens: dict[str, str]
) -> None:
    """bob's token: the database is ok, the broker's error is said, its password hidden."""
    r = broker_down.get("/ready", headers={"Authorization": f"Bearer {tokens['bob']}"})
    body = r.json()
    assert r.status_code == 503
    assert (body["status"], body["database"], body["detail"]) == (
        "unavailable",
        "ok",
        "broker unavailable",
    )
    assert body["broker"].startswith("error: ConnectionError: Error connecting to redis://")
    assert "redis.lab.internal" in body["broker"]
    assert "hunter2" not in body["broker"]


def test_ready_when_all_is_up(client: TestClient, tokens: dict[str, str]) -> None:
    """200 {"status": "ok"}; a member also gets both checks."""
    assert client.get("/ready").json() == {"status": "ok"}
    member = client.get("/api/v1/ready", headers={"Authorization": f"Bearer {tokens['alice']}"})
    assert member.json() == {"status": "ok", "database": "ok", "broker": "ok"}


def test_a_bad_database_url_names_no_host(tmp_path: Path) -> None:
    """A Postgres URL nobody answers at: 503 with the status only, even with a token."""
    url = "postgresql+psycopg://lab:s3cret@127.0.0.1:1/lab?connect_timeout=2"
    engine = make_engine(url, pool_size=1)
    app = create_app(
        Settings(home=tmp_path / "home", database_url=url, broker_url="memory://"),
        session_factory=make_sessionmaker(engine),
        enqueue=lambda *_: None,
        broker_check=lambda: None,
    )
    try:
        with TestClient(app) as c:
            r = c.get("/ready", headers={"Authorization": "Bearer fgl_x"})
    finally:
        engine.dispose()
    assert (r.status_code, r.json()) == (503, {"status": "unavailable"})
    assert "127.0.0.1" not in r.text
    assert "s3cret" not in r.text


def test_hide_passwords() -> None:
    """Every URL's password is replaced; a URL without one is left alone."""
    text = "a postgresql://u:p@h/db and redis://:pw@r:6379/0 and http://h/x"
    assert (
        hide_passwords(text) == "a postgresql://u:***@h/db and redis://:***@r:6379/0 and http://h/x"
    )


def test_the_openapi_document_says_the_detail_is_for_members(client: TestClient) -> None:
    """The documented schema requires only `status`."""
    op = client.get("/api/v1/openapi.json").json()["paths"]["/api/v1/ready"]["get"]
    schema = op["responses"]["503"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["status"]
    assert "valid bearer token" in op["description"]
