"""The sweep summary's tuning by validation (`tune=`) and its cost columns (MB, seconds).

A hand-built sweep where test and validation disagree proves the choice reads validation: the
configuration with the best mean test accuracy is not the one chosen; the cost columns equal
the sums of the stored per-round figures (issue 39).
"""

from __future__ import annotations

import csv
import io
import math
import uuid

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from lab.models import Run, User
from tests.support.factories import create_sweep_runs, make_spec, seed_rounds

API = "/api/v1"
ROUNDS = 4  # rounds 0..4 stored; the official profile counts 0..3
LRS = (0.01, 0.05, 0.1)


def _curves(run: Run, i: int) -> tuple[list[float], list[float]]:
    """(test, validation) curves of rounds 0..ROUNDS that disagree on which lr is better.

    lr 0.01: high test, low validation; lr 0.1: the best validation, lower test; lr 0.05 in
    between on both. A per-run jitter makes the seeds differ.
    """
    lr = run.spec["lr"]
    j = (i % 5) * 0.003
    if lr == 0.01:
        test = [0.1, 0.5, 0.9 + j, 0.88, 0.95]
        val = [0.1, 0.2, 0.3 + j, 0.31, 0.99]  # round 4 is never counted (before_training)
    elif lr == 0.05:
        test = [0.1, 0.45, 0.7 + j, 0.72, 0.7]
        val = [0.1, 0.4, 0.5, 0.55 + j, 0.5]
    else:
        test = [0.1, 0.4, 0.6 + j, 0.65, 0.6]
        val = [0.1, 0.5, 0.8 + j, 0.7, 0.7]
    return test, val


def _cost(r: int, i: int) -> dict[str, float]:
    """Per-round cost figures of run i (none in round 0, as the runner stores them)."""
    if r == 0:
        return {}
    return {
        "bytes_up": 1000.0 * r + 17 * i,
        "bytes_down": 2500.0 + 3 * i * r,
        "time_train_ms": 40.0 + i + r,
        "time_server_ms": 5.0 * r + i,
    }


@pytest.fixture
def tuned_sweep(session: Session) -> tuple[uuid.UUID, dict[uuid.UUID, dict[str, list[float]]]]:
    """α × lr × 3 seeds with validation data, every run succeeded: its id and each run's
    stored curves (test, val and the cost metrics, by round)."""
    alice = session.query(User).filter_by(name="alice").one()
    sweep_id, runs = create_sweep_runs(
        session,
        alice,
        {"partition.alpha": [0.1, 1.0], "lr": list(LRS), "seed": [0, 1, 2]},
        base=make_spec(rounds=ROUNDS, partition={"val_fraction": 0.1}),
    )
    stored: dict[uuid.UUID, dict[str, list[float]]] = {}
    for i, run in enumerate(runs):
        test, val = _curves(run, i)
        seed_rounds(
            session, run, test, extra=lambda r, i=i, val=val: {"val_acc": val[r]} | _cost(r, i)
        )
        stored[run.id] = {"test": test, "val": val}
        for name in ("bytes_up", "bytes_down", "time_train_ms", "time_server_ms"):
            stored[run.id][name] = [_cost(r, i).get(name, math.nan) for r in range(ROUNDS + 1)]
    return sweep_id, stored


def _val_best(test: list[float], val: list[float]) -> tuple[float, float]:
    """(best validation, test at its first round) over the counted rounds 0..R-1, by hand."""
    counted = range(ROUNDS)  # before_training: round R is stored but never counted
    best = max(counted, key=lambda r: (val[r], -r))
    return val[best], test[best]


