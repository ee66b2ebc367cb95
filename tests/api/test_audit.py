"""GET /audit: an admin reads every act (filters, pages newest first), a member only their own;
cancel is recorded and keeps every checkpoint, from the API and from the worker's claim."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from lab.config import Settings
from lab.models import CheckpointRow, Run, User, utcnow
from tests.support.factories import create_run
from tests.support.fakes import FakeRunner
from worker.claimed_run import execute_run
from worker.outcomes import RunOutcome

API = "/api/v1"


def _h(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _user(session: Session, name: str) -> User:
    user = session.scalar(select(User).where(User.name == name))
    assert user is not None
    return user


def _audit(client: TestClient, token: str, **params: Any) -> Any:
    return client.get(f"{API}/audit", params=params, headers=_h(token))


def _acts(client: TestClient, tokens: dict[str, str], session: Session) -> dict[str, uuid.UUID]:
    """alice deletes and restores her run, bob cancels and deletes his."""
    a = create_run(session, _user(session, "alice")).id
    b = create_run(session, _user(session, "bob")).id
    alice, bob = _h(tokens["alice"]), _h(tokens["bob"])
    assert client.delete(f"{API}/runs/{a}", headers=alice).status_code == 204
    assert client.post(f"{API}/runs/{a}/restore", headers=alice).status_code == 200
    assert client.post(f"{API}/runs/{b}/cancel", headers=bob).status_code == 202
    assert client.delete(f"{API}/runs/{b}", headers=bob).status_code == 204
    return {"alice": a, "bob": b}


def test_members_read_their_own_acts_and_admins_everyones(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """bob sees his two acts, newest first; the admin all four, filtered by actor, action and
    subject; bob asking for alice's acts is a 403."""
    ids = _acts(client, tokens, session)

    bobs = _audit(client, tokens["bob"]).json()["data"]
    everyone = _audit(client, tokens["admin"]).json()["data"]

    assert [(e["actor"], e["action"]) for e in bobs] == [
        ("bob", "run.delete"),
        ("bob", "run.cancel"),
    ]
    assert bobs[1]["subject_kind"] == "run"
    assert bobs[1]["subject_id"] == str(ids["bob"])
    assert bobs[1]["detail"] == {"status": "queued", "owner": "bob"}
    fields = {"at", "actor", "action", "subject_kind", "subject_id", "address", "detail"}
    assert set(bobs[0]) == fields
    newest_first = ["run.delete", "run.cancel", "run.restore", "run.delete"]
    assert [e["action"] for e in everyone] == newest_first
    assert _audit(client, tokens["alice"]).json()["data"] == everyone[2:]
    by_alice = _audit(client, tokens["admin"], actor="alice").json()["data"]
    assert [e["action"] for e in by_alice] == ["run.restore", "run.delete"]
    deletes = _audit(client, tokens["admin"], action="run.delete").json()["data"]
    assert [e["subject_id"] for e in deletes] == [str(ids["bob"]), str(ids["alice"])]
    about_a = _audit(client, tokens["admin"], subject=str(ids["alice"])).json()["data"]
    assert len(about_a) == 2
    assert _audit(client, tokens["bob"], actor="alice").status_code == 403
    assert _audit(client, tokens["bob"], actor="bob").json()["data"] == bobs
    assert _audit(client, tokens["bob"], subject=str(ids["alice"])).json()["data"] == []


def test_pages_and_bad_filters(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """`limit` pages newest first, `before=` the previous page's next_before continues;
    limit over the page size and an unknown action are 422s naming the field."""
    _acts(client, tokens, session)
    first = _audit(client, tokens["admin"], limit=3).json()
    assert len(first["data"]) == 3
    assert first["next_before"] == first["data"][-1]["at"]
    rest = _audit(client, tokens["admin"], limit=3, before=first["next_before"]).json()
    assert [e["action"] for e in rest["data"]] == ["run.delete"]
    assert rest["next_before"] is None

    too_many = _audit(client, tokens["admin"], limit=100000)
    unknown = _audit(client, tokens["admin"], action="run.explode")
    assert too_many.status_code == 422
    assert "limit" in too_many.text
    assert unknown.status_code == 422
    assert "run.delete" in unknown.text
    assert client.get(f"{API}/audit").status_code == 401


def _checkpoints(session: Session, rid: uuid.UUID) -> list[tuple[int, str, str, int]]:
    session.expire_all()
    rows = session.execute(
        select(CheckpointRow.round, CheckpointRow.kind, CheckpointRow.sha256, CheckpointRow.size)
        .where(CheckpointRow.run_id == rid)
        .order_by(CheckpointRow.round, CheckpointRow.kind)
    )
    return [tuple(r) for r in rows]


def _with_checkpoints(factory: sessionmaker, settings: Settings, session: Session) -> Run:
    """A run that stored rounds and checkpoints, then was handed back to wait again (queued
    on the API's path below, running with an expired lease on the worker's)."""
    run = create_run(session, _user(session, "alice"), algorithm={"name": "fedgen"}, rounds=3)
    assert (
        execute_run(str(run.id), factory, runner=FakeRunner(), settings=settings)
        == RunOutcome.SUCCEEDED
    )
    return run


def test_cancel_from_the_api_keeps_every_checkpoint(
    client: TestClient,
    tokens: dict[str, str],
    session: Session,
    factory: sessionmaker,
    settings: Settings,
) -> None:
    """A queued run with stored checkpoints (from an earlier attempt) cancelled through the
    API: cancelled at once, each checkpoint kept; recorded as run.cancel."""
    run = _with_checkpoints(factory, settings, session)
    before = _checkpoints(session, run.id)
    assert {k for _, k, _, _ in before} >= {"full", "generator"}
    session.execute(update(Run).where(Run.id == run.id).values(status="queued"))
    session.commit()

    r = client.post(f"{API}/runs/{run.id}/cancel", headers=_h(tokens["alice"]))

    assert r.json()["status"] == "cancelled"
    assert _checkpoints(session, run.id) == before
    assert _audit(client, tokens["alice"], action="run.cancel").json()["data"][0][
        "subject_id"
    ] == str(run.id)


def test_cancel_on_the_workers_claim_keeps_every_checkpoint(
    tokens: dict[str, str], session: Session, factory: sessionmaker, settings: Settings
) -> None:
    """A run whose worker died after a cancel was asked: the next delivery ends it cancelled
    (the claim path) without running it, each checkpoint kept."""
    run = _with_checkpoints(factory, settings, session)
    before = _checkpoints(session, run.id)
    session.execute(
        update(Run)
        .where(Run.id == run.id)
        .values(
            status="running",
            cancel_requested=True,
            lease_token="dead",
            lease_expires_at=utcnow() - timedelta(minutes=5),
        )
    )
    session.commit()
    runner = FakeRunner()

    assert (
        execute_run(str(run.id), factory, runner=runner, settings=settings) == RunOutcome.CANCELLED
    )

    assert runner.calls == []
    assert _checkpoints(session, run.id) == before
    assert session.get(Run, run.id).status == "cancelled"  # type: ignore[union-attr]
