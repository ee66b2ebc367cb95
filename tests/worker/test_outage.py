"""A real database outage mid-run: Postgres cut off for 30 s by a TCP proxy (tests/support/tcp_proxy.py).

The worker is a real Celery process and the API a real app, both connected to Postgres
through the proxy; the shared server itself is never stopped. The run must finish with
every round exactly once, its curve equal to an uninterrupted run's, and every POST /runs
during the outage must be answered 503 with a JSON body and Retry-After.
"""

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
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

import fedgen.runner as runner_mod
from api.main import create_app
from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from lab.models import RoundMetrics, Run
from lab.queue import TASK_NAME
from tests.support.factories import create_run, create_user, make_spec
from tests.support.needs import needs
from tests.support.tcp_proxy import TcpProxy
from worker.celery_app import make_celery
from worker.claimed_run import execute_run
from worker.outcomes import RunOutcome

ROOT = Path(__file__).resolve().parents[2]
OUTAGE_S = 30.0

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def _redis_ok() -> bool:
    try:
        import redis

        return bool(redis.Redis(host="127.0.0.1", port=6379, socket_timeout=1).ping())
    except Exception:
        return False


@pytest.fixture
def proxied(pg_url: str) -> Iterator[tuple[TcpProxy, str]]:
    """A proxy in front of the test Postgres, and the database URL that goes through it."""
    url = make_url(pg_url)
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432)
    yield proxy, url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    proxy.close()


@pytest.fixture
def pg(pg_url: str) -> Iterator[Session]:
    """A direct (not proxied) session on the test schema, emptied afterwards."""
    from tests.support.postgres import truncate

    engine = make_engine(pg_url, pool_size=2)
    with make_sessionmaker(engine)() as s:
        yield s
    truncate(engine)
    engine.dispose()


def _wait(cond, timeout: float, state=None) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if cond():
            return time.monotonic() - start
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s; state: {state() if state else None}")


def test_postgres_away_30s_mid_run(
    pg_url: str, proxied: tuple[TcpProxy, str], pg: Session, tmp_path: Path
) -> None:
    """Postgres cut for 30 s mid-run: the run resumes by the task's own retry (the lease is
    handed back; lease 120 s and reaper 1 h rule out any other way back within the wait), it
    finishes with every round once and equals an uninterrupted run; POST /runs got 503 JSON."""
    needs(_redis_ok(), "Redis at 127.0.0.1:6379")
    proxy, via_proxy = proxied
    prefix = f"t{uuid.uuid4().hex[:8]}-"
    home = tmp_path / "home"
    env = dict(
        os.environ,
        FEDGEN_DATABASE_URL=via_proxy,
        FEDGEN_BROKER_URL="redis://127.0.0.1:6379/0",
        FEDGEN_HOME=str(home),
        FEDGEN_QUEUE_PREFIX=prefix,
        FEDGEN_LEASE_S="120",
        FEDGEN_HEARTBEAT_S="1",
        FEDGEN_REAPER_S="3600",
        FEDGEN_DB_RETRY_MAX_DELAY_S="4",
        PYTHONPATH=str(ROOT),
        OMP_NUM_THREADS="1",
    )
    settings = Settings(
        database_url=via_proxy,
        broker_url="redis://127.0.0.1:6379/0",
        home=home,
        queue_prefix=prefix,
    )
    user, token = create_user(pg)
    long = {"rounds": 12, "local_steps": 5, "checkpoint_every": 2}
    ref = create_run(pg, user, **long)
    run = create_run(pg, user, **long)
    direct = make_sessionmaker(make_engine(pg_url, pool_size=2))
    assert execute_run(str(ref.id), direct, runner=runner_mod.run, settings=settings) == (
        RunOutcome.SUCCEEDED
    )

    def row() -> Run:
        pg.expire_all()
        return pg.get(Run, run.id)

    def state() -> dict:
        r = row()
        return {k: getattr(r, k) for k in ("status", "current_round", "attempt", "error")}

    api_engine = make_engine(via_proxy, pool_size=2, pool_timeout=5)
    app = create_app(
        settings,
        session_factory=make_sessionmaker(api_engine),
        enqueue=lambda *_: None,
        broker_check=lambda: None,
    )
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "worker",
            "--slots",
            "1",
            "--queues",
            "cpu",
            "--loglevel",
            "INFO",
        ],
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    codes: list[int] = []
    try:
        make_celery(settings).send_task(TASK_NAME, args=[str(run.id)], queue=prefix + "cpu")
        _wait(lambda: row().current_round >= 2, 300, state)
        # Cut: every connection of the API and the worker drops, new ones are refused.
        proxy.cut()
        cut_at = time.monotonic()
        at_cut = row().current_round
        assert row().status == "running", "the run finished before the outage"
        with TestClient(app) as client:
            auth = {"Authorization": f"Bearer {token}"}
            ready = client.get("/ready")
            while time.monotonic() - cut_at < OUTAGE_S:
                r = client.post("/api/v1/runs", json={"spec": make_spec()}, headers=auth)
                codes.append(r.status_code)
                assert r.status_code == 503, r.text
                assert r.headers["content-type"].startswith("application/json")
                assert "database unavailable" in r.json()["detail"]
                assert int(r.headers["Retry-After"]) > 0
                time.sleep(0.5)
            stuck = row().current_round
            proxy.restore()
            restored_at = time.monotonic()
            resumed_s = _wait(lambda: row().current_round > stuck, 90, state)
            done_s = _wait(lambda: row().status in ("succeeded", "failed"), 120, state)
            after = client.post("/api/v1/runs", json={"spec": make_spec()}, headers=auth)
            got = client.get(f"/api/v1/runs/{run.id}", headers=auth).json()
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)
        api_engine.dispose()
    outage = restored_at - cut_at
    rounds = pg.scalars(
        select(RoundMetrics.round).where(RoundMetrics.run_id == run.id).order_by(RoundMetrics.round)
    ).all()

    def accs(rid: uuid.UUID) -> list[float]:
        return list(
            pg.scalars(
                select(RoundMetrics.test_acc)
                .where(RoundMetrics.run_id == rid)
                .order_by(RoundMetrics.round)
            )
        )

    print(  # noqa: T201 - the recovery figures the issue asks for (pytest -s shows them)
        f"\noutage {outage:.1f} s (cut at round {at_cut}, rounds written by then {stuck}); "
        f"progress resumed {resumed_s:.1f} s after restore, run done {done_s:.1f} s after; "
        f"POST /runs during the outage: {codes.count(503)} x 503 of {len(codes)}; "
        f"attempts {row().attempt}; rounds {len(rounds)} ({len(set(rounds))} distinct); "
        f"refused connections {proxy.refused}"
    )
    assert ready.status_code == 503
    # No token can be checked while the database is away: ready or not, nothing more.
    assert ready.json() == {"status": "unavailable"}
    assert row().status == "succeeded", row().error
    assert rounds == list(range(13))  # every round once
    assert row().attempt >= 2  # it was interrupted and claimed again
    assert accs(run.id) == pytest.approx(accs(ref.id), abs=1e-6)
    assert codes
    assert set(codes) == {503}
    assert after.status_code == 202
    assert got["status"] == "succeeded"
    assert got["summary"]