def test_tune_picks_the_best_mean_validation_and_reports_its_test_figure(
    client: TestClient, auth: dict, tuned_sweep: tuple[uuid.UUID, dict]
) -> None:
    """Per α, the lr with the highest mean best-validation accuracy is chosen (0.1), not the
    one with the best test accuracy (0.01); the row reports the test statistic there."""
    # Prepare
    sweep_id, stored = tuned_sweep
    # Execute
    r = client.get(f"{API}/sweeps/{sweep_id}/summary?statistic=val_best&tune=lr", headers=auth)
    # Assert
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["statistic"], body["tune"]) == ("val_best", ["lr"])
    groups = body["groups"]
    assert [g["label"] for g in groups] == ["alpha=0.1", "alpha=1"]
    for g in groups:
        t = g["tune"]
        assert t["budget"] == 3
        assert [c["values"] for c in t["candidates"]] == [{"lr": lr} for lr in LRS]
        # By hand: each candidate's mean validation statistic and mean test statistic.
        val_means, test_means = [], []
        for c in t["candidates"]:
            pairs = [
                _val_best(stored[uuid.UUID(i)]["test"], stored[uuid.UUID(i)]["val"])
                for i in c["run_ids"]
            ]
            assert c["n"] == c["n_val"] == 3
            val_means.append(float(np.mean([v for v, _ in pairs])))
            test_means.append(float(np.mean([x for _, x in pairs])))
            assert c["val_mean"] == pytest.approx(val_means[-1])
            assert c["test_mean"] == pytest.approx(test_means[-1])
        chosen = int(np.argmax(val_means))
        assert t["chosen"] == {"lr": LRS[chosen]} == {"lr": 0.1}
        # Test and validation disagree: choosing by test would have taken lr 0.01.
        assert int(np.argmax(test_means)) != chosen
        assert t["val_mean"] == pytest.approx(val_means[chosen])
        assert t["test_mean"] == pytest.approx(test_means[chosen])
        # The row's figures are the chosen configuration's runs'.
        assert g["run_ids"] == t["candidates"][chosen]["run_ids"]
        assert g["val_best_mean"] == pytest.approx(t["test_mean"])
        tests = [
            _val_best(stored[uuid.UUID(i)]["test"], stored[uuid.UUID(i)]["val"])[1]
            for i in g["run_ids"]
        ]
        assert g["val_best_seed_std"] == pytest.approx(np.std(tests, ddof=1))
        assert t["test_seed_std"] == pytest.approx(np.std(tests, ddof=1))
        assert g["varying"] == []


def test_tune_by_final_uses_the_final_validation_round(
    client: TestClient, auth: dict, tuned_sweep: tuple[uuid.UUID, dict]
) -> None:
    """statistic=final ranks by the validation accuracy of the final counted round (R-1):
    lr 0.1 (0.7) over 0.05 (0.55) and 0.01 (0.31, its 0.99 at round R never counted)."""
    sweep_id, stored = tuned_sweep
    body = client.get(
        f"{API}/sweeps/{sweep_id}/summary?statistic=final&tune=lr", headers=auth
    ).json()
    for g in body["groups"]:
        t = g["tune"]
        assert t["chosen"] == {"lr": 0.1}
        finals = [stored[uuid.UUID(i)]["test"][ROUNDS - 1] for i in g["run_ids"]]
        assert t["test_mean"] == pytest.approx(np.mean(finals))
        assert g["final_mean"] == pytest.approx(np.mean(finals))


def test_tune_csv_names_the_choice_and_budget(
    client: TestClient, auth: dict, tuned_sweep: tuple[uuid.UUID, dict]
) -> None:
    sweep_id, _ = tuned_sweep
    text = client.get(f"{API}/sweeps/{sweep_id}/summary?tune=lr&format=csv", headers=auth).text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["tuned.lr"], r["tune_budget"]) for r in rows] == [("0.1", "3"), ("0.1", "3")]


@pytest.mark.parametrize(
    ("tune", "says"),
    [
        ("algorithm.nope", "unknown field(s) algorithm.nope"),
        ("local_steps", "local_steps not swept"),
        ("seed", "seeds are what"),
    ],
)
def test_tune_names_a_field_it_cannot_tune(
    client: TestClient, auth: dict, tuned_sweep: tuple[uuid.UUID, dict], tune: str, says: str
) -> None:
    sweep_id, _ = tuned_sweep
    r = client.get(f"{API}/sweeps/{sweep_id}/summary?tune={tune}", headers=auth)
    assert r.status_code == 422, r.text
    (err,) = r.json()["detail"]
    assert err["field"] == "tune"
    assert says in err["msg"]


