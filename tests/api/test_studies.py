"""Studies over the API: list, definition, one-request launch, bad input, results with verdicts."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from fedgen.paper import TABLE1, TABLE3_FEDAVG, TABLE3_FEDGEN, Setting
from fedgen.stats import mean_std, pooled_top5, reported_curve
from fedgen.studies.registry import STUDIES
from lab.models import Run
from tests.support.factories import live_worker, seed_rounds

API = "/api/v1"


def test_list_names_every_study(client: TestClient, auth: dict) -> None:
    """GET /studies lists the seven studies with runs and an estimated CPU time."""
    # Execute
    body = client.get(f"{API}/studies", headers=auth).json()
    # Assert
    names = [s["name"] for s in body["data"]]
    assert names == list(STUDIES)
    assert {"table1", "table2", "table3", "table4"} <= set(names)
    t1 = next(s for s in body["data"] if s["name"] == "table1")
    assert t1["runs"] == 3 * 7 * 3  # MNIST's three α rows x 7 algorithms x 3 seeds
    assert t1["est_cpu_s"] > 0
    assert t1["defaults"] == {"dataset": "mnist", "seeds": 3, "rounds": 200}


def test_definition_carries_the_paper_numbers(client: TestClient, auth: dict) -> None:
    """GET /studies/table1 has the sweep and Table 1's MNIST cells; other datasets have none."""
    # Execute
    mnist = client.get(f"{API}/studies/table1", headers=auth).json()
    fmnist = client.get(f"{API}/studies/table1?dataset=fashion-mnist", headers=auth).json()
    # Assert
    cell = next(p for p in mnist["paper"] if p["row"] == "α=0.1, T=20" and p["column"] == "FedGen")
    assert (cell["mean"], cell["std"]) == TABLE1[Setting("MNIST", "α=0.1", 20)]["fedgen"]
    assert mnist["sweep"]["grid"]["seed"] == [0, 1, 2]
    assert mnist["launched"] == []
    assert fmnist["paper"] == []
    assert fmnist["sweep"]["base"]["data"] == {"name": "fashion-mnist"}


def test_launch_creates_the_sweep_in_one_request(
    client: TestClient, auth: dict, enqueued: list, session: Session
) -> None:
    """POST /studies/table2 with overrides creates and queues the whole sweep."""
    # Prepare
    live_worker(session, "cpu", slots=12)
    # Execute
    r = client.post(
        f"{API}/studies/table2",
        json={"dataset": "synthetic", "seeds": 2, "rounds": 3},
        headers=auth,
    )
    # Assert
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["runs"] == 6 * 2  # FedAvg + 5 generator presets, 2 seeds
    assert body["sweep"]["count"] == 12
    assert len(enqueued) == 12
    runs = client.get(f"{API}/runs?sweep_id={body['sweep']['id']}", headers=auth).json()["data"]
    assert {r["spec"]["rounds"] for r in runs} == {3}
    assert {r["spec"]["data"]["name"] for r in runs} == {"synthetic"}
    assert all("study:table2@v1" in r["spec"]["tags"] for r in runs)
    presets = sorted(
        r["spec"]["algorithm"]["preset"] for r in runs if r["spec"]["algorithm"]["name"] == "fedgen"
    )
    assert presets == sorted(["cnn0", "default", "cnn1", "cnn2", "cnn3"] * 2)
    launched = client.get(f"{API}/studies/table2", headers=auth).json()["launched"]
    assert [s["sweep_id"] for s in launched] == [body["sweep"]["id"]]
    assert launched[0]["status_counts"] == {"queued": 12}


def test_launch_without_body_uses_the_paper_setting(
    client: TestClient, auth: dict, enqueued: list, session: Session
) -> None:
    """No body: the paper's dataset, 3 seeds, 200 rounds."""
    # Prepare
    live_worker(session, "cpu", slots=30)
    # Execute
    body = client.post(f"{API}/studies/fig5-delay", headers=auth).json()
    # Assert
    assert (body["dataset"], body["seeds"], body["rounds"]) == ("emnist-letters", 3, 200)
    assert body["runs"] == 2 * 5 * 3
    assert len(enqueued) == 30


