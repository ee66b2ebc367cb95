"""Study tables' seed std and cost columns over the API, and the tuned Table 1 (issue 39)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from fedgen.stats import val_best
from fedgen.studies.tuning import GRID_SIZE
from lab.models import Run
from tests.support.factories import seed_rounds

API = "/api/v1"
TUNE = (
    "lr,algorithm.mu,algorithm.client_teacher_weight,algorithm.distill_lr,algorithm.global_lr,"
    "algorithm.alpha,algorithm.server_lr"
)


def test_table1_tuned_definition_shows_runs_and_estimate(
    client: TestClient, auth: dict[str, str]
) -> None:
    """GET /studies/table1-tuned: (3 α x 2 protocols) x 11 methods x 3 values x 5 seeds, an
    estimate, the
    seed std as the table's ±, and the tuned fields."""
    # Execute
    body = client.get(f"{API}/studies/table1-tuned", headers=auth).json()
    listed = client.get(f"{API}/studies", headers=auth).json()["data"]
    # Assert
    assert body["runs"] == 6 * 11 * GRID_SIZE * 5 == 990
    assert body["est_cpu_s"] > 0
    assert body["seeds"] == 5
    assert (body["statistic"], body["std_kind"]) == ("val_best", "seed")
    assert body["tuned"] == TUNE.split(",")
    assert body["sweep"]["base"]["partition"] == {
        "num_users": 20,
        "sampling_ratio": 0.5,
        "val_fraction": 0.1,
    }
    assert len(body["sweep"]["grid"]["algorithm,lr"]) == 11 * GRID_SIZE
    table1 = next(s for s in listed if s["name"] == "table1")
    assert (table1["std_kind"], table1["tuned"]) == ("official", [])


def test_results_carry_seed_std_and_cost(
    client: TestClient, auth: dict[str, str], session: Session
) -> None:
    """A tuned FedProx cell over the API: the configuration best on validation (the one the
    sweep summary's tune= picks too), its seeds' std (ddof 1) and its runs' cost sums."""
    # Prepare
    sweep = client.post(
        f"{API}/studies/table1-tuned", json={"seeds": 2, "rounds": 4}, headers=auth
    ).json()["sweep"]
    runs = session.query(Run).filter(Run.sweep_id == uuid.UUID(sweep["id"])).all()
    val_top = {0.001: 0.6, 0.01: 0.8, 0.1: 0.5}  # μ = 0.01 validates best
    chosen: list[tuple[list[float], list[float], float]] = []
    for run in runs:
        spec = run.spec
        part = spec["partition"]
        if spec["algorithm"]["name"] != "fedprox" or part["alpha"] != 0.1:
            continue
        if part.get("test_protocol", "per_user") != "per_user":
            continue
        mu, seed = spec["algorithm"]["mu"], spec["seed"]
        test = [round(0.5 + 0.03 * r + 0.02 * seed * (r % 2), 6) for r in range(5)]
        val = [round(val_top[mu] - 0.1 * abs(2 - r) + 0.01 * seed, 6) for r in range(5)]

        def extra(r: int, val: list[float] = val, seed: int = seed) -> dict[str, float]:
            cost = {"bytes_up": 1e6 * (seed + 1), "bytes_down": 2e6, "time_train_ms": 50.0}
            return {"val_acc": val[r], **(cost if r else {})}

        seed_rounds(session, run, test, extra=extra)
        if mu == 0.01:
            chosen.append((test, val, 4 * (seed + 1.0)))
    # Execute
    body = client.get(f"{API}/studies/table1-tuned/results", headers=auth).json()
    summary = client.get(
        f"{API}/sweeps/{sweep['id']}/summary?statistic=val_best&tune={TUNE}", headers=auth
    ).json()
    # Assert
    cell = next(
        c
        for c in body["cells"]
        if (c["row"], c["column"]) == ("α=0.1, T=20, per-user test", "FedProx")
    )
    per_seed = [100 * val_best(t, v, "before_training")[0] for t, v, _ in chosen]
    assert cell["tuned"]["algorithm.mu"] == 0.01
    assert cell["budget"] == GRID_SIZE
    assert (cell["n"], cell["n_seeds"], cell["runs"]) == (2, 2, 2 * GRID_SIZE)
    assert cell["mean"] == pytest.approx(float(np.mean(per_seed)), abs=1e-4)
    assert cell["seed_std"] == pytest.approx(float(np.std(per_seed, ddof=1)), abs=1e-4)
    ups = [mb for _, _, mb in chosen]  # rounds 1..4 of 1 MB x (seed + 1)
    assert cell["mb_up_mean"] == pytest.approx(float(np.mean(ups)))
    assert cell["mb_up_seed_std"] == pytest.approx(float(np.std(ups, ddof=1)))
    assert cell["mb_total_mean"] == pytest.approx(float(np.mean(ups)) + 8.0)
    assert cell["client_train_s_mean"] == pytest.approx(0.2)
    assert cell["server_s_mean"] is None  # no round reports the server's time
    assert body["std_kind"] == "seed"
    picked = next(
        g
        for g in summary["groups"]
        if g["fields"].get("algorithm.name") == "fedprox" and g["tune"]["chosen"]
    )
    assert picked["tune"]["chosen"]["algorithm.mu"] == 0.01
    assert picked["mb_up_mean"] == pytest.approx(cell["mb_up_mean"])