def test_tune_without_validation_data_is_a_clear_422(
    client: TestClient, auth: dict, session: Session
) -> None:
    alice = session.query(User).filter_by(name="alice").one()
    sweep_id, runs = create_sweep_runs(session, alice, {"lr": [0.01, 0.1], "seed": [0, 1]})
    for run in runs:
        seed_rounds(session, run, [0.1, 0.2, 0.3])
    r = client.get(f"{API}/sweeps/{sweep_id}/summary?tune=lr", headers=auth)
    assert r.status_code == 422
    (err,) = r.json()["detail"]
    assert err["field"] == "tune"
    assert "partition.val_fraction" in err["msg"]
    # Without tune the summary answers, val_best null (no validation data), n_val_best 0.
    groups = client.get(f"{API}/sweeps/{sweep_id}/summary", headers=auth).json()["groups"]
    assert [(g["val_best_mean"], g["n_val_best"], g["tune"]) for g in groups] == [
        (None, 0, None),
        (None, 0, None),
    ]


def test_cost_columns_are_the_sums_of_the_per_round_figures(
    client: TestClient, auth: dict, tuned_sweep: tuple[uuid.UUID, dict]
) -> None:
    """mb_up/mb_down/mb_total, client_train_s and server_s: per run the sum over every stored
    round (round R included: it was trained), then mean and sample std (ddof 1) over seeds."""
    sweep_id, stored = tuned_sweep
    groups = client.get(f"{API}/sweeps/{sweep_id}/summary", headers=auth).json()["groups"]
    assert len(groups) == 6
    for g in groups:
        per_run = {"mb_up": [], "mb_down": [], "mb_total": [], "client_train_s": [], "server_s": []}
        for i in g["run_ids"]:
            s = stored[uuid.UUID(i)]
            up, down = np.nansum(s["bytes_up"]), np.nansum(s["bytes_down"])
            per_run["mb_up"].append(up / 1e6)
            per_run["mb_down"].append(down / 1e6)
            per_run["mb_total"].append((up + down) / 1e6)
            per_run["client_train_s"].append(np.nansum(s["time_train_ms"]) / 1e3)
            per_run["server_s"].append(np.nansum(s["time_server_ms"]) / 1e3)
        for name, values in per_run.items():
            assert g[f"{name}_mean"] == pytest.approx(np.mean(values)), name
            assert g[f"{name}_seed_std"] == pytest.approx(np.std(values, ddof=1)), name
    # 4 trained rounds of 1000·r bytes up (r = 1..4) plus 17·i per round: about 0.01 MB.
    assert groups[0]["mb_up_mean"] == pytest.approx(0.01, abs=0.001)


