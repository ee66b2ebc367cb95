"""POST /sweeps answers with the sweep's dashboard link (its Compare view), the `link` its
webhooks carry; GET /sweeps/{id} too."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.support.factories import make_spec

API = "/api/v1"


def test_a_sweep_answer_links_to_its_dashboard_page(
    client: TestClient, auth: dict[str, str]
) -> None:
    body = {"name": "alpha", "base": make_spec(), "grid": {"seed": [0, 1]}}
    made = client.post(f"{API}/sweeps", json=body, headers=auth)
    assert made.status_code == 202, made.text
    sweep_id = made.json()["id"]
    assert made.json()["link"] == f"/?page=compare&sweep={sweep_id}"
    again = client.get(f"{API}/sweeps/{sweep_id}", headers=auth).json()
    assert again["link"] == made.json()["link"]
