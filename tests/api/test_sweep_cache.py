"""A sweep's cached answers (lab.sweep_cache, issue 31) are never stale: each change of one of
its runs (a start, a new round, the end, the trash, a restore) is answered as reading afresh."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from lab import sweep_cache
from lab.models import Run, User
from lab.repository import metrics as metrics_repo
from lab.repository import runs as runs_repo
from tests.support.factories import create_sweep_runs, create_user, make_spec, seed_rounds

API = "/api/v1"


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    sweep_cache.clear()


def _paths(sweep_id: uuid.UUID) -> list[str]:
    base = f"{API}/sweeps/{sweep_id}"
    return [
        f"{base}/summary",
        f"{base}/summary?format=csv",
        f"{base}/summary?group_by=algorithm.name",
        f"{base}/plot-data?x=partition.alpha",
        f"{base}/plot-data?x=partition.alpha&statistic=time_to_target&target=0.5&format=csv",
    ]


def _read(client: TestClient, auth: dict[str, str], paths: list[str]) -> list[str]:
    out = []
    for p in paths:
        r = client.get(p, headers=auth)
        assert r.status_code == 200, (p, r.text)
        out.append(r.text)
    return out


def _fresh(client: TestClient, auth: dict[str, str], paths: list[str]) -> list[str]:
    sweep_cache.clear()
    return _read(client, auth, paths)


def _round(session: Session, run: Run, round_: int, acc: float) -> None:
    written = metrics_repo.write_round(
        session,
        run.id,
        "t",
        round_=round_,
        metrics={"test_acc": acc, "test_loss": 1.0 - acc},
        users=[],
        checkpoints=[],
        lease_s=60,
    )
    session.commit()
    assert written


def test_answers_follow_every_change_of_a_run(
    client: TestClient, auth: dict[str, str], session: Session
) -> None:
    """After each change the cached answers equal fresh ones, and differ from the last ones
    where the change shows (a status, a run counted or not)."""
    # Prepare
    alice = session.query(User).filter_by(name="alice").one()
    sweep_id, runs = create_sweep_runs(
        session,
        alice,
        {"algorithm": ["fedavg", "fedgen"], "partition.alpha": [0.1, 1.0]},
        base=make_spec(),
    )
    for i, run in enumerate(runs[:3]):
        seed_rounds(session, run, [0.2 + 0.1 * i, 0.4 + 0.05 * i, 0.6 - 0.02 * i, 0.5, 0.7])
    live = runs[3]
    paths = _paths(sweep_id)
    queued = _read(client, auth, paths)
    assert _read(client, auth, paths) == queued
    # Execute: the last run starts and writes round 0, then round 1, then succeeds
    session.query(Run).filter(Run.id == live.id).update({"lease_token": "t", "status": "running"})
    _round(session, live, 0, 0.3)
    started = _read(client, auth, paths)
    assert started == _fresh(client, auth, paths)
    version_at_0 = sweep_cache.sweep_version(session, sweep_id)
    _round(session, live, 1, 0.6)
    version_at_1 = sweep_cache.sweep_version(session, sweep_id)
    at_round_1 = _read(client, auth, paths)
    assert at_round_1 == _fresh(client, auth, paths)
    for r in range(2, 5):
        _round(session, live, r, 0.65)
    assert runs_repo.finish(session, live.id, "t", status="succeeded")
    session.commit()
    finished = _read(client, auth, paths)
    assert finished == _fresh(client, auth, paths)
    # ... then goes to the trash and comes back
    assert client.delete(f"{API}/runs/{live.id}", headers=auth).status_code == 204
    trashed = _read(client, auth, paths)
    assert trashed == _fresh(client, auth, paths)
    assert client.post(f"{API}/runs/{live.id}/restore", headers=auth).status_code == 200
    restored = _read(client, auth, paths)
    # Assert
    assert started != queued  # status counts: running, not queued
    assert version_at_0 != version_at_1  # a new round moves the version
    assert finished != at_round_1  # the run now counts (n, means, its time to target)
    assert trashed != finished
    assert restored == finished


def test_answer_is_computed_once_per_version(session: Session) -> None:
    """The same key under the same version is computed once; a new round computes again;
    keys and sweeps do not share answers; an error keeps nothing."""
    # Prepare
    alice, _ = create_user(session, "alice")
    sweep_a, runs = create_sweep_runs(session, alice, {"seed": [0, 1]})
    sweep_b, _ = create_sweep_runs(session, alice, {"seed": [0, 1]})
    calls: list[str] = []

    def compute(tag: str) -> str:
        calls.append(tag)
        return f"{tag}#{len(calls)}"

    def failing() -> str:
        calls.append("boom")
        raise ValueError("boom")

    # Execute
    first = sweep_cache.answer(session, sweep_a, "k", lambda: compute("a"))
    again = sweep_cache.answer(session, sweep_a, "k", lambda: compute("a"))
    other_key = sweep_cache.answer(session, sweep_a, "k2", lambda: compute("a2"))
    other_sweep = sweep_cache.answer(session, sweep_b, "k", lambda: compute("b"))
    session.query(Run).filter(Run.id == runs[0].id).update(
        {"lease_token": "t", "status": "running"}
    )
    session.commit()
    after_start = sweep_cache.answer(session, sweep_a, "k", lambda: compute("a"))
    with pytest.raises(ValueError, match="boom"):
        sweep_cache.answer(session, sweep_a, "k3", failing)
    retried = sweep_cache.answer(session, sweep_a, "k3", lambda: compute("a3"))
    # Assert
    assert (first, again, other_key, other_sweep) == ("a#1", "a#1", "a2#2", "b#3")
    assert after_start == "a#4"
    assert retried == "a3#6"
    assert calls == ["a", "a2", "b", "a", "boom", "a3"]
