"""A request's transaction commits before its response is sent: a write whose commit fails is
answered 500, never 2xx (and a client reading right after its own write sees it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

import api.deps
from api.main import create_app
from lab.config import Settings


@pytest.fixture
def failing_commit_client(
    settings: Settings, factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> Iterator[TestClient]:
    """The API, where every request's commit fails once the handler has returned."""

    @contextmanager
    def commit_fails(f: sessionmaker[Session]) -> Iterator[Session]:
        session = f()
        try:
            yield session
            raise RuntimeError("the commit failed (the database went away)")
        finally:
            session.rollback()
            session.close()

    monkeypatch.setattr(api.deps, "session_scope", commit_fails)
    app = create_app(
        settings, session_factory=factory, enqueue=lambda *_: None, broker_check=lambda: None
    )
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def test_a_write_whose_commit_fails_is_not_answered_2xx(
    failing_commit_client: TestClient, auth: dict[str, str]
) -> None:
    # Execute
    r = failing_commit_client.post("/api/v1/runs", json={"spec": {}}, headers=auth)
    # Assert: with the commit after the response (FastAPI's "request" scope) this was a 202
    assert r.status_code == 500, r.text
