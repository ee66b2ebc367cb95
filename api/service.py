"""Services between handlers and the repository; submit commits, then enqueues (rule 9)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy.orm import Session

from api.errors import FieldErrors
from api.models import Run, Sweep, User
from api.queue import Enqueue, queue_for_device
from api.repository import runs as runs_repo
from api.repository import sweeps as sweeps_repo
from api.repository.served import served_queues
from api.schemas import RunPublic
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.specdict import merge
from fedgen.sweep import SweepSpec, expand
from fedgen.versions import versions

log = logging.getLogger(__name__)


def validate_spec(data: dict[str, Any], prefix: str = "spec.") -> ExperimentSpec:
    """parse_spec, turning SpecError into a 422 with field-level messages; a partition the
    dataset cannot satisfy is refused here too (it would fail on the worker)."""
    try:
        spec = parse_spec(data)
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


def check_device_served(session: Session, specs: list[ExperimentSpec], queue_prefix: str) -> None:
    """422 naming `device` when a GPU run's queue has no live worker (it would wait forever)."""
    served = served_queues(session)
    if served is None:
        return  # this database does not record workers
    for spec in specs:
        queue = queue_for_device(spec.device, queue_prefix)
        if spec.device.startswith("cuda") and queue not in served:
            raise FieldErrors(
                [("device", f"{spec.device!r}: no live worker serves the {queue!r} queue")],
                "spec.",
            )


def _enqueue_all(enqueue: Enqueue, runs: list[Run]) -> None:
    for run in runs:
        try:
            enqueue(str(run.id), str(run.spec.get("device", "cpu")))
        except Exception:  # the row stays queued; `fedgen-lab requeue` can send it again
            log.exception("could not enqueue run %s", run.id)


def submit_run(
    session: Session,
    user: User,
    spec: ExperimentSpec,
    enqueue: Enqueue,
    sweep_id: uuid.UUID | None = None,
    *,
    queue_prefix: str,
) -> Run:
    """Insert a queued run (recording the queue it is sent to), commit, then enqueue its task."""
    check_device_served(session, [spec], queue_prefix)
    run = runs_repo.create_run(
        session,
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        owner_id=user.id,
        queue=queue_for_device(spec.device, queue_prefix),
        sweep_id=sweep_id,
        versions=versions(),
    )
    session.commit()
    _enqueue_all(enqueue, [run])
    return run


def clone_run(
    session: Session,
    user: User,
    run: Run,
    changes: dict[str, Any],
    enqueue: Enqueue,
    *,
    queue_prefix: str,
) -> Run:
    """A new run from an existing run's spec with `changes` merged in."""
    spec = validate_spec(merge(run.spec, changes), prefix="changes.")
    return submit_run(session, user, spec, enqueue, queue_prefix=queue_prefix)


def submit_sweep(
    session: Session,
    user: User,
    name: str,
    base: dict[str, Any],
    grid: dict[str, Any],
    enqueue: Enqueue,
    *,
    queue_prefix: str,
) -> tuple[Sweep, list[Run]]:
    """Expand the grid (all specs validated first), insert sweep and runs, commit, enqueue."""
    try:
        sweep_spec = SweepSpec(name=name, base=base, grid=grid)
        specs = expand(sweep_spec)
    except SpecError as exc:
        raise FieldErrors(exc.errors) from None
    for i, spec in enumerate(specs):
        problem = partition_problem(spec)
        if problem is not None:
            raise FieldErrors([("base.partition", f"{problem} (run {i} of the grid)")])
    check_device_served(session, specs, queue_prefix)
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
        )
        for s in specs
    ]
    session.commit()
    _enqueue_all(enqueue, runs)
    return sweep, runs


def run_public(run: Run) -> RunPublic:
    """ORM row (owner loaded) -> RunPublic."""
    return RunPublic.model_validate(run)
