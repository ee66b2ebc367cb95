"""Metrics reads: history with since_round, downsampling bounds, compare, users, info, SSE, checkpoints."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from lab.config import Settings
from lab.downsample import downsample
from lab.models import User
from tests.support.factories import create_run, seed_rounds
from tests.support.fakes import FakeRunner
from worker.claimed_run import execute_run

API = "/api/v1"


def _alice(session: Session) -> User:
    return session.query(User).filter_by(name="alice").one()


def test_downsample_bounds_last_min_max() -> None:
    """Buckets never exceed max_points; each reports its last round/value and min/max."""
    rounds = list(range(101))
    cols = {"a": [float(r % 7) for r in rounds], "b": [None] * 101}
    r, last, lo, hi, ds = downsample(rounds, cols, 10)
    assert ds
    assert len(r) == 10
    assert r[-1] == 100
    assert r == sorted(r)
    assert last["a"][-1] == 100 % 7
    assert lo["a"][0] == 0.0
    assert hi["a"][0] == 6.0
    assert last["b"] == [None] * 10
    assert downsample(rounds[:5], {"a": [1.0] * 5}, 10)[4] is False


def test_history_since_round_and_max_points(
    client: TestClient, auth: dict, session: Session
) -> None:
    """since_round returns only newer rounds; max_points caps every series."""
    # Prepare
    run = create_run(session, _alice(session), rounds=50)
    seed_rounds(session, run, [i / 100 for i in range(51)], extra=lambda r: {"lr": 0.01})
    # Execute
    full = client.get(f"{API}/runs/{run.id}/metrics", headers=auth).json()
    newer = client.get(f"{API}/runs/{run.id}/metrics?since_round=47", headers=auth).json()
    ds = client.get(f"{API}/runs/{run.id}/metrics?max_points=7", headers=auth).json()
    # Assert
    assert full["rounds"] == list(range(51))
    assert not full["downsampled"]
    assert full["min"] is None
    assert newer["rounds"] == [48, 49, 50]
    assert newer["metrics"]["test_acc"] == [0.48, 0.49, 0.5]
    assert ds["downsampled"]
    assert all(len(v) <= 7 for v in ds["metrics"].values())
    assert ds["rounds"][-1] == 50
    assert ds["metrics"]["test_acc"][-1] == 0.5
    assert ds["max"]["test_acc"][-1] == 0.5
    assert ds["min"]["test_acc"][0] == 0.0


def test_compare_many_runs(client: TestClient, auth: dict, session: Session) -> None:
    """One request returns every run's columns in the order asked."""
    alice = _alice(session)
    runs = [create_run(session, alice, seed=i, rounds=9) for i in range(3)]
    for i, run in enumerate(runs):
        seed_rounds(session, run, [0.1 * i + r / 100 for r in range(10)])
    ids = ",".join(str(r.id) for r in reversed(runs))
    body = client.get(f"{API}/compare?run_ids={ids}&max_points=5", headers=auth).json()
    assert [r["id"] for r in body["runs"]] == [str(r.id) for r in reversed(runs)]
    assert all(len(r["rounds"]) == 5 and r["downsampled"] for r in body["runs"])
    assert body["runs"][0]["seed"] == 2
    assert body["runs"][0]["algorithm"] == "fedavg"


