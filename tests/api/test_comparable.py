"""Comparable groups and honest statistics on a real database: summary, timing, /difference.

Issue 10 §1-3: one set of defaults (REST == CLI), groups never mix settings, n counts
finished runs only, and the difference of two groups against scipy's Welch test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from scipy import stats
from sqlalchemy.orm import Session

from fedgen.stats import curve_statistic
from lab.models import User
from tests.support.factories import create_run, create_sweep_runs, make_spec, seed_rounds

API = "/api/v1"
ROOT = Path(__file__).resolve().parents[2]


def test_spec_defaults_equal_empty_submission_and_cli(
    client: TestClient, auth: dict, tmp_path: Path
) -> None:
    """GET /spec/defaults == POST /spec/validate {} == `fedgen validate` of an empty file."""
    # Prepare
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    # Execute
    defaults = client.get(f"{API}/spec/defaults", headers=auth).json()
    validated = client.post(f"{API}/spec/validate", json={"spec": {}}, headers=auth).json()
    out = subprocess.run(
        [sys.executable, "-m", "fedgen", "validate", str(empty)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # Assert
    cli = yaml.safe_load(out)
    assert defaults["spec"] == validated["spec"] == cli
    assert f"# spec_hash: {defaults['spec_hash']}" in out
    assert defaults["spec"]["data"]["name"] == "fashion-mnist"
    assert defaults["spec"]["fidelity"]["profile"] == "official"


def _alice(session: Session) -> User:
    return session.query(User).filter_by(name="alice").one()


def test_summary_n_counts_finished_runs_only(
    client: TestClient, auth: dict, session: Session
) -> None:
    """Running, cancelled and failed members are counted apart, never inside mean ± std."""
    # Prepare
    sweep_id, runs = create_sweep_runs(
        session, _alice(session), {"seed": [0, 1, 2, 3, 4, 5]}, base=make_spec(rounds=3)
    )
    seed_rounds(session, runs[0], [0.1, 0.2, 0.3, 0.4])
    seed_rounds(session, runs[1], [0.1, 0.2, 0.3, 0.6])
    seed_rounds(session, runs[2], [0.9, 0.9], status="cancelled")
    seed_rounds(session, runs[3], [0.9, 0.9, 0.9], status="failed")
    # runs[4]: running (no finish); runs[5]: queued
    from lab.models import Run
    from lab.repository import metrics as metrics_repo

    session.query(Run).filter(Run.id == runs[4].id).update(
        {"lease_token": "t", "status": "running"}
    )
    metrics_repo.write_round(
        session,
        runs[4].id,
        "t",
        round_=0,
        metrics={"test_acc": 0.99},
        users=[],
        checkpoints=[],
        lease_s=60,
    )
    session.commit()
    # Execute
    body = client.get(f"{API}/sweeps/{sweep_id}/summary", headers=auth).json()
    # Assert
    (g,) = body["groups"]
    assert g["n"] == 2
    assert g["n_total"] == 6
    assert g["status_counts"] == {
        "succeeded": 2,
        "cancelled": 1,
        "failed": 1,
        "running": 1,
        "queued": 1,
    }
    assert g["excluded"]["counts"] == {"cancelled": 1, "failed": 1, "running": 1, "queued": 1}
    assert g["excluded"]["run_ids"]["cancelled"] == [str(runs[2].id)]
    assert sorted(g["run_ids"]) == sorted([str(runs[0].id), str(runs[1].id)])
    assert g["seeds"] == [0, 1]
    # official profile: round R=3 is not reported, so the finals are rounds 2: 0.3 and 0.3
    assert g["final_mean"] == pytest.approx(0.3)
    assert g["final_std"] == pytest.approx(0.0)


def test_summary_never_mixes_datasets_or_profiles(
    client: TestClient, auth: dict, session: Session
) -> None:
    """Default groups split by every differing field; chosen fields warn about the rest."""
    # Prepare
    alice = _alice(session)
    sweep_id, runs = create_sweep_runs(
        session,
        alice,
        {"fidelity.profile": ["paper", "official"], "seed": [0, 1]},
        base=make_spec(rounds=2),
    )
    for r in runs:
        seed_rounds(session, r, [0.1, 0.2, 0.3])
    # Execute
    default = client.get(f"{API}/sweeps/{sweep_id}/summary", headers=auth).json()
    chosen = client.get(
        f"{API}/sweeps/{sweep_id}/summary?group_by=algorithm.name", headers=auth
    ).json()
    bad = client.get(f"{API}/sweeps/{sweep_id}/summary?group_by=nope", headers=auth)
    # Assert
    assert [g["label"] for g in default["groups"]] == [
        "fidelity.profile=official",
        "fidelity.profile=paper",
    ]
    assert all(g["n"] == 2 and g["varying"] == [] for g in default["groups"])
    assert default["warnings"] == []
    (g,) = chosen["groups"]
    assert g["n"] == 4
    assert g["varying"] == ["fidelity.profile"]
    assert chosen["group_by"] == ["algorithm.name"]
    assert "fidelity.profile" in chosen["warnings"][0]
    assert bad.status_code == 422
    assert "group_by" in bad.text
    assert "nope" in bad.text


def test_timing_rows_carry_their_setting_and_never_mix(
    client: TestClient, auth: dict, session: Session
) -> None:
    """A synthetic FedGen run is not averaged into another dataset's FedGen row; B_G splits."""
    # Prepare
    alice = _alice(session)
    sweep_id, runs = create_sweep_runs(
        session,
        alice,
        {
            "algorithm": [
                "fedavg",
                {"name": "fedgen", "gen_batch_size": 32},
                {"name": "fedgen", "gen_batch_size": 64},
            ]
        },
        base=make_spec(rounds=3),
    )
    other = create_run(session, alice, algorithm="fedgen", batch_size=16, rounds=3)
    failed = create_run(session, alice, algorithm="fedavg", rounds=3)
    for k, run in enumerate([*runs, other]):
        seed_rounds(
            session,
            run,
            [0.1, 0.2, 0.3, 0.4],
            extra=lambda r, k=k: {"time_user_ms": 10.0 * (k + 1) + r},
        )
    seed_rounds(
        session, failed, [0.1, 0.2], status="failed", extra=lambda r: {"time_user_ms": 999.0}
    )
    # Execute
    body = client.get(f"{API}/timing", headers=auth).json()
    # Assert
    rows = {
        (r["algorithm"], r["gen_batch_size"], r["setting"]["batch_size"]): r for r in body["rows"]
    }
    assert set(rows) == {
        ("fedavg", None, 32),
        ("fedgen", 32, 32),
        ("fedgen", 64, 32),
        ("fedgen", 32, 16),
    }
    assert rows[("fedavg", None, 32)]["mean_ms"] == pytest.approx(
        12.0
    )  # the failed run's 999 not in
    assert rows[("fedavg", None, 32)]["n"] == 1
    assert rows[("fedavg", None, 32)]["excluded"]["counts"] == {"failed": 1}
    assert rows[("fedgen", 32, 32)]["mean_ms"] == pytest.approx(22.0)
    assert rows[("fedgen", 64, 32)]["mean_ms"] == pytest.approx(32.0)
    assert rows[("fedgen", 32, 16)]["mean_ms"] == pytest.approx(42.0)
    for r in body["rows"]:
        assert set(r["setting"]) >= {
            "data.name",
            "model.name",
            "batch_size",
            "local_steps",
            "users_per_round",
            "device",
        }
        assert ("algorithm.gen_batch_size" in r["setting"]) == (r["algorithm"] == "fedgen")
    assert rows[("fedavg", None, 32)]["setting_key"] == rows[("fedgen", 64, 32)]["setting_key"]
    assert rows[("fedgen", 32, 16)]["setting_key"] != rows[("fedgen", 32, 32)]["setting_key"]
    assert body["settings"] == 2
    assert body["warnings"]
    by_sweep = client.get(f"{API}/timing?sweep_id={sweep_id}", headers=auth).json()
    assert len(by_sweep["rows"]) == 3


