"""Sweeps: submit a grid, list, get, annotate, delete (to the trash), restore; the grouped
summary and plot data (JSON or CSV)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Response, status
from fastapi.responses import PlainTextResponse
from fastapi.types import DecoratedCallable
from pydantic import BaseModel
from sqlalchemy.orm import Session

from api import deps, service
from api.errors import FieldErrors
from fedgen.specdict import group_fields
from fedgen.stats import CurveStatistic, PlotStatistic
from lab import analysis, plot_data, sweep_cache, trash_actions
from lab.models import Sweep
from lab.repository import sweeps as sweeps_repo
from lab.repository.annotations import tags_of
from vocab.schemas.annotations import AnnotationsUpdate
from vocab.schemas.errors import AUTHED, BODY, error_responses
from vocab.schemas.results import PlotData
from vocab.schemas.sweeps import SweepCreate, SweepPublic, SweepsPublic, SweepSummary
from vocab.schemas.trash import SweepRestored

_FIELD = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
GROUP_BY_PATTERN = rf"^ *{_FIELD} *(, *{_FIELD} *)*$"

router = APIRouter(prefix="/sweeps", tags=["sweeps"])


def _public(
    session: Session,
    sweep: Sweep,
    owner: str,
    runs: list[tuple[uuid.UUID, str]] | None = None,
) -> SweepPublic:
    """The sweep as the API shows it; `runs`: its runs' (id, status), read when not given."""
    if runs is None:
        runs = sweeps_repo.run_states(session, [sweep.id])[sweep.id]
    return SweepPublic(
        id=str(sweep.id),
        name=sweep.name,
        owner=owner,
        base=sweep.base,
        grid=sweep.grid,
        run_ids=[str(rid) for rid, _ in runs],
        count=len(runs),
        status_counts=dict(Counter(status for _, status in runs)),
        tags=tags_of(sweep.tags_csv),
        note=sweep.note,
        annotated_by=sweep.annotated_by,
        annotated_at=sweep.annotated_at,
        created_at=sweep.created_at,
    )


@router.post("", status_code=status.HTTP_202_ACCEPTED, responses=error_responses(*AUTHED, *BODY))
def submit_sweep(body: SweepCreate, sub: deps.SubmitterDep) -> SweepPublic:
    """Expand a grid into runs (all validated first) and queue them."""
    sweep, _ = service.submit_sweep(sub, body.name, body.base, body.grid, priority=body.priority)
    return _public(sub.session, sweep, sub.user.name)


@router.get("", responses=error_responses(*AUTHED, 422))
def list_sweeps(
    session: deps.SessionDep,
    settings: deps.SettingsDep,
    _user: deps.UserDep,
    q: Annotated[
        str | None,
        Query(
            max_length=200,
            pattern=r"^[^\x00]*$",
            description="Text in the name, the note or the tags (any case)",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, description="at most FEDGEN_MAX_PAGE_SIZE")] = 50,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
) -> SweepsPublic:
    """Sweeps, newest first."""
    deps.check_page_size(limit, settings)
    rows, count = sweeps_repo.list_sweeps(session, limit, offset, q=q or None)
    states = sweeps_repo.run_states(session, [s.id for s, _ in rows])
    return SweepsPublic(data=[_public(session, s, o, states[s.id]) for s, o in rows], count=count)


def _load(session: Session, sweep_id: str) -> tuple[Sweep, str]:
    found = sweeps_repo.get_sweep(session, deps.parse_uuid(sweep_id, "sweep"))
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"sweep {sweep_id} not found")
    return found


@router.get("/{sweep_id}", responses=error_responses(*AUTHED, 404))
def get_sweep(sweep_id: str, session: deps.SessionDep, _user: deps.UserDep) -> SweepPublic:
    """One sweep with its run ids and status counts."""
    return _public(session, *_load(session, sweep_id))


@router.patch("/{sweep_id}", responses=error_responses(*AUTHED, *BODY, 403, 404))
def annotate_sweep(
    found: deps.OwnSweepDep, body: AnnotationsUpdate, session: deps.SessionDep, user: deps.UserDep
) -> SweepPublic:
    """Change a sweep's tags and/or note (owner or admin); who and when are recorded."""
    sweep, owner = found
    service.annotate_sweep(session, sweep, body, user)
    return _public(session, sweep, owner)


