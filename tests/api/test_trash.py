"""The trash: DELETE moves a run or a sweep there (hidden from every list, 404 to GET), restore
brings back every round, per-user row and checkpoint as they were, the periodic pass purges
what is older than FEDGEN_TRASH_DAYS; each act is in the audit log. Cancel keeps checkpoints."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from lab import trash_actions
from lab.config import Settings
from lab.models import (
    AuditEvent,
    CheckpointChunk,
    CheckpointRow,
    RoundMetrics,
    RoundUsers,
    Run,
    Sweep,
    User,
    utcnow,
)
from tests.support.factories import create_run, create_sweep_runs, live_worker
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


def _ran(factory: sessionmaker, settings: Settings, run: Run) -> Run:
    """Run `run` to its end with the fake runner (rounds, per-user rows, full and generator
    checkpoints, all through the real write path)."""
    assert (
        execute_run(str(run.id), factory, runner=FakeRunner(), settings=settings)
        == RunOutcome.SUCCEEDED
    )
    return run


def _snapshot(session: Session, rid: uuid.UUID) -> dict[str, Any]:
    """Everything stored under a run: rounds, per-user rows, checkpoint rows and their bytes."""
    session.expire_all()
    rounds = session.execute(
        select(RoundMetrics.round, RoundMetrics.test_acc)
        .where(RoundMetrics.run_id == rid)
        .order_by(RoundMetrics.round)
    ).all()
    users = session.scalar(
        select(func.count()).select_from(RoundUsers).where(RoundUsers.run_id == rid)
    )
    ckpts = session.execute(
        select(CheckpointRow.id, CheckpointRow.round, CheckpointRow.kind, CheckpointRow.size)
        .where(CheckpointRow.run_id == rid)
        .order_by(CheckpointRow.id)
    ).all()
    chunks = session.scalars(
        select(CheckpointChunk.data)
        .join(CheckpointRow, CheckpointRow.id == CheckpointChunk.checkpoint_id)
        .where(CheckpointRow.run_id == rid)
        .order_by(CheckpointChunk.checkpoint_id, CheckpointChunk.seq)
    ).all()
    return {
        "rounds": [tuple(r) for r in rounds],
        "users": users,
        "checkpoints": [tuple(c) for c in ckpts],
        "chunks": len(chunks),
        "bytes": sum(len(c) for c in chunks),
        "sha256": hashlib.sha256(b"".join(chunks)).hexdigest(),
    }


def _ids(body: dict[str, Any]) -> set[str]:
    return {r["id"] for r in body["data"]}


def _events(client: TestClient, token: str, **params: Any) -> list[dict[str, Any]]:
    r = client.get(f"{API}/audit", params=params, headers=_h(token))
    assert r.status_code == 200, r.text
    return r.json()["data"]  # type: ignore[no-any-return]


def test_delete_hides_a_run_and_restore_brings_back_every_row(
    client: TestClient,
    tokens: dict[str, str],
    session: Session,
    factory: sessionmaker,
    settings: Settings,
) -> None:
    """Delete -> gone from GET /runs, GET /runs/{id}, compare and the sweep summary; in
    /trash with its purge time; restore -> rounds, per-user rows and checkpoints (bytes
    included) exactly as before; the audit log has both acts with the member and address."""
    alice = _user(session, "alice")
    sweep_id, runs = create_sweep_runs(session, alice, {"seed": [1, 2]})
    run, other = (_ran(factory, settings, r) for r in runs)
    before = _snapshot(session, run.id)
    assert before["checkpoints"]
    assert before["users"]
    assert before["bytes"] > 0
    h = _h(tokens["alice"])
    compare = f"{API}/compare?run_ids={run.id},{other.id}"
    assert len(client.get(compare, headers=h).json()["runs"]) == 2

    assert client.delete(f"{API}/runs/{run.id}", headers=h).status_code == 204

    assert client.get(f"{API}/runs/{run.id}", headers=h).status_code == 404
    assert client.get(f"{API}/runs/{run.id}/metrics", headers=h).status_code == 404
    assert _ids(client.get(f"{API}/runs", headers=h).json()) == {str(other.id)}
    assert [r["id"] for r in client.get(compare, headers=h).json()["runs"]] == [str(other.id)]
    sweep = client.get(f"{API}/sweeps/{sweep_id}", headers=h).json()
    assert (sweep["count"], sweep["run_ids"]) == (1, [str(other.id)])
    summary = client.get(f"{API}/sweeps/{sweep_id}/summary", headers=h).json()
    assert sum(g["n_total"] for g in summary["groups"]) == 1
    listed = client.get(f"{API}/trash", headers=h).json()
    assert [r["id"] for r in listed["runs"]] == [str(run.id)]
    row = listed["runs"][0]
    assert (row["status"], row["deleted_by"], row["owner"]) == ("succeeded", "alice", "alice")
    deleted_at = datetime.fromisoformat(row["deleted_at"])
    assert datetime.fromisoformat(row["purge_after"]) - deleted_at == timedelta(days=7)
    assert _snapshot(session, run.id) == before  # nothing deleted while in the trash

    r = client.post(f"{API}/runs/{run.id}/restore", headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "succeeded"
    assert _snapshot(session, run.id) == before
    assert client.get(f"{API}/runs/{run.id}", headers=h).status_code == 200
    assert len(client.get(compare, headers=h).json()["runs"]) == 2
    assert client.get(f"{API}/trash", headers=h).json()["runs"] == []
    events = _events(client, tokens["alice"], subject=str(run.id))
    assert [(e["action"], e["actor"], e["address"]) for e in events] == [
        ("run.restore", "alice", "testclient"),
        ("run.delete", "alice", "testclient"),
    ]
    assert datetime.fromisoformat(events[1]["at"]) <= datetime.fromisoformat(events[0]["at"])


def test_a_sweep_goes_to_the_trash_with_its_runs_and_comes_back_with_them(
    client: TestClient,
    tokens: dict[str, str],
    session: Session,
    factory: sessionmaker,
    settings: Settings,
) -> None:
    """DELETE /sweeps/{id} trashes the sweep and its runs; a run of it cannot be restored alone
    (409); the sweep's restore brings back the runs trashed with it, every row intact, while a
    run deleted on its own before stays in the trash."""
    alice = _user(session, "alice")
    sweep_id, runs = create_sweep_runs(session, alice, {"seed": [1, 2, 3]})
    for r in runs:
        _ran(factory, settings, r)
    before = {r.id: _snapshot(session, r.id) for r in runs}
    h = _h(tokens["alice"])
    assert client.delete(f"{API}/runs/{runs[0].id}", headers=h).status_code == 204

    assert client.delete(f"{API}/sweeps/{sweep_id}", headers=h).status_code == 204

    assert client.get(f"{API}/sweeps/{sweep_id}", headers=h).status_code == 404
    assert client.get(f"{API}/sweeps/{sweep_id}/summary", headers=h).status_code == 404
    assert client.get(f"{API}/sweeps", headers=h).json()["count"] == 0
    assert client.get(f"{API}/runs", headers=h).json()["count"] == 0
    listed = client.get(f"{API}/trash", headers=h).json()
    assert [(s["id"], s["runs"]) for s in listed["sweeps"]] == [(str(sweep_id), 2)]
    assert len(listed["runs"]) == 3
    blocked = client.post(f"{API}/runs/{runs[1].id}/restore", headers=h)
    assert blocked.status_code == 409
    assert "restore the sweep" in blocked.json()["detail"]

    r = client.post(f"{API}/sweeps/{sweep_id}/restore", headers=h)
    assert r.status_code == 200, r.text
    assert r.json() == {"id": str(sweep_id), "name": "t", "runs_restored": 2}
    sweep = client.get(f"{API}/sweeps/{sweep_id}", headers=h).json()
    assert set(sweep["run_ids"]) == {str(runs[1].id), str(runs[2].id)}
    assert [x["id"] for x in client.get(f"{API}/trash", headers=h).json()["runs"]] == [
        str(runs[0].id)
    ]
    assert client.post(f"{API}/runs/{runs[0].id}/restore", headers=h).status_code == 200
    assert {r.id: _snapshot(session, r.id) for r in runs} == before
    actions = [e["action"] for e in _events(client, tokens["alice"], subject=str(sweep_id))]
    assert actions == ["sweep.restore", "sweep.delete"]


def test_only_the_owner_or_an_admin_deletes_and_restores(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """Another member: 403 on delete and restore, an empty trash, 403 asking for another's;
    unknown ids and runs not in the trash: 404; the admin restores anyone's."""
    alice = _user(session, "alice")
    run = create_run(session, alice)
    sweep_id, _ = create_sweep_runs(session, alice, {"seed": [1]})
    bob, admin, me = _h(tokens["bob"]), _h(tokens["admin"]), _h(tokens["alice"])
    assert client.delete(f"{API}/runs/{run.id}", headers=bob).status_code == 403
    assert client.delete(f"{API}/sweeps/{sweep_id}", headers=bob).status_code == 403
    assert client.post(f"{API}/runs/{run.id}/restore", headers=me).status_code == 404
    assert client.delete(f"{API}/runs/{run.id}", headers=me).status_code == 204
    assert client.delete(f"{API}/runs/{run.id}", headers=me).status_code == 404  # already there
    assert client.delete(f"{API}/sweeps/{sweep_id}", headers=me).status_code == 204

    assert client.post(f"{API}/runs/{run.id}/restore", headers=bob).status_code == 403
    assert client.post(f"{API}/sweeps/{sweep_id}/restore", headers=bob).status_code == 403
    assert client.post(f"{API}/runs/{uuid.uuid4()}/restore", headers=me).status_code == 404
    assert client.post(f"{API}/sweeps/{uuid.uuid4()}/restore", headers=me).status_code == 404
    assert client.post(f"{API}/runs/nope/restore", headers=me).status_code == 404
    mine = client.get(f"{API}/trash", headers=bob).json()
    assert (mine["runs"], mine["sweeps"]) == ([], [])
    assert client.get(f"{API}/trash?owner=alice", headers=bob).status_code == 403
    assert len(client.get(f"{API}/trash?owner=alice", headers=admin).json()["runs"]) == 2
    assert client.get(f"{API}/trash?owner=bob", headers=admin).json()["runs"] == []
    assert client.get(f"{API}/trash?limit=100000", headers=me).status_code == 422

    r = client.post(f"{API}/runs/{run.id}/restore", headers=admin)
    assert r.status_code == 200
    # Deleting a queued run cancelled it; restored, it stays cancelled (not queued again).
    assert (r.json()["status"], r.json()["cancel_requested"]) == ("cancelled", True)
    events = _events(client, tokens["admin"], subject=str(run.id))
    assert [(e["action"], e["actor"]) for e in events] == [
        ("run.restore", "admin"),
        ("run.delete", "alice"),
    ]
    assert events[1]["detail"] == {"status": "queued", "owner": "alice"}