def test_tune_over_an_algorithms_own_knob_counts_each_groups_budget(
    client: TestClient, auth: dict, session: Session
) -> None:
    """tune=algorithm.mu,lr: FedAvg (no mu) is given its 2 learning rates, FedProx 2 mu x 2 lr;
    each picks the argmax of its configurations' mean validation."""
    # Prepare
    alice = session.query(User).filter_by(name="alice").one()
    sweep_id, runs = create_sweep_runs(
        session,
        alice,
        {
            "algorithm": [
                "fedavg",
                {"name": "fedprox", "mu": 0.01},
                {"name": "fedprox", "mu": 0.1},
            ],
            "lr": [0.01, 0.1],
            "seed": [0, 1],
        },
        base=make_spec(rounds=2, partition={"val_fraction": 0.2}),
    )
    best_val: dict[uuid.UUID, float] = {}
    for i, run in enumerate(runs):
        v = ((i * 7) % 11) / 20  # validation by run, unrelated to test
        seed_rounds(
            session, run, [0.1, 0.9 - v, 0.5], extra=lambda r, v=v: {"val_acc": [0.0, v, 0.0][r]}
        )
        best_val[run.id] = v
    # Execute
    body = client.get(f"{API}/sweeps/{sweep_id}/summary?tune=algorithm.mu,lr", headers=auth).json()
    # Assert
    by_alg = {g["fields"]["algorithm.name"]: g["tune"] for g in body["groups"]}
    assert {a: t["budget"] for a, t in by_alg.items()} == {"fedavg": 2, "fedprox": 4}
    assert [c["values"] for c in by_alg["fedavg"]["candidates"]] == [
        {"algorithm.mu": None, "lr": 0.01},
        {"algorithm.mu": None, "lr": 0.1},
    ]
    for t in by_alg.values():
        means = [np.mean([best_val[uuid.UUID(i)] for i in c["run_ids"]]) for c in t["candidates"]]
        assert t["chosen"] == t["candidates"][int(np.argmax(means))]["values"]
        assert t["val_mean"] == pytest.approx(max(means))


@pytest.mark.parametrize("axis", ["round", "bytes", "compute"])
def test_plot_data_draws_accuracy_against_cumulative_cost(
    client: TestClient, auth: dict, tuned_sweep: tuple[uuid.UUID, dict], axis: str
) -> None:
    """x=round|bytes|compute: a point per counted round (0..R-1), its mean the series' test
    accuracy there, its x the mean over the runs of the round, of the MB sent up to and
    including it, or of the clients' + server's seconds up to it."""
    # Prepare
    sweep_id, stored = tuned_sweep

    def x_of(s: dict[str, list[float]], r: int) -> float:
        if axis == "round":
            return float(r)
        names = (
            ("bytes_up", "bytes_down") if axis == "bytes" else ("time_train_ms", "time_server_ms")
        )
        scale = 1e6 if axis == "bytes" else 1e3
        return sum(np.nansum(s[n][: r + 1]) for n in names) / scale

    # Execute
    r = client.get(f"{API}/sweeps/{sweep_id}/plot-data?x={axis}&by=lr", headers=auth)
    text = client.get(f"{API}/sweeps/{sweep_id}/plot-data?x={axis}&by=lr&format=csv", headers=auth)
    # Assert
    assert r.status_code == 200, r.text
    data = r.json()
    assert (data["x"], data["x_axis"], data["x_unit"]) == (
        axis,
        axis,
        {"round": "round", "bytes": "MB", "compute": "s"}[axis],
    )
    assert [s["by_value"] for s in data["series"]] == list(LRS)
    # Each series pools both α: said so.
    assert any("partition.alpha" in w for w in data["warnings"])
    for s in data["series"]:
        assert [p["round"] for p in s["points"]] == list(range(ROUNDS))  # round R never counted
        for p in s["points"]:
            runs = [stored[uuid.UUID(i)] for i in p["run_ids"]]
            assert p["n"] == len(runs) == 6
            rnd = p["round"]
            assert p["mean"] == pytest.approx(np.mean([s_["test"][rnd] for s_ in runs]))
            assert p["std"] == pytest.approx(np.std([s_["test"][rnd] for s_ in runs]))
            assert p["x"] == pytest.approx(np.mean([x_of(s_, rnd) for s_ in runs]))
    rows = list(csv.DictReader(io.StringIO(text.text)))
    assert len(rows) == 3 * ROUNDS
    assert "round" in rows[0]


def test_plot_data_curves_refuse_time_to_target(
    client: TestClient, auth: dict, tuned_sweep: tuple[uuid.UUID, dict]
) -> None:
    sweep_id, _ = tuned_sweep
    r = client.get(
        f"{API}/sweeps/{sweep_id}/plot-data?x=bytes&statistic=time_to_target&target=0.5",
        headers=auth,
    )
    assert r.status_code == 422
    (err,) = r.json()["detail"]
    assert err["field"] == "statistic"
