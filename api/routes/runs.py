"""Runs: submit, list, get, cancel, delete, clone."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from api import service
from api.deps import RunDep, SessionDep, SettingsDep, UserDep, parse_uuid, require_owner
from api.errors import FieldErrors
from api.repository import checkpoints as ckpt_repo
from api.repository import runs as runs_repo
from api.schemas import RunClone, RunCreate, RunPublic, RunsPublic
from api.store import CheckpointStore
from fedgen.status import RunStatus

router = APIRouter(prefix="/runs", tags=["runs"])
NO_NUL = r"^[^\x00]*$"  # PostgreSQL text cannot hold NUL


@router.post("", status_code=status.HTTP_202_ACCEPTED)
def submit_run(
    body: RunCreate, request: Request, session: SessionDep, user: UserDep, settings: SettingsDep
) -> RunPublic:
    """Validate a spec, queue a run for it."""
    spec = service.validate_spec(body.spec)
    run = service.submit_run(
        session, user, spec, request.app.state.enqueue, queue_prefix=settings.queue_prefix
    )
    return service.run_public(run)


@router.get("")
def list_runs(
    session: SessionDep,
    settings: SettingsDep,
    _user: UserDep,
    status_: Annotated[RunStatus | None, Query(alias="status")] = None,
    algorithm: Annotated[str | None, Query(max_length=100, pattern=NO_NUL)] = None,
    dataset: Annotated[str | None, Query(max_length=100, pattern=NO_NUL)] = None,
    tag: Annotated[str | None, Query(max_length=64, pattern=NO_NUL)] = None,
    owner: Annotated[str | None, Query(max_length=100, pattern=NO_NUL)] = None,
    sweep_id: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    limit: Annotated[int, Query(ge=1)] = 50,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
) -> RunsPublic:
    """Runs, newest first, filtered and paginated."""
    if limit > settings.max_page_size:
        raise FieldErrors(
            [("limit", f"{limit} exceeds the page size limit {settings.max_page_size}")]
        )
    filters = runs_repo.RunFilters(
        status=status_,
        algorithm=algorithm,
        dataset=dataset,
        tag=tag,
        owner=owner,
        sweep_id=parse_uuid(sweep_id, "sweep") if sweep_id else None,
        created_after=created_after,
        created_before=created_before,
    )
    rows, count = runs_repo.list_runs(session, filters, limit, offset)
    return RunsPublic(data=[service.run_public(r) for r in rows], count=count)


@router.get("/{run_id}")
def get_run(run: RunDep) -> RunPublic:
    """One run."""
    return service.run_public(run)


@router.post("/{run_id}/cancel", status_code=status.HTTP_202_ACCEPTED)
def cancel_run(run: RunDep, session: SessionDep, user: UserDep, settings: SettingsDep) -> RunPublic:
    """Ask a run to stop (queued: at once; running: between rounds); its checkpoint files go."""
    require_owner(run, user)
    runs_repo.request_cancel(session, run.id)
    session.flush()
    session.refresh(run)
    if run.status == "cancelled":  # was queued: no worker will clean up after it
        paths = ckpt_repo.delete_of_run(session, run.id)
        session.commit()
        store = CheckpointStore(settings.checkpoint_root)
        store.delete(paths)
        store.delete_run(str(run.id))
    return service.run_public(run)


@router.delete("/{run_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_run(run: RunDep, session: SessionDep, user: UserDep, settings: SettingsDep) -> Response:
    """Delete a run, its metrics and its checkpoint files (owner or admin)."""
    require_owner(run, user)
    runs_repo.request_cancel(session, run.id)
    paths = ckpt_repo.paths_of_run(session, run.id)
    runs_repo.delete_run(session, run.id)
    session.commit()
    store = CheckpointStore(settings.checkpoint_root)
    store.delete(paths)
    store.delete_run(str(run.id))
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{run_id}/clone", status_code=status.HTTP_202_ACCEPTED)
def clone_run(
    run: RunDep,
    body: RunClone,
    request: Request,
    session: SessionDep,
    user: UserDep,
    settings: SettingsDep,
) -> RunPublic:
    """A new run from this run's spec with `changes` merged in."""
    clone = service.clone_run(
        session,
        user,
        run,
        body.changes,
        request.app.state.enqueue,
        queue_prefix=settings.queue_prefix,
    )
    return service.run_public(clone)
