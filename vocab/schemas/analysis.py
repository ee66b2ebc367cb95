"""Aggregates over runs: GET /timing (Table 3) and GET /difference.

Built from dicts (lab.analysis); `extra="forbid"` (Strict) makes a key that drifts from the
model fail the tests loudly instead of being dropped from the response."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from fedgen.stats import CurveStatistic
from vocab.schemas.base import Strict
from vocab.schemas.results import PlotExcluded


class TimingRow(Strict):
    """One group of runs (every spec field but the seed) and its ms per user update."""

    label: str
    fields: dict[str, Any] = Field(description="the spec fields that tell the groups apart")
    algorithm: str | None
    gen_batch_size: int | None = Field(description="FedGen's B_G; null for other algorithms")
    setting: dict[str, Any] = Field(description="what the time depends on (dataset, model...)")
    setting_key: str = Field(description="rows with the same key are comparable")
    n: int
    n_runs: int = Field(description="finished runs with a time")
    n_rounds: int = Field(description="rounds pooled into mean ± std")
    mean_ms: float | None
    std_ms: float | None
    excluded: PlotExcluded
    run_ids: list[str]


class TimingTable(Strict):
    """GET /timing: ms per user local update, one row per group of finished runs."""

    metric: str
    rows: list[TimingRow]
    settings: int = Field(description="distinct settings among the rows")
    warnings: list[str]


class Difference(Strict):
    """GET /difference: group a − group b on a per-run statistic, Welch's t-test."""

    statistic: CurveStatistic
    round: int | None = Field(description="the final's round shared by every run, else null")
    last_round: int | None = Field(description="the runs' common R")
    statistic_label: str = Field(description='e.g. "final @199"')
    unit: str
    mean_a: float
    mean_b: float
    std_a: float
    std_b: float
    diff: float = Field(description="mean_a − mean_b")
    n_a: int
    n_b: int
    level: float = Field(description="the confidence level of `ci`")
    se: float
    df: float | None = Field(description="Welch–Satterthwaite; null when both sides are constant")
    t: float | None
    p_value: float | None = Field(description="Welch's two-sided p; null as df")
    ci: list[float] = Field(min_length=2, max_length=2, description="[low, high]")
    values_a: list[float]
    values_b: list[float]
    run_ids_a: list[str]
    run_ids_b: list[str]
    label_a: str
    label_b: str
    differs_in: list[str] = Field(description="the fields that differ between the sides")
    swapped: bool = Field(description="order=better_first traded a and b")
    warnings: list[str]
