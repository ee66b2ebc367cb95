"""A sweep in requests and responses: create, the sweep as shown, a page of sweeps, its summary."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, computed_field

from fedgen.stats import CurveStatistic
from vocab.run_status import Priority
from vocab.schemas.annotations import ANNOTATED_AT, ANNOTATED_BY
from vocab.schemas.base import In, Strict
from vocab.schemas.results import PlotExcluded
from vocab.schemas.runs import PRIORITY_DOC
from vocab.schemas.spec import CROSS_FIELD, GridIn, SpecIn


class SweepCreate(In):
    """POST /sweeps: base spec and grid of dotted field -> values.

    The grid's product is at most 1000 runs, and every expanded spec must satisfy the
    spec's cross-field rules.
    """

    name: str = Field("sweep", min_length=1, max_length=200, pattern=r"^[^\x00]*$")
    base: SpecIn = Field(default_factory=dict, description=CROSS_FIELD)
    grid: GridIn = Field(default_factory=dict)
    priority: Priority = Field(Priority.NORMAL, description=PRIORITY_DOC)


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

    @computed_field(  # type: ignore[prop-decorator]
        description="The sweep on the dashboard (Compare), relative to the dashboard's address "
        "(FEDGEN_PUBLIC_URL where the lab sets one), as the sweep webhooks' `link` is"
    )
    @property
    def link(self) -> str:
        return f"/?page=compare&sweep={self.id}"


class SweepsPublic(BaseModel):
    """GET /sweeps."""

    data: list[SweepPublic]
    count: int


class TuneCandidate(Strict):
    """One configuration of the tuned fields inside a group: its validation and test figures."""

    values: dict[str, Any] = Field(description="the tuned fields' values (null: the runs lack it)")
    val_mean: float | None = Field(
        description="mean over its runs of each run's validation statistic; null without "
        "validation data (never chosen)"
    )
    test_mean: float | None = Field(description="mean over its runs of each run's test statistic")
    test_seed_std: float | None = Field(description="sample std (ddof 1); null under 2 runs")
    n: int = Field(description="succeeded runs counted")
    n_val: int = Field(description="of those, the runs with a validation figure")
    run_ids: list[str]


class TuneChoice(Strict):
    """What `tune` chose for one group of the other fields (docs/metrics.md, Tuning)."""

    statistic: CurveStatistic = Field(
        description="the statistic: chosen by its validation counterpart, reported on test"
    )
    fields: list[str] = Field(description="the tuned fields")
    chosen: dict[str, Any] | None = Field(
        description="the values with the highest mean validation statistic (ties: the first "
        "in the candidates' order); null when no configuration has validation data"
    )
    val_mean: float | None = Field(description="the chosen configuration's validation figure")
    test_mean: float | None = Field(
        description="the test statistic at the chosen values: the figure to report"
    )
    test_seed_std: float | None = Field(description="its sample std (ddof 1) over seeds")
    budget: int = Field(
        description="how many configurations of the tuned fields the group was given"
    )
    candidates: list[TuneCandidate] = Field(description="every configuration, in order")


class SummaryGroup(Strict):
    """One group of a sweep summary: n succeeded runs, final, best, top-5 and val_best mean ±
    std, and the runs' cost (MB communicated, clients' and server's training time)."""

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
    top5_std: float | None = Field(
        description="the official code's pooled std (top-5 rounds x seeds pooled), not a seed std"
    )
    n_seeds: int = Field(description="the runs (seeds) the seed std is over")
    final_seed_std: float | None = Field(
        description="sample std (ddof 1) of each seed's final; null under 2 seeds"
    )
    best_seed_std: float | None = Field(
        description="sample std (ddof 1) of each seed's best; null under 2 seeds"
    )
    top5_seed_std: float | None = Field(
        description="sample std (ddof 1) of each seed's top-5 mean; null under 2 seeds"
    )
    val_best_mean: float | None = Field(
        description="test accuracy at each run's best validation round, mean over the runs "
        "with validation data (partition.val_fraction > 0); null without any"
    )
    val_best_std: float | None = Field(description="population std of the same (as final_std)")
    val_best_seed_std: float | None = Field(
        description="sample std (ddof 1) of each seed's val_best; null under 2 seeds"
    )
    n_val_best: int = Field(description="the counted runs that have validation data")
    mb_up_mean: float | None = Field(
        description="MB (10^6 bytes) the chosen users uploaded over the run, every trained "
        "round summed (docs/metrics.md, Cost); mean over the counted runs"
    )
    mb_up_seed_std: float | None = Field(description="sample std (ddof 1) over the runs")
    mb_down_mean: float | None = Field(description="MB the server sent the chosen users")
    mb_down_seed_std: float | None
    mb_total_mean: float | None = Field(description="MB up + down")
    mb_total_seed_std: float | None
    client_train_s_mean: float | None = Field(
        description="seconds of the clients' local training over the run (each round's users "
        "summed)"
    )
    client_train_s_seed_std: float | None
    server_s_mean: float | None = Field(
        description="seconds of the server's steps over the run (aggregation, and the "
        "server-side training of FedGen and FedDF)"
    )
    server_s_seed_std: float | None
    tune: TuneChoice | None = Field(
        description="with `tune`: the configuration chosen by validation and the budget; the "
        "group's figures are that configuration's runs'. Null without `tune`"
    )
    run_ids: list[str] = Field(description="the runs counted")
    all_run_ids: list[str]


class SweepSummary(Strict):
    """GET /sweeps/{id}/summary (format=json): one row per group of runs."""

    sweep_id: str
    name: str
    group_by: list[str] | None = Field(description="the chosen fields; null: all but the seed")
    statistic: CurveStatistic = Field(description="the statistic `tune` chooses by")
    tune: list[str] | None = Field(description="the tuned fields; null: no tuning")
    groups: list[SummaryGroup]
    warnings: list[str]
