"""execute_run: claim a run, run it round by round through DbSink, record the end state.

The Celery task calls only this. Safe against redelivery: a run held by a live
lease is left alone; a run whose worker died is re-claimed once its lease
expires and resumes from its last 'full' checkpoint, replayed rounds being
skipped by (run, round). Cancel is cooperative, checked between rounds.

A database that cannot be reached raises DatabaseUnavailable, after handing the lease
back when it can; the exception carries the lease token so that the task's retry
(worker/tasks.py, back-off within a time budget) can hand it back itself once the
database answers again, and resume at once instead of waiting for the lease to expire.
A run deleted or cancelled while it runs stops between rounds and leaves no files.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from api.config import Settings, get_settings
from api.db import durable_commit, is_unavailable, session_scope
from api.dispatch import liveness
from api.repository import checkpoints as ckpt_repo
from api.repository import metrics as metrics_repo
from api.repository import runs as runs_repo
from api.repository import workers as workers_repo
from api.repository.metrics import LeaseLost, RoundGap
from api.store import CheckpointStore
from fedgen.data.common import DatasetError
from fedgen.data.registry import get_dataset
from fedgen.events import RunSummary, Sink
from fedgen.resources import (
    Cost,
    MeteredSink,
    ResourceMeter,
    format_bytes,
    gpu_memory,
    is_cuda_oom,
    release_cuda,
)
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.status import TERMINAL
from worker import capabilities
from worker.sink import CheckpointWriteFailed, DbSink

log = logging.getLogger(__name__)


class Runner(Protocol):
    """What execute_run calls to simulate: fedgen.runner.run (tests pass a fake with this shape)."""

    def __call__(
        self,
        spec: ExperimentSpec,
        sink: Sink,
        resume_from: bytes | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> RunSummary: ...


class WorkerError(Exception):
    """Base of errors execute_run raises instead of marking the run."""


class RunNotFound(WorkerError):
    """The run id names no run (deleted, or a bad message)."""


class DatabaseUnavailable(WorkerError):
    """The database could not be reached; retry later.

    `token` is the lease this attempt held (None if it claimed nothing): pass it back as
    execute_run's `release_token` so the retry frees the lease if the handback failed.
    `progressed` says whether this attempt claimed the run (an outage that began after it did
    is a new outage for the retry budget).
    """

    def __init__(self, cause: BaseException, token: str | None, progressed: bool) -> None:
        self.token = token
        self.progressed = progressed
        first = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
        super().__init__(f"database unavailable: {type(cause).__name__}: {first}"[:300])


def default_worker_name() -> str:
    """host:pid, the name recorded on a run when Celery gives none."""
    return f"{socket.gethostname()}:{os.getpid()}"


def device_label(spec_device: str) -> str:
    """The spec's device plus the physical GPU list this process sees."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if spec_device.startswith("cuda") and visible is not None:
        return f"{spec_device} (CUDA_VISIBLE_DEVICES={visible})"
    return spec_device


def _default_runner() -> Runner:
    from fedgen.runner import run  # imported late: torch loads only in the worker
    from fedgen.threads import set_threads

    threads = os.environ.get("FEDGEN_TORCH_THREADS")  # a slot's share (`fedgen-lab worker`)
    if threads:
        set_threads(int(threads))
    return run


def _error_text(exc: BaseException) -> str:
    tb = "".join(traceback.format_exception(exc)[-6:])
    return f"{type(exc).__name__}: {exc}\n\n{tb}"[:8000]


