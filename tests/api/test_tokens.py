"""Tokens over REST (issue 28, finding 2): a member lists, creates and revokes their own, an admin
anyone's; a revoked or expired token answers 401; FEDGEN_TOKEN_MAX_DAYS caps new tokens; the
hash is never sent; creating and revoking are in the audit log; last use is written at most
once a minute."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from api.main import create_app
from lab.config import Settings
from lab.models import ApiToken, AuditEvent
from lab.repository import tokens as tokens_repo
from lab.security import hash_token

API = "/api/v1"


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def capped(settings: Settings, factory: sessionmaker[Session]) -> Iterator[TestClient]:
    """The API with FEDGEN_TOKEN_MAX_DAYS=30."""
    s = settings.model_copy(update={"token_max_days": 30})
    app = create_app(s, session_factory=factory, enqueue=lambda *_: None, broker_check=lambda: None)
    with TestClient(app) as c:
        yield c


def test_a_member_creates_lists_and_revokes_their_own_tokens(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """The secret is shown once; the list never holds it nor the hash; revoked: 401 next time."""
    # Execute
    made = client.post(f"{API}/tokens", json={"name": "laptop"}, headers=_bearer(tokens["alice"]))
    new = made.json()["token"]
    listed = client.get(f"{API}/tokens", headers=_bearer(new)).json()
    revoked = client.delete(f"{API}/tokens/{made.json()['id']}", headers=_bearer(tokens["alice"]))
    after = client.get(f"{API}/me", headers=_bearer(new))
    # Assert
    assert made.status_code == 201
    assert made.json()["name"] == "laptop"
    assert made.json()["state"] == "active"
    assert made.json()["expires_at"] is None
    assert listed["count"] == 2
    assert {t["user"] for t in listed["data"]} == {"alice"}
    assert "token" not in listed["data"][0]
    assert hash_token(new) not in made.text + str(listed)
    assert revoked.status_code == 200
    assert revoked.json()["state"] == "revoked"
    assert after.status_code == 401
    assert after.json()["detail"] == "token revoked"
    assert client.get(f"{API}/me", headers=_bearer(tokens["alice"])).status_code == 200
    row = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(new)))
    assert row is not None
    assert row.revoked_at is not None


def test_others_tokens_are_403_unknown_404_and_an_admin_may_revoke_any(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """As owned_or_404 answers elsewhere: 404 for no such token, 403 for another member's."""
    # Prepare
    bob_ids = [str(t.id) for t, user in tokens_repo.list_tokens(session) if user == "bob"]
    alice = _bearer(tokens["alice"])
    # Execute
    other = client.delete(f"{API}/tokens/{bob_ids[0]}", headers=alice)
    unknown = client.delete(f"{API}/tokens/00000000-0000-0000-0000-000000000009", headers=alice)
    not_an_id = client.delete(f"{API}/tokens/nope", headers=alice)
    listing_bob = client.get(f"{API}/tokens?user=bob", headers=alice)
    by_admin = client.delete(f"{API}/tokens/{bob_ids[0]}", headers=_bearer(tokens["admin"]))
    # Assert
    assert other.status_code == 403
    assert unknown.status_code == 404
    assert not_an_id.status_code == 404
    assert listing_bob.status_code == 403
    assert by_admin.status_code == 200
    assert client.get(f"{API}/me", headers=_bearer(tokens["bob"])).status_code == 401


def test_an_admin_lists_everyones_or_one_members_tokens(
    client: TestClient, tokens: dict[str, str]
) -> None:
    admin = _bearer(tokens["admin"])
    everyone = client.get(f"{API}/tokens", headers=admin).json()
    bobs = client.get(f"{API}/tokens?user=bob", headers=admin).json()
    nobody = client.get(f"{API}/tokens?user=nobody", headers=admin)
    assert {t["user"] for t in everyone["data"]} == {"alice", "bob", "admin"}
    assert [t["user"] for t in bobs["data"]] == ["bob"]
    assert nobody.status_code == 404


def test_a_nul_in_the_user_filter_is_422_not_a_database_error(
    client: TestClient, tokens: dict[str, str]
) -> None:
    """Schemathesis found `?user=` with a NUL answered 500 on Postgres (text cannot hold NUL)."""
    answer = client.get(f"{API}/tokens?user=a%00b", headers=_bearer(tokens["admin"]))
    assert answer.status_code == 422
    assert "user" in answer.text