def test_unknown_study_is_404_naming_the_known_ones(client: TestClient, auth: dict) -> None:
    """An unknown name: 404 whose message lists the studies that exist."""
    # Execute
    r = client.post(f"{API}/studies/table9", headers=auth)
    g = client.get(f"{API}/studies/table9", headers=auth)
    # Assert
    assert r.status_code == 404
    assert g.status_code == 404
    assert "table1" in r.json()["detail"]
    assert "fig5-delay" in r.json()["detail"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"seeds": 0}, "seeds"),
        ({"seeds": 11}, "seeds"),
        ({"rounds": 0}, "rounds"),
        ({"dataset": "imagenet"}, "dataset"),
        ({"dataset": "folder"}, "dataset"),  # needs data.folder, which a study cannot set
        ({"seed": 3}, "seed"),
    ],
)
def test_bad_overrides_are_422_naming_the_field(
    client: TestClient, auth: dict, enqueued: list, body: dict, field: str
) -> None:
    """Out-of-range or unknown overrides: 422 naming the field, nothing queued."""
    # Execute
    r = client.post(f"{API}/studies/table1", json=body, headers=auth)
    # Assert
    assert r.status_code == 422, r.text
    assert [d["field"] for d in r.json()["detail"]] == [field]
    assert enqueued == []


def test_seeds_that_overflow_a_sweep_are_422_naming_seeds(
    client: TestClient, auth: dict, enqueued: list
) -> None:
    """table1-tuned is 198 runs a seed: 6 seeds (1,188 runs, over a sweep's 1,000) is a 422
    naming `seeds`, the field the member sent, with the most seeds that fit; nothing queued.
    The definition (GET) says the same."""
    # Execute
    launched = client.post(f"{API}/studies/table1-tuned", json={"seeds": 6}, headers=auth)
    shown = client.get(f"{API}/studies/table1-tuned", params={"seeds": 6}, headers=auth)
    # Assert
    for r in (launched, shown):
        assert r.status_code == 422, r.text
        (error,) = r.json()["detail"]
        assert error["field"] == "seeds"
        assert "1188 runs, more than the limit 1000" in error["msg"]
        assert "(at most 5 seeds)" in error["msg"]
    assert enqueued == []


@pytest.mark.parametrize("dataset", ["imagenet", "folder"])
def test_a_definition_for_a_dataset_no_study_can_use_is_422(
    client: TestClient, auth: dict, dataset: str
) -> None:
    """GET /studies/{name}?dataset=...: the query's enum lists the datasets a study can use; any
    other is a 422 naming `dataset` and saying why."""
    # Execute
    r = client.get(f"{API}/studies/table1", params={"dataset": dataset}, headers=auth)
    # Assert
    assert r.status_code == 422, r.text
    (error,) = r.json()["detail"]
    assert error["field"] == "dataset"
    assert dataset in error["msg"]