class _Lease:
    """Renews the lease from a thread, so a long round never looks like a dead worker; each
    renewal also stores what the run has cost so far (`cost`), so a live run shows it."""

    def __init__(
        self,
        run_id: uuid.UUID,
        token: str,
        factory: sessionmaker[Session],
        s: Settings,
        cost: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.run_id, self.token, self.factory, self.settings = run_id, token, factory, s
        self.cost = cost
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lease-{run_id}", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_s):
            try:
                with session_scope(self.factory) as s:
                    cost = self.cost() if self.cost is not None else None
                    ok = runs_repo.heartbeat(
                        s, self.run_id, self.token, self.settings.lease_s, cost=cost
                    )
            except Exception as exc:  # keep trying: an outage must not end the heartbeats
                if is_unavailable(exc):
                    log.warning("heartbeat of run %s failed (database unavailable)", self.run_id)
                else:
                    log.exception("heartbeat of run %s failed", self.run_id)
                continue
            if not ok:
                self.lost.set()
                return

    def __enter__(self) -> _Lease:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _load_resume(
    factory: sessionmaker[Session], store: CheckpointStore, run_id: uuid.UUID, token: str
) -> bytes | None:
    """The newest full checkpoint's bytes (from the database, or a legacy file in `store`)."""
    with factory() as s:
        row = ckpt_repo.latest_full(s, run_id)
    if row is None:
        return None
    try:
        return ckpt_repo.read_bytes(factory, row, store)
    except ckpt_repo.CheckpointMissing as exc:
        # Only a checkpoint written before they moved into the database can be missing here: a
        # file on another host's disk. Say so on the run: it is not a silent restart.
        notice = (
            f"{exc}; started over from round 0 on this host (import such files on the host "
            "that has them: fedgen-lab checkpoints import)"
        )
        log.warning("run %s: %s", run_id, notice)
        with session_scope(factory) as s:
            runs_repo.set_notice(s, run_id, token, notice)
        return None


def execute_run(
    run_id: str,
    factory: sessionmaker[Session],
    *,
    runner: Runner | None = None,
    settings: Settings | None = None,
    worker_name: str | None = None,
    store: CheckpointStore | None = None,
    release_token: str | None = None,
) -> str:
    """Run `run_id` to an end state; returns 'succeeded', 'failed', 'cancelled', 'deleted',
    'skipped', 'lost' or 'handed-back' (its dataset cannot be loaded here). Raises
    DatabaseUnavailable when the database cannot be reached.

    `release_token`: the lease an earlier attempt of this task held (from DatabaseUnavailable);
    it is handed back first, so the run is claimed again at once.
    """
    s = settings or get_settings()
    store = store or CheckpointStore(s.checkpoint_root)
    try:
        rid = uuid.UUID(str(run_id))
    except ValueError:
        raise RunNotFound(f"not a run id: {run_id!r}") from None
    token: str | None = None
    try:
        if release_token:
            _release(factory, rid, release_token)
        with factory() as sess:
            run = runs_repo.get_run(sess, rid)
        if run is None:
            raise RunNotFound(f"run {run_id} does not exist")
        if run.status in TERMINAL:
            return "skipped"
        new_token = uuid.uuid4().hex
        worker = worker_name or default_worker_name()
        device = device_label(str(run.spec.get("device", "cpu")))
        with session_scope(factory) as sess:
            claimed = runs_repo.claim(
                sess,
                rid,
                worker=worker,
                token=new_token,
                device=device,
                lease_s=s.lease_s,
                live=liveness(s),
            )
            if not claimed:
                if runs_repo.cancel_orphan(sess, rid):
                    sess.commit()
                    _drop_files(factory, store, rid)
                    return "cancelled"
                return "skipped"
        token = new_token
        try:
            spec: ExperimentSpec = parse_spec(run.spec)
        except SpecError as exc:
            _finish(factory, rid, token, "failed", error=str(exc))
            return "failed"
        return _run_claimed(
            rid, token, spec, factory, store, s, runner or _default_runner(), worker
        )
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        if token is not None:
            _try_release(factory, rid, token)
        raise DatabaseUnavailable(exc, token or release_token, token is not None) from exc


def _release(factory: sessionmaker[Session], rid: uuid.UUID, token: str) -> None:
    """Hand a lease back (if it is still `token`): the run may be claimed at once."""
    with session_scope(factory) as sess:
        runs_repo.heartbeat(sess, rid, token, lease_s=0)


def _try_release(factory: sessionmaker[Session], rid: uuid.UUID, token: str) -> None:
    try:
        _release(factory, rid, token)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        log.warning("run %s: could not hand the lease back yet; the retry will", rid)


def _drop_files(factory: sessionmaker[Session], store: CheckpointStore, rid: uuid.UUID) -> None:
    """Remove a deleted or cancelled run's checkpoints (and any legacy files of it here)."""
    with session_scope(factory) as sess:
        ckpt_repo.delete_of_run(sess, rid)
    store.delete_run(str(rid))


def _why_stopped(factory: sessionmaker[Session], rid: uuid.UUID) -> str:
    """'deleted', 'cancelled' or 'lost': why a run's lease or row went away under the worker."""
    with factory() as sess:
        row = runs_repo.get_run(sess, rid)
    if row is None:
        return "deleted"
    return "cancelled" if row.cancel_requested else "lost"


# A hole found again and again at the same round is not a crash's doing: stop resuming then.
MAX_GAP_RESUMES = 5
# A run whose dataset failed to load on this many claims fails instead of going back again.
MAX_HAND_BACKS = 5


def _run_claimed(
    rid: uuid.UUID,
    token: str,
    spec: ExperimentSpec,
    factory: sessionmaker[Session],
    store: CheckpointStore,
    s: Settings,
    runner: Runner,
    worker: str,
) -> str:
    """Run the claimed run to its end, resuming from its newest checkpoint in the database
    whenever what is stored falls behind what was computed:
    - a round is missing under the one being written (RoundGap: rounds lost in a crash), or
      under the last one when the run completes: resume (at most MAX_GAP_RESUMES times in a
      row for a hole at the same round; each new crash may make a new hole);
    - a checkpoint could not be written (a full disk): record why on the run, wait (back-off)
      and resume, failing the run only after `storage_retries` such tries;
    - the dataset cannot be loaded here: hand the run back to the queue (`_hand_back`);
    - CUDA ran out of memory: hand it back for a GPU with more free memory, once (`_out_of_memory`).
    Every end (and every heartbeat) stores what the run cost: this segment's meter reading
    folded into what earlier segments stored (CPU seconds add up, peaks take the larger).
    """
    db_sink = DbSink(rid, token, factory, s.lease_s, keep_full=s.keep_full_checkpoints)
    with factory() as sess:
        before = Cost.from_columns(runs_repo.cost_of(sess, rid))
    meter = ResourceMeter(spec.device).start()
    sink = MeteredSink(db_sink, meter)

    def cost() -> dict[str, Any]:
        return meter.reading().merged(before).as_columns()

    gaps = storage_failures = 0
    gap_at: int | None = None  # the round of the last hole found
    summary: RunSummary | None = None

    def same_hole(round_: int) -> int:
        """How many times in a row a hole was found at `round_` (this time included)."""
        nonlocal gaps, gap_at
        gaps, gap_at = (gaps + 1 if gap_at == round_ else 1), round_
        return gaps

    with _Lease(rid, token, factory, s, cost) as lease:

        def should_stop() -> bool:
            if lease.lost.is_set():
                return True
            with factory() as sess:
                return runs_repo.is_cancel_requested(sess, rid)

        while True:
            try:
                resume = _load_resume(factory, store, rid, token)
                summary = runner(spec, sink, resume_from=resume, should_stop=should_stop)
            except LeaseLost:
                return _lease_gone(factory, store, rid)
            except RoundGap as exc:
                if same_hole(exc.round - 1) > MAX_GAP_RESUMES:
                    _finish(factory, rid, token, "failed", error=_error_text(exc), cost=cost())
                    return "failed"
                log.warning("%s; resuming from the newest stored checkpoint", exc)
                continue
            except CheckpointWriteFailed as exc:
                storage_failures += 1
                if storage_failures > s.storage_retries:
                    why = f"{exc} ({storage_failures} tries, the last one failed)"
                    _finish(factory, rid, token, "failed", error=why, cost=cost())
                    return "failed"
                if _wait_for_storage(factory, rid, token, s, exc, storage_failures, should_stop):
                    continue
                summary = None  # cancelled, deleted or lost while it waited
                break
            except DatasetError as exc:
                return _hand_back(factory, rid, token, spec, worker, exc, cost())
            except Exception as exc:  # the simulation failed: record it, do not retry
                if is_unavailable(exc):
                    raise  # infrastructure: execute_run hands the lease back, the task retries
                if _why_stopped(factory, rid) == "deleted":
                    return _lease_gone(factory, store, rid)  # e.g. the round's row lost its run
                if is_cuda_oom(exc):
                    release_cuda(exc)
                    return _out_of_memory(factory, rid, token, spec, worker, exc, meter, cost())
                log.exception("run %s failed", rid)
                _finish(factory, rid, token, "failed", error=_error_text(exc), cost=cost())
                return "failed"
            finally:
                db_sink.close()
            if summary.status == "stopped" or lease.lost.is_set():
                break
            missing = _finish_succeeded(factory, rid, token, spec.rounds, summary, cost())
            if not missing:
                return "succeeded"
            if same_hole(missing[0]) > MAX_GAP_RESUMES:
                error = f"rounds {missing[:10]} are missing from the database after {gaps} resumes"
                _finish(factory, rid, token, "failed", error=error, cost=cost())
                return "failed"
            log.warning(
                "run %s: rounds %s are missing from the database (lost in a crash?); resuming "
                "from the newest stored checkpoint",
                rid,
                missing[:10],
            )
    if lease.lost.is_set():
        return _lease_gone(factory, store, rid)
    why = _why_stopped(factory, rid)
    if why == "deleted":
        return _lease_gone(factory, store, rid)
    _finish(
        factory,
        rid,
        token,
        "cancelled",
        summary=summary.to_dict() if summary else None,
        cost=cost(),
    )
    log.info("run %s cancelled; removing its checkpoint files", rid)
    _drop_files(factory, store, rid)
    return "cancelled"


def _hand_back(
    factory: sessionmaker[Session],
    rid: uuid.UUID,
    token: str,
    spec: ExperimentSpec,
    name: str,
    exc: DatasetError,
    cost: dict[str, Any] | None = None,
) -> str:
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
            runs_repo.finish(sess, rid, token, status="failed", error=why, cost=cost)
            return "failed"
        log.warning("run %s: %s", rid, notice)
        runs_repo.hand_back(sess, rid, token, notice, cost=cost)
    return "handed-back"


# Out of CUDA memory this many times, a run fails instead of going back to the queue.
MAX_OOMS = 2


def _out_of_memory(
    factory: sessionmaker[Session],
    rid: uuid.UUID,
    token: str,
    spec: ExperimentSpec,
    name: str,
    exc: BaseException,
    meter: ResourceMeter,
    cost: dict[str, Any],
) -> str:
    """CUDA ran out of memory: record it as such (the error names the device and its free and
    total memory; oom_count + 1; info['oom'] says where), and hand the run back to the queue for
    a GPU with more free memory than this one had when the segment began (the dispatcher filters
    on it: api.fairshare.LiveWorker.has_memory); out of memory MAX_OOMS times: failed."""
    free, total = meter.free_at_start, meter.total_bytes
    if free is None:  # not measured at the start: what the device has now the run is gone
        free, total = gpu_memory(meter.index)
    device = device_label(spec.device)
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:500]
    error = f"CUDA out of memory on {device} ({format_bytes(free)}/{format_bytes(total)} free): "
    error += first
    oom = {"worker": name, "device": device, "free_bytes": free, "total_bytes": total}
    with session_scope(factory) as sess:
        count = runs_repo.record_oom(sess, rid, token, oom)
        if count is None:
            log.warning("run %s: %s (lease lost)", rid, error)
            return "lost"
        if count >= MAX_OOMS:
            why = f"{error} (out of CUDA memory {count} times, the last on {name})"
            log.warning("run %s: %s", rid, why)
            runs_repo.finish(sess, rid, token, status="failed", error=why, cost=cost)
            return "failed"
        to = f"a GPU with more than {format_bytes(free)} free" if free is not None else None
        notice = f"{error}; handed back to the queue for {to or 'a worker other than ' + name}"
        log.warning("run %s: %s", rid, notice)
        runs_repo.hand_back(sess, rid, token, notice, cost=cost)
    return "handed-back"