def _curve(final: float, rounds: int = 3) -> list[float]:
    return [0.1 * r for r in range(rounds)] + [final, final]


def test_difference_matches_welch_by_hand(client: TestClient, auth: dict, session: Session) -> None:
    """diff, CI and p equal scipy's Welch test on the runs' own final accuracies."""
    # Prepare
    alice = _alice(session)
    fa = [0.71, 0.74, 0.69, 0.75]
    fb = [0.66, 0.70, 0.64]
    a = [create_run(session, alice, algorithm="fedgen", rounds=4, seed=i) for i in range(4)]
    b = [create_run(session, alice, algorithm="fedavg", rounds=4, seed=i) for i in range(3)]
    curves = {}
    for run, final in [*zip(a, fa, strict=True), *zip(b, fb, strict=True)]:
        curves[run.id] = _curve(final)
        seed_rounds(session, run, curves[run.id])
    ids_a = ",".join(str(r.id) for r in a)
    ids_b = ",".join(str(r.id) for r in b)
    # Execute
    body = client.get(f"{API}/difference?a={ids_a}&b={ids_b}&statistic=final", headers=auth)
    top5 = client.get(f"{API}/difference?a={ids_a}&b={ids_b}&statistic=top5", headers=auth)
    # Assert
    assert body.status_code == 200, body.text
    d = body.json()
    # official profile: the reported final is round R-1 = 3, which _curve sets to `final`
    assert d["values_a"] == pytest.approx(fa)
    assert d["values_b"] == pytest.approx(fb)
    ref = stats.ttest_ind(fa, fb, equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert d["n_a"] == 4
    assert d["n_b"] == 3
    assert d["mean_a"] == pytest.approx(sum(fa) / 4)
    assert d["mean_b"] == pytest.approx(sum(fb) / 3)
    assert d["diff"] == pytest.approx(sum(fa) / 4 - sum(fb) / 3)
    assert d["p_value"] == pytest.approx(ref.pvalue)
    assert d["ci"] == pytest.approx([ci.low, ci.high])
    assert d["label_a"] == "algorithm=fedgen"
    assert d["label_b"] == "algorithm=fedavg"
    assert d["warnings"] == []
    t5 = top5.json()
    want = [curve_statistic(curves[r.id], "top5", "before_training", 4) for r in a]
    assert t5["values_a"] == pytest.approx(want)


def test_difference_clear_errors(client: TestClient, auth: dict, session: Session) -> None:
    """Unknown ids, too few finished runs and malformed ids name the side; mixed sides warn."""
    # Prepare
    alice = _alice(session)
    done = [create_run(session, alice, rounds=2, seed=i) for i in range(3)]
    for i, r in enumerate(done):
        seed_rounds(session, r, [0.1, 0.2 + i / 10, 0.3])
    cancelled = create_run(session, alice, rounds=2, seed=7)
    seed_rounds(session, cancelled, [0.1, 0.2], status="cancelled")
    alpha = [
        create_run(session, alice, rounds=2, seed=i, partition={"alpha": 1.0}) for i in range(2)
    ]
    for i, r in enumerate(alpha):
        seed_rounds(session, r, [0.1, 0.4 + i / 10, 0.5])
    ids = [str(r.id) for r in done]
    unknown = "00000000-0000-0000-0000-000000000001"
    # Execute
    r_unknown = client.get(
        f"{API}/difference?a={ids[0]},{unknown}&b={ids[1]},{ids[2]}", headers=auth
    )
    r_few = client.get(
        f"{API}/difference?a={ids[0]},{cancelled.id}&b={ids[1]},{ids[2]}", headers=auth
    )
    r_bad = client.get(f"{API}/difference?a=xyz&b={ids[1]}", headers=auth)
    mixed = client.get(
        f"{API}/difference?a={ids[0]},{alpha[0].id}&b={ids[1]},{ids[2]}", headers=auth
    )
    # Assert
    assert r_unknown.status_code == 404
    assert r_unknown.json()["detail"].startswith("a: unknown run ids")
    assert unknown in r_unknown.text
    assert r_few.status_code == 409
    assert "at least 2 finished runs, has 1" in r_few.text
    assert "1 cancelled" in r_few.text
    assert r_bad.status_code == 422
    assert "xyz" in r_bad.text
    assert mixed.status_code == 200
    assert mixed.json()["warnings"] == ["runs of side a differ in partition.alpha: not one setting"]


def test_difference_better_first_and_the_round_it_uses(
    client: TestClient, auth: dict, session: Session
) -> None:
    """order=better_first puts the higher group first; the final is named with its round."""
    # Prepare
    alice = _alice(session)
    low = [create_run(session, alice, algorithm="fedavg", rounds=4, seed=i) for i in range(2)]
    high = [create_run(session, alice, algorithm="fedgen", rounds=4, seed=i) for i in range(2)]
    for i, run in enumerate(low):
        seed_rounds(session, run, _curve(0.60 + i / 100))
    for i, run in enumerate(high):
        seed_rounds(session, run, _curve(0.70 + i / 100))
    ids_low = ",".join(str(r.id) for r in low)
    ids_high = ",".join(str(r.id) for r in high)
    url = f"{API}/difference?a={ids_low}&b={ids_high}"
    # Execute
    given = client.get(url, headers=auth).json()
    better = client.get(f"{url}&order=better_first", headers=auth).json()
    best = client.get(f"{url}&statistic=best&order=better_first", headers=auth).json()
    bad = client.get(f"{url}&order=sideways", headers=auth)
    # Assert
    assert given["diff"] < 0
    assert given["swapped"] is False
    assert better["diff"] == pytest.approx(-given["diff"])
    assert better["swapped"] is True
    assert better["label_a"] == "algorithm=fedgen"
    assert better["run_ids_a"] == [str(r.id) for r in high]
    # official profile, R = 4: round 4 is never evaluated, the final is round 3's accuracy
    assert (better["round"], better["last_round"]) == (3, 4)
    assert better["statistic_label"] == "final @3"
    assert best["statistic_label"] == "best"
    assert best["round"] is None
    assert best["diff"] == pytest.approx(0.1)
    assert bad.status_code == 422
    assert "order" in bad.text


def test_summary_names_final_and_best_with_their_rounds(
    client: TestClient, auth: dict, session: Session
) -> None:
    """A group's final is round R-1 under the official protocol ("final @3"); best likewise."""
    # Prepare
    sweep_id, runs = create_sweep_runs(
        session, _alice(session), {"seed": [0, 1]}, base=make_spec(rounds=4)
    )
    seed_rounds(session, runs[0], [0.1, 0.5, 0.4, 0.3, 0.9])
    seed_rounds(session, runs[1], [0.1, 0.7, 0.4, 0.5, 0.9])
    # Execute
    (g,) = client.get(f"{API}/sweeps/{sweep_id}/summary", headers=auth).json()["groups"]
    text = client.get(f"{API}/sweeps/{sweep_id}/summary?format=csv", headers=auth).text
    # Assert: round 4 (0.9) is not evaluated by the official protocol
    assert (g["final_round"], g["last_round"], g["final_label"]) == (3, 4, "final @3")
    assert g["final_mean"] == pytest.approx(0.4)
    assert (g["best_mean"], g["best_std"], g["best_round"]) == pytest.approx((0.6, 0.1, 1))
    assert "last_round,best_mean,best_std" in text.splitlines()[0]


def test_difference_val_best_picks_by_validation(
    client: TestClient, auth: dict, session: Session
) -> None:
    """statistic=val_best takes each run's test accuracy at its best validation round, not
    its best test round (here they disagree); round R is not counted (official profile)."""
    # Prepare
    alice = _alice(session)
    val = [0.1, 0.8, 0.3, 0.4, 0.99]  # best counted validation: round 1 (round 4 = R is not)
    runs = {
        side: [create_run(session, alice, algorithm=alg, rounds=4, seed=i) for i in range(2)]
        for side, alg in (("a", "fedgen"), ("b", "fedavg"))
    }
    for k, run in enumerate([*runs["a"], *runs["b"]]):
        test = [0.1, 0.5 + k / 100, 0.9, 0.6, 0.7]  # best test: round 2
        seed_rounds(session, run, test, extra=lambda r: {"val_acc": val[r]})
    ids = {s: ",".join(str(r.id) for r in rs) for s, rs in runs.items()}
    # Execute
    got = client.get(f"{API}/difference?a={ids['a']}&b={ids['b']}&statistic=val_best", headers=auth)
    # Assert
    assert got.status_code == 200, got.text
    assert got.json()["values_a"] == pytest.approx([0.50, 0.51])
    assert got.json()["values_b"] == pytest.approx([0.52, 0.53])
