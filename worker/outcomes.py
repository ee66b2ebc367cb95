"""How a claimed run ends on this worker: recorded as finished, handed back, or stopped.

execute_run (worker/claimed_run.py) decides which end a run reaches; this module records it:
- `finish` / `finish_succeeded`: the end state, with what the run cost;
- `hand_back`: its dataset cannot be loaded here, so back to the queue for a worker that can;
- `out_of_memory`: CUDA ran out of memory, so back to the queue for a GPU with more free memory;
- `wait_for_storage`: a checkpoint could not be written (a full disk): say why, wait, resume;
- `lease_gone` / `why_stopped`: the run was purged, cancelled or taken over.

Each of them answers a `RunOutcome`, the vocabulary execute_run and the Celery task return.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Literal

from sqlalchemy.orm import Session, sessionmaker

from fedgen.data.common import DatasetError
from fedgen.data.registry import get_dataset
from fedgen.events import RunSummary
from fedgen.resources import ResourceMeter, format_bytes, gpu_memory
from fedgen.spec import ExperimentSpec
from lab.config import Settings
from lab.db import durable_commit, session_scope
from lab.repository import metrics as metrics_repo
from lab.repository import runs as runs_repo
from lab.repository import workers as workers_repo
from lab.store import CheckpointStore
from vocab.run_status import RunStatus
from worker import capabilities
from worker.sink import CheckpointWriteFailed

log = logging.getLogger(__name__)

# A run whose dataset failed to load on this many claims fails instead of going back again.
MAX_HAND_BACKS = 5
# Out of CUDA memory this many times, a run fails instead of going back to the queue.
MAX_OOMS = 2


class RunOutcome(StrEnum):
    """How one delivery of a run ended on this worker: what execute_run and the Celery task
    return (and log). The first three are the run's end state as recorded (RunStatus's words);
    the others leave the status to someone else. Each member is its word."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    DELETED = "deleted"  # purged under the worker: stopped, its files removed
    LOST = "lost"  # the lease went to another worker
    HANDED_BACK = "handed-back"  # back to the queue (dataset not loadable here, out of memory)
    SKIPPED = "skipped"  # already ended, or held by a live lease: nothing done
    MISSING = "missing"  # the task only: no such run (deleted, or a bad message)
    DATABASE_UNAVAILABLE = "database-unavailable"  # the task only: gave up on an outage


# Why a run's lease or row went away under the worker (`why_stopped`).
StopReason = Literal[RunOutcome.DELETED, RunOutcome.CANCELLED, RunOutcome.LOST]


def why_stopped(factory: sessionmaker[Session], rid: uuid.UUID) -> StopReason:
    """Deleted, cancelled or lost: why a run's lease or row went away under the worker."""
    with factory() as sess:
        row = runs_repo.get_run(sess, rid)
    if row is None:
        return RunOutcome.DELETED
    return RunOutcome.CANCELLED if row.cancel_requested else RunOutcome.LOST


def lease_gone(
    factory: sessionmaker[Session], store: CheckpointStore, rid: uuid.UUID
) -> StopReason:
    """The lease went away mid-run: say why; clean up after a purge (the row is gone).

    A cancelled run keeps every checkpoint it committed (the rule of api.service.withdraw_run);
    they go only when the run is purged from the trash."""
    why = why_stopped(factory, rid)
    if why == RunOutcome.LOST:
        log.warning("run %s: lease lost; another worker owns it now", rid)
        return why
    if why == RunOutcome.DELETED:
        log.info("run %s deleted; stopped and removed its checkpoint files", rid)
        store.delete_run(str(rid))  # rows went with the run; files written since go now
    else:
        log.info("run %s cancelled; stopped, its checkpoints kept", rid)
    return why


def finish(
    factory: sessionmaker[Session], rid: uuid.UUID, token: str, status: str, **end: Any
) -> None:
    """Record the run's end state (if `token` still holds its lease); `end`: the error, summary
    and cost keywords of `lab.repository.runs.finish`."""
    with session_scope(factory) as sess:
        _record_end(sess, rid, token, status, **end)


def _record_end(sess: Session, rid: uuid.UUID, token: str, status: str, **end: Any) -> None:
    if not runs_repo.finish(sess, rid, token, status=status, **end):
        log.warning("run %s: could not record %s (lease lost)", rid, status)


def finish_succeeded(
    factory: sessionmaker[Session],
    rid: uuid.UUID,
    token: str,
    last_round: int,
    summary: RunSummary,
    cost: dict[str, Any] | None = None,
) -> list[int]:
    """Mark the run succeeded if rounds 0..last_round are all stored; else the missing ones.

    The commit is durable even where the worker's rounds are committed asynchronously: it
    flushes the log up to itself, so every round before it is on disk once `succeeded` is.
    """
    with session_scope(factory) as sess:
        durable_commit(sess)
        missing = metrics_repo.missing_rounds(sess, rid, last_round)
        if missing:
            return missing
        _record_end(sess, rid, token, RunStatus.SUCCEEDED, summary=summary.to_dict(), cost=cost)
    return []


