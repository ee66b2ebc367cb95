"""Rate limits: submissions per token and failed authentications per (address, token) answer 429.

No timing: a limit of a few per day cannot refill during the test, so counting is exact.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from api.limits import Rate, RateLimiter
from api.main import create_app
from lab.config import Settings

API = "/api/v1"


@pytest.fixture
def limited(settings: Settings, factory: sessionmaker[Session]) -> Iterator[TestClient]:
    s = settings.model_copy(update={"submit_rate": "3/day", "auth_fail_rate": "2/day"})
    app = create_app(s, session_factory=factory, enqueue=lambda *_: None, broker_check=lambda: None)
    with TestClient(app) as c:
        yield c


def test_submissions_over_the_rate_get_429_with_retry_after(
    limited: TestClient, tokens: dict[str, str]
) -> None:
    alice = {"Authorization": f"Bearer {tokens['alice']}"}
    bob = {"Authorization": f"Bearer {tokens['bob']}"}
    codes = [
        limited.post(f"{API}/runs", json={"spec": {"rounds": 1}}, headers=alice).status_code
        for _ in range(3)
    ]
    assert codes == [202, 202, 202]
    r = limited.post(f"{API}/sweeps", json={"grid": {"seed": [0]}}, headers=alice)
    assert r.status_code == 429
    assert int(r.headers["Retry-After"]) >= 1
    assert "FEDGEN_SUBMIT_RATE" in r.json()["detail"]
    # Per token: bob still submits; reads are not counted.
    assert limited.post(f"{API}/runs", json={"spec": {}}, headers=bob).status_code == 202
    assert limited.get(f"{API}/runs", headers=alice).status_code == 200


def test_failed_authentications_per_address_and_token_get_429(
    limited: TestClient, tokens: dict[str, str]
) -> None:
    bad = {"Authorization": "Bearer fgl_wrong"}
    assert limited.get(f"{API}/me", headers=bad).status_code == 401
    assert limited.get(f"{API}/me", headers=bad).status_code == 401
    r = limited.get(f"{API}/me", headers=bad)
    assert r.status_code == 429
    assert int(r.headers["Retry-After"]) >= 1
    assert "FEDGEN_AUTH_FAIL_RATE" in r.json()["detail"]
    # Another presented token (here none) has its own budget at the same address...
    assert limited.get(f"{API}/me").status_code == 401
    # ...and a valid token is never refused for others' failures (issue 28, finding 1).
    good = {"Authorization": f"Bearer {tokens['alice']}"}
    assert limited.get(f"{API}/me", headers=good).status_code == 200


def test_good_tokens_do_not_use_up_the_failure_budget(
    limited: TestClient, tokens: dict[str, str]
) -> None:
    good = {"Authorization": f"Bearer {tokens['alice']}"}
    assert all(limited.get(f"{API}/me", headers=good).status_code == 200 for _ in range(5))


def test_bucket_refills_at_the_rate() -> None:
    now = [0.0]
    lim = RateLimiter(Rate.parse("2/minute"), clock=lambda: now[0])
    assert [lim.hit("k"), lim.hit("k")] == [0, 0]
    assert lim.hit("k") == 30  # one token per 30 s
    now[0] = 30.0
    assert lim.hit("k") == 0
    assert lim.hit("other") == 0


@pytest.mark.parametrize("bad", ["0/minute", "60", "5/week", "x/second"])
def test_bad_rates_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="expected N/second"):
        Rate.parse(bad)
    with pytest.raises(ValueError, match="pattern"):
        Settings(submit_rate=bad)
