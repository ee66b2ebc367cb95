"""Services between handlers and the repository; submit commits, then enqueues (rule 9)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from api.errors import FieldErrors
from api.models import Run, Sweep, User
from api.repository import runs as runs_repo
from api.repository import sweeps as sweeps_repo
from api.schemas import RunPublic
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.specdict import merge
from fedgen.sweep import SweepSpec, expand
from fedgen.versions import versions

log = logging.getLogger(__name__)
Enqueue = Callable[[str, str], None]


def queue_for(spec: ExperimentSpec) -> str:
    """Queue routing by the spec's device."""
    return "gpu" if spec.device.startswith("cuda") else "cpu"


def validate_spec(data: dict[str, Any], prefix: str = "spec.") -> ExperimentSpec:
    """parse_spec, turning SpecError into a 422 with field-level messages."""
    try:
        return parse_spec(data)
    except SpecError as exc:
        raise FieldErrors(exc.errors, prefix) from None


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
) -> Run:
    """Insert a queued run, commit, then enqueue its task."""
    run = runs_repo.create_run(
        session,
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        owner_id=user.id,
        queue=queue_for(spec),
        sweep_id=sweep_id,
        versions=versions(),
    )
    session.commit()
    _enqueue_all(enqueue, [run])
    return run


def clone_run(
    session: Session, user: User, run: Run, changes: dict[str, Any], enqueue: Enqueue
) -> Run:
    """A new run from an existing run's spec with `changes` merged in."""
    spec = validate_spec(merge(run.spec, changes), prefix="changes.")
    return submit_run(session, user, spec, enqueue)


def submit_sweep(
    session: Session,
    user: User,
    name: str,
    base: dict[str, Any],
    grid: dict[str, Any],
    enqueue: Enqueue,
) -> tuple[Sweep, list[Run]]:
    """Expand the grid (all specs validated first), insert sweep and runs, commit, enqueue."""
    try:
        sweep_spec = SweepSpec(name=name, base=base, grid=grid)
        specs = expand(sweep_spec)
    except SpecError as exc:
        raise FieldErrors(exc.errors) from None
    sweep = sweeps_repo.create_sweep(session, name=name, base=base, grid=grid, owner_id=user.id)
    recorded = versions()
    runs = [
        runs_repo.create_run(
            session,
            spec=s.model_dump(mode="json"),
            spec_hash=s.spec_hash(),
            owner_id=user.id,
            queue=queue_for(s),
            sweep_id=sweep.id,
            versions=recorded,
        )
        for s in specs
    ]
    session.commit()
    _enqueue_all(enqueue, runs)
    return sweep, runs


def run_public(run: Run, owner: str) -> RunPublic:
    """ORM row -> RunPublic."""
    return RunPublic(
        id=str(run.id),
        status=run.status,  # type: ignore[arg-type]
        spec=run.spec,
        spec_hash=run.spec_hash,
        partition_fingerprint=run.partition_fingerprint,
        owner=owner,
        sweep_id=str(run.sweep_id) if run.sweep_id else None,
        attempt=run.attempt,
        worker=run.worker,
        device=run.device,
        current_round=run.current_round,
        rounds=run.rounds,
        last_acc=run.last_acc,
        best_acc=run.best_acc,
        error=run.error,
        cancel_requested=run.cancel_requested,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        versions=run.versions or {},
    )
