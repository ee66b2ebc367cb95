"""Responses match their declared types: /compare's body is its ComparePublic, runs show owners."""

from __future__ import annotations

from fastapi.testclient import TestClient
from pydantic import TypeAdapter
from sqlalchemy.orm import Session

from tests.support.factories import create_run, create_user, make_spec, seed_rounds
from vocab.schemas.results import ComparePublic

API = "/api/v1"


def test_compare_body_is_a_compare_public(client: TestClient, auth: dict, session: Session) -> None:
    """The orjson-written body validates as ComparePublic and has no other keys."""
    bob, _ = create_user(session, "bob")
    run = create_run(session, bob, seed=4, rounds=3)
    seed_rounds(session, run, [0.1, 0.2, 0.3, 0.4])
    body = client.get(f"{API}/compare?run_ids={run.id}", headers=auth).json()
    parsed = TypeAdapter(ComparePublic).validate_python(body)
    (one,) = parsed.runs
    assert (one.id, one.owner, one.seed, one.rounds) == (str(run.id), "bob", 4, [0, 1, 2, 3])
    schema = client.get(f"{API}/openapi.json").json()["components"]["schemas"]["CompareRun"]
    assert set(body["runs"][0]) == set(schema["properties"]) == set(schema["required"])


def test_run_public_names_the_owner_not_the_caller(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """A run read by the admin (list, get, cancel) shows its owner's name from the joined row."""
    admin = {"Authorization": f"Bearer {tokens['admin']}"}
    alice = {"Authorization": f"Bearer {tokens['alice']}"}
    run_id = client.post(f"{API}/runs", json={"spec": make_spec()}, headers=alice).json()["id"]
    listed = client.get(f"{API}/runs", headers=admin).json()["data"]
    assert [(r["id"], r["owner"]) for r in listed] == [(run_id, "alice")]
    assert client.get(f"{API}/runs/{run_id}", headers=admin).json()["owner"] == "alice"
    cancelled = client.post(f"{API}/runs/{run_id}/cancel", headers=admin).json()
    assert (cancelled["owner"], cancelled["status"], cancelled["sweep_id"]) == (
        "alice",
        "cancelled",
        None,
    )