def test_compare_sends_only_the_metrics_asked_for(
    client: TestClient, auth: dict, session: Session
) -> None:
    """metrics=a,b keeps those series (downsampled ones too); absent = all; empty = 422."""
    # Prepare
    run = create_run(session, _alice(session), rounds=9)
    extra = {"lr": 0.01, "train_loss": 0.5, "time_total_ms": 10.0}
    seed_rounds(session, run, [r / 10 for r in range(10)], extra=lambda r: extra)
    url = f"{API}/compare?run_ids={run.id}"
    # Execute
    every = client.get(url, headers=auth).json()["runs"][0]
    two = client.get(f"{url}&metrics=test_acc,time_total_ms,nope", headers=auth).json()["runs"][0]
    ds = client.get(f"{url}&metrics=train_loss&max_points=3", headers=auth).json()["runs"][0]
    empty = client.get(f"{url}&metrics=,", headers=auth)
    # Assert
    assert {"test_acc", "lr", "train_loss", "time_total_ms"} <= set(every["metrics"])
    assert set(two["metrics"]) == {"test_acc", "time_total_ms"}
    assert two["metrics"]["test_acc"] == [r / 10 for r in range(10)]
    assert ds["downsampled"]
    assert set(ds["metrics"]) == set(ds["min"]) == set(ds["max"]) == {"train_loss"}
    assert empty.status_code == 422
    assert "metrics" in empty.text


def test_users_info_checkpoints_and_sse(
    client: TestClient, auth: dict, session: Session, factory: sessionmaker, settings: Settings
) -> None:
    """After a (fake) run: per-user rows, RunInfo, checkpoint download with sha256, SSE in order."""
    # Prepare
    run = create_run(session, _alice(session), rounds=3)
    # Before a worker starts it: what is known, the partition part pending (null).
    before = client.get(f"{API}/runs/{run.id}/info", headers=auth)
    assert before.status_code == 200
    assert before.json()["pending"] is True
    assert before.json()["label_histogram"] is None
    assert before.json()["run_id"] == str(run.id)
    execute_run(str(run.id), factory, runner=FakeRunner(), settings=settings)
    # Execute / Assert
    users = client.get(f"{API}/runs/{run.id}/users?round_from=1&round_to=2", headers=auth).json()[
        "data"
    ]
    assert [(u["round"], u["user"]) for u in users] == [(r, u) for r in (1, 2) for u in range(3)]
    assert (
        client.get(f"{API}/runs/{run.id}/info", headers=auth).json()["label_histogram"]
        == [[5, 5]] * 3
    )
    started = client.get(f"{API}/runs/{run.id}/info", headers=auth).json()
    assert started["pending"] is False
    # What the worker picked for the round's clients (the fake's RunInfo: sequential).
    assert (started["execution"], started["batch_clients"]) == ("sequential", None)
    assert before.json()["execution"] is None
    ckpts = client.get(f"{API}/runs/{run.id}/checkpoints", headers=auth).json()["data"]
    assert [c["round"] for c in ckpts] == [2, 3]  # the newest 2 full ones are kept
    dl = client.get(f"{API}/runs/{run.id}/checkpoints/{ckpts[-1]['id']}/download", headers=auth)
    assert dl.status_code == 200
    assert json.loads(dl.content) == {"round": 3}
    assert dl.headers["x-checkpoint-sha256"] == ckpts[-1]["sha256"]
    with client.stream("GET", f"{API}/runs/{run.id}/events", headers=auth) as resp:
        text = "".join(resp.iter_text())
    rounds = [
        json.loads(line[5:])["round"]
        for line in text.splitlines()
        if line.startswith("data:") and '"metrics"' in line
    ]
    assert rounds == [0, 1, 2, 3]
    assert '"succeeded"' in text


def test_sse_follows_a_live_run(
    client: TestClient, auth: dict, session: Session, factory: sessionmaker, settings: Settings
) -> None:
    """Rounds that land while the stream is open arrive in order, then the terminal status ends it."""
    import threading
    import time

    run = create_run(session, _alice(session), rounds=4)
    runner = FakeRunner(on_round=lambda r: time.sleep(0.05))
    t = threading.Thread(
        target=execute_run,
        args=(str(run.id), factory),
        kwargs={"runner": runner, "settings": settings},
    )
    with client.stream("GET", f"{API}/runs/{run.id}/events", headers=auth) as resp:
        t.start()
        text = "".join(resp.iter_text())
    t.join()
    rounds = [
        json.loads(line[5:])["round"]
        for line in text.splitlines()
        if line.startswith("data:") and '"metrics"' in line
    ]
    assert rounds == [0, 1, 2, 3, 4]
    assert text.rstrip().endswith('"round": 4}')


