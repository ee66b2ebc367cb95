"""GET /sweeps/{id}/plot-data on a real database: points equal the runs' own summaries, by hand.

A sweep over α × algorithm × 3 seeds; each run's summary is written apart from its curve,
so a point computed from the curves instead of the summaries would not match.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from scipy import stats
from sqlalchemy.orm import Session

from fedgen.stats import mean_std, pooled_top5, reported_curve, summarize_curve
from lab.models import Run, User
from tests.support.factories import create_sweep_runs, make_spec, seed_rounds

API = "/api/v1"
ROUNDS = 6
GRID = {"algorithm": ["fedavg", "fedgen"], "partition.alpha": [0.1, 1.0], "seed": [0, 1, 2]}


def _curve(i: int) -> list[float]:
    """Round 0..R accuracies, different for every run."""
    return [round(0.1 + 0.12 * r + 0.013 * ((i * 7 + r * 3) % 5), 4) for r in range(ROUNDS + 1)]


def _summary(i: int) -> dict[str, Any]:
    """A summary that is NOT the curve's (so the endpoint must read the summary)."""
    return {
        "final_acc": 0.5 + 0.031 * i,
        "final_round": ROUNDS - 1,
        "best_acc": 0.6 + 0.017 * ((i * 5) % 7),
        "best_round": 3,
        "top5_mean": 0.55 + 0.023 * ((i * 3) % 4),
        "top5_std": 0.01 * (1 + i % 3),
    }


def _set_summary(session: Session, run: Run, summary: dict[str, Any]) -> None:
    session.query(Run).filter(Run.id == run.id).update({"summary": summary})
    session.commit()


def _sweep(session: Session, *, summaries: bool = True) -> tuple[uuid.UUID, dict[str, Run]]:
    """The α × algorithm × seed sweep, every run succeeded with its curve (and a summary)."""
    alice = session.query(User).filter_by(name="alice").one()
    sweep_id, runs = create_sweep_runs(session, alice, GRID, base=make_spec(rounds=ROUNDS))
    for i, run in enumerate(runs):
        seed_rounds(session, run, _curve(i))
        if summaries:
            _set_summary(session, run, _summary(i))
    return sweep_id, {str(r.id): r for r in runs}


def _index(runs: dict[str, Run]) -> dict[str, int]:
    return {rid: i for i, rid in enumerate(runs)}


def _members(runs: dict[str, Run], algorithm: str, alpha: float) -> list[str]:
    return [
        rid
        for rid, r in runs.items()
        if r.spec["algorithm"]["name"] == algorithm and r.spec["partition"]["alpha"] == alpha
    ]


def test_points_are_mean_std_and_ci_of_the_runs_summaries(
    client: TestClient, auth: dict, session: Session
) -> None:
    """final ± std and ± 95 % t interval per (algorithm, α) equal a hand computation."""
    # Prepare
    sweep_id, runs = _sweep(session)
    idx = _index(runs)
    # Execute
    url = f"{API}/sweeps/{sweep_id}/plot-data?x=partition.alpha&statistic=final"
    std = client.get(url, headers=auth)
    ci = client.get(url + "&interval=ci95", headers=auth).json()
    unknown = client.get(url.replace("x=partition.alpha", "x=partition.beta"), headers=auth)
    # Assert
    assert std.status_code == 200, std.text
    data = std.json()
    assert (data["x"], data["by"], data["statistic"], data["log_x"]) == (
        "partition.alpha",
        "algorithm.name",
        "final",
        True,
    )
    assert data["varying"] == ["algorithm.name", "partition.alpha"]
    assert [s["by_value"] for s in data["series"]] == ["fedavg", "fedgen"]
    assert data["excluded"]["counts"] == {}
    assert data["warnings"] == []
    for s, s_ci in zip(data["series"], ci["series"], strict=True):
        assert [p["x"] for p in s["points"]] == [0.1, 1.0]
        for p, p_ci in zip(s["points"], s_ci["points"], strict=True):
            members = _members(runs, s["by_value"], p["x"])
            values = [_summary(idx[rid])["final_acc"] for rid in members]
            m, sd = mean_std(values)
            assert sorted(p["run_ids"]) == sorted(members)
            assert p["n"] == p["n_total"] == 3
            assert (p["mean"], p["std"]) == pytest.approx((m, sd))
            assert (p["lo"], p["hi"]) == pytest.approx((m - sd, m + sd))
            half = stats.t.ppf(0.975, 2) * statistics.stdev(values) / math.sqrt(3)
            assert (p_ci["mean"], p_ci["lo"], p_ci["hi"]) == pytest.approx((m, m - half, m + half))
    assert ci["level"] == 0.95
    assert unknown.status_code == 422
    (err,) = unknown.json()["detail"]
    assert err["field"] == "x"
    assert "fields that vary in this sweep: algorithm.name, partition.alpha" in err["msg"]


