"""A sweep in requests and responses: create, the sweep as shown, a page of sweeps, its summary."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from api.schemas.annotations import ANNOTATED_AT, ANNOTATED_BY
from api.schemas.base import In, Strict
from api.schemas.results import PlotExcluded
from api.schemas.runs import PRIORITY_DOC, Priority
from api.schemas.spec import CROSS_FIELD, GridIn, SpecIn


class SweepCreate(In):
    """POST /sweeps: base spec and grid of dotted field -> values.

    The grid's product is at most 1000 runs, and every expanded spec must satisfy the
    spec's cross-field rules.
    """

    name: str = Field("sweep", min_length=1, max_length=200, pattern=r"^[^\x00]*$")
    base: SpecIn = Field(default_factory=dict, description=CROSS_FIELD)
    grid: GridIn = Field(default_factory=dict)
    priority: Priority = Field("normal", description=PRIORITY_DOC)


class SweepPublic(BaseModel):
    """A sweep and the runs it expanded into."""

    id: str
    name: str
    owner: str
    base: dict[str, Any]
    grid: dict[str, Any]
    run_ids: list[str]
    count: int
    status_counts: dict[str, int]
    tags: list[str] = Field(default_factory=list, description="Editable (PATCH /sweeps/{id}).")
    note: str = Field("", description="Editable (PATCH /sweeps/{id}).")
    annotated_by: str | None = Field(None, description=ANNOTATED_BY)
    annotated_at: datetime | None = Field(None, description=ANNOTATED_AT)
    created_at: datetime


class SweepsPublic(BaseModel):
    """GET /sweeps."""

    data: list[SweepPublic]
    count: int


class SummaryGroup(Strict):
    """One group of a sweep summary: n succeeded runs, final, best and top-5 mean ± std."""

    label: str
    fields: dict[str, Any] = Field(description="the spec fields that tell the groups apart")
    varying: list[str] = Field(description="fields that still differ inside the group")
    n: int = Field(description="succeeded runs with a curve")
    n_succeeded: int
    n_total: int
    status_counts: dict[str, int]
    excluded: PlotExcluded
    seeds: list[int]
    final_mean: float | None
    final_std: float | None
    final_round: int | None = Field(description="the final's round; null if the members differ")
    last_round: int | None = Field(description="the runs' R; null if they differ")
    final_label: str = Field(description='"final", or "final @R-1" under before_training')
    best_mean: float | None
    best_std: float | None
    best_round: int | None = Field(description="only when every run peaked at one round")
    top5_mean: float | None
    top5_std: float | None
    run_ids: list[str] = Field(description="the runs counted")
    all_run_ids: list[str]


class SweepSummary(Strict):
    """GET /sweeps/{id}/summary (format=json): one row per group of runs."""

    sweep_id: str
    name: str
    group_by: list[str] | None = Field(description="the chosen fields; null: all but the seed")
    groups: list[SummaryGroup]
    warnings: list[str]
