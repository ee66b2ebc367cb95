"""What runs produced, as responses: curves (/metrics, /compare), per-user rows and sweep plots."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from fedgen.stats import PlotStatistic
from vocab.run_status import RunStatus
from vocab.schemas.base import FromRow


# A run's curves in a response: /compare answers 100 runs x 200 rounds x 15 series in one body.
# Their types are plain dataclasses, not models: the handlers' constructor calls are type-checked,
# nothing is validated again at run time, and orjson writes dataclasses natively, about twice as
# fast as pydantic's serializer. FastAPI still documents them in the OpenAPI schema.
@dataclass(frozen=True, slots=True, kw_only=True)
class Curves:
    """Columnar per-round metrics, downsampled to at most max_points buckets per series.

    The fields every response with a run's curves carries (`MetricsPublic`, `CompareRun`).
    """

    rounds: list[int]
    metrics: dict[str, list[float | None]]
    min: dict[str, list[float | None]] | None
    max: dict[str, list[float | None]] | None
    downsampled: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsPublic(Curves):
    """GET /runs/{id}/metrics: a run's curves."""

    run_id: str
    status: RunStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareRun(Curves):
    """One run of GET /compare: identity fields plus its columnar metrics."""

    id: str
    status: RunStatus
    owner: str
    algorithm: str
    dataset: str
    spec_hash: str
    sweep_id: str | None
    seed: int
    alpha: float | None
    tags: list[str]
    current_round: int
    rounds_total: int
    last_acc: float | None
    best_acc: float | None


@dataclass(frozen=True, slots=True)
class ComparePublic:
    """GET /compare."""

    runs: list[CompareRun]


class UserRow(FromRow):
    """One user in one round."""

    round: int
    user: int
    test_acc: float
    test_loss: float
    num_test: int
    selected: bool
    train_ms: float | None
    train_loss: float | None


class UsersPublic(BaseModel):
    """GET /runs/{id}/users."""

    data: list[UserRow]


class PlotPoint(BaseModel):
    """One point of a sweep plot: the runs with one x value in one series, over seeds."""

    x: Any = Field(description="the x field's value; null for runs that lack the field")
    mean: float | None = Field(description="null while no run of the point has succeeded")
    std: float | None = Field(description="as the sweep tables (top-5: pooled over 5 rounds)")
    lo: float | None = Field(description="the bar's lower end (mean − std, or the 95 % CI's)")
    hi: float | None = Field(description="the bar's upper end")
    n: int = Field(description="succeeded runs counted")
    n_total: int = Field(description="every run of the point, whatever its status")
    reached: int | None = Field(description="time_to_target: runs that reached the target")
    round: int | None = Field(
        description="x=round|bytes|compute: the round the point is; null for a swept field"
    )
    censored: bool = Field(description="time_to_target: mean is a lower bound, no interval")
    run_ids: list[str]
    values: list[float] = Field(description="each counted run's statistic, in run_ids order")


class PlotSeries(BaseModel):
    """One line: the points of one value of the `by` field."""

    by_value: Any
    points: list[PlotPoint]


class PlotGroup(BaseModel):
    """Runs sharing every field but the seed (the parallel-coordinates view's lines)."""

    label: str
    fields: dict[str, Any]
    mean: float | None
    std: float | None
    censored: bool
    n: int
    n_total: int


class PlotExcluded(BaseModel):
    """Runs not counted, by status (`no_summary`: succeeded without a figure)."""

    counts: dict[str, int]
    run_ids: dict[str, list[str]]


class PlotData(BaseModel):
    """GET /sweeps/{id}/plot-data: a statistic against a swept field, one series per `by` value."""

    sweep_id: str
    x: str = Field(
        description="the dotted spec field on the x axis, or round, bytes, compute (curves)"
    )
    x_axis: Literal["field", "round", "bytes", "compute"] = Field(
        description="field: a statistic per value of a swept field; round, bytes, compute: "
        "each round's test accuracy against the round, the cumulative MB communicated (up + "
        "down) or the cumulative compute in s (clients' training + server): docs/metrics.md"
    )
    x_unit: str | None = Field(description="round, MB or s for the curves; null for a field")
    by: str = Field(description="the dotted spec field with one series per value")
    statistic: PlotStatistic
    target: float | None
    unit: Literal["fraction", "round"]
    interval: Literal["std", "ci95"]
    level: float | None = Field(description="the interval's confidence level (ci95: 0.95)")
    log_x: bool = Field(description="α, or positive values spanning >= 2 decades")
    series: list[PlotSeries]
    groups: list[PlotGroup]
    excluded: PlotExcluded
    warnings: list[str]
    varying: list[str] = Field(description="the spec fields whose values differ in the sweep")
