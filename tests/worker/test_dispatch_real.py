"""The dispatcher against real Postgres, a real Redis of the test's own and real worker processes.

Each test starts its own redis-server on a free port (stopped at the end) and short intervals
(FEDGEN_REAPER_S=0.5, FEDGEN_DISPATCH_TIMEOUT_S=2; DISPATCH_TIMINGS=default keeps the shipped
ones). The recovery times are logged: `pytest --log-cli-level=INFO tests/worker/test_dispatch_real.py`.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from api.main import create_app
from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from lab.models import Base, Run, Worker
from lab.queue import Sender, worker_queue
from tests.support.factories import create_run, create_user, live_worker, make_spec
from tests.support.needs import needs
from worker.reaper import dispatch_once

ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger(__name__)  # the measured recovery times (pytest --log-cli-level=INFO)
API = "/api/v1"
FAST: dict[str, float] = {"lease_s": 3.0, "heartbeat_s": 0.5}
# DISPATCH_TIMINGS=default measures the recovery times with the shipped dispatch settings.
if os.environ.get("DISPATCH_TIMINGS") != "default":
    FAST |= {"reaper_s": 0.5, "dispatch_timeout_s": 2.0}

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OwnRedis:
    """A redis-server of this test on its own port, started and stopped at will."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""],
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        _wait(self.ping, 20)

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_timeout=1).ping())
        except Exception:  # noqa: BLE001 - not up yet
            return False

    def llen(self, queue: str) -> int:
        import redis

        return int(redis.Redis(port=self.port).llen(queue))

    def purge(self, queue: str) -> None:
        import redis

        redis.Redis(port=self.port).delete(queue)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None


def _wait(
    cond: Callable[[], bool], timeout: float = 60.0, state: Callable[[], Any] | None = None
) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out; state: {state() if state else None}")


@pytest.fixture
def redis_own() -> Iterator[OwnRedis]:
    """A stopped Redis of this test (start() it); stopped at the end whatever happens."""
    needs(shutil.which("redis-server") is not None, "redis-server on PATH")
    r = OwnRedis(_free_port())
    yield r
    r.stop()


@pytest.fixture
def pg(pg_url: str) -> Iterator[str]:
    """The session's Postgres schema, emptied after the test."""
    yield pg_url
    engine = make_engine(pg_url, pool_size=1)
    names = ", ".join(t.name for t in Base.metadata.sorted_tables)
    with engine.begin() as c:
        c.execute(text(f"TRUNCATE {names} CASCADE"))
    engine.dispose()


