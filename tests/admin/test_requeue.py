"""`fedgen-lab requeue` sends each queued run's task again, to a live worker's own queue."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from lab.queue import TASK_NAME, Sender, worker_queue
from migrations.apply import upgrade
from tests.support.factories import create_run, create_user, live_worker

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_requeue_resends_queued_runs_to_their_queue(tmp_path: Path) -> None:
    """One queued run, one finished, one live worker: exactly the queued one is sent, to the
    worker's own queue <prefix>worker.<name>."""
    db_url = f"sqlite:///{tmp_path / 'lab.db'}"
    broker = f"sqla+sqlite:///{tmp_path / 'broker.db'}"
    prefix = f"rq{uuid.uuid4().hex[:8]}-"
    upgrade(db_url)
    engine = make_engine(db_url)
    with make_sessionmaker(engine)() as s:
        user, _ = create_user(s)
        queued = create_run(s, user, seed=1, queue=prefix + "cpu")
        done = create_run(s, user, seed=2)
        done.status = "succeeded"
        s.commit()
        live_worker(s, prefix + "cpu", slots=2, name="w1@h1")
    engine.dispose()
    env = dict(
        os.environ,
        FEDGEN_HOME=str(tmp_path / "home"),
        FEDGEN_DATABASE_URL=db_url,
        FEDGEN_BROKER_URL=broker,
        FEDGEN_QUEUE_PREFIX=prefix,
    )
    out = subprocess.run(
        [sys.executable, "-m", "admin", "requeue"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "re-sent 1 queued run(s)"
    sender = Sender(Settings(home=tmp_path / "home", broker_url=broker, queue_prefix=prefix))
    with (
        sender._celery().connection_for_read() as conn,
        conn.SimpleQueue(worker_queue("w1@h1", prefix)) as q,
    ):
        msg = q.get(timeout=10)
        msg.ack()
        assert q.qsize() == 0
    assert msg.headers["task"] == TASK_NAME
    assert msg.payload[0] == [str(queued.id)]
