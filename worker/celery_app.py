"""The worker's Celery app: long-run-safe settings, state in the DB (no result backend).

Task name, queue names and broker options come from lab.queue, which the API sends with.

acks_late + reject_on_worker_lost + prefetch 1 means a run whose worker dies is
redelivered; the lease in the runs table makes a redelivery harmless. The Redis
visibility timeout is raised (default 7 days) so a run longer than an hour is
not handed to a second worker while the first still runs it.
"""

from __future__ import annotations

from functools import lru_cache

from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from lab.config import Settings, get_settings
from lab.db import make_engine, make_sessionmaker
from lab.queue import broker_options


def make_celery(settings: Settings | None = None) -> Celery:
    """Build the worker's Celery app from Settings (the broker options it shares with the sender)."""
    s = settings or get_settings()
    app = Celery("fedgen", include=["worker.tasks"])
    app.conf.update(
        broker_options(s),
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        result_backend=None,
        visibility_timeout=s.visibility_timeout_s,
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
