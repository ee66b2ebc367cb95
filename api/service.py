"""Services between handlers and the repository.

Submitting only writes queued rows (rule 9: commit first); the dispatcher (api.dispatch, run by
the workers) sends them. After the commit, submit runs one dispatch pass so a run starts at once
when its queue has a free slot; when that fails or finds the lease taken, the workers' next pass
sends it (FEDGEN_REAPER_S), so nothing depends on it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from typing import Any

from fastapi import HTTPException, status
from sqlalchemy.orm import Session

from api import fairshare
from api.config import Settings, get_settings
from api.dispatch import dispatch_pass
from api.errors import FieldErrors
from api.models import Run, Sweep, User
from api.queue import Enqueue, queue_for_device
from api.repository import runs as runs_repo
from api.repository import sweeps as sweeps_repo
from api.repository.workers import served_queues
from api.schemas import RunPublic
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.specdict import merge
from fedgen.sweep import SweepSpec, expand
from fedgen.versions import versions

log = logging.getLogger(__name__)


def validate_spec(data: dict[str, Any], prefix: str = "spec.") -> ExperimentSpec:
    """parse_spec (strict, as the JSON schema says), SpecError as a 422 with field messages;
    a partition the dataset cannot satisfy is refused here too (it would fail on the worker)."""
    try:
        spec = parse_spec(data, strict=True)
    except SpecError as exc:
        raise FieldErrors(exc.errors, prefix) from None
    problem = partition_problem(spec)
    if problem is not None:
        raise FieldErrors([("partition", problem)], prefix)
    return spec


def partition_problem(spec: ExperimentSpec) -> str | None:
    """Why the spec's split cannot be drawn (checked without loading data), or None."""
    from fedgen.data.partition import (
        KNOWN_TRAIN_CLASS_COUNTS,
        infeasible_partition,
        official_min_samples,
        synthetic_class_counts,
    )
    from fedgen.fidelity import resolve

    d, p = spec.data, spec.partition
    if d.name == "synthetic":
        counts = synthetic_class_counts(d.synthetic_samples, d.synthetic_classes)
    elif d.name in KNOWN_TRAIN_CLASS_COUNTS:
        counts = KNOWN_TRAIN_CLASS_COUNTS[d.name]
    else:
        return None  # CelebA: natural groups, checked when loaded
    return infeasible_partition(
        counts,
        num_users=p.num_users,
        alpha=p.alpha,
        sampling_ratio=p.sampling_ratio,
        min_samples=official_min_samples(d.name, len(counts))
        if p.min_samples is None
        else p.min_samples,
        seed=p.data_seed,
        max_redraws=p.max_redraws,
        draws=resolve(spec).draws,
    )


def check_device_served(
    session: Session, specs: list[ExperimentSpec], queue_prefix: str, ttl_s: float
) -> None:
    """422 naming `device` when a GPU run's queue has no live worker (it would wait forever).

    CPU runs are never refused: a lab always has a CPU queue, and `make demo` starts its
    worker after the first submission.
    """
    served = served_queues(session, ttl_s)
    for spec in specs:
        queue = queue_for_device(spec.device, queue_prefix)
        if spec.device.startswith("cuda") and queue not in served:
            raise FieldErrors(
                [("device", f"{spec.device!r}: no live worker serves the {queue!r} queue")],
                "spec.",
            )


def check_priority(user: User, priority: str) -> None:
    """403 naming the field unless the user may submit at this priority (high: admins only)."""
    if priority == "high" and not user.is_admin:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, "priority: 'high' is for admins only (use low or normal)"
        )


def _dispatch_now(
    session: Session, enqueue: Enqueue, settings: Settings | None, queues: set[str]
) -> None:
    """One dispatch pass over the submitted runs' queues; any failure is left to the workers."""
    if settings is None:
        return
    holder = f"api:{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"
    try:
        dispatch_pass(session, enqueue, settings, holder, queues=queues)
    except Exception:  # the rows are committed; the workers' dispatcher sends them
        session.rollback()
        log.exception("dispatch after submission failed; the workers' dispatcher will send")