@router.delete(
    "/{sweep_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=error_responses(*AUTHED, 403, 404),
)
def delete_sweep(
    found: deps.OwnSweepDep, session: deps.SessionDep, actor: deps.ActorDep
) -> Response:
    """Move a sweep and its runs to the trash (owner or admin), cancelling the unfinished ones;
    restorable with POST /sweeps/{id}/restore for FEDGEN_TRASH_DAYS. Recorded as sweep.delete."""
    trash_actions.delete_sweep(session, found[0], found[1], actor)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def load_trashed_sweep(
    sweep_id: str, session: deps.SessionDep, user: deps.UserDep
) -> tuple[Sweep, str]:
    """The trashed sweep of the path and its owner's name: 404 when none of that id is in the
    trash, 403 for another member."""
    found = sweeps_repo.get_sweep(session, deps.parse_uuid(sweep_id, "sweep"), in_trash=True)
    return deps.owned_or_404(found, user, "sweep", sweep_id)


@router.post("/{sweep_id}/restore", responses=error_responses(*AUTHED, 403, 404))
def restore_sweep(
    found: Annotated[tuple[Sweep, str], Depends(load_trashed_sweep)],
    session: deps.SessionDep,
    actor: deps.ActorDep,
) -> SweepRestored:
    """Take a sweep out of the trash with the runs trashed with it, every round, per-user row
    and checkpoint as they were (runs deleted on their own before stay in the trash)."""
    sweep, owner = found
    count = trash_actions.restore_sweep(session, sweep, owner, actor)
    return SweepRestored(id=str(sweep.id), name=sweep.name, runs_restored=count)


def _get_json_or_csv(
    path: str, model: type[BaseModel], rows: str
) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """A GET route answering `model` as JSON, or CSV with `format=csv` (the route returns
    `_csv`); the OpenAPI document gives its 200 both media types."""
    return router.get(
        path,
        response_model=model,
        responses={
            200: {
                "description": f"JSON (format=json) or CSV (format=csv, {rows})",
                "content": {"text/csv": {"schema": {"type": "string"}}},
            },
            **error_responses(*AUTHED, 404, 422),
        },
    )


