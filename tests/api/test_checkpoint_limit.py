"""FEDGEN_MAX_CHECKPOINT_BYTES: a spec whose full checkpoint would be too large is refused (422)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from api.service import checkpoint_problem
from fedgen.spec import ExperimentSpec
from lab.config import Settings
from tests.support.factories import live_worker, make_spec

API = "/api/v1"
LIMIT = re.compile(
    r"estimated full checkpoint \d+(\.\d)? MiB is over the limit "
    r"FEDGEN_MAX_CHECKPOINT_BYTES = 1 MiB"
)
# 3 users holding their own 1.6 M-parameter feature extractor (share: predictor): about 26 MiB.
PER_USER = make_spec(model={"name": "mcmahan-cnn"}, share="predictor")
# One McMahan CNN, nothing per user: about 6.4 MiB, all of it the global model.
BIG_MODEL = make_spec(model={"name": "mcmahan-cnn"})


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The shared settings with a 1 MiB checkpoint limit (the smallest allowed)."""
    return settings.model_copy(update={"max_checkpoint_bytes": 1 << 20})


def _only_error(r: object) -> dict:
    assert r.status_code == 422, r.text  # type: ignore[attr-defined]
    detail = r.json()["detail"]  # type: ignore[attr-defined]
    assert len(detail) == 1, detail
    return detail[0]


def test_run_over_the_limit_is_422_naming_the_field(
    client: TestClient, auth: dict, enqueued: list, session: Session
) -> None:
    """POST /runs: the per-user state names partition.num_users, a large model model.name."""
    live_worker(session, "cpu", slots=4)
    per_user = _only_error(client.post(f"{API}/runs", json={"spec": PER_USER}, headers=auth))
    big_model = _only_error(client.post(f"{API}/runs", json={"spec": BIG_MODEL}, headers=auth))
    ok = client.post(f"{API}/runs", json={"spec": make_spec()}, headers=auth)
    fedgen = client.post(
        f"{API}/runs", json={"spec": make_spec(algorithm={"name": "fedgen"})}, headers=auth
    )
    assert per_user["field"] == "spec.partition.num_users"
    assert LIMIT.search(per_user["msg"]), per_user["msg"]
    assert per_user["msg"].startswith("spec.partition.num_users: estimated full checkpoint ")
    assert big_model["field"] == "spec.model.name"
    assert LIMIT.search(big_model["msg"]), big_model["msg"]
    assert ok.status_code == 202, ok.text
    assert fedgen.status_code == 202, fedgen.text
    assert len(enqueued) == 2
    assert client.get(f"{API}/runs", headers=auth).json()["count"] == 2


def test_clone_and_sweep_over_the_limit_are_422(
    client: TestClient, auth: dict, enqueued: list, session: Session
) -> None:
    """A clone's changes and a sweep's grid are checked too; nothing is queued."""
    live_worker(session, "cpu", slots=4)
    rid = client.post(f"{API}/runs", json={"spec": make_spec()}, headers=auth).json()["id"]
    clone = _only_error(
        client.post(
            f"{API}/runs/{rid}/clone",
            json={"changes": {"model": {"name": "mcmahan-cnn"}}},
            headers=auth,
        )
    )
    sweep = _only_error(
        client.post(
            f"{API}/sweeps",
            json={
                "name": "models",
                "base": make_spec(),
                "grid": {"model.name": ["official-cnn", "mcmahan-cnn"]},
            },
            headers=auth,
        )
    )
    assert clone["field"] == "changes.model.name"
    assert LIMIT.search(clone["msg"]), clone["msg"]
    assert sweep["field"] == "base.model.name"
    assert LIMIT.search(sweep["msg"]), sweep["msg"]
    assert sweep["msg"].endswith("(run 1 of the grid)")
    assert len(enqueued) == 1
    assert client.get(f"{API}/sweeps", headers=auth).json()["count"] == 0


def test_default_limit_refuses_personalised_large_models_only() -> None:
    """1 GiB: 1,000 users each keeping a McMahan feature extractor are over; the default is not."""
    big = ExperimentSpec.model_validate(
        {
            "model": {"name": "mcmahan-cnn"},
            "share": "predictor",
            "partition": {"num_users": 1000},
            "algorithm": {"name": "fedgen"},
        }
    )
    problem = checkpoint_problem(big, 1 << 30)
    assert problem is not None
    field, msg = problem
    assert field == "partition.num_users"
    assert re.fullmatch(
        r"estimated full checkpoint \d+(\.\d)? GiB is over the limit "
        r"FEDGEN_MAX_CHECKPOINT_BYTES = 1 GiB",
        msg,
    ), msg
    assert checkpoint_problem(ExperimentSpec(), 1 << 30) is None
    assert (
        checkpoint_problem(
            ExperimentSpec.model_validate({"algorithm": {"name": "fedgen"}}), 1 << 30
        )
        is None
    )
