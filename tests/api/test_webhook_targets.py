"""Webhook targets (issue 28): FEDGEN_WEBHOOK_ALLOW lets names through by pattern and addresses
by address or network; a target resolving to a loopback, private, link-local, ... address is
a 422 naming `url` unless allowed by address; creating and deleting a webhook are audited; and
webhook tests are counted against FEDGEN_WEBHOOK_TEST_RATE. DNS is faked (tests/support/webhook_net.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from lab import webhook_targets
from lab.config import Settings
from lab.repository import audit
from lab.webhook_targets import TargetRefused, check_target, parse_allow
from tests.support.webhook_net import FakeDNS

API = "/api/v1"

# Address literals that are not public, the kind the refusal names, and an allow list naming
# them (by address or by network) that lets each through.
NON_PUBLIC = [
    ("127.0.0.1", "loopback", "127.0.0.0/8"),
    ("::1", "loopback", "::1"),
    ("::ffff:127.0.0.1", "loopback", "127.0.0.1"),  # IPv4-mapped: judged as 127.0.0.1
    ("0.0.0.0", "unspecified", "0.0.0.0"),
    ("::", "unspecified", "::/128"),
    ("169.254.169.254", "link-local", "169.254.169.254"),  # cloud metadata
    ("10.1.2.3", "private", "10.0.0.0/8"),
    ("172.16.0.9", "private", "172.16.0.0/12"),
    ("192.168.1.1", "private", "192.168.1.1"),
    ("100.64.0.1", "shared (CGNAT)", "100.64.0.0/10"),
    ("fc00::1", "private", "fc00::/7"),
    ("fe80::1", "link-local", "fe80::/10"),
    ("224.0.0.1", "multicast", "224.0.0.0/4"),
    ("ff02::1", "multicast", "ff00::/8"),
    ("240.0.0.1", "reserved", "240.0.0.0/4"),
    ("64:ff9b::a01:203", "private", "10.0.0.0/8"),  # NAT64 of 10.1.2.3
    ("2002:a01:203::", "private", "10.0.0.0/8"),  # 6to4 of 10.1.2.3
]


def _url(address: str, port: int = 8080) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}:{port}/hook"


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    """A fake resolver in place of the system's."""
    fake = FakeDNS()
    monkeypatch.setattr(webhook_targets, "resolve", fake.resolve)
    return fake


@pytest.mark.parametrize(("address", "kind", "allow"), NON_PUBLIC)
def test_non_public_address_needs_an_address_entry(
    dns: FakeDNS, address: str, kind: str, allow: str
) -> None:
    """`*` lets any name through, not these addresses; naming the address (or its network)
    does, for the literal and for a name resolving to it."""
    # Prepare
    dns.table["hooks.lab.test"] = ["93.184.215.14", address]  # one bad address refuses all
    # Execute
    with pytest.raises(TargetRefused) as literal:
        check_target(_url(address), "*")
    with pytest.raises(TargetRefused) as named:
        check_target("https://hooks.lab.test/x", "*")
    allowed = check_target(_url(address), f"*,{allow}")
    by_name = check_target("https://hooks.lab.test/x", f"*.lab.test,{allow}")
    # Assert
    article = "an" if kind[0] in "aeiou" else "a"
    assert f"is {article} {kind} address; FEDGEN_WEBHOOK_ALLOW must name it" in str(literal.value)
    assert str(named.value).startswith(f"hooks.lab.test resolves to {address}, {article} {kind}")
    assert literal.value.final
    assert named.value.final
    assert str(allowed.address) in (address, "127.0.0.1")  # a mapped address is connected as v4
    assert str(by_name.address) == "93.184.215.14"  # the first address, checked


def test_public_addresses_and_the_name_rule(dns: FakeDNS) -> None:
    """A public address passes `*`; an address entry lets addresses through, not names; a
    pattern matches names only; a malformed CIDR allows nothing; an unknown name is not final."""
    # Prepare
    dns.table |= {"hooks.slack.com": ["3.5.7.9", "2600:1f18::1"], "localhost": ["127.0.0.1"]}
    # Execute
    public = check_target("https://hooks.slack.com/services/x", "hooks.slack.com")
    v6 = check_target("http://[2600:1f18::1]/", "*")
    with pytest.raises(TargetRefused) as name_not_allowed:
        check_target("http://localhost/", "127.0.0.1")
    with pytest.raises(TargetRefused) as unknown:
        check_target("http://nowhere.lab.test/", "*")
    with pytest.raises(TargetRefused) as bad_cidr:
        check_target("http://10.1.2.3/", "10.0.0.0/33")
    # Assert
    assert (public.host, str(public.address)) == ("hooks.slack.com", "3.5.7.9")
    assert str(v6.address) == "2600:1f18::1"
    assert str(name_not_allowed.value) == (
        "host localhost is not allowed by FEDGEN_WEBHOOK_ALLOW (127.0.0.1)"
    )
    assert not unknown.value.final
    assert "does not resolve" in str(unknown.value)
    assert "not allowed by FEDGEN_WEBHOOK_ALLOW (10.0.0.0/33)" in str(bad_cidr.value)
    assert parse_allow(" *.Lab.Example , 10.0.0.0/8,[::1] ,,").patterns == ("*.lab.example",)
    assert [str(n) for n in parse_allow("10.0.0.0/8,[::1]").networks] == ["10.0.0.0/8", "::1/128"]
    assert dns.calls == ["hooks.slack.com", "nowhere.lab.test"]  # names refused are not looked up


