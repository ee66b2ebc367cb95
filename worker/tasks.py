"""The one Celery task: parse the id, call execute_run, nothing else (style rule 14)."""

from __future__ import annotations

import logging

from celery import Task
from sqlalchemy.exc import OperationalError

from api.queue import TASK_NAME
from worker.celery_app import celery_app, worker_sessionmaker
from worker.execution import RunNotFound, execute_run

log = logging.getLogger(__name__)


@celery_app.task(
    name=TASK_NAME,
    bind=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def run_simulation(self: Task, run_id: str) -> str:
    """Execute one run; infrastructure errors (DB down) are retried, simulation errors are not."""
    try:
        return execute_run(str(run_id), worker_sessionmaker(), worker_name=self.request.hostname)
    except RunNotFound as exc:
        log.warning("%s; dropping the task", exc)
        return "missing"
