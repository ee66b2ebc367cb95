"""Event streams and the token lifecycle (issue 28, findings 2 and 7): a stream of a revoked or
expired API token ends within a few seconds, stream tokens minted from it stop working, and one
API token opens at most FEDGEN_MAX_STREAMS_PER_TOKEN streams at once (its stream tokens count).

Each test has a pytest-timeout, so a stream that does not end fails the test instead of hanging
it; nothing here measures time.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from lab.models import ApiToken, Run, User
from lab.repository import tokens as tokens_repo
from lab.security import hash_token
from tests.support.factories import create_run
from tests.support.procs import wait_for

API = "/api/v1"


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _queued_run(session: Session) -> Run:
    """A run that stays queued: its stream stays open (for FEDGEN_SSE_MAX_S, an hour)."""
    alice = session.query(User).filter_by(name="alice").one()
    return create_run(session, alice, rounds=5)


def _events(lines: Iterator[str]) -> Iterator[tuple[str, dict]]:
    name = "message"
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            yield name, json.loads(line[5:])


def _end_while_open(client: TestClient, url: str, headers: dict, end: object) -> list[tuple]:
    """Open the stream, read its first event, call `end()`, read on until the stream ends."""
    with client.stream("GET", url, headers=headers) as resp:
        assert resp.status_code == 200
        events = _events(resp.iter_lines())
        seen = [next(events)]
        end()  # type: ignore[operator]
        seen += list(events)
    return seen


@pytest.mark.timeout(60)
@pytest.mark.slow
def test_revoking_a_token_ends_its_open_stream(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """DELETE /tokens/{id} while its stream is open: the stream ends with an `error` event."""
    # Prepare
    run = _queued_run(session)
    made = client.post(f"{API}/tokens", json={"name": "tab"}, headers=_bearer(tokens["alice"]))
    secret, token_id = made.json()["token"], made.json()["id"]

    def revoke() -> None:
        r = client.delete(f"{API}/tokens/{token_id}", headers=_bearer(tokens["alice"]))
        assert r.status_code == 200

    # Execute
    seen = _end_while_open(client, f"{API}/runs/{run.id}/events", _bearer(secret), revoke)
    # Assert
    assert seen[0] == ("status", {"status": "queued", "round": -1})
    assert seen[-1][0] == "error"
    assert "revoked" in seen[-1][1]["detail"]
    again = client.get(f"{API}/runs/{run.id}/events", headers=_bearer(secret))
    assert again.status_code == 401


@pytest.mark.timeout(60)
@pytest.mark.slow
def test_an_expiring_token_ends_its_open_stream_and_its_stream_tokens(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """A token expiring while a stream of one of its stream tokens is open ends that stream;
    the stream token then answers 401."""
    # Prepare
    run = _queued_run(session)
    made = client.post(
        f"{API}/tokens", json={"expires_days": 1}, headers=_bearer(tokens["bob"])
    ).json()
    stream = client.post(f"{API}/runs/{run.id}/stream-token", headers=_bearer(made["token"]))
    url = f"{API}/runs/{run.id}/events?token={stream.json()['token']}"

    def expire() -> None:  # as if the day had passed
        session.execute(
            update(ApiToken)
            .where(ApiToken.token_hash == hash_token(made["token"]))
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        session.commit()

    # Execute
    seen = _end_while_open(client, url, {}, expire)
    # Assert
    assert seen[-1][0] == "error"
    assert client.get(url).status_code == 401
    assert client.get(f"{API}/me", headers=_bearer(made["token"])).status_code == 401


def test_stream_tokens_of_a_revoked_token_are_refused(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    # Prepare
    run = _queued_run(session)
    stream = client.post(f"{API}/runs/{run.id}/stream-token", headers=_bearer(tokens["bob"]))
    found = tokens_repo.find(session, tokens["bob"])
    assert found is not None
    tokens_repo.revoke(session, found[0])
    session.commit()
    # Execute
    r = client.get(f"{API}/runs/{run.id}/events?token={stream.json()['token']}")
    # Assert
    assert r.status_code == 401


def _open(client: TestClient, stack: contextlib.ExitStack, url: str, **kw: object) -> int:
    resp: httpx.Response = stack.enter_context(client.stream("GET", url, **kw))  # type: ignore[arg-type]
    return resp.status_code


@pytest.mark.timeout(120)
def test_the_ninth_stream_of_one_token_is_429(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """8 open streams (one by a stream token of the same API token): the 9th is 429 naming
    FEDGEN_MAX_STREAMS_PER_TOKEN; another token still opens one; a closed stream frees a place."""
    # Prepare
    run = _queued_run(session)
    url = f"{API}/runs/{run.id}/events"
    alice = _bearer(tokens["alice"])
    stream = client.post(f"{API}/runs/{run.id}/stream-token", headers=alice).json()["token"]
    found = tokens_repo.find(session, tokens["alice"])
    assert found is not None
    key = found[0].id.hex
    slots = client.app.state.limits.streams  # type: ignore[attr-defined]
    with contextlib.ExitStack() as stack:
        # Execute
        first = _open(client, stack, f"{url}?token={stream}")
        codes = [_open(client, stack, url, headers=alice) for _ in range(7)]
        ninth = client.get(url, headers=alice)
        other = _open(client, stack, url, headers=_bearer(tokens["bob"]))
        # Assert
        assert [first, *codes] == [200] * 8
        assert ninth.status_code == 429
        assert "FEDGEN_MAX_STREAMS_PER_TOKEN" in ninth.json()["detail"]
        assert int(ninth.headers["Retry-After"]) >= 1
        assert other == 200
        assert slots.open_count(key) == 8
    # Every stream closed by the client: the places are given back.
    wait_for(lambda: slots.open_count(key) == 0, "the streams' places to be released", 30)
    with client.stream("GET", url, headers=alice) as resp:
        assert resp.status_code == 200
