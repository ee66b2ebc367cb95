"""GET /runs/{id}/events always ends: at a terminal status, or after FEDGEN_SSE_MAX_S.

A run that stays queued (no worker, as in `make contract`) used to hold its stream open for
ever, its 15 s pings defeating every read timeout. (Each test has a pytest-timeout so that a
stream which does not end fails the test instead of hanging it; nothing here measures time.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy.orm import Session, sessionmaker

from api.main import create_app
from lab.config import Settings
from lab.models import Run, User
from tests.support.factories import create_run, seed_rounds

API = "/api/v1"


@pytest.fixture
def short_client(settings: Settings, factory: sessionmaker[Session]) -> Iterator[TestClient]:
    """The API with FEDGEN_SSE_MAX_S=0.3."""
    app = create_app(
        settings.model_copy(update={"sse_max_s": 0.3}),
        session_factory=factory,
        enqueue=lambda _rid, _dev: None,
        broker_check=lambda: None,
        sse_poll_s=0.02,
    )
    with TestClient(app) as c:
        yield c


def _alice_run(session: Session) -> Run:
    alice = session.query(User).filter_by(name="alice").one()
    return create_run(session, alice, rounds=5)


def _events(text: str) -> list[tuple[str, dict]]:
    out, name = [], "message"
    for line in text.splitlines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            out.append((name, json.loads(line[5:])))
    return out


def _stream(client: TestClient, url: str, **kwargs: object) -> tuple[int, str]:
    with client.stream("GET", url, **kwargs) as resp:  # type: ignore[arg-type]
        return resp.status_code, "".join(resp.iter_text())


@pytest.mark.timeout(60)
def test_stream_of_a_queued_run_ends_after_the_max_duration(
    short_client: TestClient, auth: dict, session: Session
) -> None:
    """A run that never starts: its status, then the stream ends with a `retry`, no terminal
    status."""
    # Prepare
    run = _alice_run(session)
    # Execute
    code, text = _stream(short_client, f"{API}/runs/{run.id}/events", headers=auth)
    # Assert
    assert code == 200
    assert _events(text) == [("status", {"status": "queued", "round": -1})]
    assert "retry: 1000" in text
    assert "FEDGEN_SSE_MAX_S" in text


@pytest.mark.timeout(60)
def test_reconnecting_after_the_limit_goes_on_after_the_last_round(
    short_client: TestClient, auth: dict, session: Session
) -> None:
    """A running run's stream ends at the limit; Last-Event-ID resumes after its last round."""
    # Prepare
    run = _alice_run(session)
    seed_rounds(session, run, [0.1, 0.2, 0.3], status="running")
    url = f"{API}/runs/{run.id}/events"
    # Execute
    _, first = _stream(short_client, url, headers=auth)
    _, again = _stream(short_client, url, headers={**auth, "Last-Event-ID": "1"})
    # Assert
    assert [d["round"] for e, d in _events(first) if e == "round"] == [0, 1, 2]
    assert _events(first)[-1] == ("status", {"status": "running", "round": 2})
    assert [d["round"] for e, d in _events(again) if e == "round"] == [2]
    assert "retry: 1000" in first
    assert "retry: 1000" in again


@pytest.mark.timeout(60)
def test_stream_of_a_terminal_run_ends_at_once(
    client: TestClient, auth: dict, session: Session
) -> None:
    """With the default limit (an hour), a finished run's stream ends after its status,
    without the limit's `retry`."""
    # Prepare
    run = _alice_run(session)
    seed_rounds(session, run, [0.1, 0.2])
    # Execute
    code, text = _stream(client, f"{API}/runs/{run.id}/events", headers=auth)
    # Assert
    assert code == 200
    assert _events(text)[-1] == ("status", {"status": "succeeded", "round": 1})
    assert "retry:" not in text
    assert client.app.state.settings.sse_max_s == 3600  # type: ignore[attr-defined]


def test_the_limit_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """FEDGEN_SSE_MAX_S sets it; it must be positive."""
    # Execute
    monkeypatch.setenv("FEDGEN_SSE_MAX_S", "2")
    two = Settings()
    monkeypatch.setenv("FEDGEN_SSE_MAX_S", "0")
    # Assert
    assert two.sse_max_s == 2.0
    with pytest.raises(ValidationError):
        Settings()
