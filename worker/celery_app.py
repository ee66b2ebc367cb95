"""The Celery app: long-run-safe settings, queues `gpu`/`cpu`, state in the DB (no result backend).

acks_late + reject_on_worker_lost + prefetch 1 means a run whose worker dies is
redelivered; the lease in the runs table makes a redelivery harmless. The Redis
visibility timeout is raised (default 7 days) so a run longer than an hour is
not handed to a second worker while the first still runs it.
"""

from __future__ import annotations

from functools import lru_cache

from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from api.config import Settings, get_settings
from api.db import make_engine, make_sessionmaker

TASK_NAME = "fedgen.run_simulation"


def queue_for_device(device: str, prefix: str | None = None) -> str:
    """'gpu' for cuda specs, 'cpu' otherwise (with FEDGEN_QUEUE_PREFIX in front)."""
    p = get_settings().queue_prefix if prefix is None else prefix
    return p + ("gpu" if device.startswith("cuda") else "cpu")


def make_celery(settings: Settings | None = None) -> Celery:
    """Build the Celery app from Settings (broker URL, visibility timeout)."""
    s = settings or get_settings()
    if s.broker_url.startswith("sqla+sqlite"):
        s.home.mkdir(parents=True, exist_ok=True)
    app = Celery("fedgen", broker=s.broker_url, include=["worker.tasks"])
    # kombu's SQLAlchemy transport hands its options to create_engine: no visibility timeout there
    # (it has none; unacked messages stay invisible until a worker restarts).
    sqla = s.broker_url.startswith("sqla+")
    transport = {} if sqla else {"visibility_timeout": s.visibility_timeout_s}
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        result_backend=None,
        broker_transport_options=transport,
        visibility_timeout=s.visibility_timeout_s,
        task_default_queue=s.queue_prefix + "cpu",
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_max_tasks_per_child=50,
    )
    return app


celery_app = make_celery()


@lru_cache
def worker_sessionmaker() -> sessionmaker[Session]:
    """The worker process's engine, created on first use (never at import, never before a fork)."""
    return make_sessionmaker(make_engine(get_settings().database_url, async_commit=True))


def enqueue_run(run_id: str, device: str) -> None:
    """Send the run's task to the queue matching its device (called after the commit)."""
    celery_app.send_task(TASK_NAME, args=[run_id], queue=queue_for_device(device))
