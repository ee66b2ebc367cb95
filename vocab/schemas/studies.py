"""The studies: the list, a definition with its sweep and the paper's numbers, a launch, results.

Built from dicts (lab.study_queries, fedgen.studies); `extra="forbid"` (Strict) makes a key that
drifts from the model fail the tests loudly instead of being dropped from the response."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from fedgen.studies.registry import Plan, StdKind
from fedgen.studies.verdicts import Verdict
from vocab.schemas.base import Strict
from vocab.schemas.sweeps import SweepPublic


class StudyDefaults(Strict):
    """What a study runs without overrides."""

    dataset: str
    seeds: int
    rounds: int


class _StudyBase(Strict):
    """A study's definition without a dataset (`fedgen.studies.registry.study_dict`)."""

    name: str
    version: int
    tag: str
    title: str
    reproduces: str
    paper_dataset: str
    datasets: list[str]
    statistic: str
    statistic_text: str
    std_kind: StdKind = Field(
        description="which ± the table shows: \"official\" (the study's statistic's own std, "
        'the paper\'s way) or "seed" (seed_std)'
    )
    std_text: str
    tuned: list[str] = Field(
        description="the dotted fields a tuned study's cells choose by validation; empty if none"
    )
    higher_is_better: bool
    notes: list[str]
    defaults: StudyDefaults


class StudySummary(_StudyBase):
    """One study in GET /studies."""

    runs: int
    est_cpu_s: float = Field(description="estimated CPU time on one core")


class StudiesPublic(Strict):
    """GET /studies."""

    data: list[StudySummary]
    count: int


class StudyLaunched(Strict):
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


class StudySweep(Strict):
    """The sweep a study expands to for the chosen overrides (`fedgen.sweep`)."""

    name: str
    base: dict[str, Any] = Field(description="the base spec every run starts from")
    grid: dict[str, list[Any]] = Field(description="dotted field -> the values it takes")


class PaperCell(Strict):
    """One of the paper's numbers: a cell of the study's table."""

    row: str
    column: str
    mean: float
    std: float


class LaunchedSweep(Strict):
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


_COST_STD = "sample std (ddof 1) over the counted runs; null under 2"


class StudyCell(Strict):
    """One cell of a study's table: ours (mean ± std over n runs), the seed std, the paper's,
    Δ, the verdict, and the cost of its runs (mean ± seed std, `fedgen.cost`)."""

    row: str
    column: str
    mean: float | None
    std: float | None = Field(
        description="the study's official std (its statistic's own: top-5 rounds pooled over "
        "seeds, ms pooled over rounds; val_best: population std over seeds)"
    )
    seed_std: float | None = Field(
        description="sample std (ddof 1) over seeds of each seed's own statistic; null under 2"
    )
    n: int
    n_seeds: int = Field(description="the runs (seeds) seed_std is over")
    runs: int = Field(
        description="the runs that fit the cell (a tuned cell: every configuration's)"
    )
    paper_mean: float | None
    paper_std: float | None
    delta: float | None = Field(description="ours − paper, in the study's unit")
    verdict: Verdict
    mb_up_mean: float | None = Field(description="MB the chosen users upload per run")
    mb_up_seed_std: float | None = Field(description=_COST_STD)
    mb_down_mean: float | None = Field(description="MB the server sends them per run")
    mb_down_seed_std: float | None = Field(description=_COST_STD)
    mb_total_mean: float | None = Field(description="MB up + down per run")
    mb_total_seed_std: float | None = Field(description=_COST_STD)
    client_train_s_mean: float | None = Field(description="clients' training seconds per run")
    client_train_s_seed_std: float | None = Field(description=_COST_STD)
    server_s_mean: float | None = Field(description="the server's seconds per run")
    server_s_seed_std: float | None = Field(description=_COST_STD)
    tuned: dict[str, Any] | None = Field(
        description="a tuned study: the values chosen by the best mean validation figure, "
        "of the tuned fields the cell's configurations differ in (the cell's figures are that "
        "configuration's runs'); null otherwise "
        "or before any run has validation data"
    )
    budget: int | None = Field(
        description="a tuned study: how many configurations the cell chose among"
    )


class StudyRatioCell(StudyCell):
    """A cell of a table compared by ratio to a reference row (Table 3: × FedAvg's time)."""

    ratio: float | None
    ratio_std: float | None
    paper_ratio: float | None
    paper_ratio_std: float | None


class StudyResults(Strict):
    """GET /studies/{name}/results: the study's table for one of its sweeps, with verdicts."""

    study: str
    version: int
    dataset: str
    statistic: str
    statistic_text: str
    std_kind: StdKind = Field(description="which ± the table shows: std or seed_std")
    std_text: str
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