def _settings_with(client: TestClient, **update: Any) -> None:
    client.app.state.settings = client.app.state.settings.model_copy(update=update)  # type: ignore[attr-defined]


def _register(client: TestClient, auth: dict[str, str], url: str) -> Any:
    return client.post(f"{API}/webhooks", json={"url": url, "events": ["run.failed"]}, headers=auth)


def test_registration_refuses_internal_targets_naming_url(
    client: TestClient, tokens: dict[str, str], dns: FakeDNS
) -> None:
    """With FEDGEN_WEBHOOK_ALLOW='*': localhost, a name resolving to 127.0.0.1, [::1], the
    metadata address and a name that does not resolve are each a 422 on `url`; nothing stored.
    An admin's 422 says why (a member's says one message: tests/api/test_member_oracles.py)."""
    auth = {"Authorization": f"Bearer {tokens['admin']}"}
    # Prepare
    _settings_with(client, webhook_allow="*")
    dns.table |= {"localhost": ["127.0.0.1", "::1"], "sneaky.example": ["127.0.0.1"]}
    cases = [
        ("http://localhost:8080/", "localhost resolves to 127.0.0.1, a loopback address"),
        ("https://sneaky.example/h", "sneaky.example resolves to 127.0.0.1, a loopback address"),
        ("http://[::1]:8080/", "::1 is a loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://db.internal.example/", "host db.internal.example does not resolve"),
    ]
    for url, says in cases:
        # Execute
        r = _register(client, auth, url)
        # Assert
        assert r.status_code == 422, (url, r.text)
        (problem,) = r.json()["detail"]
        assert problem["field"] == "url"
        assert says in problem["msg"], (url, problem)
    assert client.get(f"{API}/webhooks", headers=auth).json()["count"] == 0


def test_create_and_delete_are_audited(
    client: TestClient, auth: dict[str, str], dns: FakeDNS, session: Session
) -> None:
    """webhook.create (with the checked address) and webhook.delete: alice, from her address."""
    # Prepare
    _settings_with(client, webhook_allow="*.lab.test")
    dns.table["hooks.lab.test"] = ["93.184.215.14"]
    # Execute
    created = _register(client, auth, "https://hooks.lab.test/x")
    hook_id = created.json()["id"]
    deleted = client.delete(f"{API}/webhooks/{hook_id}", headers=auth)
    # Assert
    assert (created.status_code, deleted.status_code) == (201, 204)
    rows = audit.list_events(session, subject_id=hook_id)
    assert [(e.action, e.actor_name, e.address) for e in rows] == [
        ("webhook.delete", "alice", "testclient"),
        ("webhook.create", "alice", "testclient"),
    ]
    assert rows[1].detail["address"] == "93.184.215.14"
    assert rows[1].detail["url"] == "https://hooks.lab.test/x"


def test_refused_registration_is_not_audited(
    client: TestClient, auth: dict[str, str], dns: FakeDNS, session: Session
) -> None:
    """A 422 writes nothing: the record shares the refused request's transaction."""
    # Execute
    r = _register(client, auth, "http://10.1.2.3/")
    # Assert
    assert r.status_code == 422
    assert audit.list_events(session, action="webhook.create") == []


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Loopback allowed by address (no DNS needed); the documented test rate."""
    return settings.model_copy(
        update={"webhook_allow": "127.0.0.1", "webhook_test_rate": "6/minute"}
    )


def test_seventh_test_in_a_minute_is_429(client: TestClient, tokens: dict[str, str]) -> None:
    """Six tests pass, the 7th is 429 with Retry-After; another member still has their six."""
    # Prepare
    alice = {"Authorization": f"Bearer {tokens['alice']}"}
    bob = {"Authorization": f"Bearer {tokens['bob']}"}
    hook = _register(client, alice, "http://127.0.0.1:9/a").json()["id"]
    bobs = _register(client, bob, "http://127.0.0.1:9/b").json()["id"]
    # Execute
    codes = [
        client.post(f"{API}/webhooks/{hook}/test", headers=alice).status_code for _ in range(6)
    ]
    seventh = client.post(f"{API}/webhooks/{hook}/test", headers=alice)
    other = client.post(f"{API}/webhooks/{bobs}/test", headers=bob)
    # Assert
    assert codes == [202] * 6
    assert seventh.status_code == 429
    assert 1 <= int(seventh.headers["Retry-After"]) <= 60
    assert "FEDGEN_WEBHOOK_TEST_RATE" in seventh.json()["detail"]
    assert other.status_code == 202
    log = client.get(f"{API}/webhooks/{hook}/deliveries", headers=alice).json()
    assert log["count"] == 6  # the refused test queued nothing
