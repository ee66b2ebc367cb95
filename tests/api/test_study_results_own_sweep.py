"""Every study answers results for the sweep its own launch created (the link POST -> GET)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from fedgen.studies.registry import STUDIES

API = "/api/v1"


# Three studies of different layouts (a model axis, a CIFAR study, a timing table); every name
# must be a registered study.
SOME = ["fig5-mlp-vs-cnn", "cifar10", "table3"]


@pytest.mark.parametrize("name", SOME)
def test_results_of_the_launched_sweep(client: TestClient, auth: dict, name: str) -> None:
    """POST /studies/{name} then GET /studies/{name}/results?sweep_id=<its sweep>: 200, same study."""
    # Prepare
    assert name in STUDIES
    launched = client.post(f"{API}/studies/{name}", json={"seeds": 1, "rounds": 2}, headers=auth)
    assert launched.status_code == 202, launched.text
    sweep_id = launched.json()["sweep"]["id"]
    # Execute
    r = client.get(f"{API}/studies/{name}/results", params={"sweep_id": sweep_id}, headers=auth)
    # Assert
    assert r.status_code == 200, r.text
    assert r.json()["study"] == name
