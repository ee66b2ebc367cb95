"""A 10,000-user spec against a member's quota: the footprint counts the per-user state kept
for the users ever sampled (SCAFFOLD's c_i), so a long run is refused and a short one is not."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from lab.config import Settings
from tests.support.factories import make_spec

API = "/api/v1"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """A member's quota of 200 MiB."""
    return settings.model_copy(update={"quota_bytes": 200 << 20})


def _spec(rounds: int) -> dict[str, Any]:
    return make_spec(
        data={"name": "fashion-mnist"},
        partition={"num_users": 10_000, "alpha": 100.0, "sampling_ratio": 1.0, "min_samples": 1},
        algorithm={"name": "scaffold"},
        users_per_round=100,
        rounds=rounds,
        checkpoint_every=0,
    )


def test_ten_thousand_users_are_refused_by_a_small_quota_when_many_get_sampled(
    client: TestClient, auth: dict[str, str]
) -> None:
    # 2 rounds: c_i of 200 users at most; fits.
    ok = client.post(f"{API}/runs", json={"spec": _spec(2)}, headers=auth)
    assert ok.status_code == 202, ok.text
    # 50 rounds: c_i of up to 5,000 users (about 100 KB each for the official CNN): over 200 MiB
    # (and under FEDGEN_MAX_CHECKPOINT_BYTES, which 10,000 users' c_i would exceed).
    r = client.post(f"{API}/runs", json={"spec": _spec(50)}, headers=auth)
    assert r.status_code == 422, r.text
    (err,) = r.json()["detail"]
    assert err["field"] == "spec.partition.num_users"
    assert "is over the limit FEDGEN_QUOTA_BYTES = 200 MiB" in err["msg"]
