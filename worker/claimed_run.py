"""execute_run: claim a run, run it round by round through DbSink, record the end state.

The Celery task calls only this. Safe against redelivery: a run held by a live
lease is left alone; a run whose worker died is re-claimed once its lease
expires and resumes from its last 'full' checkpoint, replayed rounds being
skipped by (run, round). Cancel is cooperative, checked between rounds.

A database that cannot be reached raises DatabaseUnavailable, after handing the lease
back when it can; the exception carries the lease token so that the task's retry
(worker/tasks.py, back-off within a time budget) can hand it back itself once the
database answers again, and resume at once instead of waiting for the lease to expire.
A run cancelled (or moved to the trash) while it runs stops between rounds and keeps every
checkpoint it committed; a run purged under it stops and leaves no files.

Recording each end (finished, handed back, out of memory, waiting for storage, stopped) lives
in worker/outcomes.py; renewing the lease while the run computes, in worker/lease.py.
"""

from __future__ import annotations

import logging
import os
import socket
import traceback
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from fedgen.data.common import DatasetError
from fedgen.events import RunSummary, Sink, SummaryStatus
from fedgen.resources import Cost, MeteredSink, ResourceMeter, is_cuda_oom, release_cuda
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from lab.config import Settings, get_settings
from lab.db import db_now, is_unavailable, session_scope
from lab.dispatch import liveness
from lab.models import Run
from lab.repository import checkpoints as ckpt_repo
from lab.repository import run_limits
from lab.repository import runs as runs_repo
from lab.repository.metrics import LeaseLost, RoundGap
from lab.store import CheckpointStore
from vocab.data_roots import allowed_roots, data_path_problems
from vocab.run_status import TERMINAL, RunStatus
from worker.lease import Lease
from worker.outcomes import (
    RunOutcome,
    finish,
    finish_succeeded,
    hand_back,
    lease_gone,
    out_of_memory,
    wait_for_storage,
    why_stopped,
)
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
) -> RunOutcome:
    """Run `run_id` to an end state; returns the RunOutcome: succeeded, failed, cancelled,
    deleted, skipped, lost or handed-back (its dataset cannot be loaded here, or out of CUDA
    memory). Raises DatabaseUnavailable when the database cannot be reached.

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
            return RunOutcome.SKIPPED
        new_token = uuid.uuid4().hex
        worker = worker_name or default_worker_name()
        device = device_label(str(run.spec.get("device", "cpu")))
        refused_claim = _claim(factory, rid, new_token, worker, device, s)
        if refused_claim is not None:
            return refused_claim
        token = new_token
        try:
            spec: ExperimentSpec = parse_spec(run.spec)
        except SpecError as exc:
            finish(factory, rid, token, RunStatus.FAILED, error=str(exc))
            return RunOutcome.FAILED
        refused = _refused_paths(rid, spec, s)
        if refused is not None:
            finish(factory, rid, token, RunStatus.FAILED, error=refused)
            return RunOutcome.FAILED
        claim = _Claimed(rid, token, spec, factory, store, s, worker)
        return _run_claimed(claim, runner or _default_runner())
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        if token is not None:
            _try_release(factory, rid, token)
        raise DatabaseUnavailable(exc, token or release_token, token is not None) from exc


def _refused_paths(rid: uuid.UUID, spec: ExperimentSpec, s: Settings) -> str | None:
    """Why the run may not read its data here (a `data.root` or `data.folder.path` outside this
    worker's FEDGEN_DATA_ROOTS), else None. The API refuses such specs; this catches one that
    reached the queue another way (an older server, a hand-made message) before any file is
    read. A failure, not a hand-back: no worker of the lab should read it. The run's error is
    read by every member: the one message per field; the worker's log (admins) says why."""
    roots = allowed_roots(s.data_roots)
    problems = data_path_problems(spec.data, roots)
    if not problems:
        return None
    detail = data_path_problems(spec.data, roots, detailed=True)
    log.warning("run %s: data paths refused: %s", rid, "; ".join(f"{f}: {m}" for f, m in detail))
    return "; ".join(f"{field}: {msg}" for field, msg in problems)


def _claim(
    factory: sessionmaker[Session],
    rid: uuid.UUID,
    token: str,
    worker: str,
    device: str,
    s: Settings,
) -> RunOutcome | None:
    """Take the run's lease with `token`: None once it holds it; else why not, cancelled (a
    cancel was asked while nobody held it: it ends here, its checkpoints kept) or skipped (a
    live lease holds it)."""
    with session_scope(factory) as sess:
        claimed = runs_repo.claim(
            sess,
            rid,
            worker=worker,
            token=token,
            device=device,
            lease_s=s.lease_s,
            live=liveness(s),
            max_attempts=s.max_attempts,
        )
        if claimed:
            return None
        if runs_repo.cancel_orphan(sess, rid):
            return RunOutcome.CANCELLED
        return RunOutcome.SKIPPED


def _release(factory: sessionmaker[Session], rid: uuid.UUID, token: str) -> None:
    """Hand a lease back (if it is still `token`): the run may be claimed at once."""
    with session_scope(factory) as sess:
        run_limits.give_back(sess, rid, db_now(sess), token)


def _try_release(factory: sessionmaker[Session], rid: uuid.UUID, token: str) -> None:
    try:
        _release(factory, rid, token)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        log.warning("run %s: could not hand the lease back yet; the retry will", rid)


# A hole found again and again at the same round is not a crash's doing: stop resuming then.
MAX_GAP_RESUMES = 5


def _run_claimed(claim: _Claimed, runner: Runner) -> RunOutcome:
    """Run the claimed run to its end, resuming from its newest checkpoint in the database
    whenever what is stored falls behind what was computed:
    - a round is missing under the one being written (RoundGap: rounds lost in a crash), or
      under the last one when the run completes: resume (at most MAX_GAP_RESUMES times in a
      row for a hole at the same round; each new crash may make a new hole);
    - a checkpoint could not be written (a full disk): record why on the run, wait (back-off)
      and resume, failing the run only after `storage_retries` such tries;
    - the dataset cannot be loaded here: hand the run back to the queue (`hand_back`);
    - CUDA ran out of memory: hand it back for a GPU with more free memory, once (`out_of_memory`).
    Every end (and every heartbeat) stores what the run cost: this segment's meter reading
    folded into what earlier segments stored (CPU seconds add up, peaks take the larger).
    """
    with Lease(claim.rid, claim.token, claim.factory, claim.settings, claim.cost) as lease:
        claim.lease = lease
        while True:
            outcome = claim.attempt(runner)
            if isinstance(outcome, _Stopped):
                break
            if not isinstance(outcome, _Resume):
                return outcome  # an end state
    return claim.stopped(outcome.summary)


class _Resume:
    """What an attempt returns when the run resumes from its newest stored checkpoint."""


_RESUME = _Resume()


class _Stopped:
    """What an attempt returns when the run stopped (cancelled, deleted or lost) before its end;
    `summary` is the runner's, None when it stopped while waiting for storage."""

    def __init__(self, summary: RunSummary | None) -> None:
        self.summary = summary


class _Claimed:
    """A run this worker holds the lease of: its sinks and meter, and the counts that decide
    when resuming stops (holes at the same round, failed checkpoint writes)."""

    lease: Lease  # set by _run_claimed once the lease thread runs

    def __init__(
        self,
        rid: uuid.UUID,
        token: str,
        spec: ExperimentSpec,
        factory: sessionmaker[Session],
        store: CheckpointStore,
        s: Settings,
        worker: str,
    ) -> None:
        self.rid, self.token, self.spec, self.worker = rid, token, spec, worker
        self.factory, self.store, self.settings = factory, store, s
        self.db_sink = DbSink(
            rid,
            token,
            factory,
            s.lease_s,
            keep_full=s.keep_full_checkpoints,
            keep_generator=s.generator_keep_rule,
            rounds=spec.rounds,
        )
        with factory() as sess:
            self.before = Cost.from_columns(runs_repo.cost_of(sess, rid))
        self.meter = ResourceMeter(spec.device).start()
        self.sink = MeteredSink(self.db_sink, self.meter)
        self.gaps = self.storage_failures = 0
        self.gap_at: int | None = None  # the round of the last hole found
        self.overrun: str | None = None  # why it ran too long (FEDGEN_MAX_RUN_HOURS)
        with factory() as sess:  # this claim's number: its segment is the one still running
            self.attempt_no = sess.scalar(select(Run.attempt).where(Run.id == rid))

    def cost(self) -> dict[str, Any]:
        """This segment's meter reading folded into what earlier segments stored."""
        return self.meter.reading().merged(self.before).as_columns()

    def same_hole(self, round_: int) -> int:
        """How many times in a row a hole was found at `round_` (this time included)."""
        self.gaps, self.gap_at = (self.gaps + 1 if self.gap_at == round_ else 1), round_
        return self.gaps

    def should_stop(self) -> bool:
        """Checked between rounds: the lease was lost, a cancel was asked, or the run ran past
        FEDGEN_MAX_RUN_HOURS (`overrun` then says so, and the run fails)."""
        if self.lease.lost.is_set():
            return True
        with self.factory() as sess:
            attempt = self.attempt_no if self.attempt_no is not None else -1
            now, hours = db_now(sess), self.settings.max_run_hours
            cancel, self.overrun = run_limits.check_run(sess, self.rid, attempt, now, hours)
        return cancel or self.overrun is not None

    def fail(self, error: str) -> RunOutcome:
        """Record the run failed with `error` and what it cost."""
        finish(self.factory, self.rid, self.token, RunStatus.FAILED, error=error, cost=self.cost())
        return RunOutcome.FAILED

    def attempt(self, runner: Runner) -> RunOutcome | _Resume | _Stopped:
        """Run from the newest stored checkpoint once: an end state, _RESUME or _Stopped."""
        f, rid, token = self.factory, self.rid, self.token
        try:
            resume = _load_resume(f, self.store, rid, token)
            summary = runner(self.spec, self.sink, resume_from=resume, should_stop=self.should_stop)
        except LeaseLost:
            return lease_gone(f, self.store, rid)
        except RoundGap as exc:
            if self.same_hole(exc.round - 1) > MAX_GAP_RESUMES:
                return self.fail(_error_text(exc))
            log.warning("%s; resuming from the newest stored checkpoint", exc)
            return _RESUME
        except CheckpointWriteFailed as exc:
            return self._storage_failed(exc)
        except DatasetError as exc:
            return hand_back(f, rid, token, self.spec, self.worker, exc, self.cost())
        except Exception as exc:  # the simulation failed: record it, do not retry
            if is_unavailable(exc):
                raise  # infrastructure: execute_run hands the lease back, the task retries
            return self._crashed(exc)
        finally:
            self.db_sink.close()
        if summary.status == SummaryStatus.STOPPED or self.lease.lost.is_set():
            return _Stopped(summary)
        return self._completed(summary)

    def _storage_failed(self, exc: CheckpointWriteFailed) -> RunOutcome | _Resume | _Stopped:
        """A checkpoint could not be written: wait and resume, or fail after storage_retries."""
        self.storage_failures += 1
        failures = self.storage_failures
        if failures > self.settings.storage_retries:
            return self.fail(f"{exc} ({failures} tries, the last one failed)")
        s, f = self.settings, self.factory
        if wait_for_storage(f, self.rid, self.token, s, exc, failures, self.should_stop):
            return _RESUME
        return _Stopped(None)  # cancelled, deleted or lost while it waited

    def _crashed(self, exc: Exception) -> RunOutcome:
        """The simulation raised: the run was deleted under it, CUDA ran out of memory, or it
        failed (recorded, not retried)."""
        if why_stopped(self.factory, self.rid) == RunOutcome.DELETED:
            # e.g. the round's row lost its run
            return lease_gone(self.factory, self.store, self.rid)
        if is_cuda_oom(exc):
            release_cuda(exc)
            device = device_label(self.spec.device)
            return out_of_memory(
                self.factory,
                self.rid,
                self.token,
                device,
                self.worker,
                exc,
                self.meter,
                self.cost(),
            )
        log.exception("run %s failed", self.rid)
        return self.fail(_error_text(exc))

    def _completed(self, summary: RunSummary) -> RunOutcome | _Resume:
        """The runner reached the last round: succeeded if every round is stored, else resume."""
        missing = finish_succeeded(
            self.factory, self.rid, self.token, self.spec.rounds, summary, self.cost()
        )
        if not missing:
            return RunOutcome.SUCCEEDED
        if self.same_hole(missing[0]) > MAX_GAP_RESUMES:
            return self.fail(
                f"rounds {missing[:10]} are missing from the database after {self.gaps} resumes"
            )
        log.warning(
            "run %s: rounds %s are missing from the database (lost in a crash?); resuming "
            "from the newest stored checkpoint",
            self.rid,
            missing[:10],
        )
        return _RESUME

    def stopped(self, summary: RunSummary | None) -> RunOutcome:
        """The run stopped before its end (the lease is released): why, recorded and cleaned."""
        f, rid = self.factory, self.rid
        if self.lease.lost.is_set():
            return lease_gone(f, self.store, rid)
        if self.overrun is not None:
            log.warning("run %s: %s", rid, self.overrun)
            return self.fail(self.overrun)
        if why_stopped(f, rid) == RunOutcome.DELETED:
            return lease_gone(f, self.store, rid)
        summary_dict = summary.to_dict() if summary else None
        finish(f, rid, self.token, RunStatus.CANCELLED, summary=summary_dict, cost=self.cost())
        log.info("run %s cancelled; its checkpoints kept", rid)
        return RunOutcome.CANCELLED