@pytest.fixture
def pg_factory(pg: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(pg)
    yield make_sessionmaker(engine)
    engine.dispose()


@pytest.fixture
def lab(pg: str, redis_own: OwnRedis, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Settings and worker processes on the test's Postgres schema and Redis, a unique prefix."""
    prefix = f"d{uuid.uuid4().hex[:8]}-"
    settings = Settings(
        database_url=pg,
        broker_url=redis_own.url,
        home=tmp_path / "home",
        queue_prefix=prefix,
        **FAST,
    )
    env = dict(
        os.environ,
        FEDGEN_DATABASE_URL=pg,
        FEDGEN_BROKER_URL=redis_own.url,
        FEDGEN_HOME=str(tmp_path / "home"),
        FEDGEN_QUEUE_PREFIX=prefix,
        PYTHONPATH=str(ROOT),
        OMP_NUM_THREADS="1",
        **{f"FEDGEN_{k.upper()}": str(v) for k, v in FAST.items()},
    )
    procs: list[subprocess.Popen[bytes]] = []

    def start_worker() -> subprocess.Popen[bytes]:
        # One process with one slot: the tests count slots and kill the worker.
        argv = [sys.executable, "-m", "worker", "--slots", "1", "--queues", "cpu"]
        p = subprocess.Popen(
            [*argv, "--loglevel", "WARNING"], env=env, cwd=ROOT, start_new_session=True
        )
        procs.append(p)
        return p

    yield {"settings": settings, "start_worker": start_worker, "queue": prefix + "cpu"}
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


def _row(factory: sessionmaker[Session], rid: uuid.UUID) -> Run:
    with factory() as s:
        run = s.get(Run, rid)
        assert run is not None
        return run


def test_submit_while_redis_is_down_then_redis_starts_and_the_run_succeeds(
    lab: dict[str, Any], redis_own: OwnRedis, pg_factory: sessionmaker[Session]
) -> None:
    """202 while the broker is down; Redis comes up; the run succeeds with no manual step."""
    s: Settings = lab["settings"]
    with pg_factory() as session:
        _, token = create_user(session)
    lab["start_worker"]()

    def registered() -> bool:
        with pg_factory() as session:
            return (
                session.scalar(select(Worker.name).where(Worker.queue == lab["queue"])) is not None
            )

    _wait(registered, 60)
    app = create_app(s, session_factory=pg_factory)  # the real sender, to the Redis that is down
    with TestClient(app) as client:
        r = client.post(
            f"{API}/runs", json={"spec": make_spec()}, headers={"Authorization": f"Bearer {token}"}
        )
    assert r.status_code == 202, r.text
    rid = uuid.UUID(r.json()["id"])
    assert _row(pg_factory, rid).status == "queued"
    # A dispatch pass marks a run sent before it sends, and undoes the mark when the send
    # fails: the run waits unsent (read at once, a pass may be between the two).
    _wait(lambda: _row(pg_factory, rid).dispatched_at is None, 30)
    assert _row(pg_factory, rid).status == "queued"
    redis_own.start()
    up = time.monotonic()
    _wait(
        lambda: _row(pg_factory, rid).status != "queued", 90, lambda: _row(pg_factory, rid).status
    )
    started = time.monotonic() - up
    _wait(lambda: _row(pg_factory, rid).status in ("succeeded", "failed"), 90)
    assert _row(pg_factory, rid).status == "succeeded", _row(pg_factory, rid).error
    log.info("submit while Redis down: the run started %.1f s after Redis came up", started)


def test_lost_message_is_resent_and_never_doubled(
    lab: dict[str, Any], redis_own: OwnRedis, pg_factory: sessionmaker[Session]
) -> None:
    """Purge the queue: the dispatcher sends the run again, and never two messages at a time.

    (That a sent message then runs is what the two other tests show with a real worker.)
    """
    s: Settings = lab["settings"]
    q = lab["queue"]
    wq = worker_queue("w1", s.queue_prefix)  # the message goes to the chosen worker's own queue
    redis_own.start()
    with pg_factory() as session:
        user, _ = create_user(session)
        run = create_run(session, user, queue=q)
        live_worker(session, q, slots=1)  # a worker that is alive but not consuming yet
    sender = Sender(s)
    assert dispatch_once(pg_factory, sender, s, "t").sent == [str(run.id)]
    assert redis_own.llen(wq) == 1
    redis_own.purge(wq)  # the message is lost
    lost = time.monotonic()
    while redis_own.llen(wq) == 0:
        time.sleep(s.reaper_s)
        with pg_factory() as session:
            live_worker(session, q, slots=1)
        dispatch_once(pg_factory, sender, s, "t")
        assert time.monotonic() - lost < 60, "never re-sent"
    resent = time.monotonic() - lost
    # Passes for four times the first back-off step with the message waiting: never doubled.
    end = time.monotonic() + 4 * s.dispatch_timeout_s
    while time.monotonic() < end:
        with pg_factory() as session:
            live_worker(session, q, slots=1)
        dispatch_once(pg_factory, sender, s, "t")
        assert redis_own.llen(wq) == 1
        time.sleep(s.reaper_s)
    assert _row(pg_factory, run.id).dispatch_count == 2
    log.info("lost message: re-sent %.1f s after it was purged", resent)


def test_two_owners_one_slot_lab_mate_starts_before_the_third(
    lab: dict[str, Any], redis_own: OwnRedis, pg_factory: sessionmaker[Session]
) -> None:
    """alice queues 3 runs, bob 1; one worker slot: bob's run starts before alice's third."""
    redis_own.start()
    q = lab["queue"]
    with pg_factory() as session:
        alice, _ = create_user(session, "alice")
        bob, _ = create_user(session, "bob")
        a = [create_run(session, alice, queue=q, seed=i) for i in range(3)]
        b1 = create_run(session, bob, queue=q, seed=9)
    lab["start_worker"]()
    ids = [r.id for r in (*a, b1)]
    _wait(
        lambda: all(_row(pg_factory, i).status == "succeeded" for i in ids),
        180,
        lambda: [_row(pg_factory, i).status for i in ids],
    )
    start = {i: _row(pg_factory, i).started_at for i in ids}
    assert start[b1.id] < start[a[2].id]
    ends = sorted((_row(pg_factory, i).started_at, _row(pg_factory, i).finished_at) for i in ids)
    assert all(e0 <= s1 for (_, e0), (s1, _) in zip(ends, ends[1:], strict=False)), "one at a time"


def test_worker_killed_mid_run_the_next_workers_dispatcher_resumes_it(
    lab: dict[str, Any], redis_own: OwnRedis, pg_factory: sessionmaker[Session]
) -> None:
    """kill -9 mid-run; a new worker's dispatch loop re-sends the run once its lease expired."""
    redis_own.start()
    with pg_factory() as session:
        user, _ = create_user(session)
        run = create_run(
            session, user, queue=lab["queue"], rounds=12, local_steps=2, checkpoint_every=2
        )
    w1 = lab["start_worker"]()
    _wait(lambda: _row(pg_factory, run.id).current_round >= 1, 120)
    os.killpg(w1.pid, signal.SIGKILL)
    w1.wait(10)
    assert _row(pg_factory, run.id).status == "running", "the run finished before the kill"
    lab["start_worker"]()
    _wait(
        lambda: _row(pg_factory, run.id).status == "succeeded",
        180,
        lambda: (_row(pg_factory, run.id).status, _row(pg_factory, run.id).current_round),
    )
    row = _row(pg_factory, run.id)
    assert (row.attempt, row.current_round) == (2, 12)
