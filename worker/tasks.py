"""The one Celery task: parse the id, call execute_run, retry while the database is away.

A database outage is retried with exponential back-off (1, 2, 4, ... s, capped at
FEDGEN_DB_RETRY_MAX_DELAY_S) for as long as FEDGEN_DB_RETRY_BUDGET_S from the first failure,
not for a number of tries: Celery's default 5 retries were spent in about 8 s. Each retry
carries the lease token of the attempt that failed, so it hands that lease back and resumes at
once. Past the budget the task gives up and the run waits, queued or with an expiring lease,
for the reaper to send it again.
"""

from __future__ import annotations

import logging
import time

from celery import Task

from lab.config import Settings, get_settings
from lab.queue import TASK_NAME
from worker.celery_app import celery_app, worker_sessionmaker
from worker.claimed_run import DatabaseUnavailable, RunNotFound, execute_run
from worker.outcomes import RunOutcome
from worker.reaper import nudge_dispatcher

log = logging.getLogger(__name__)


def retry_delay(tries: int, settings: Settings) -> float:
    """Seconds before retry number `tries` (0-based) of one outage."""
    return float(min(settings.db_retry_max_delay_s, 2.0 ** min(tries, 30)))


@celery_app.task(name=TASK_NAME, bind=True, max_retries=None)
def run_simulation(
    self: Task[..., RunOutcome],
    run_id: str,
    release_token: str | None = None,
    outage_since: float | None = None,
    outage_tries: int = 0,
) -> RunOutcome:
    """Execute one run; database outages are retried, simulation errors are not. When the run
    ends, this slot's dispatcher passes at once, so the slot takes the next queued run."""
    try:
        outcome = execute_run(
            str(run_id),
            worker_sessionmaker(),
            worker_name=self.request.hostname,
            release_token=release_token,
        )
        nudge_dispatcher()
        return outcome
    except RunNotFound as exc:
        log.warning("%s; dropping the task", exc)
        return RunOutcome.MISSING
    except DatabaseUnavailable as exc:
        s = get_settings()
        now = time.time()
        if exc.progressed or outage_since is None:
            outage_since, outage_tries = now, 0  # a new outage
        if now - outage_since > s.db_retry_budget_s:
            log.error(
                "run %s: database unreachable for %.0f s (budget %.0f s); giving up, the reaper "
                "will send the run again",
                run_id,
                now - outage_since,
                s.db_retry_budget_s,
            )
            return RunOutcome.DATABASE_UNAVAILABLE
        delay = retry_delay(outage_tries, s)
        log.warning("run %s: %s; retrying in %.0f s", run_id, exc, delay)
        raise self.retry(
            args=(str(run_id),),
            kwargs={
                "release_token": exc.token,
                "outage_since": outage_since,
                "outage_tries": outage_tries + 1,
            },
            countdown=delay,
            exc=exc,
        ) from exc
