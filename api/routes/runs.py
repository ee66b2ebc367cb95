"""Runs: submit, list, get, cancel, delete (to the trash), restore, clone."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Response, status
from pydantic import Field

from api import service
from api.deps import (
    ActorDep,
    OwnRunDep,
    RunDep,
    SessionDep,
    SettingsDep,
    SubmitterDep,
    UserDep,
    check_page_size,
    parse_uuid,
    require_owner,
)
from api.errors import FieldErrors
from fedgen.execution_spec import with_new_run_defaults
from lab import trash_actions
from lab.models import Run
from lab.repository import run_list
from lab.repository import runs as runs_repo
from lab.repository import sweeps as sweeps_repo
from lab.repository.run_list import MAX_CURSOR_CHARS
from lab.repository.spec_filter import (
    MAX_WHERE,
    MAX_WHERE_CHARS,
    WHERE_PATTERN,
    field_problems,
    parse_where,
)
from vocab.run_status import RunStatus
from vocab.schemas.annotations import AnnotationsUpdate
from vocab.schemas.base import NO_NUL, IsoDatetime
from vocab.schemas.errors import AUTHED, BODY, error_responses
from vocab.schemas.runs import RunClone, RunCreate, RunPublic, RunsPublic

router = APIRouter(prefix="/runs", tags=["runs"])
WhereClause = Annotated[
    str,
    Field(
        max_length=MAX_WHERE_CHARS,
        pattern=NO_NUL,
        json_schema_extra={"pattern": WHERE_PATTERN},  # parse_where checks it, saying what is wrong
    ),
]
CURSOR = r"^[A-Za-z0-9_-]*$"
CURSOR_DOC = (
    "The previous page's `next_cursor`: the page after it, newest first (a deep page costs "
    "what the first does, unlike `offset`); not with `offset`."
)
ID_PREFIX = r"^[0-9A-Fa-f-]{1,36}$"
ID_DOC = (
    "Runs whose id starts with these hex digits (dashes ignored), as the pages' short ids show "
    "it: `fedgen export 1a2b3c4d` finds its run so, and lists the candidates when several match."
)
WHERE_DOC = (
    f"Repeatable, at most {MAX_WHERE}: `field=value`, a dotted spec field equal to a JSON value, "
    "e.g. `algorithm.gen_batch_size=32` (matches 32 and 32.0), `partition.alpha=0.1`, "
    '`algorithm.name=fedgen` (strings exact; `"32"` is the string). Every clause must hold. '
    "An unknown field, or a value the field's type cannot hold, is a 422 naming the field "
    "(with the nearest known ones)."
)


@router.post("", status_code=status.HTTP_202_ACCEPTED, responses=error_responses(*AUTHED, *BODY))
def submit_run(body: RunCreate, sub: SubmitterDep) -> RunPublic:
    """Validate a spec, queue a run for it (at `priority`; high: admins only)."""
    spec = service.validate_spec(with_new_run_defaults(body.spec))
    run = service.submit_run(sub, spec, priority=body.priority)
    return service.runs_public(sub.session, [run], sub.settings)[0]


@router.get("", responses=error_responses(*AUTHED, 404, 422))
def list_runs(
    session: SessionDep,
    settings: SettingsDep,
    _user: UserDep,
    status_: Annotated[RunStatus | None, Query(alias="status")] = None,
    algorithm: Annotated[str | None, Query(max_length=100, pattern=NO_NUL)] = None,
    dataset: Annotated[str | None, Query(max_length=100, pattern=NO_NUL)] = None,
    tag: Annotated[str | None, Query(max_length=64, pattern=NO_NUL)] = None,
    owner: Annotated[str | None, Query(max_length=100, pattern=NO_NUL)] = None,
    sweep_id: Annotated[str | None, Query(description="a sweep id (404 if none)")] = None,
    id_prefix: Annotated[
        str | None, Query(min_length=1, max_length=36, pattern=ID_PREFIX, description=ID_DOC)
    ] = None,
    created_after: IsoDatetime | None = None,
    created_before: IsoDatetime | None = None,
    where: Annotated[
        list[WhereClause] | None, Query(max_length=MAX_WHERE, description=WHERE_DOC)
    ] = None,
    q: Annotated[
        str | None,
        Query(
            max_length=200, pattern=NO_NUL, description="Text in the note or the tags (any case)"
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, description="at most FEDGEN_MAX_PAGE_SIZE")] = 50,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    cursor: Annotated[
        str | None, Query(max_length=MAX_CURSOR_CHARS, pattern=CURSOR, description=CURSOR_DOC)
    ] = None,
) -> RunsPublic:
    """Runs, newest first, filtered and paginated (by `cursor`, or by `offset`), with the count
    under the filters and the lab's runs per status under the filters but `status`."""
    check_page_size(limit, settings)
    after = None
    if cursor is not None:
        if offset:
            raise FieldErrors([("offset", "give offset or cursor, not both")])
        try:
            after = run_list.decode_cursor(cursor)
        except ValueError as exc:
            raise FieldErrors([("cursor", f"{cursor[:40]!r} {exc}")]) from None
    if id_prefix:
        try:
            run_list.id_range(id_prefix)
        except ValueError as exc:
            raise FieldErrors([("id_prefix", str(exc))]) from None
    clauses, problems = parse_where(where or [])
    problems += field_problems(clauses)  # unknown fields, values their type cannot hold
    if problems:
        raise FieldErrors([("where", p) for p in problems])
    filters = run_list.RunFilters(
        status=status_,
        algorithm=algorithm,
        dataset=dataset,
        tag=tag,
        owner=owner,
        sweep_id=parse_uuid(sweep_id, "sweep") if sweep_id else None,
        id_prefix=id_prefix or None,
        created_after=created_after,
        created_before=created_before,
        where=tuple(clauses),
        q=q or None,
    )
    page = run_list.list_runs(session, filters, limit, offset=offset, cursor=after)
    return RunsPublic(
        data=service.runs_public(session, page.runs, settings),
        count=page.count,
        count_exact=page.count_exact,
        status_counts=page.status_counts,
        status_counts_exact=page.status_counts_exact,
        next_cursor=page.next_cursor,
    )