def hand_back(
    factory: sessionmaker[Session],
    rid: uuid.UUID,
    token: str,
    spec: ExperimentSpec,
    name: str,
    exc: DatasetError,
    cost: dict[str, Any] | None = None,
) -> RunOutcome:
    """This worker cannot load the run's dataset: stop offering it (when the run read it from
    this worker's own data folder, which is what the worker offers), and give the run back to
    the queue (not failed) for a worker that can; the run shows why."""
    dataset = spec.data.name
    # A dataset whose files each spec names (`folder`) stays offered: this spec's files were bad.
    own_folder = (
        not spec.data.root and not spec.data.download and not get_dataset(dataset).files_in_spec
    )
    advertised = capabilities.current() if own_folder else None
    first = str(exc).splitlines()[0][:500] if str(exc) else type(exc).__name__
    notice = (
        f"worker {name} could not load dataset {dataset}: {first}; handed back to the queue "
        "for a worker that can"
    )
    with session_scope(factory) as sess:
        if advertised is not None:
            advertised.drop(dataset)
            workers_repo.set_capabilities(sess, name, advertised.as_json())
        run = runs_repo.get_run(sess, rid)
        if run is not None and run.attempt >= MAX_HAND_BACKS:
            # Tried by that many workers (a run's own data.root or download can fail everywhere,
            # and no worker's offer says so beforehand): a failure, not another round trip.
            why = f"{first} (no worker could load dataset {dataset} in {run.attempt} attempts)"
            log.warning("run %s: %s", rid, why)
            runs_repo.finish(sess, rid, token, status=RunStatus.FAILED, error=why, cost=cost)
            return RunOutcome.FAILED
        log.warning("run %s: %s", rid, notice)
        runs_repo.hand_back(sess, rid, token, notice, cost=cost)
    return RunOutcome.HANDED_BACK


def out_of_memory(
    factory: sessionmaker[Session],
    rid: uuid.UUID,
    token: str,
    device: str,
    name: str,
    exc: BaseException,
    meter: ResourceMeter,
    cost: dict[str, Any],
) -> RunOutcome:
    """CUDA ran out of memory on `device` (its label: worker.claimed_run.device_label): record it
    as such (the error names the device and its free and total memory; oom_count + 1;
    info['oom'] says where), and hand the run back to the queue for a GPU with more free memory
    than this one had when the segment began (the dispatcher filters on it:
    lab.fairshare.LiveWorker.has_memory); out of memory MAX_OOMS times: failed."""
    free, total = meter.free_at_start, meter.total_bytes
    if free is None:  # not measured at the start: what the device has now the run is gone
        free, total = gpu_memory(meter.index)
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:500]
    error = f"CUDA out of memory on {device} ({format_bytes(free)}/{format_bytes(total)} free): "
    error += first
    oom = {"worker": name, "device": device, "free_bytes": free, "total_bytes": total}
    with session_scope(factory) as sess:
        count = runs_repo.record_oom(sess, rid, token, oom)
        if count is None:
            log.warning("run %s: %s (lease lost)", rid, error)
            return RunOutcome.LOST
        if count >= MAX_OOMS:
            why = f"{error} (out of CUDA memory {count} times, the last on {name})"
            log.warning("run %s: %s", rid, why)
            runs_repo.finish(sess, rid, token, status=RunStatus.FAILED, error=why, cost=cost)
            return RunOutcome.FAILED
        to = f"a GPU with more than {format_bytes(free)} free" if free is not None else None
        notice = f"{error}; handed back to the queue for {to or 'a worker other than ' + name}"
        log.warning("run %s: %s", rid, notice)
        runs_repo.hand_back(sess, rid, token, notice, cost=cost)
    return RunOutcome.HANDED_BACK


def storage_delay_s(settings: Settings, failures: int) -> float:
    """The wait before resume number `failures` (1-based) after a failed checkpoint write."""
    return float(min(settings.storage_retry_delay_s * 2 ** min(failures - 1, 30), 120.0))


def wait_for_storage(
    factory: sessionmaker[Session],
    rid: uuid.UUID,
    token: str,
    s: Settings,
    exc: CheckpointWriteFailed,
    failures: int,
    should_stop: Callable[[], bool],
) -> bool:
    """Say on the run why it waits, then wait; False when it was cancelled or lost meanwhile."""
    delay = storage_delay_s(s, failures)
    notice = (
        f"{exc}; resuming from the last good checkpoint in {delay:.0f} s "
        f"(try {failures} of {s.storage_retries})"
    )
    log.warning("run %s: %s", rid, notice)
    try:
        with session_scope(factory) as sess:
            runs_repo.set_notice(sess, rid, token, notice)
    except Exception as err:  # noqa: BLE001 - the notice is a courtesy; the retry goes on
        log.warning("run %s: could not record the notice (%s)", rid, err)
    deadline = time.monotonic() + delay
    while (left := deadline - time.monotonic()) > 0:
        if should_stop():
            return False
        time.sleep(min(left, 1.0))
    return True