def test_top5_pools_like_the_sweep_table_and_csv_has_the_same_numbers(
    client: TestClient, auth: dict, session: Session
) -> None:
    """top5 from summaries the runner would write equals the sweep summary's top-5 cell."""
    # Prepare: summaries as the runner writes them (summarize_curve, official protocol).
    sweep_id, runs = _sweep(session, summaries=False)
    for i, run in enumerate(runs.values()):
        s = summarize_curve(_curve(i), "before_training", ROUNDS)
        _set_summary(
            session,
            run,
            {
                "final_acc": s.final,
                "final_round": s.final_round,
                "best_acc": s.best,
                "top5_mean": s.top5_mean,
                "top5_std": s.top5_std,
            },
        )
    idx = _index(runs)
    # Execute
    url = f"{API}/sweeps/{sweep_id}/plot-data?x=alpha&by=algorithm&statistic=top5"
    data = client.get(url, headers=auth).json()
    text = client.get(url + "&format=csv", headers=auth).text
    table = client.get(
        f"{API}/sweeps/{sweep_id}/summary?group_by=algorithm.name,partition.alpha", headers=auth
    ).json()["groups"]
    # Assert
    cells = {(g["fields"]["algorithm.name"], g["fields"]["partition.alpha"]): g for g in table}
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 4
    for s in data["series"]:
        for p in s["points"]:
            members = _members(runs, s["by_value"], p["x"])
            curves = [
                reported_curve(_curve(idx[rid]), "before_training", ROUNDS) for rid in members
            ]
            assert (p["mean"], p["std"]) == pytest.approx(pooled_top5(curves))
            cell = cells[(s["by_value"], p["x"])]
            assert (p["mean"], p["std"]) == pytest.approx((cell["top5_mean"], cell["top5_std"]))
            row = next(
                r
                for r in rows
                if r["algorithm.name"] == s["by_value"] and float(r["partition.alpha"]) == p["x"]
            )
            # Percent, rounded as the Paper tables show them; the header says the unit.
            cols = ("mean_pct", "std_pct", "lo_pct", "hi_pct")
            assert [row[c] for c in cols] == [
                str(round(p[k] * 100, 2)) for k in ("mean", "std", "lo", "hi")
            ]
            assert int(row["n"]) == 3
            assert row["statistic"] == "top5"


def test_unfinished_runs_are_excluded_and_unknown_fields_named(
    client: TestClient, auth: dict, session: Session
) -> None:
    """A failed and a queued run are listed apart; unknown x/by and a missing target: 422."""
    # Prepare: one run failed, one never started.
    alice = session.query(User).filter_by(name="alice").one()
    grid = {"algorithm": ["fedavg"], "partition.alpha": [0.1], "seed": [0, 1, 2, 3]}
    sweep_id, runs = create_sweep_runs(session, alice, grid, base=make_spec(rounds=ROUNDS))
    for i, run in enumerate(runs[:3]):
        seed_rounds(session, run, _curve(i), status="failed" if i == 2 else "succeeded")
        _set_summary(session, run, _summary(i))
    base = f"{API}/sweeps/{sweep_id}/plot-data"
    # Execute
    data = client.get(f"{base}?x=partition.alpha&statistic=best", headers=auth).json()
    bad_x = client.get(f"{base}?x=partition.beta", headers=auth)
    bad_by = client.get(f"{base}?x=alpha&by=alpha", headers=auth)
    no_target = client.get(f"{base}?x=alpha&statistic=time_to_target", headers=auth)
    # Assert
    (point,) = data["series"][0]["points"]
    assert (point["n"], point["n_total"]) == (2, 4)
    assert point["mean"] == pytest.approx(
        mean_std([_summary(0)["best_acc"], _summary(1)["best_acc"]])[0]
    )
    assert data["excluded"]["counts"] == {"failed": 1, "queued": 1}
    assert data["excluded"]["run_ids"]["failed"] == [str(runs[2].id)]
    assert data["excluded"]["run_ids"]["queued"] == [str(runs[3].id)]
    assert bad_x.status_code == 422
    (err,) = bad_x.json()["detail"]
    assert err["field"] == "x"
    assert "partition.beta" in err["msg"]
    assert [e["field"] for e in bad_by.json()["detail"]] == ["by"]
    assert [e["field"] for e in no_target.json()["detail"]] == ["target"]


def test_time_to_target_counts_rounds_and_censors_runs_that_never_reach(
    client: TestClient, auth: dict, session: Session
) -> None:
    """First evaluated round with accuracy >= target; a run that never gets there: lower bound."""
    # Prepare
    alice = session.query(User).filter_by(name="alice").one()
    grid = {"partition.alpha": [0.1, 1.0], "seed": [0, 1]}
    sweep_id, runs = create_sweep_runs(session, alice, grid, base=make_spec(rounds=4))
    curves = {  # (alpha, seed) -> rounds 0..4
        (0.1, 0): [0.1, 0.3, 0.6, 0.7, 0.9],
        (0.1, 1): [0.1, 0.56, 0.6, 0.7, 0.9],
        (1.0, 0): [0.1, 0.2, 0.3, 0.4, 0.95],
        (1.0, 1): [0.1, 0.2, 0.6, 0.7, 0.8],
    }
    for run in runs:
        seed_rounds(session, run, curves[(run.spec["partition"]["alpha"], run.spec["seed"])])
    # Execute
    url = f"{API}/sweeps/{sweep_id}/plot-data?x=alpha&statistic=time_to_target&target=0.55"
    data = client.get(url, headers=auth).json()
    rows = list(csv.DictReader(io.StringIO(client.get(url + "&format=csv", headers=auth).text)))
    # Assert
    assert data["unit"] == "round"
    # Rounds, not percent: the header says so and the values are not scaled.
    assert {float(r["partition.alpha"]): r["mean_rounds"] for r in rows} == {0.1: "1.5", 1.0: "2.5"}
    assert "mean_pct" not in rows[0]
    assert data["target"] == 0.55
    by_x = {p["x"]: p for p in data["series"][0]["points"]}
    low = by_x[0.1]
    # Rounds 2 and 1 reach 0.55: mean 1.5, population std 0.5.
    assert (low["mean"], low["std"], low["reached"], low["censored"]) == (1.5, 0.5, 2, False)
    high = by_x[1.0]
    # Official protocol: round 4 (R) is never evaluated, so 0.95 does not count: censored at 3.
    assert (high["mean"], high["std"], high["reached"], high["censored"]) == (2.5, None, 1, True)
    assert any("never reached 0.55" in w for w in data["warnings"])