def test_a_trashed_run_is_cancelled_and_never_sent(
    client: TestClient,
    tokens: dict[str, str],
    session: Session,
    enqueued: list[tuple[str, str]],
) -> None:
    """A queued run deleted is cancelled at once; a running one is asked to stop (its worker
    stops between rounds); the dispatcher sends neither, restored or not."""
    from lab.dispatch import dispatch_pass

    alice = _user(session, "alice")
    queued = create_run(session, alice)
    running = create_run(session, alice)
    session.execute(
        update(Run)
        .where(Run.id == running.id)
        .values(status="running", lease_token="t", lease_expires_at=utcnow() - timedelta(hours=1))
    )
    session.commit()
    h = _h(tokens["alice"])
    assert client.delete(f"{API}/runs/{queued.id}", headers=h).status_code == 204
    assert client.delete(f"{API}/runs/{running.id}", headers=h).status_code == 204
    live_worker(session, "cpu", slots=4)
    session.expire_all()
    assert session.get(Run, queued.id).status == "cancelled"  # type: ignore[union-attr]
    assert session.get(Run, running.id).cancel_requested  # type: ignore[union-attr]

    sent: list[str] = []
    dispatch_pass(session, lambda rid, q: sent.append(rid), Settings(), "test")
    assert sent == []
    assert enqueued == []
    session.expire_all()
    assert session.get(Run, running.id).status == "cancelled"  # type: ignore[union-attr]