def test_cached_history_follows_new_rounds(
    client: TestClient, auth: dict, session: Session
) -> None:
    """A cached full history is keyed by the run's last round: a new round is always seen."""
    # Prepare
    from lab.repository import metrics as metrics_repo
    from lab.repository import runs as runs_repo

    run = create_run(session, _alice(session), rounds=9)
    seed_rounds(session, run, [r / 10 for r in range(5)], status="running")
    first = client.get(f"{API}/runs/{run.id}/metrics", headers=auth).json()
    again = client.get(f"{API}/compare?run_ids={run.id}", headers=auth).json()["runs"][0]
    # Execute: round 5 lands
    runs_repo.claim(session, run.id, worker="w", token="t2", device="cpu", lease_s=60)
    session.query(type(run)).filter_by(id=run.id).update({"lease_token": "t2", "status": "running"})
    metrics_repo.write_round(
        session,
        run.id,
        "t2",
        round_=5,
        metrics={"test_acc": 0.5},
        users=[],
        checkpoints=[],
        lease_s=60,
    )
    session.commit()
    after = client.get(f"{API}/runs/{run.id}/metrics", headers=auth).json()
    compared = client.get(f"{API}/compare?run_ids={run.id}", headers=auth).json()["runs"][0]
    # Assert
    assert first["rounds"] == again["rounds"] == [0, 1, 2, 3, 4]
    assert first["metrics"]["test_acc"] == again["metrics"]["test_acc"]
    assert after["rounds"] == compared["rounds"] == [0, 1, 2, 3, 4, 5]
    assert after["metrics"]["test_acc"][-1] == compared["metrics"]["test_acc"][-1] == 0.5


def test_compare_since_round_sends_only_newer_rounds(
    client: TestClient, auth: dict, session: Session
) -> None:
    """since_round=k sends rounds > k of every run, with its status; bad values name the field."""
    # Prepare
    alice = _alice(session)
    done = create_run(session, alice, seed=0, rounds=9)
    seed_rounds(session, done, [r / 10 for r in range(10)])
    live = create_run(session, alice, seed=1, rounds=9)
    seed_rounds(session, live, [r / 20 for r in range(5)], status="running")
    queued = create_run(session, alice, seed=2, rounds=9)
    url = f"{API}/compare?run_ids={done.id},{live.id},{queued.id}&metrics=test_acc"
    # Execute
    every = client.get(url, headers=auth).json()["runs"]
    newer = client.get(f"{url}&since_round=3", headers=auth).json()["runs"]
    fewer = client.get(f"{url}&since_round=3&max_points=2", headers=auth).json()["runs"]
    past = client.get(f"{url}&since_round=9", headers=auth).json()["runs"]
    too_low = client.get(f"{url}&since_round=-2", headers=auth)
    too_high = client.get(f"{url}&since_round={2**31}", headers=auth)
    # Assert
    assert [len(r["rounds"]) for r in every] == [10, 5, 0]
    assert [r["rounds"] for r in newer] == [list(range(4, 10)), [4], []]
    assert newer[0]["metrics"]["test_acc"] == [r / 10 for r in range(4, 10)]
    assert [r["status"] for r in newer] == ["succeeded", "running", "queued"]
    assert newer[1]["current_round"] == 4
    assert fewer[0]["rounds"][-1] == 9
    assert len(fewer[0]["rounds"]) == 2
    assert [r["rounds"] for r in past] == [[], [], []]
    for bad in (too_low, too_high):
        assert bad.status_code == 422
        (err,) = bad.json()["detail"]
        assert err["field"] == "since_round"
    assert "-1" in too_low.text
    assert "2147483647" in too_high.text