def submit_run(
    session: Session,
    user: User,
    spec: ExperimentSpec,
    enqueue: Enqueue,
    sweep_id: uuid.UUID | None = None,
    *,
    queue_prefix: str,
    priority: str = "normal",
    settings: Settings | None = None,
) -> Run:
    """Insert a queued run (recording its queue), commit, then try to dispatch at once."""
    check_priority(user, priority)
    check_device_served(session, [spec], queue_prefix, (settings or get_settings()).worker_ttl_s)
    run = runs_repo.create_run(
        session,
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        owner_id=user.id,
        queue=queue_for_device(spec.device, queue_prefix),
        sweep_id=sweep_id,
        versions=versions(),
        priority=priority,
    )
    session.commit()
    _dispatch_now(session, enqueue, settings, {run.queue})
    return run


def clone_run(
    session: Session,
    user: User,
    run: Run,
    changes: dict[str, Any],
    enqueue: Enqueue,
    *,
    queue_prefix: str,
    priority: str = "normal",
    settings: Settings | None = None,
) -> Run:
    """A new run from an existing run's spec with `changes` merged in."""
    spec = validate_spec(merge(run.spec, changes), prefix="changes.")
    return submit_run(
        session,
        user,
        spec,
        enqueue,
        queue_prefix=queue_prefix,
        priority=priority,
        settings=settings,
    )


def submit_sweep(
    session: Session,
    user: User,
    name: str,
    base: dict[str, Any],
    grid: dict[str, Any],
    enqueue: Enqueue,
    *,
    queue_prefix: str,
    priority: str = "normal",
    settings: Settings | None = None,
) -> tuple[Sweep, list[Run]]:
    """Expand the grid (all specs validated first), insert sweep and runs, commit, dispatch."""
    check_priority(user, priority)
    try:
        sweep_spec = SweepSpec(name=name, base=base, grid=grid)
        specs = expand(sweep_spec, strict=True)
    except SpecError as exc:
        raise FieldErrors(exc.errors) from None
    for i, spec in enumerate(specs):
        problem = partition_problem(spec)
        if problem is not None:
            raise FieldErrors([("base.partition", f"{problem} (run {i} of the grid)")])
    check_device_served(session, specs, queue_prefix, (settings or get_settings()).worker_ttl_s)
    sweep = sweeps_repo.create_sweep(session, name=name, base=base, grid=grid, owner_id=user.id)
    recorded = versions()
    runs = [
        runs_repo.create_run(
            session,
            spec=s.model_dump(mode="json"),
            spec_hash=s.spec_hash(),
            owner_id=user.id,
            queue=queue_for_device(s.device, queue_prefix),
            sweep_id=sweep.id,
            versions=recorded,
            priority=priority,
        )
        for s in specs
    ]
    session.commit()
    _dispatch_now(session, enqueue, settings, {r.queue for r in runs})
    return sweep, runs


def run_public(run: Run) -> RunPublic:
    """ORM row (owner loaded) -> RunPublic, without queue fields (see runs_public)."""
    return RunPublic.model_validate(run)


def runs_public(session: Session, runs: list[Run], settings: Settings) -> list[RunPublic]:
    """RunPublic of each run; queued ones get queue_position and expected_start.

    The snapshot of the queue is read once for the whole list, only when a run is queued.
    """
    out = [RunPublic.model_validate(r) for r in runs]
    if not any(r.status == "queued" for r in runs):
        return out
    where = fairshare.positions(runs_repo.queue_snapshot(session, settings.worker_ttl_s))
    for pub in out:
        if pub.status == "queued":
            rid = uuid.UUID(pub.id)
            if rid in where:
                pub.queue_position, pub.expected_start = where[rid]
    return out
