"""Responses of the aggregates over runs: GET /timing (Table 3) and the studies' lists.

They are built from dicts (api.analysis, fedgen.studies); `extra="forbid"` makes a key that
drifts from the model fail the tests loudly instead of being dropped from the response.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import SweepPublic
from api.schemas_results import PlotExcluded


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TimingRow(_Strict):
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


class TimingTable(_Strict):
    """GET /timing: ms per user local update, one row per group of finished runs."""

    metric: str
    rows: list[TimingRow]
    settings: int = Field(description="distinct settings among the rows")
    warnings: list[str]


class StudyDefaults(_Strict):
    """What a study runs without overrides."""

    dataset: str
    seeds: int
    rounds: int


class StudySummary(_Strict):
    """One study in GET /studies."""

    name: str
    version: int
    tag: str
    title: str
    reproduces: str
    paper_dataset: str
    datasets: list[str]
    statistic: str
    statistic_text: str
    higher_is_better: bool
    notes: list[str]
    defaults: StudyDefaults
    runs: int
    est_cpu_s: float = Field(description="estimated CPU time on one core")


class StudiesPublic(_Strict):
    """GET /studies."""

    data: list[StudySummary]
    count: int


class StudyLaunched(_Strict):
    """POST /studies/{name}: the study's sweep, created and queued."""

    study: str
    version: int
    dataset: str
    seeds: int
    rounds: int
    runs: int
    est_cpu_s: float
    sweep: SweepPublic
