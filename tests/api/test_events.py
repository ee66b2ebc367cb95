"""The SSE stream: `since_round` is exclusive; a browser authenticates with a stream token."""

from __future__ import annotations

import json
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from lab.models import Run, User
from lab.security import parse_stream_token
from tests.support.factories import create_run, seed_rounds

API = "/api/v1"


def _finished_run(session: Session, rounds: int = 6) -> Run:
    alice = session.query(User).filter_by(name="alice").one()
    run = create_run(session, alice, rounds=rounds)
    seed_rounds(session, run, [r / 10 for r in range(rounds + 1)])
    return run


def _round_events(text: str) -> list[int]:
    return [
        json.loads(line[5:])["round"]
        for line in text.splitlines()
        if line.startswith("data:") and '"metrics"' in line
    ]


def _stream(client: TestClient, url: str, **kwargs: object) -> tuple[int, str]:
    with client.stream("GET", url, **kwargs) as resp:  # type: ignore[arg-type]
        return resp.status_code, "".join(resp.iter_text())


def test_since_round_is_exclusive(client: TestClient, auth: dict, session: Session) -> None:
    """since_round=3 streams rounds 4.. only; -1 (the default) streams from round 0."""
    # Prepare
    run = _finished_run(session)
    # Execute
    code3, after3 = _stream(client, f"{API}/runs/{run.id}/events?since_round=3", headers=auth)
    _, everything = _stream(client, f"{API}/runs/{run.id}/events", headers=auth)
    _, last = _stream(client, f"{API}/runs/{run.id}/events?since_round=6", headers=auth)
    # Assert
    assert code3 == 200
    assert _round_events(after3) == [4, 5, 6]
    assert _round_events(everything) == [0, 1, 2, 3, 4, 5, 6]
    assert _round_events(last) == []
    assert '"succeeded"' in last


def test_stream_token_opens_that_runs_stream_only(
    client: TestClient, auth: dict, session: Session
) -> None:
    """A stream token works as ?token= without a header, for its run only, and not forged."""
    # Prepare
    run, other = _finished_run(session), _finished_run(session)
    # Execute
    resp = client.post(f"{API}/runs/{run.id}/stream-token", headers=auth)
    token = resp.json()["token"]
    code, text = _stream(client, f"{API}/runs/{run.id}/events?since_round=4&token={token}")
    other_code, _ = _stream(client, f"{API}/runs/{other.id}/events?token={token}")
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    forged_code, _ = _stream(client, f"{API}/runs/{run.id}/events?token={forged}")
    api_token_code, _ = _stream(
        client, f"{API}/runs/{run.id}/events?token={auth['Authorization'][7:]}"
    )
    nothing_code, _ = _stream(client, f"{API}/runs/{run.id}/events")
    # Assert
    assert resp.status_code == 200
    assert resp.json()["run_id"] == str(run.id)
    assert resp.json()["expires_at"] > time.time()
    assert code == 200
    assert _round_events(text) == [5, 6]
    assert other_code == 403
    assert forged_code == 401
    assert api_token_code == 401
    assert nothing_code == 401


def test_stream_token_expires(
    client: TestClient, auth: dict, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its expiry a stream token is refused with 401."""
    # Prepare
    run = _finished_run(session, rounds=2)
    token = client.post(f"{API}/runs/{run.id}/stream-token", headers=auth).json()["token"]
    claim = parse_stream_token(token)
    assert claim is not None
    # Execute
    monkeypatch.setattr("lab.security.time.time", lambda: claim.expires + 1)
    code, _ = _stream(client, f"{API}/runs/{run.id}/events?token={token}")
    # Assert
    assert code == 401


def test_stream_token_needs_a_bearer_token(
    client: TestClient, auth: dict, session: Session
) -> None:
    """Asking for a stream token without an API token is 401; a stream token is not one."""
    run = _finished_run(session, rounds=1)
    token = client.post(f"{API}/runs/{run.id}/stream-token", headers=auth).json()["token"]
    assert client.post(f"{API}/runs/{run.id}/stream-token").status_code == 401
    by_stream_token = {"Authorization": f"Bearer {token}"}
    assert (
        client.post(f"{API}/runs/{run.id}/stream-token", headers=by_stream_token).status_code == 401
    )
