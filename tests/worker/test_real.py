"""Real runner and real Celery worker processes (slow): smoke, Redis/SQLite brokers, kill -9, cancel."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

import fedgen.runner as runner_mod
from lab.config import Settings
from lab.models import CheckpointRow, RoundMetrics, Run
from lab.queue import TASK_NAME
from tests.support.factories import create_run, create_user
from tests.support.needs import needs
from tests.support.workers import redis_ok
from worker.celery_app import make_celery
from worker.claimed_run import execute_run
from worker.outcomes import RunOutcome

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _run(session: Session, rid: uuid.UUID) -> Run:
    session.expire_all()
    return session.get(Run, rid)


def test_real_runner_smoke(factory: sessionmaker, session: Session, settings: Settings) -> None:
    """3 users, 2 rounds, synthetic data, CPU: succeeds with metrics, users and a checkpoint."""
    user, _ = create_user(session)
    run = create_run(session, user)
    assert (
        execute_run(str(run.id), factory, runner=runner_mod.run, settings=settings)
        == RunOutcome.SUCCEEDED
    )
    row = _run(session, run.id)
    assert row.current_round == 2
    assert row.partition_fingerprint
    assert len(row.info["label_histogram"]) == 3
    n_ck = session.scalar(
        select(func.count()).select_from(CheckpointRow).where(CheckpointRow.run_id == run.id)
    )
    assert n_ck >= 1


@pytest.fixture
def broker(db_url: str, tmp_path: Path) -> str:
    """Postgres runs pair with Redis (CI: must be reachable), SQLite with the embedded SQLite broker."""
    if not db_url.startswith("sqlite"):
        needs(redis_ok(), "Redis at 127.0.0.1:6379")
        return "redis://127.0.0.1:6379/0"
    return f"sqla+sqlite:///{tmp_path / 'broker.db'}"


@pytest.fixture
def lab(db_url: str, broker: str, tmp_path: Path) -> Iterator[dict]:
    """Env for worker processes with a unique queue prefix, and helpers to start/stop them."""
    prefix = f"t{uuid.uuid4().hex[:8]}-"
    env = dict(
        os.environ,
        FEDGEN_DATABASE_URL=db_url,
        FEDGEN_BROKER_URL=broker,
        FEDGEN_HOME=str(tmp_path / "home"),
        FEDGEN_QUEUE_PREFIX=prefix,
        FEDGEN_LEASE_S="3",
        FEDGEN_HEARTBEAT_S="0.5",
        FEDGEN_REAPER_S="1",
        PYTHONPATH=str(ROOT),
        OMP_NUM_THREADS="1",
    )
    procs: list[subprocess.Popen] = []
    settings = Settings(
        database_url=db_url, broker_url=broker, home=tmp_path / "home", queue_prefix=prefix
    )
    app = make_celery(settings)

    def start() -> subprocess.Popen:
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "worker",
                "--slots",
                "1",  # one process: the tests kill it and count its runs
                "--queues",
                "cpu",
                "--loglevel",
                "WARNING",
                *(["--embedded"] if db_url.startswith("sqlite") else []),  # SQLite on purpose
            ],
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
        procs.append(p)
        return p

    def send(run_id: uuid.UUID) -> None:
        app.send_task(TASK_NAME, args=[str(run_id)], queue=prefix + "cpu")

    yield {"start": start, "send": send, "settings": settings, "queue": prefix + "cpu"}
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


def _wait(cond, timeout: float = 60.0, state=None) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out; state: {state() if state else None}")


def test_celery_worker_runs_to_success(lab: dict, factory: sessionmaker, session: Session) -> None:
    """A real worker process takes the task from the broker; metrics and checkpoints land."""
    user, _ = create_user(session)
    run = create_run(session, user)
    lab["start"]()
    lab["send"](run.id)
    _wait(lambda: _run(session, run.id).status in ("succeeded", "failed"))
    row = _run(session, run.id)
    assert row.status == "succeeded", row.error
    assert row.worker
    assert (
        session.scalar(
            select(func.count()).select_from(RoundMetrics).where(RoundMetrics.run_id == run.id)
        )
        == 3
    )


def test_kill9_then_new_worker_finishes_exactly_once(
    lab: dict, factory: sessionmaker, session: Session
) -> None:
    """kill -9 mid-run; a new worker resumes: every round once, final metrics equal an uninterrupted run."""
    user, _ = create_user(session)
    # Long enough that the kill (after round 2) always lands mid-run.
    long = {"rounds": 14, "local_steps": 40, "checkpoint_every": 2}
    ref = create_run(session, user, **long)
    # On the worker's queue: the new worker's dispatcher re-sends it once the lease expires.
    run = create_run(session, user, queue=lab["queue"], **long)
    execute_run(str(ref.id), factory, runner=runner_mod.run, settings=lab["settings"])
    w1 = lab["start"]()
    lab["send"](run.id)
    _wait(lambda: _run(session, run.id).current_round >= 2, 90)
    os.killpg(w1.pid, signal.SIGKILL)
    w1.wait(10)
    assert _run(session, run.id).status == "running", "the run finished before the kill"
    lab["start"]()  # its dispatcher re-sends the run once the lease expires
    # A bound, not a speed claim: a loaded machine (the suite beside a training job) once
    # needed more than 90 s for 28 rounds.
    _wait(
        lambda: _run(session, run.id).status == "succeeded",
        300,
        lambda: {
            k: getattr(_run(session, run.id), k)
            for k in ("status", "current_round", "attempt", "error")
        },
    )
    rounds = session.scalars(
        select(RoundMetrics.round).where(RoundMetrics.run_id == run.id).order_by(RoundMetrics.round)
    ).all()
    assert rounds == list(range(15))
    assert _run(session, run.id).attempt == 2

    def accs(rid: uuid.UUID) -> list[float]:
        return list(
            session.scalars(
                select(RoundMetrics.test_acc)
                .where(RoundMetrics.run_id == rid)
                .order_by(RoundMetrics.round)
            )
        )

    assert accs(run.id) == pytest.approx(accs(ref.id), abs=1e-6)


def test_cancel_running_run(lab: dict, factory: sessionmaker, session: Session) -> None:
    """Cancel while running: stops within one round and is marked cancelled."""
    from lab.repository import runs as runs_repo

    user, _ = create_user(session)
    run = create_run(session, user, rounds=200, local_steps=5, checkpoint_every=0)
    lab["start"]()
    lab["send"](run.id)
    _wait(lambda: _run(session, run.id).current_round >= 1)
    runs_repo.request_cancel(session, run.id)
    session.commit()
    at_cancel = _run(session, run.id).current_round
    _wait(lambda: _run(session, run.id).status == "cancelled")
    assert _run(session, run.id).current_round <= at_cancel + 1
