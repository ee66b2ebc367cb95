"""Metrics of runs: history (downsampled), compare, per-user rows, run info."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Query, Response

from api.deps import RunDep, SessionDep, SettingsDep, UserDep, parse_uuid
from api.errors import FieldErrors
from lab import history_cache
from lab.downsample import Columns, downsample, to_columns
from lab.history_cache import History
from lab.models import Run
from lab.repository import metrics as metrics_repo
from lab.repository import runs as runs_repo
from vocab.run_status import RunStatus
from vocab.schemas.errors import AUTHED, error_responses
from vocab.schemas.results import ComparePublic, CompareRun, MetricsPublic, UserRow, UsersPublic
from vocab.schemas.runs import RunInfoPublic, segments_out

router = APIRouter(tags=["metrics"])
MAX_ROUND = 2**31 - 1  # the round columns are 32-bit
MAX_COMPARE_METRICS = 100  # distinct names in `metrics=` of GET /compare
MaxPoints = Annotated[int, Query(ge=0, le=100_000, description="0 = no downsampling")]


@router.get("/runs/{run_id}/metrics", responses=error_responses(*AUTHED, 404, 422))
def run_metrics(
    run: RunDep,
    session: SessionDep,
    since_round: Annotated[int, Query(ge=-1, le=MAX_ROUND)] = -1,
    max_points: MaxPoints = 0,
) -> MetricsPublic:
    """Per-round metrics after `since_round`, at most `max_points` buckets per series."""
    rounds, cols = _histories(session, [run], since_round)[run.id]
    # The answer is a plain dataclass (nothing validates it): the column's text becomes the enum
    # here, or the serializer would meet a str where it expects a RunStatus.
    status = RunStatus(run.status)
    return MetricsPublic(run_id=str(run.id), status=status, **_curves(rounds, cols, max_points))


def _histories(
    session: SessionDep, runs: Sequence[Run], since_round: int
) -> dict[uuid.UUID, History]:
    """Each run's (rounds, columns): the whole cached history, or with `since_round` >= 0
    only the rounds after it, read from the database (a live refresh: a few new rows)."""
    if since_round < 0:
        return history_cache.histories(session, [(r.id, r.current_round) for r in runs])
    rows = metrics_repo.round_history(session, [r.id for r in runs], since_round)
    return {rid: to_columns(hist) for rid, hist in rows.items()}


def _metric_names(metrics: str | None) -> set[str] | None:
    """`metrics=a,b` -> {"a", "b"}; None (absent) = every metric; empty names are an error."""
    if metrics is None:
        return None
    names = {m.strip() for m in metrics.split(",") if m.strip()}
    if not names:
        raise FieldErrors([("metrics", "name at least one metric, e.g. metrics=test_acc")])
    if len(names) > MAX_COMPARE_METRICS:
        raise FieldErrors(
            [("metrics", f"{len(names)} metrics exceeds the limit {MAX_COMPARE_METRICS}")]
        )
    return names


@router.get("/compare", response_model=ComparePublic, responses=error_responses(*AUTHED, 404, 422))
def compare(
    session: SessionDep,
    settings: SettingsDep,
    _user: UserDep,
    run_ids: Annotated[
        str,
        Query(
            min_length=1,
            max_length=40_000,
            description="comma-separated run ids, at most FEDGEN_MAX_COMPARE_RUNS (404 for one "
            "that is not a run id)",
        ),
    ],
    max_points: MaxPoints = 0,
    metrics: Annotated[
        str | None,
        Query(
            max_length=4_000,
            description="comma-separated metric names to send (default: every metric)",
        ),
    ] = None,
    since_round: Annotated[
        int,
        Query(
            ge=-1,
            le=MAX_ROUND,
            description="send only rounds > since_round of each run (exclusive; -1, the "
            "default, = every round): a page that holds rounds 0..k of running runs asks "
            "for the rest with since_round=k; `max_points` then applies to those rounds",
        ),
    ] = -1,
) -> Response:
    """Many runs' identity and columnar metrics in one request.

    `metrics=test_acc,time_total_ms` sends only those series (a chart of one metric
    then gets a fraction of the payload); a name no run has is simply absent.
    `since_round=k` sends only the rounds after k of every run (an incremental refresh
    of a live comparison: each run's `status` and `current_round` come along, so a client
    knows when a run is done and stops asking for it).
    """
    ids = [parse_uuid(x.strip()) for x in run_ids.split(",") if x.strip()]
    wanted = _metric_names(metrics)
    if len(ids) > settings.max_compare_runs:
        raise FieldErrors(
            [("run_ids", f"{len(ids)} runs exceeds the limit {settings.max_compare_runs}")]
        )
    found = runs_repo.get_runs(session, list(dict.fromkeys(ids)))
    history = _histories(session, found, since_round)
    out: list[CompareRun] = []
    for run in found:
        rounds, cols = history[run.id]
        if wanted is not None:
            cols = {k: v for k, v in cols.items() if k in wanted}
        out.append(_compare_run(run, rounds, cols, max_points))
    # Written by orjson straight from the dataclasses (see vocab.schemas.results.CompareRun).
    return Response(orjson.dumps(ComparePublic(runs=out)), media_type="application/json")


def _compare_run(run: Run, rounds: list[int], cols: Columns, max_points: int) -> CompareRun:
    """One run of a comparison: its identity and its (downsampled) curves."""
    spec: dict[str, Any] = run.spec
    return CompareRun(
        id=str(run.id),
        status=RunStatus(run.status),
        owner=run.owner.name,
        algorithm=run.algorithm,
        dataset=run.dataset,
        spec_hash=run.spec_hash,
        sweep_id=str(run.sweep_id) if run.sweep_id else None,
        seed=int(spec.get("seed", 0)),
        alpha=spec.get("partition", {}).get("alpha"),
        tags=list(spec.get("tags", [])),
        current_round=run.current_round,
        rounds_total=run.rounds,
        last_acc=run.last_acc,
        best_acc=run.best_acc,
        **_curves(rounds, cols, max_points),
    )


def _curves(rounds: list[int], cols: Columns, max_points: int) -> dict[str, Any]:
    """`downsample`'s result as the keyword arguments of `vocab.schemas.results.Curves`."""
    r, last, lo, hi, ds = downsample(rounds, cols, max_points)
    return {"rounds": r, "metrics": last, "min": lo, "max": hi, "downsampled": ds}


