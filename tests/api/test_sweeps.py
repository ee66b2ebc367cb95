"""Sweeps: submit a grid, summary numbers from seeded rows (JSON and CSV), timing table."""

from __future__ import annotations

import csv
import io
import uuid

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from fedgen.stats import mean_std, pooled_top5, reported_curve
from lab.models import User
from tests.support.factories import create_sweep_runs, live_worker, make_spec, seed_rounds

API = "/api/v1"


def test_submit_sweep_expands_and_enqueues(
    client: TestClient, auth: dict, enqueued: list, session: Session
) -> None:
    """algorithms x alphas x seeds become runs in one request (12 free slots: all sent)."""
    live_worker(session, "cpu", slots=12)
    body = {
        "name": "fg-vs-avg",
        "base": make_spec(),
        "grid": {
            "algorithm": ["fedavg", "fedgen"],
            "partition.alpha": [0.1, 1.0],
            "seed": [0, 1, 2],
        },
    }
    r = client.post(f"{API}/sweeps", json=body, headers=auth)
    assert r.status_code == 202, r.text
    sweep = r.json()
    assert sweep["count"] == 12
    assert len(enqueued) == 12
    assert sweep["status_counts"] == {"queued": 12}
    assert (
        client.get(f"{API}/runs?sweep_id={sweep['id']}&algorithm=fedgen", headers=auth).json()[
            "count"
        ]
        == 6
    )
    assert client.get(f"{API}/sweeps", headers=auth).json()["count"] == 1
    assert (
        client.get(f"{API}/sweeps/{sweep['id']}", headers=auth).json()["run_ids"]
        == sweep["run_ids"]
    )


def test_summary_groups_by_everything_but_seed(
    client: TestClient, auth: dict, session: Session
) -> None:
    """Per group: n, final mean ± std, pooled top-5 mean ± std, equal to fedgen.stats on the rows."""
    # Prepare
    alice = session.query(User).filter_by(name="alice").one()
    sweep_id, runs = create_sweep_runs(
        session,
        alice,
        {"algorithm": ["fedavg", "fedgen"], "seed": [0, 1, 2]},
        base=make_spec(rounds=8),
    )
    curves = {}
    for i, run in enumerate(runs):
        curve = [((r * 7 + i * 3) % 10) / 10 for r in range(9)]
        curves[run.id] = curve
        seed_rounds(session, run, curve)
    # Execute
    groups = client.get(f"{API}/sweeps/{sweep_id}/summary", headers=auth).json()["groups"]
    text = client.get(f"{API}/sweeps/{sweep_id}/summary?format=csv", headers=auth).text
    # Assert
    assert [g["label"] for g in groups] == ["algorithm=fedavg", "algorithm=fedgen"]
    for g in groups:
        # Default profile 'official': the post-final model is not among the reported rounds.
        cs = [reported_curve(curves[uuid.UUID(i)], "before_training") for i in g["run_ids"]]
        assert g["n"] == 3
        assert g["seeds"] == [0, 1, 2]
        assert (g["final_mean"], g["final_std"]) == pytest.approx(mean_std([c[-1] for c in cs]))
        assert g["final_round"] == 7  # R = 8: the official code never evaluates round 8
        assert (g["top5_mean"], g["top5_std"]) == pytest.approx(pooled_top5(cs))
        # Beside the pooled std: the sample std (ddof 1) of each seed's own statistic.
        assert g["n_seeds"] == 3
        assert g["final_seed_std"] == pytest.approx(np.std([c[-1] for c in cs], ddof=1))
        top5s = [float(np.mean(sorted(c)[-5:])) for c in cs]
        assert g["top5_seed_std"] == pytest.approx(np.std(top5s, ddof=1))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 2
    assert float(rows[0]["top5_mean"]) == pytest.approx(groups[0]["top5_mean"])


# The timing table (one row per setting): tests/api/test_comparable.py


def test_sweep_list_counts_each_sweeps_runs_outside_the_trash(
    client: TestClient, auth: dict, session: Session
) -> None:
    """GET /sweeps and GET /sweeps/{id} list each sweep's own runs with their status counts;
    a trashed run is in neither."""
    # Prepare
    alice = session.query(User).filter_by(name="alice").one()
    first, first_runs = create_sweep_runs(session, alice, {"seed": [0, 1, 2]})
    second, second_runs = create_sweep_runs(session, alice, {"seed": [0, 1]})
    seed_rounds(session, first_runs[1], [0.1, 0.2])
    assert client.delete(f"{API}/runs/{first_runs[2].id}", headers=auth).status_code == 204
    # Execute
    listed = {s["id"]: s for s in client.get(f"{API}/sweeps", headers=auth).json()["data"]}
    one = client.get(f"{API}/sweeps/{first}", headers=auth).json()
    # Assert
    assert sorted(listed[str(first)]["run_ids"]) == sorted(str(r.id) for r in first_runs[:2])
    assert listed[str(first)]["status_counts"] == {"queued": 1, "succeeded": 1}
    assert sorted(listed[str(second)]["run_ids"]) == sorted(str(r.id) for r in second_runs)
    assert listed[str(second)]["count"] == 2
    assert {k: one[k] for k in ("run_ids", "count", "status_counts")} == {
        k: listed[str(first)][k] for k in ("run_ids", "count", "status_counts")
    }
