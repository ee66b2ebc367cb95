"""Queue routing: the row records the queue its task is sent to, FEDGEN_QUEUE_PREFIX included."""

from __future__ import annotations

import uuid
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from api.main import create_app
from lab.config import Settings
from lab.models import Run
from lab.queue import TASK_NAME, Sender, queue_for_device, worker_queue
from tests.support.factories import live_worker, make_spec

API = "/api/v1"


def test_queue_for_device_puts_the_prefix_in_front() -> None:
    """cuda devices go to <prefix>gpu, everything else to <prefix>cpu."""
    assert queue_for_device("cpu", "") == "cpu"
    assert queue_for_device("cuda:1", "lab-") == "lab-gpu"
    assert queue_for_device("mps", "lab-") == "lab-cpu"


def test_row_records_the_prefixed_queue(
    settings: Settings, factory: sessionmaker[Session], session: Session, auth: dict[str, str]
) -> None:
    """With a 50-character prefix the stored queue is the full name the worker listens on."""
    prefix = "p" * 49 + "-"
    sent: list[tuple[str, str]] = []
    app = create_app(
        settings.model_copy(update={"queue_prefix": prefix}),
        session_factory=factory,
        enqueue=lambda rid, dev: sent.append((rid, dev)),
        broker_check=lambda: None,
    )
    live_worker(session, prefix + "cpu", slots=3)  # free slots: everything is sent at once
    with TestClient(app) as c:
        run_id = c.post(f"{API}/runs", json={"spec": make_spec()}, headers=auth).json()["id"]
        sweep = c.post(
            f"{API}/sweeps", json={"base": make_spec(), "grid": {"seed": [1, 2]}}, headers=auth
        ).json()
    queues = session.scalars(select(Run.queue).where(Run.id == uuid.UUID(run_id))).all()
    assert queues == [prefix + "cpu"]
    sweep_ids = [uuid.UUID(i) for i in sweep["run_ids"]]
    assert set(session.scalars(select(Run.queue).where(Run.id.in_(sweep_ids)))) == {prefix + "cpu"}
    assert [r for r, _ in sent][0] == run_id
    assert sorted(r for r, _ in sent[1:]) == sorted(sweep["run_ids"])
    assert {q for _, q in sent} == {prefix + "worker.w1"}  # the live worker's own queue


def test_sender_puts_the_task_on_the_chosen_workers_queue(tmp_path: Path) -> None:
    """Sender publishes TASK_NAME with the run id on the queue it is given: a worker's own."""
    prefix = f"q{uuid.uuid4().hex[:8]}-"
    sender = Sender(Settings(home=tmp_path, broker_url="memory://", queue_prefix=prefix))
    sender.check()
    queue = worker_queue("gpu-slot0@h1", prefix)
    assert queue == f"{prefix}worker.gpu-slot0@h1"
    sender.send("run-1", queue)
    with sender._celery().connection_for_read() as conn:
        with conn.SimpleQueue(queue) as q:
            msg = q.get(timeout=5)
            msg.ack()
    assert msg.headers["task"] == TASK_NAME
    assert msg.payload[0] == ["run-1"]