def _age(session: Session, model: type[Run] | type[Sweep], ident: uuid.UUID, days: float) -> None:
    """Make a trashed row look deleted `days` ago."""
    when = utcnow() - timedelta(days=days)
    session.execute(update(model).where(model.id == ident).values(deleted_at=when))
    if model is Sweep:  # the runs trashed with it share its deleted_at
        session.execute(update(Run).where(Run.sweep_id == ident).values(deleted_at=when))
    session.commit()


def _count(session: Session, model: Any, rid: uuid.UUID) -> int:
    return session.scalar(select(func.count()).select_from(model).where(model.run_id == rid)) or 0


def test_the_pass_purges_what_is_older_than_trash_days_only(
    client: TestClient,
    tokens: dict[str, str],
    session: Session,
    factory: sessionmaker,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Trashed 8 days ago: purged with its rows, checkpoints and chunks (run.purge, by system);
    trashed 6 days ago: kept whole. A sweep goes once its runs are gone (sweep.purge); each
    pass purges a bounded number of runs."""
    alice = _user(session, "alice")
    old, young = (_ran(factory, settings, create_run(session, alice, seed=s)) for s in (1, 2))
    sweep_id, sweep_runs = create_sweep_runs(session, alice, {"seed": [3, 4]})
    old_id, young_id, sweep_run_ids = old.id, young.id, [r.id for r in sweep_runs]
    h = _h(tokens["alice"])
    for rid in (old_id, young_id):
        assert client.delete(f"{API}/runs/{rid}", headers=h).status_code == 204
    assert client.delete(f"{API}/sweeps/{sweep_id}", headers=h).status_code == 204
    _age(session, Run, old_id, 8)
    _age(session, Run, young_id, 6)
    _age(session, Sweep, sweep_id, 8)
    young_before = _snapshot(session, young_id)
    monkeypatch.setattr(trash_actions, "PURGE_BATCH", 2)

    first = trash_actions.purge_pass(factory, settings)
    second = trash_actions.purge_pass(factory, settings)

    assert (first.runs, first.sweeps) == (2, 0)  # bounded: the sweep's last run waits
    assert (second.runs, second.sweeps) == (1, 1)
    session.expire_all()
    assert session.get(Run, old_id) is None
    assert all(session.get(Run, r) is None for r in sweep_run_ids)
    assert session.get(Sweep, sweep_id) is None
    for model in (RoundMetrics, RoundUsers, CheckpointRow):
        assert _count(session, model, old_id) == 0
    # Only the young run's chunks are left (the old run's went with its checkpoint rows).
    assert (
        session.scalar(select(func.count()).select_from(CheckpointChunk)) == young_before["chunks"]
    )
    assert _snapshot(session, young_id) == young_before
    purges = session.execute(
        select(AuditEvent.action, AuditEvent.subject_id, AuditEvent.actor_name, AuditEvent.actor_id)
        .where(AuditEvent.action.in_(["run.purge", "sweep.purge"]))
        .order_by(AuditEvent.at)
    ).all()
    assert {(a, s) for a, s, _, _ in purges} == {
        ("run.purge", str(old_id)),
        *(("run.purge", str(r)) for r in sweep_run_ids),
        ("sweep.purge", str(sweep_id)),
    }
    assert {(n, i) for _, _, n, i in purges} == {("system", None)}
    assert trash_actions.purge_pass(factory, settings).runs == 0  # nothing more, nothing twice
