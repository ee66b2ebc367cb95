"""Responses of the aggregates over runs: GET /timing (Table 3), /difference, a sweep's
summary, and the studies (list, definition, launch, results).

They are built from dicts (lab.analysis, lab.study_queries, fedgen.studies); `extra="forbid"`
makes a key that drifts from the model fail the tests loudly instead of being dropped from
the response.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import SweepPublic
from api.schemas_results import PlotExcluded
from fedgen.studies import Plan, Verdict


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


class _StudyBase(_Strict):
    """A study's definition without a dataset (`fedgen.studies.study_dict`)."""

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


class StudySummary(_StudyBase):
    """One study in GET /studies."""

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

    @classmethod
    def of_plan(cls, plan: Plan, sweep: SweepPublic) -> StudyLaunched:
        """The plan's figures as GET /studies/{name} shows them (`Plan.to_dict`), and its sweep."""
        shown = plan.to_dict()
        figures = {f: shown[f] for f in cls.model_fields if f in shown and f != "sweep"}
        return cls.model_validate({**figures, "study": shown["name"], "sweep": sweep})


class StudySweep(_Strict):
    """The sweep a study expands to for the chosen overrides (`fedgen.sweep`)."""

    name: str
    base: dict[str, Any] = Field(description="the base spec every run starts from")
    grid: dict[str, list[Any]] = Field(description="dotted field -> the values it takes")


class PaperCell(_Strict):
    """One of the paper's numbers: a cell of the study's table."""

    row: str
    column: str
    mean: float
    std: float


class LaunchedSweep(_Strict):
    """A sweep launched for a study: its version, dataset, size and status counts."""

    sweep_id: str
    name: str
    owner: str
    version: int | None = Field(description="the study's version it was launched at")
    dataset: str | None
    count: int
    status_counts: dict[str, int]
    created_at: str = Field(description="ISO 8601")


class StudyDefinition(_StudyBase):
    """GET /studies/{name}: the definition, the sweep for these overrides, the paper's numbers
    and the sweeps launched for the study."""

    dataset: str
    seeds: int
    rounds: int
    runs: int
    est_cpu_s: float = Field(description="estimated CPU time on one core")
    sweep: StudySweep
    rows: list[str]
    columns: list[str]
    paper: list[PaperCell] = Field(description="empty where the paper has no row for the dataset")
    launched: list[LaunchedSweep] = Field(description="newest first")


class StudyCell(_Strict):
    """One cell of a study's table: ours (mean ± std over n runs), the paper's, Δ, the verdict."""

    row: str
    column: str
    mean: float | None
    std: float | None
    n: int
    runs: int
    paper_mean: float | None
    paper_std: float | None
    delta: float | None = Field(description="ours − paper, in the study's unit")
    verdict: Verdict


class StudyRatioCell(StudyCell):
    """A cell of a table compared by ratio to a reference row (Table 3: × FedAvg's time)."""

    ratio: float | None
    ratio_std: float | None
    paper_ratio: float | None
    paper_ratio_std: float | None


class StudyResults(_Strict):
    """GET /studies/{name}/results: the study's table for one of its sweeps, with verdicts."""

    study: str
    version: int
    dataset: str
    statistic: str
    statistic_text: str
    unit: str = Field(description='"%" or "ms"')
    rows: list[str]
    columns: list[str]
    runs_total: int
    runs_done: int
    unmatched: int = Field(description="runs that fit no cell")
    # A ratio cell first: as a subclass, it would also serialize as a plain cell.
    cells: list[StudyRatioCell | StudyCell]
    sweep_id: str
    sweep_name: str
    sweep_version: int | None
    status_counts: dict[str, int]


class SummaryGroup(_Strict):
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


class SweepSummary(_Strict):
    """GET /sweeps/{id}/summary (format=json): one row per group of runs."""

    sweep_id: str
    name: str
    group_by: list[str] | None = Field(description="the chosen fields; null: all but the seed")
    groups: list[SummaryGroup]
    warnings: list[str]


class Difference(_Strict):
    """GET /difference: group a − group b on a per-run statistic, Welch's t-test."""

    statistic: Literal["final", "best", "top5"]
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