def test_results_table_with_verdicts(client: TestClient, auth: dict, session: Session) -> None:
    """Finished runs of a table1 sweep: each cell is pooled top-5 of its seeds, with a verdict."""
    # Prepare
    sweep = client.post(
        f"{API}/studies/table1", json={"seeds": 2, "rounds": 6}, headers=auth
    ).json()["sweep"]
    runs = session.query(Run).filter(Run.sweep_id == uuid.UUID(sweep["id"])).all()
    curves: dict[str, list[float]] = {}
    for run in runs:
        alg, alpha = run.spec["algorithm"]["name"], run.spec["partition"]["alpha"]
        if alg not in ("fedavg", "fedgen") or alpha != 0.1:
            continue  # the other cells stay queued
        # Top-5 rounds average top - 0.02: FedAvg lands on the paper's 90.16, FedGen far below.
        top = 0.9216 if alg == "fedavg" else 0.80
        curve = [round(top - 0.01 * abs(5 - r) + 0.001 * run.spec["seed"], 6) for r in range(7)]
        curves[str(run.id)] = curve
        seed_rounds(session, run, curve)
    # Execute
    body = client.get(f"{API}/studies/table1/results", headers=auth).json()
    # Assert
    assert body["sweep_id"] == sweep["id"]
    assert body["runs_total"] == 3 * 7 * 2
    assert body["runs_done"] == 4
    cells = {(c["row"], c["column"]): c for c in body["cells"]}
    for alg, label in (("fedavg", "FedAvg"), ("fedgen", "FedGen")):
        mine = [
            [100 * a for a in reported_curve(curves[str(r.id)], "before_training")]
            for r in runs
            if r.spec["algorithm"]["name"] == alg and str(r.id) in curves
        ]
        cell = cells[("α=0.1, T=20", label)]
        assert (cell["mean"], cell["std"]) == pytest.approx(pooled_top5(mine), abs=1e-4)
        assert cell["n"] == 2
    assert cells[("α=0.1, T=20", "FedAvg")]["verdict"] == "within"
    assert cells[("α=0.1, T=20", "FedGen")]["verdict"] == "worse"
    assert cells[("α=0.1, T=20", "FedGen")]["delta"] < -10
    assert cells[("α=1, T=20", "FedProx")]["verdict"] == "no runs yet"


def test_table3_results_compare_ratios(client: TestClient, auth: dict, session: Session) -> None:
    """Table 3: ms per update pooled over rounds; the verdict is on the ratio to FedAvg."""
    # Prepare
    sweep = client.post(
        f"{API}/studies/table3",
        json={"dataset": "synthetic", "seeds": 1, "rounds": 3},
        headers=auth,
    ).json()["sweep"]
    runs = session.query(Run).filter(Run.sweep_id == uuid.UUID(sweep["id"])).all()
    ms = {}
    for run in runs:
        alg = run.spec["algorithm"]
        per_update = 40.0 if alg["name"] == "fedavg" else 40.0 * (1.0 + alg["gen_batch_size"] / 100)
        ms[alg.get("gen_batch_size")] = per_update
        seed_rounds(session, run, [0.5] * 4, extra=lambda r, v=per_update: {"time_user_ms": v + r})
    # Execute
    body = client.get(
        f"{API}/studies/table3/results", params={"sweep_id": sweep["id"]}, headers=auth
    ).json()
    # Assert
    cells = {c["row"]: c for c in body["cells"]}
    assert body["unit"] == "ms"
    assert cells["FedAvg"]["verdict"] == "reference"
    avg = mean_std([40.0 + r for r in (1, 2, 3)])
    assert cells["FedAvg"]["mean"] == pytest.approx(avg[0])
    # Synthetic has no paper row: no verdicts.
    assert cells["FedGen B_G=8"]["verdict"] == "no paper number"
    b128 = mean_std([ms[128] + r for r in (1, 2, 3)])[0]
    assert cells["FedGen B_G=128"]["ratio"] == pytest.approx(b128 / avg[0], abs=1e-4)
    assert TABLE3_FEDGEN[128][0] / TABLE3_FEDAVG[0] == pytest.approx(1.26, abs=0.01)


def test_results_of_a_foreign_sweep_is_404(client: TestClient, auth: dict) -> None:
    """A sweep that is not the study's, or a study never launched: 404 with the reason."""
    # Prepare
    other = client.post(f"{API}/studies/table2", json={"seeds": 1}, headers=auth).json()
    # Execute
    r = client.get(
        f"{API}/studies/table1/results", params={"sweep_id": other["sweep"]["id"]}, headers=auth
    )
    never = client.get(f"{API}/studies/table4/results", headers=auth)
    # Assert
    assert r.status_code == 404
    assert "not a sweep of study table1" in r.json()["detail"]
    assert never.status_code == 404
    assert "not been launched" in never.json()["detail"]
