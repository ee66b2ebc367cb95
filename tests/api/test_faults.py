"""Faults are answered, not leaked: 503 JSON while the database is away, located sweep errors,
cross-field errors without the spec, and what can only fail later refused at submission."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session, sessionmaker

from api.main import create_app
from lab.config import Settings
from lab.db import make_sessionmaker
from tests.support.factories import create_run, create_user, live_worker, make_spec
from tests.support.fakes import FakeRunner
from worker.claimed_run import execute_run
from worker.outcomes import RunOutcome


@pytest.fixture
def down_client(tmp_path: Path) -> Iterator[TestClient]:
    """An app whose database cannot be opened (its folder is a file): every query fails."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    engine = create_engine(f"sqlite:///{blocker / 'lab.db'}")
    app = create_app(
        Settings(home=tmp_path / "home", database_url="sqlite://", broker_url="memory://"),
        session_factory=make_sessionmaker(engine),
        enqueue=lambda *_: None,
        broker_check=lambda: None,
    )
    with TestClient(app) as c:
        yield c
    engine.dispose()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/v1/runs", {"spec": make_spec()}),
        ("GET", "/api/v1/runs", None),
        ("GET", "/api/v1/runs/00000000-0000-0000-0000-000000000001", None),
        ("DELETE", "/api/v1/runs/00000000-0000-0000-0000-000000000001", None),
        ("GET", "/api/v1/me", None),
        ("POST", "/api/v1/sweeps", {"base": make_spec(), "grid": {"seed": [1, 2]}}),
    ],
)
def test_database_down_is_503_json_with_retry_after(
    down_client: TestClient, method: str, path: str, body: dict | None
) -> None:
    """Every route answers 503 in the error body schema with Retry-After, not a plain 500."""
    r = down_client.request(method, path, json=body, headers={"Authorization": "Bearer x"})
    assert r.status_code == 503
    assert r.headers["content-type"] == "application/json"
    assert r.json()["detail"] == "database unavailable (OperationalError); retry later"
    assert int(r.headers["Retry-After"]) > 0


def test_ready_says_only_unavailable(down_client: TestClient) -> None:
    """/ready: 503 `unavailable` and nothing more (no token can be checked without the
    database; which and why: tests/api/test_ready.py)."""
    r = down_client.get("/ready", headers={"Authorization": "Bearer x"})
    assert r.status_code == 503
    assert r.json() == {"status": "unavailable"}
    assert r.headers["Retry-After"]
    assert down_client.get("/health").status_code == 200


def test_sweep_errors_name_grid_locations(client: TestClient, auth: dict[str, str]) -> None:
    """`partition.alpha` = 0 in the grid is reported at grid.partition.alpha[0]."""
    r = client.post(
        "/api/v1/sweeps",
        json={"base": make_spec(), "grid": {"partition.alpha": [0, 1]}},
        headers=auth,
    )
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert [d["loc"] for d in detail] == [["body", "grid", "partition.alpha", 0]]
    assert detail[0]["field"] == "grid.partition.alpha[0]"
    assert "greater than 0" in detail[0]["msg"]


def test_cross_field_error_names_both_fields_without_the_spec(
    client: TestClient, auth: dict[str, str]
) -> None:
    spec = make_spec(users_per_round=12, partition={"num_users": 10})
    r = client.post("/api/v1/runs", json={"spec": spec}, headers=auth)
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert [d["loc"] for d in detail] == [
        ["body", "spec", "users_per_round"],
        ["body", "spec", "partition", "num_users"],
    ]
    for d in detail:
        assert d["msg"].endswith("users_per_round=12 exceeds partition.num_users=10")
        assert "{" not in d["msg"]  # the spec is not dumped


def test_partition_the_data_cannot_satisfy_is_refused(
    client: TestClient, auth: dict[str, str], enqueued: list
) -> None:
    """The synthetic set with the default split (20 users, alpha 0.1) fails every draw: 422."""
    r = client.post("/api/v1/runs", json={"spec": {"data": {"name": "synthetic"}}}, headers=auth)
    assert r.status_code == 422
    (d,) = r.json()["detail"]
    assert d["field"] == "spec.partition"
    assert "min_samples=10" in d["msg"]
    assert "max_redraws=1000" in d["msg"]
    too_many = make_spec(partition={"num_users": 100, "sampling_ratio": 0.1})
    r = client.post("/api/v1/runs", json={"spec": too_many}, headers=auth)
    assert r.status_code == 422
    assert "num_users=100 x min_samples=10" in r.json()["detail"][0]["msg"]
    assert enqueued == []
    ok = client.post("/api/v1/runs", json={"spec": make_spec()}, headers=auth)
    assert ok.status_code == 202


def test_gpu_run_no_live_worker_serves_is_refused(
    client: TestClient, auth: dict[str, str], session: Session
) -> None:
    """cuda needs a live worker on the gpu queue; cpu is never refused."""
    r = client.post("/api/v1/runs", json={"spec": make_spec(device="cuda:9")}, headers=auth)
    assert r.status_code == 422
    (d,) = r.json()["detail"]
    assert d["loc"] == ["body", "spec", "device"]
    assert "no live worker serves the 'gpu' queue" in d["msg"]
    cpu = client.post("/api/v1/runs", json={"spec": make_spec()}, headers=auth)
    assert cpu.status_code == 202
    # The error names the field where the request holds it: a clone's changes, a sweep's base.
    clone = client.post(
        f"/api/v1/runs/{cpu.json()['id']}/clone",
        json={"changes": {"device": "cuda:9"}},
        headers=auth,
    )
    assert [d["loc"] for d in clone.json()["detail"]] == [["body", "changes", "device"]]
    sweep = client.post(
        "/api/v1/sweeps", json={"base": make_spec(device="cuda"), "grid": {}}, headers=auth
    )
    assert [d["loc"] for d in sweep.json()["detail"]] == [["body", "base", "device"]]
    live_worker(session, queue="gpu")
    ok = client.post("/api/v1/runs", json={"spec": make_spec(device="cuda:0")}, headers=auth)
    assert ok.status_code == 202


def test_succeeded_run_has_its_summary(
    client: TestClient,
    auth: dict[str, str],
    factory: sessionmaker,
    session: Session,
    settings: Settings,
) -> None:
    user, _ = create_user(session, "carol")
    run = create_run(session, user, rounds=3)
    assert (
        execute_run(str(run.id), factory, runner=FakeRunner(), settings=settings)
        == RunOutcome.SUCCEEDED
    )
    got = client.get(f"/api/v1/runs/{run.id}", headers=auth).json()
    assert got["status"] == "succeeded"
    session.expire_all()
    assert got["summary"]
    assert got["summary"] == session.get(type(run), run.id).summary


def test_cancelling_a_queued_run_keeps_its_files(
    client: TestClient, auth: dict[str, str], session: Session, settings: Settings
) -> None:
    """A queued run that ran before (its files from an earlier attempt) is cancelled at once,
    and keeps its checkpoints (cancel keeps them; they go when the run is purged)."""
    from lab.models import User

    alice = session.scalar(select(User).where(User.name == "alice"))
    run = create_run(session, alice)
    folder = settings.checkpoint_root / str(run.id)
    folder.mkdir(parents=True)
    (folder / "000001-full-0123456789abcdef.pt").write_bytes(b"x")
    r = client.post(f"/api/v1/runs/{run.id}/cancel", headers=auth)
    assert r.status_code == 202
    assert r.json()["status"] == "cancelled"
    assert (folder / "000001-full-0123456789abcdef.pt").read_bytes() == b"x"
