"""`fedgen-lab tokens create|list|revoke` (issue 28, finding 2) on the test database: a token
created there authenticates, a revoked one (by id or --all) answers 401, an expired one too,
FEDGEN_TOKEN_MAX_DAYS caps --expires-days, and both acts are in the audit log as `cli`."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from admin.cli import main
from lab.config import get_settings
from lab.models import ApiToken, AuditEvent
from lab.security import hash_token

API = "/api/v1"


@pytest.fixture
def lab(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`fedgen-lab` pointed at the test database."""
    monkeypatch.setenv("FEDGEN_HOME", str(tmp_path / "cli-home"))
    monkeypatch.setenv("FEDGEN_DATABASE_URL", db_url)
    monkeypatch.delenv("FEDGEN_TOKEN_MAX_DAYS", raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def _me(client: TestClient, token: str) -> int:
    return client.get(f"{API}/me", headers={"Authorization": f"Bearer {token}"}).status_code


def test_create_list_and_revoke_by_id(
    lab: None, client: TestClient, capsys: pytest.CaptureFixture[str], session: Session
) -> None:
    """users create, then tokens create: both tokens work; tokens list shows them (no secret);
    tokens revoke ID ends one and leaves the other."""
    # Execute
    _, out1, _ = _run(capsys, "users", "create", "carol", "--name", "laptop")
    code, out2, _ = _run(capsys, "tokens", "create", "carol", "--name", "ci")
    first, second = out1[-1], out2[-1]
    _, listing, _ = _run(capsys, "tokens", "list", "carol")
    ci_id = next(line.split()[0] for line in listing[1:] if " ci " in line)
    revoked, said, _ = _run(capsys, "tokens", "revoke", ci_id)
    _, after, _ = _run(capsys, "tokens", "list")
    # Assert
    assert code == 0
    assert first.startswith("fgl_")
    assert second.startswith("fgl_")
    assert listing[0].split() == [
        "id",
        "user",
        "name",
        "created",
        "last",
        "used",
        "expires",
        "revoked",
    ]
    assert len(listing) == 3
    assert first not in "\n".join(listing)
    assert revoked == 0
    assert said == ["revoked 1 token of 'carol'"]
    assert _me(client, first) == 200
    assert _me(client, second) == 401
    ci_row = next(line for line in after if line.startswith(ci_id))
    assert ci_row.split()[-1].endswith("Z")  # the revoked column is filled in
    actions = session.scalars(select(AuditEvent.action).where(AuditEvent.actor_name == "cli"))
    assert sorted(actions) == ["token.create", "token.create", "token.revoke"]


def test_revoke_all_of_a_user(
    lab: None, client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    made = [_run(capsys, "users", "create", "dave")[1][-1] for _ in range(2)]
    other = _run(capsys, "users", "create", "erin")[1][-1]
    # Execute
    code, said, _ = _run(capsys, "tokens", "revoke", "--all", "dave")
    # Assert
    assert code == 0
    assert said == ["revoked 2 tokens of 'dave'"]
    assert [_me(client, t) for t in made] == [401, 401]
    assert _me(client, other) == 200


def test_an_expired_cli_token_answers_401(
    lab: None, client: TestClient, capsys: pytest.CaptureFixture[str], session: Session
) -> None:
    # Prepare
    _, out, _ = _run(capsys, "users", "create", "fay", "--expires-days", "2")
    token = out[-1]
    assert _me(client, token) == 200
    row = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
    assert row is not None
    assert row.expires_at is not None
    assert timedelta(days=2) - (row.expires_at - row.created_at) == timedelta(0)
    # Execute: as if the two days had passed
    row.expires_at = datetime.now(UTC) - timedelta(seconds=1)
    session.commit()
    # Assert
    assert _me(client, token) == 401


def test_token_max_days_caps_the_cli(
    lab: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, session: Session
) -> None:
    """Over FEDGEN_TOKEN_MAX_DAYS: exit 2 naming --expires-days and the cap; none asked: the cap."""
    # Prepare
    monkeypatch.setenv("FEDGEN_TOKEN_MAX_DAYS", "30")
    get_settings.cache_clear()
    _run(capsys, "users", "create", "gus")
    # Execute
    over, _, err = _run(capsys, "tokens", "create", "gus", "--expires-days", "31")
    code, out, _ = _run(capsys, "tokens", "create", "gus")
    # Assert
    assert over == 2
    assert "--expires-days" in err
    assert "FEDGEN_TOKEN_MAX_DAYS=30" in err
    assert code == 0
    row = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(out[-1])))
    assert row is not None
    assert row.expires_at is not None
    assert row.expires_at - row.created_at == timedelta(days=30)


def test_unknown_users_and_ids_are_errors(lab: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "tokens", "create", "nobody")[0] == 2
    assert _run(capsys, "tokens", "list", "nobody")[0] == 2
    assert _run(capsys, "tokens", "revoke", str(uuid.uuid4()))[0] == 2
    assert _run(capsys, "tokens", "revoke", "not-an-id")[0] == 2
    assert _run(capsys, "tokens", "revoke", "--all", "nobody")[0] == 2
    code, _, err = _run(capsys, "tokens", "revoke")
    assert code == 2
    assert "--all USER" in err