def _csv(text: str, filename: str) -> PlainTextResponse:
    """A CSV download named `filename`."""
    return PlainTextResponse(
        text,
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@_get_json_or_csv("/{sweep_id}/summary", SweepSummary, "one row per group")
def sweep_summary(
    sweep_id: str,
    session: deps.SessionDep,
    _user: deps.UserDep,
    format: Literal["json", "csv"] = "json",  # noqa: A002 - the public query name
    group_by: Annotated[
        str | None,
        Query(
            max_length=4000,
            pattern=GROUP_BY_PATTERN,
            description="Comma-separated dotted spec fields, e.g. `algorithm.name,partition.alpha`"
            " (each must be a field of this sweep's specs; 422 names the unknown ones)",
        ),
    ] = None,
    statistic: Annotated[
        CurveStatistic,
        Query(
            description="what `tune` chooses by: the configuration with the best mean of its "
            "validation counterpart (val_best: the best validation accuracy), reported on test "
            "(docs/metrics.md, Tuning); every group carries every statistic either way"
        ),
    ] = "val_best",
    tune: Annotated[
        str | None,
        Query(
            max_length=4000,
            pattern=GROUP_BY_PATTERN,
            description="Comma-separated swept fields to tune by validation, e.g. "
            "`algorithm.mu,lr`: a row per group of the other fields, its figures at the values "
            "with the best mean validation statistic, with the budget (422 names `tune` for a "
            "field the sweep does not vary, or a sweep without validation data)",
        ),
    ] = None,
) -> Response:
    """Runs grouped by every field but the seed: final, best, top-5 and val_best accuracy
    (mean ± std over seeds) and cost (MB communicated, clients' and server's time).

    n counts the succeeded runs only; the others are counted and listed apart (`excluded`).
    `group_by` (comma-separated dotted fields) groups by those fields instead; groups whose
    runs still differ in other fields list them in `varying` and in `warnings`. `tune` picks,
    per group of the other fields, the tuned fields' values by validation (`tune` per group).
    """
    sweep, _ = _load(session, sweep_id)
    by = [f.strip() for f in group_by.split(",") if f.strip()] if group_by else None
    tuned = [f.strip() for f in tune.split(",") if f.strip()] if tune else None

    def compute() -> bytes:
        if by is not None:
            _check_group_by(session, sweep, by)
        try:
            summary = analysis.sweep_summary(session, sweep.id, by, statistic, tuned)
        except analysis.SummaryError as exc:
            raise FieldErrors(exc.errors) from None
        if format == "csv":
            return analysis.summary_csv(summary["groups"]).encode()
        public = {"sweep_id": str(sweep.id), "name": sweep.name, **summary}
        return SweepSummary.model_validate(public).model_dump_json(by_alias=True).encode()

    key = (
        "summary",
        format,
        tuple(by) if by is not None else None,
        sweep.name,
        statistic,
        tuple(tuned) if tuned else None,
    )
    body = sweep_cache.answer(session, sweep.id, key, compute)
    if format == "csv":
        return _csv(body.decode(), f"sweep-{sweep.id}.csv")
    return _json(body)


def _check_group_by(session: Session, sweep: Sweep, by: list[str]) -> None:
    """422 naming the `group_by` fields that no spec of the sweep has, listing those it has."""
    known = set(
        group_fields(
            analysis.flat_spec(r)
            for r in sweeps_repo.runs_of_sweep(session, sweep.id, analysis=True)
        )
    )
    unknown = [f for f in by if f not in known]
    if unknown:
        raise FieldErrors(
            [
                (
                    "group_by",
                    f"unknown field(s) {', '.join(unknown)}; fields of this sweep: "
                    f"{', '.join(sorted(known))}",
                )
            ]
        )


def _json(body: bytes) -> Response:
    """A JSON answer already serialized as the route's response model would be (a cached one:
    `lab.sweep_cache`), sent without validating it again."""
    return Response(body, media_type="application/json")


_DOTTED = Query(
    min_length=1,
    max_length=200,
    pattern=rf"^ *{_FIELD} *$",
    description="a dotted spec field (`algorithm`, `alpha` and `dataset` name their fields)",
)


@_get_json_or_csv("/{sweep_id}/plot-data", PlotData, "one row per point")
def sweep_plot_data(
    sweep_id: str,
    session: deps.SessionDep,
    _user: deps.UserDep,
    x: Annotated[
        str,
        Query(
            min_length=1,
            max_length=200,
            pattern=rf"^ *{_FIELD} *$",
            description="a dotted spec field (`algorithm`, `alpha` and `dataset` name their "
            "fields), or `round`, `bytes`, `compute`: each round's test accuracy against the "
            "round, the cumulative MB communicated or the cumulative compute in s",
        ),
    ],
    by: Annotated[str, _DOTTED] = "algorithm",
    statistic: Annotated[
        PlotStatistic,
        Query(
            description="per run: final, best or top5 accuracy (its summary: docs/metrics.md),"
            " or time_to_target (first evaluated round with accuracy >= target)"
        ),
    ] = "top5",
    interval: Annotated[
        Literal["std", "ci95"],
        Query(description="the bar: ± std (as the sweep tables) or the 95 % t interval"),
    ] = "std",
    target: Annotated[
        float | None,
        Query(gt=0.0, le=1.0, description="accuracy to reach (a fraction, 0 < target <= 1)"),
    ] = None,
    format: Literal["json", "csv"] = "json",  # noqa: A002 - the public query name
) -> Response:
    """A statistic against the swept field `x`, one series per value of `by`, over seeds;
    or, with x=round|bytes|compute, each series' accuracy curve against rounds, cumulative
    MB or cumulative compute (a point per round, `round` naming it).

    Each point: mean, std, the bar's ends lo/hi, n succeeded runs of n_total, their ids and
    values. `log_x` for α (or values spanning two decades). Runs that did not succeed are
    listed in `excluded`; fields other than x and by that differ inside a point, in
    `warnings`. 422 names `x` or `by` (listing the fields that vary) or a missing `target`.
    """
    sweep, _ = _load(session, sweep_id)

    def compute() -> bytes:
        try:
            data = plot_data.plot_data(session, sweep.id, x, by, statistic, interval, target)
        except plot_data.PlotDataError as exc:
            raise FieldErrors(exc.errors) from None
        if format == "csv":
            return plot_data.plot_csv(data).encode()
        return PlotData.model_validate(data).model_dump_json(by_alias=True).encode()

    key = ("plot-data", format, x, by, statistic, interval, target)
    body = sweep_cache.answer(session, sweep.id, key, compute)
    if format == "csv":
        return _csv(body.decode(), f"sweep-{sweep.id}-plot.csv")
    return _json(body)
