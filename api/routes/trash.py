"""The trash: GET /trash lists what a member deleted and when it will be purged (restores are
POST /runs/{id}/restore and POST /sweeps/{id}/restore)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from sqlalchemy.orm import Session

from api.deps import SessionDep, SettingsDep, UserDep, check_page_size
from lab import trash_actions
from lab.config import Settings
from lab.models import Run, Sweep
from lab.repository import trash as trash_repo
from vocab.schemas.errors import AUTHED, error_responses
from vocab.schemas.trash import TrashedRun, TrashedSweep, TrashPublic

router = APIRouter(prefix="/trash", tags=["trash"])


@router.get("", responses=error_responses(*AUTHED, 403, 422))
def list_trash(
    session: SessionDep,
    settings: SettingsDep,
    user: UserDep,
    owner: Annotated[
        str | None,
        Query(
            max_length=100,
            pattern=r"^[^\x00]*$",
            description="admins: one member's trash (default: everyone's); members: their own",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, description="at most FEDGEN_MAX_PAGE_SIZE")] = 100,
) -> TrashPublic:
    """The runs and sweeps in the trash, newest deletion first, each with who deleted it, when,
    and when it will be purged (FEDGEN_TRASH_DAYS later). A member sees their own; an admin
    everyone's, or one member's with `owner`."""
    check_page_size(limit, settings)
    if not user.is_admin:
        if owner is not None and owner != user.name:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN, "owner: only an admin may list another member's trash"
            )
        owner = user.name
    runs, sweeps = trash_repo.list_trash(session, owner, limit)
    return TrashPublic(
        runs=[_run(run, name, settings) for run, name in runs],
        sweeps=[_sweep(session, sweep, name, settings) for sweep, name in sweeps],
        trash_days=settings.trash_days,
    )


def _run(run: Run, owner: str, settings: Settings) -> TrashedRun:
    assert run.deleted_at is not None
    return TrashedRun(
        id=str(run.id),
        owner=owner,
        algorithm=run.algorithm,
        dataset=run.dataset,
        status=run.status,
        sweep_id=str(run.sweep_id) if run.sweep_id else None,
        created_at=run.created_at,
        deleted_at=run.deleted_at,
        deleted_by=run.deleted_by or "",
        purge_after=trash_actions.purge_after(run.deleted_at, settings),
    )


def _sweep(session: Session, sweep: Sweep, owner: str, settings: Settings) -> TrashedSweep:
    assert sweep.deleted_at is not None
    return TrashedSweep(
        id=str(sweep.id),
        name=sweep.name,
        owner=owner,
        runs=trash_repo.runs_trashed_with(session, sweep),
        created_at=sweep.created_at,
        deleted_at=sweep.deleted_at,
        deleted_by=sweep.deleted_by or "",
        purge_after=trash_actions.purge_after(sweep.deleted_at, settings),
    )