@router.get("/runs/{run_id}/users", responses=error_responses(*AUTHED, 404, 422))
def run_users(
    run: RunDep,
    session: SessionDep,
    settings: SettingsDep,
    round_from: Annotated[int | None, Query(ge=0, le=MAX_ROUND)] = None,
    round_to: Annotated[int | None, Query(ge=0, le=MAX_ROUND)] = None,
) -> UsersPublic:
    """Per-user metrics for a round range (capped at 100 x max_page_size rows)."""
    rows = metrics_repo.user_rows(
        session, run.id, round_from, round_to, limit=settings.max_page_size * 100
    )
    return UsersPublic(data=[UserRow.model_validate(u) for u in rows])


@router.get("/runs/{run_id}/info", responses=error_responses(*AUTHED, 404))
def run_info(run: RunDep) -> RunInfoPublic:
    """What is fixed for the run: sizes, label histogram, fidelity, versions.

    Before a worker has started it, `pending` is true and the partition part is null.
    """
    spec: dict[str, Any] = run.spec
    known: dict[str, Any] = {
        "run_id": str(run.id),
        "status": run.status,
        "spec_hash": run.spec_hash,
        "num_users": int(spec.get("partition", {}).get("num_users", 0)),
        "device": run.device or str(spec.get("device", "cpu")),
        "versions": run.versions,
        "segments": segments_out(run.segments, run.current_round),
    }
    if not run.info:
        return RunInfoPublic(pending=True, **known)
    return RunInfoPublic.model_validate({**known, **run.info, "pending": False})
