"""GET /runs?id_prefix=...: the runs whose id starts with the given hex digits, on both
databases (Postgres keeps a uuid as 16 bytes, SQLite as 32 hex characters), the edges of the
range included and the trash left out; a prefix that is not hex is a 422 naming the field."""

from __future__ import annotations

import uuid

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from lab.models import Run, User
from tests.support.factories import create_run

API = "/api/v1"
IDS = {
    "a": "1a2b3c4d-0000-4000-8000-000000000001",
    "b": "1a2b3c4d-9999-4000-8000-000000000002",
    "below": "1a2b3c4c-ffff-4fff-bfff-ffffffffffff",  # just before the 1a2b3c4d range
    "above": "1a2b3c4e-0000-4000-8000-000000000000",  # just after it
    "last": "ffffffff-ffff-4fff-bfff-ffffffffffff",
}


def _runs_with_ids(session: Session, owners: list[User]) -> None:
    """One queued run per IDS entry, its id set to the entry's, owners taking turns."""
    for i, rid in enumerate(IDS.values()):
        run = create_run(session, owners[i % len(owners)], seed=i)
        session.execute(update(Run).where(Run.id == run.id).values(id=uuid.UUID(rid)))
    session.commit()


def _ids(client: TestClient, auth: dict[str, str], prefix: str) -> set[str]:
    r = client.get(f"{API}/runs", params={"id_prefix": prefix}, headers=auth)
    assert r.status_code == 200, r.text
    return {run["id"] for run in r.json()["data"]}


def test_id_prefix_finds_the_runs_whose_id_starts_so(
    client: TestClient, session: Session, tokens: dict[str, str], auth: dict[str, str]
) -> None:
    """Any member finds any member's run by prefix (reading is open to members, as GET /runs
    and GET /runs/{id} are); dashes and case do not matter; deleted runs are not found."""
    owners = list(session.query(User).order_by(User.name))
    _runs_with_ids(session, owners)
    bob = {"Authorization": f"Bearer {tokens['bob']}"}

    assert _ids(client, auth, "1a2b3c4d") == {IDS["a"], IDS["b"]}
    assert _ids(client, bob, "1A2B3C4D") == {IDS["a"], IDS["b"]}
    assert _ids(client, auth, "1a2b3c4d0") == {IDS["a"]}
    assert _ids(client, auth, "1a2b3c4d-9") == {IDS["b"]}
    assert _ids(client, auth, IDS["a"]) == {IDS["a"]}
    assert _ids(client, auth, "1a2b3c4c") == {IDS["below"]}
    assert _ids(client, auth, "1a2b3c4e") == {IDS["above"]}
    assert _ids(client, auth, "ffff") == {IDS["last"]}
    assert _ids(client, auth, "0") == set()

    admin = {"Authorization": f"Bearer {tokens['admin']}"}
    client.delete(f"{API}/runs/{IDS['b']}", headers=admin).raise_for_status()
    assert _ids(client, auth, "1a2b3c4d") == {IDS["a"]}


def test_a_prefix_that_is_not_hex_is_a_422(client: TestClient, auth: dict[str, str]) -> None:
    for bad in ("xyz", "----", "1" * 37):
        r = client.get(f"{API}/runs", params={"id_prefix": bad}, headers=auth)
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["detail"][0]["field"] == "id_prefix", r.text
