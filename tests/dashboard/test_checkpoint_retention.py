"""FEDGEN_KEEP_GENERATOR_CHECKPOINTS: a FedGen run's generator checkpoints are pruned under the
rule while it runs, GET /runs/{id}/checkpoints says which were pruned and why, and Inspect still
draws the generator from those kept."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.apptest import open_page
from tests.support.dashboard_lab import Lab, tiny_spec
from tests.support.fakes import FakeRunner
from vocab.footprint import kept_checkpoint_rounds, parse_keep_rule
from worker.claimed_run import execute_run

RULE = "every:4,last:1"


@pytest.fixture
def pruned_run(lab: Lab, lab_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> str:
    """A finished 6-round FedGen run that wrote a generator (and a full) checkpoint every round,
    under RULE and the newest 2 full checkpoints, on the session's lab (the API and the worker
    read the same settings, as in a lab)."""
    monkeypatch.setattr(lab.settings, "keep_generator_checkpoints", RULE)
    monkeypatch.setattr(lab.settings, "keep_full_checkpoints", 2)
    spec = tiny_spec(
        rounds=6,
        checkpoint_every=1,
        algorithm={"name": "fedgen"},
        partition={"num_users": 4, "alpha": 0.1},
    )
    with lab.client() as c:
        run_id = str(c.post("/runs", json={"spec": spec}).raise_for_status().json()["id"])
    status = execute_run(
        run_id, lab.app.state.sessionmaker, runner=FakeRunner(), settings=lab.settings
    )
    assert status == "succeeded"
    return run_id


def test_generators_pruned_and_reported(lab: Lab, pruned_run: str) -> None:
    """Of generators at rounds 1-6, 4 (a multiple of 4) and 6 (the newest, final) are kept;
    the API lists the others and the full checkpoints pruned, each with the rule that did it."""
    with lab.client() as c:
        body = c.get(f"/runs/{pruned_run}/checkpoints").raise_for_status().json()
    kept = sorted(ck["round"] for ck in body["data"] if ck["kind"] == "generator")
    assert kept == kept_checkpoint_rounds(6, 1, parse_keep_rule(RULE)) == [4, 6]
    assert sorted(ck["round"] for ck in body["data"] if ck["kind"] == "full") == [5, 6]
    pruned = {p["kind"]: p for p in body["pruned"]}
    assert pruned["generator"]["rounds"] == [1, 2, 3, 5]
    assert f"FEDGEN_KEEP_GENERATOR_CHECKPOINTS={RULE}" in pruned["generator"]["reason"]
    assert "multiples of 4" in pruned["generator"]["reason"]
    assert pruned["full"]["rounds"] == [1, 2, 3, 4]
    assert "FEDGEN_KEEP_FULL_CHECKPOINTS=2" in pruned["full"]["reason"]


def test_inspect_draws_the_kept_generators(app_path: str, pruned_run: str) -> None:
    """Inspect offers only the kept rounds and draws the partition and the latents."""
    at = open_page(app_path, "app_pages/inspect.py", {"live_run_id": pruned_run})
    assert not at.exception
    assert not at.error
    assert set(at.multiselect(key="inspect_rounds").options) == {"4", "6"}
    assert len(at.get("plotly_chart")) == 2
