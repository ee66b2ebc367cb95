"""No lock-out (issue 28, finding 1): a stranger's bogus tokens never get a member's valid token
refused, neither from one address nor through the dashboard, whose address every browser's API
call comes from; the bogus sender itself is slowed (429) once over its budget.

No timing: the default FEDGEN_AUTH_FAIL_RATE (20/minute) cannot refill noticeably within these
few requests, and the tests that need an exact count use N/day.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from api.limits import ADDRESS_FACTOR
from api.main import create_app
from lab.config import Settings

API = "/api/v1"
ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = "172.18.0.3"  # the dashboard container, on the compose network 172.18.0.0/16
STRANGER = "203.0.113.7"
MEMBER = "198.51.100.2"
BOGUS = {"Authorization": "Bearer fgl_bogus_token_of_a_stranger"}


def _app(settings: Settings, factory: sessionmaker[Session], **update: object) -> TestClient:
    s = settings.model_copy(update=update)
    app = create_app(s, session_factory=factory, enqueue=lambda *_: None, broker_check=lambda: None)
    return TestClient(app, client=(DASHBOARD, 50000))


@pytest.fixture
def direct(settings: Settings, factory: sessionmaker[Session]) -> Iterator[TestClient]:
    """The API answering peers directly (no trusted proxy), every request from DASHBOARD."""
    with _app(settings, factory) as c:
        yield c


@pytest.fixture
def behind_dashboard(settings: Settings, factory: sessionmaker[Session]) -> Iterator[TestClient]:
    """The API trusting the dashboard's network: its X-Forwarded-For names the browser."""
    with _app(settings, factory, trusted_proxies="172.18.0.0/16") as c:
        yield c


def _bearer(token: str, browser: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}"}
    if browser is not None:
        headers["X-Forwarded-For"] = browser
    return headers


def test_bogus_tokens_from_one_address_do_not_lock_out_a_valid_token(
    direct: TestClient, tokens: dict[str, str]
) -> None:
    """25 bogus tokens: the sender is 429'd after 20; a valid token from that address: 200."""
    # Execute
    codes = [direct.get(f"{API}/me", headers=BOGUS).status_code for _ in range(25)]
    after = direct.get(f"{API}/me", headers=_bearer(tokens["alice"]))
    # Assert
    assert codes == [401] * 20 + [429] * 5
    assert after.status_code == 200
    assert after.json()["name"] == "alice"


def test_bogus_tokens_through_the_dashboard_do_not_lock_out_members(
    behind_dashboard: TestClient, tokens: dict[str, str]
) -> None:
    """Every browser behind the dashboard is counted apart (X-Forwarded-For); the stranger is
    429'd, a member's valid token and another browser's mistakes are not."""
    # Prepare
    stranger = {**BOGUS, "X-Forwarded-For": STRANGER}
    # Execute
    codes = [behind_dashboard.get(f"{API}/me", headers=stranger).status_code for _ in range(25)]
    member = behind_dashboard.get(f"{API}/me", headers=_bearer(tokens["bob"], MEMBER))
    same_browser = behind_dashboard.get(f"{API}/me", headers=_bearer(tokens["bob"], STRANGER))
    typo = behind_dashboard.get(f"{API}/me", headers={**BOGUS, "X-Forwarded-For": MEMBER})
    # Assert
    assert codes == [401] * 20 + [429] * 5
    assert int(behind_dashboard.get(f"{API}/me", headers=stranger).headers["Retry-After"]) >= 1
    assert member.status_code == 200
    assert same_browser.status_code == 200
    assert typo.status_code == 401  # the member's own budget is untouched


def test_an_untrusted_peers_forwarded_for_is_ignored(
    direct: TestClient, tokens: dict[str, str]
) -> None:
    """Without FEDGEN_TRUSTED_PROXIES a peer cannot pick the address its failures count
    against: a new X-Forwarded-For per request still lands in the peer's bucket."""
    # Execute
    codes = [
        direct.get(f"{API}/me", headers={**BOGUS, "X-Forwarded-For": f"192.0.2.{i}"}).status_code
        for i in range(21)
    ]
    good = direct.get(f"{API}/me", headers=_bearer(tokens["alice"], "192.0.2.99"))
    # Assert
    assert codes == [401] * 20 + [429]
    assert good.status_code == 200


def test_a_guesser_cycling_tokens_is_slowed_per_address(
    settings: Settings, factory: sessionmaker[Session], tokens: dict[str, str]
) -> None:
    """Each guess a new token: the per-address budget (ADDRESS_FACTOR x the rate) stops them,
    and still never a valid token."""
    # Prepare
    budget = 2 * ADDRESS_FACTOR
    with _app(settings, factory, auth_fail_rate="2/day") as c:
        # Execute
        codes = [
            c.get(f"{API}/me", headers=_bearer(f"fgl_{i:04d}guess_xyz")).status_code
            for i in range(budget + 2)
        ]
        good = c.get(f"{API}/me", headers=_bearer(tokens["admin"]))
    # Assert
    assert codes == [401] * budget + [429] * 2
    assert good.status_code == 200


def test_a_missing_token_counts_as_its_own_prefix(
    settings: Settings, factory: sessionmaker[Session]
) -> None:
    """No Authorization header: counted under "none", apart from a bogus token's bucket."""
    with _app(settings, factory, auth_fail_rate="2/day") as c:
        missing = [c.get(f"{API}/me").status_code for _ in range(3)]
        bogus = c.get(f"{API}/me", headers=BOGUS)
    assert missing == [401, 401, 429]
    assert bogus.status_code == 401
    assert bogus.json()["detail"] == "invalid token"


def test_compose_trusts_exactly_the_dashboards_address() -> None:
    """docker-compose.yml: the api's FEDGEN_TRUSTED_PROXIES default is the dashboard's fixed
    address, inside the compose network's subnet (not the whole network: its gateway is where
    outside requests to the published port may come from)."""
    # Prepare
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    trusted = compose["services"]["api"]["environment"]["FEDGEN_TRUSTED_PROXIES"]
    dashboard = compose["services"]["dashboard"]["networks"]["default"]["ipv4_address"]
    (subnet,) = [c["subnet"] for c in compose["networks"]["default"]["ipam"]["config"]]
    # Assert
    assert trusted == "${FEDGEN_TRUSTED_PROXIES:-" + dashboard + "}"
    assert ipaddress.ip_address(dashboard) in ipaddress.ip_network(subnet)