@router.get("/{run_id}", responses=error_responses(*AUTHED, 404))
def get_run(run: RunDep, session: SessionDep, settings: SettingsDep) -> RunPublic:
    """One run; a queued one with its queue_position and expected_start."""
    return service.runs_public(session, [run], settings)[0]


OWNER_ONLY = error_responses(*AUTHED, 403, 404)


@router.patch("/{run_id}", responses=error_responses(*AUTHED, *BODY, 403, 404))
def annotate_run(
    run: OwnRunDep,
    body: AnnotationsUpdate,
    session: SessionDep,
    settings: SettingsDep,
    user: UserDep,
) -> RunPublic:
    """Change a run's tags and/or note (owner or admin); who and when are recorded."""
    service.annotate_run(session, run, body, user)
    return service.runs_public(session, [run], settings)[0]


@router.post("/{run_id}/cancel", status_code=status.HTTP_202_ACCEPTED, responses=OWNER_ONLY)
def cancel_run(run: OwnRunDep, session: SessionDep, actor: ActorDep) -> RunPublic:
    """Ask a run to stop (queued: at once; running: between rounds); recorded as run.cancel.

    Cancel stops the run and keeps every checkpoint it has committed (full, generator, final);
    they go only when the run is purged from the trash.
    """
    service.withdraw_run(session, run, actor)
    return service.run_public(run)


@router.delete("/{run_id}", status_code=status.HTTP_204_NO_CONTENT, responses=OWNER_ONLY)
def delete_run(run: OwnRunDep, session: SessionDep, actor: ActorDep) -> Response:
    """Move a run to the trash (owner or admin), cancelling it if it has not ended; restorable
    with POST /runs/{id}/restore for FEDGEN_TRASH_DAYS, then purged. Recorded as run.delete."""
    trash_actions.delete_run(session, run, actor)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def load_trashed_run(run_id: str, session: SessionDep, user: UserDep) -> Run:
    """The trashed run of the path when the user owns it or is an admin: 404 when no run of
    that id is in the trash, 403 for another member."""
    run = runs_repo.get_run(session, parse_uuid(run_id), in_trash=True)
    if run is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"run {run_id} not found in the trash")
    require_owner(run.owner_id, user, "run")
    return run


@router.post("/{run_id}/restore", responses=error_responses(*AUTHED, 403, 404, 409))
def restore_run(
    run: Annotated[Run, Depends(load_trashed_run)],
    session: SessionDep,
    settings: SettingsDep,
    actor: ActorDep,
) -> RunPublic:
    """Take a run out of the trash with every round, per-user row and checkpoint it had (a
    cancelled run stays cancelled). 409 while its sweep is in the trash: restore the sweep."""
    if run.sweep_id is not None and sweeps_repo.get_sweep(session, run.sweep_id, in_trash=True):
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"run {run.id} belongs to sweep {run.sweep_id}, which is in the trash: "
            "restore the sweep (POST /sweeps/{id}/restore)",
        )
    trash_actions.restore_run(session, run, actor)
    return service.runs_public(session, [run], settings)[0]


@router.post(
    "/{run_id}/clone",
    status_code=status.HTTP_202_ACCEPTED,
    responses=error_responses(*AUTHED, *BODY, 404),
)
def clone_run(run: RunDep, body: RunClone, sub: SubmitterDep) -> RunPublic:
    """A new run from this run's spec with `changes` merged in."""
    clone = service.clone_run(sub, run, body.changes, priority=body.priority)
    return service.runs_public(sub.session, [clone], sub.settings)[0]
