"""Runs API on a real database: submit, list/filter, pagination, auth, cancel, delete, clone."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from lab.models import Run
from tests.support.factories import live_worker, make_spec

API = "/api/v1"


def _h(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_submit_returns_202_and_enqueues(
    client: TestClient, auth: dict[str, str], enqueued: list, session: Session
) -> None:
    """A valid spec is stored queued and, a worker slot being free, its task sent after the commit."""
    # Prepare
    live_worker(session, "cpu", slots=1)
    # Execute
    r = client.post(f"{API}/runs", json={"spec": make_spec(seed=3)}, headers=auth)
    # Assert
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["status"] == "queued"
    assert body["owner"] == "alice"
    assert body["current_round"] == -1
    assert body["rounds"] == 2
    assert body["spec"]["seed"] == 3
    assert enqueued == [(body["id"], "worker.w1")]  # the live worker's own queue
    assert (
        client.get(f"{API}/runs/{body['id']}", headers=auth).json()["spec_hash"]
        == body["spec_hash"]
    )


def test_auth_401_without_or_with_bad_token(client: TestClient, tokens: dict[str, str]) -> None:
    """No token or an unknown token is 401; health needs none."""
    assert client.get(f"{API}/runs").status_code == 401
    assert client.get(f"{API}/runs", headers=_h("nope")).status_code == 401
    assert client.get(f"{API}/health").status_code == 200
    assert client.get(f"{API}/ready").json() == {"status": "ok"}  # the detail: members only
    assert client.get("/health").status_code == 200
    assert client.get("/ready", headers=_h(tokens["bob"])).json()["database"] == "ok"
    assert client.get(f"{API}/me", headers=_h(tokens["bob"])).json()["name"] == "bob"


def test_cancel_and_delete_403_for_others(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """Only the owner or an admin may cancel or delete; everyone may read."""
    # Prepare
    rid = client.post(
        f"{API}/runs", json={"spec": make_spec()}, headers=_h(tokens["alice"])
    ).json()["id"]
    # Execute / Assert
    assert client.get(f"{API}/runs/{rid}", headers=_h(tokens["bob"])).status_code == 200
    assert client.post(f"{API}/runs/{rid}/cancel", headers=_h(tokens["bob"])).status_code == 403
    assert client.delete(f"{API}/runs/{rid}", headers=_h(tokens["bob"])).status_code == 403
    r = client.post(f"{API}/runs/{rid}/cancel", headers=_h(tokens["alice"]))
    assert r.status_code == 202
    assert r.json()["status"] == "cancelled"
    assert r.json()["cancel_requested"]
    assert client.delete(f"{API}/runs/{rid}", headers=_h(tokens["admin"])).status_code == 204
    assert client.get(f"{API}/runs/{rid}", headers=_h(tokens["alice"])).status_code == 404
    # In the trash, not gone: the row stays until it is purged (tests/api/test_trash.py).
    assert session.scalar(select(func.count()).select_from(Run)) == 1
    assert session.scalar(select(Run.deleted_by)) == "admin"


def test_list_filters_and_pagination(client: TestClient, tokens: dict[str, str]) -> None:
    """Filters by algorithm, tag, owner, status; limit/offset pages; page size limit."""
    # Prepare
    for i in range(5):
        alg = "fedgen" if i % 2 else "fedavg"
        client.post(
            f"{API}/runs",
            json={"spec": make_spec(seed=i, algorithm={"name": alg}, tags=[f"t{i % 2}"])},
            headers=_h(tokens["alice"]),
        )
    client.post(f"{API}/runs", json={"spec": make_spec()}, headers=_h(tokens["bob"]))
    h = _h(tokens["alice"])
    # Execute / Assert
    assert client.get(f"{API}/runs", headers=h).json()["count"] == 6
    assert client.get(f"{API}/runs?algorithm=fedgen", headers=h).json()["count"] == 2
    assert client.get(f"{API}/runs?tag=t0", headers=h).json()["count"] == 3
    assert client.get(f"{API}/runs?owner=bob", headers=h).json()["count"] == 1
    assert client.get(f"{API}/runs?status=running", headers=h).json()["count"] == 0
    assert (
        client.get(
            f"{API}/runs?dataset=synthetic&created_after=2000-01-01T00:00:00Z", headers=h
        ).json()["count"]
        == 6
    )
    page1 = client.get(f"{API}/runs?limit=4", headers=h).json()
    page2 = client.get(f"{API}/runs?limit=4&offset=4", headers=h).json()
    assert len(page1["data"]) == 4
    assert len(page2["data"]) == 2
    assert not {r["id"] for r in page1["data"]} & {r["id"] for r in page2["data"]}
    assert client.get(f"{API}/runs?limit=501", headers=h).status_code == 422
    assert client.get(f"{API}/runs?status=bogus", headers=h).status_code == 422


def test_clone_with_changes(
    client: TestClient, auth: dict[str, str], enqueued: list, session: Session
) -> None:
    """Clone merges nested changes and validates the result."""
    # Prepare
    live_worker(session, "cpu", slots=2)
    rid = client.post(f"{API}/runs", json={"spec": make_spec()}, headers=auth).json()["id"]
    # Execute
    r = client.post(
        f"{API}/runs/{rid}/clone",
        json={"changes": {"partition": {"alpha": 1.0}, "seed": 7}},
        headers=auth,
    )
    bad = client.post(f"{API}/runs/{rid}/clone", json={"changes": {"rounds": 0}}, headers=auth)
    # Assert
    assert r.status_code == 202
    spec = r.json()["spec"]
    assert spec["partition"] == {**spec["partition"], "alpha": 1.0, "num_users": 3}
    assert spec["seed"] == 7
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["field"] == "changes.rounds"
    assert len(enqueued) == 2


def test_a_new_run_that_names_no_execution_gets_auto_and_one_that_does_keeps_it(
    client: TestClient, auth: dict[str, str]
) -> None:
    """`auto` is the lab's default for new runs (issue 33); a named execution is kept, and a
    sweep's base gets the same default."""
    unnamed = client.post(f"{API}/runs", json={"spec": make_spec(seed=1)}, headers=auth).json()
    named = client.post(
        f"{API}/runs", json={"spec": {**make_spec(seed=2), "execution": "sequential"}}, headers=auth
    ).json()
    sweep = client.post(
        f"{API}/sweeps",
        json={"name": "s", "base": make_spec(), "grid": {"seed": [0, 1]}},
        headers=auth,
    )
    assert unnamed["spec"]["execution"] == "auto"
    assert "execution" not in named["spec"]  # sequential dumps without the field (old hashes)
    assert sweep.status_code == 202, sweep.text
    run_ids = sweep.json()["run_ids"]
    specs = [client.get(f"{API}/runs/{i}", headers=auth).json()["spec"] for i in run_ids]
    assert [s["execution"] for s in specs] == ["auto", "auto"]