def storage_delay_s(settings: Settings, failures: int) -> float:
    """The wait before resume number `failures` (1-based) after a failed checkpoint write."""
    return float(min(settings.storage_retry_delay_s * 2 ** min(failures - 1, 30), 120.0))


def _wait_for_storage(
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


def _finish_succeeded(
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
        status = "succeeded"
        done = runs_repo.finish(
            sess, rid, token, status=status, summary=summary.to_dict(), cost=cost
        )
        if not done:
            log.warning("run %s: could not record %s (lease lost)", rid, status)
    return []


def _lease_gone(factory: sessionmaker[Session], store: CheckpointStore, rid: uuid.UUID) -> str:
    """The lease went away mid-run: say why, and clean up after a delete or a cancel."""
    why = _why_stopped(factory, rid)
    if why == "lost":
        log.warning("run %s: lease lost; another worker owns it now", rid)
        return "lost"
    log.info("run %s %s; stopped and removed its checkpoint files", rid, why)
    if why == "deleted":
        store.delete_run(str(rid))  # rows went with the run; files written since go now
    else:
        _drop_files(factory, store, rid)
    return why


def _finish(
    factory: sessionmaker[Session],
    rid: uuid.UUID,
    token: str,
    status: str,
    *,
    error: str | None = None,
    summary: dict[str, Any] | None = None,
    cost: dict[str, Any] | None = None,
) -> None:
    with session_scope(factory) as sess:
        done = runs_repo.finish(
            sess, rid, token, status=status, error=error, summary=summary, cost=cost
        )
        if not done:
            log.warning("run %s: could not record %s (lease lost)", rid, status)