def test_an_expired_token_answers_401(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """A token past its expires_at is refused, saying so (only to whoever holds it)."""
    # Prepare
    made = client.post(
        f"{API}/tokens", json={"name": "ci", "expires_days": 1}, headers=_bearer(tokens["alice"])
    ).json()
    row = session.get(ApiToken, uuid.UUID(made["id"]))
    assert row is not None
    assert row.expires_at is not None
    row.expires_at = datetime.now(UTC) - timedelta(seconds=1)  # as if a day had passed
    session.commit()
    # Execute
    r = client.get(f"{API}/me", headers=_bearer(made["token"]))
    listed = client.get(f"{API}/tokens", headers=_bearer(tokens["alice"])).json()
    # Assert
    assert r.status_code == 401
    assert r.json()["detail"] == "token expired"
    assert {t["name"]: t["state"] for t in listed["data"]}["ci"] == "expired"


def test_token_max_days_caps_new_tokens(capped: TestClient, tokens: dict[str, str]) -> None:
    """Over FEDGEN_TOKEN_MAX_DAYS: 422 naming expires_days and the limit; none asked: the cap."""
    # Execute
    over = capped.post(f"{API}/tokens", json={"expires_days": 31}, headers=_bearer(tokens["bob"]))
    default = capped.post(f"{API}/tokens", json={}, headers=_bearer(tokens["bob"]))
    # Assert
    assert over.status_code == 422
    (err,) = over.json()["detail"]
    assert err["field"] == "expires_days"
    assert err["loc"] == ["body", "expires_days"]
    assert "FEDGEN_TOKEN_MAX_DAYS=30" in err["msg"]
    assert default.status_code == 201
    made = datetime.fromisoformat(default.json()["created_at"])
    expires = datetime.fromisoformat(default.json()["expires_at"])
    assert expires - made == timedelta(days=30)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"expires_days": 0}, "expires_days"),
        ({"expires_days": "soon"}, "expires_days"),
        ({"name": "x" * 101}, "name"),
        ({"token_hash": "ab"}, "token_hash"),
    ],
)
def test_bad_bodies_are_422_naming_the_field(
    client: TestClient, auth: dict[str, str], body: dict[str, object], field: str
) -> None:
    r = client.post(f"{API}/tokens", json=body, headers=auth)
    assert r.status_code == 422
    assert [e["field"] for e in r.json()["detail"]] == [field]


def test_create_and_revoke_are_audited_with_the_address(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    # Execute
    made = client.post(f"{API}/tokens", json={"name": "nb"}, headers=_bearer(tokens["bob"]))
    client.delete(f"{API}/tokens/{made.json()['id']}", headers=_bearer(tokens["admin"]))
    client.delete(f"{API}/tokens/{made.json()['id']}", headers=_bearer(tokens["admin"]))
    # Assert
    rows = session.scalars(select(AuditEvent).order_by(AuditEvent.at)).all()
    assert [(r.action, r.actor_name, r.subject_id) for r in rows] == [
        ("token.create", "bob", made.json()["id"]),
        ("token.revoke", "admin", made.json()["id"]),  # revoking again records nothing
    ]
    assert rows[0].address == "testclient"
    assert rows[1].detail == {"user": "bob", "name": "nb"}


def test_last_use_is_written_at_most_once_a_minute(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """A request records the use; the next minute's requests do not write again."""
    # Prepare
    token = tokens_repo.find(session, tokens["alice"])
    assert token is not None
    assert token[0].last_used_at is None
    # Execute
    client.get(f"{API}/me", headers=_bearer(tokens["alice"]))
    session.expire_all()
    first = tokens_repo.find(session, tokens["alice"])
    assert first is not None
    used = first[0].last_used_at
    within = tokens_repo.touch(session, first[0], used + timedelta(seconds=59))
    later = tokens_repo.touch(session, first[0], used + timedelta(seconds=61))
    # Assert
    assert used is not None
    assert within is False
    assert later is True
    assert first[0].last_used_at == used + timedelta(seconds=61)
