"""Request and response bodies of the REST API (the dashboard codes against these)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    AliasPath,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    model_validator,
)

from fedgen.algorithms.registry import sharing_predictor
from fedgen.status import RunStatus


def _as_str(value: Any) -> Any:
    return None if value is None else str(value)


# Ids are UUIDs in the database and strings in the API.
IdStr = Annotated[str, BeforeValidator(_as_str)]
OptionalIdStr = Annotated[str | None, BeforeValidator(_as_str)]


# -- error bodies (every error the API sends has one of these two shapes) --------------------


class ErrorBody(BaseModel):
    """400, 401, 403, 404, 405, 409, 410, 413, 429, 503: a message."""

    detail: str


class FieldError(BaseModel):
    """One invalid field: where, a message naming the field and the limit, and the error kind."""

    loc: list[str | int] = Field(description='e.g. ["body", "spec", "rounds"]')
    msg: str
    type: str = Field(description="pydantic's error type, or value_error for cross-field rules")
    field: str = Field(description="dotted field name, e.g. spec.rounds")


class ValidationErrorBody(BaseModel):
    """422: one entry per invalid field."""

    detail: list[FieldError]


_RETRY_AFTER = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}}
_ERROR_TEXT: dict[int, str] = {
    400: "The body is not JSON",
    401: "Missing or invalid bearer token",
    403: "Only the run's owner or an admin may do this",
    404: "Not found",
    409: "Conflict with the resource's state",
    410: "Gone",
    413: "Request body over FEDGEN_MAX_BODY_BYTES",
    422: "Invalid fields (one entry per field)",
    429: "Rate limit: FEDGEN_SUBMIT_RATE per token, FEDGEN_AUTH_FAIL_RATE per address",
    503: "The database is unavailable",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route that can answer these error codes (bodies as sent)."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        entry: dict[str, Any] = {
            "model": ValidationErrorBody if code == 422 else ErrorBody,
            "description": _ERROR_TEXT[code],
        }
        if code in (429, 503):
            entry["headers"] = _RETRY_AFTER
        if code == 401:
            entry["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
        out[code] = entry
    return out


# What any authenticated route may answer; routes add their own (404, 403, 422, 413...).
AUTHED = (401, 429, 503)
BODY = (400, 413, 422)


def _iso_datetime(value: Any) -> Any:
    # pydantic reads numbers (and numeric strings) as Unix times; the API takes ISO 8601 only.
    if isinstance(value, str) and not value.strip().lstrip("+-").replace(".", "", 1).isdigit():
        return value
    if isinstance(value, datetime):
        return value
    raise ValueError("expected an ISO 8601 date-time, e.g. 2026-01-31T12:00:00Z")


IsoDatetime = Annotated[datetime, BeforeValidator(_iso_datetime)]

# The spec as requests send it: the input schema of fedgen.spec.ExperimentSpec (every field
# optional, defaults fill in), put into the OpenAPI components by api.openapi. The handler
# still validates with fedgen.spec.parse_spec (field errors under `spec.`).
# (allOf: pydantic resolves a bare $ref it did not generate, and fails.)
SpecIn = Annotated[
    dict[str, Any],
    WithJsonSchema({"allOf": [{"$ref": "#/components/schemas/ExperimentSpecInput"}]}),
]
SpecChangesIn = Annotated[
    dict[str, Any], WithJsonSchema({"allOf": [{"$ref": "#/components/schemas/SpecChanges"}]})
]
GridIn = Annotated[
    dict[str, list[Any]], WithJsonSchema({"allOf": [{"$ref": "#/components/schemas/SweepGrid"}]})
]


class _FromRow(BaseModel):
    """A response read from an ORM row's attributes (`Model.model_validate(row)`)."""

    model_config = ConfigDict(from_attributes=True)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


Priority = Literal["low", "normal", "high"]
PRIORITY_DOC = (
    "Queue priority of the submitted run(s): high goes before normal before low, each tier "
    "shared round-robin across owners; `high` is for admins only (403 otherwise)."
)
CROSS_FIELD = (
    "Cross-field rules (422 with both fields named): users_per_round <= partition.num_users; "
    f"share='predictor' only with {' or '.join(sharing_predictor())} (the algorithms that "
    "declare it); a partition the "
    "dataset can satisfy (enough samples for num_users x min_samples)."
)


class RunCreate(_In):
    """POST /runs: a spec (fedgen.spec.ExperimentSpec; omitted fields take their defaults)."""

    spec: SpecIn = Field(description=CROSS_FIELD)
    priority: Priority = Field("normal", description=PRIORITY_DOC)


class RunClone(_In):
    """POST /runs/{id}/clone: a partial nested spec merged over the original."""

    changes: SpecChangesIn = Field(
        default_factory=dict, description="Merged over the run's spec. " + CROSS_FIELD
    )
    priority: Priority = Field("normal", description=PRIORITY_DOC)


class SpecValidate(_In):
    """POST /spec/validate."""

    spec: SpecIn = Field(description=CROSS_FIELD)


class SweepCreate(_In):
    """POST /sweeps: base spec and grid of dotted field -> values.

    The grid's product is at most 1000 runs, and every expanded spec must satisfy the
    spec's cross-field rules.
    """

    name: str = Field("sweep", min_length=1, max_length=200, pattern=r"^[^\x00]*$")
    base: SpecIn = Field(default_factory=dict, description=CROSS_FIELD)
    grid: GridIn = Field(default_factory=dict)
    priority: Priority = Field("normal", description=PRIORITY_DOC)


# A tag and a note as the spec takes them (fedgen.spec.ExperimentSpec.tags / .note).
Tag = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\x00]*$")]
MAX_TAGS = 32
MAX_NOTE = 10_000


class AnnotationsUpdate(_In):
    """PATCH /runs/{id}, PATCH /sweeps/{id}: new tags and/or note (what is left out is kept).

    `tags` replaces the whole list (each tag once; a comma becomes a space). Owner or admin.
    A body with neither changes nothing (and records no editor).
    """

    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS, description="At most 32 tags.")
    note: str | None = Field(None, max_length=MAX_NOTE, pattern=r"^[^\x00]*$")


def _tag_list(value: Any) -> Any:
    # Read from the stored ',a,b,' (tags_csv) or given as a list.
    if isinstance(value, str):
        return [t for t in value.split(",") if t]
    return [] if value is None else value


TagList = Annotated[list[str], BeforeValidator(_tag_list)]
ANNOTATED_BY = "The user who last changed the tags or note (null: never changed)."
ANNOTATED_AT = "When (the database's clock) they were last changed."


class Segment(BaseModel):
    """One start of a run's simulation: the first claim, then each resume (after a worker died,
    a database crash or a full disk)."""

    attempt: int = Field(description="The run's attempt (claims so far) when it started.")
    worker: str | None = Field(description="The worker (node name, slot@host) that ran it.")
    host: str | None = Field(None, description="The host it ran on.")
    slot: str | None = Field(None, description="The worker process (slot) on that host.")
    code_version: str | None = Field(
        None, description="The code it ran: git:<commit>[+dirty] or src:<hash of the sources>."
    )
    device: str | None
    start_round: int = Field(description="The first round computed in this segment.")
    last_round: int | None = Field(
        None,
        description="The last round it stored (for the last segment, the run's current round); "
        "null before its first round. It may pass the next segment's start - 1: rounds a killed "
        "worker stored after its last checkpoint are computed again by the next segment.",
    )
    resumed_from: int | None = Field(
        description="The round of the checkpoint it resumed from; null when it started afresh."
    )
    started_at: datetime
    fedgen: str | None = None
    torch: str | None = None
    torch_threads: str | None = None
    cpu_capability: str | None = None


def segments_out(stored: list[dict[str, Any]] | None, current_round: int) -> list[Segment]:
    """The stored segments with each one's last round filled in."""
    stored = stored or []
    out = []
    for i, seg in enumerate(stored):
        if i + 1 == len(stored):
            end = current_round
        elif seg.get("last_round") is not None:
            end = int(seg["last_round"])
        else:  # recorded before segments kept their last round
            end = stored[i + 1]["start_round"] - 1
        known = {k: v for k, v in seg.items() if k in Segment.model_fields}
        last = end if end >= seg["start_round"] else None
        out.append(Segment.model_validate({**known, "last_round": last}))
    return out


class RunPublic(_FromRow):
    """A run as the API shows it."""

    # Read from a Run row whose owner is loaded (api.repository.runs loads it with the run).

    id: IdStr
    status: RunStatus
    spec: dict[str, Any]
    spec_hash: str
    partition_fingerprint: str | None
    owner: str = Field(validation_alias=AliasPath("owner", "name"))
    sweep_id: OptionalIdStr
    attempt: int
    worker: str | None
    device: str | None
    current_round: int
    rounds: int
    last_acc: float | None = Field(
        description="Live progress: the test accuracy (a fraction) of the newest stored round; "
        "not the run's final (see summary.final_acc, docs/metrics.md)."
    )
    best_acc: float | None = Field(
        description="Live progress: the highest test accuracy (a fraction) over every stored "
        "round, round R included even where the protocol never evaluates it "
        "(eval_timing before_training); the protocol's best is summary.best_acc."
    )
    error: str | None
    summary: dict[str, Any] | None = Field(
        None,
        description="The end-of-run summary once succeeded (accuracies as fractions; "
        "docs/metrics.md): final_acc and final_round, the accuracy of the last model the "
        "protocol evaluates (round R-1 under eval_timing before_training, whose round R is "
        "never evaluated; R otherwise); best_acc and best_round, the highest over the same "
        "rounds; top5_mean and top5_std, the five best of them (the official statistic); "
        "value, the fidelity profile's statistic; rounds_done, wall_s.",
    )
    cancel_requested: bool
    priority: Priority
    queue_position: int | None = Field(
        None,
        description="Queued runs: 1 = the next to get a free slot of its queue (fair-share order).",
    )
    expected_start: datetime | None = Field(
        None,
        description="Queued runs: estimated start (running runs' median round time x rounds "
        "left, and the runs ahead per slot); null when unknown (no live worker, no round yet).",
    )
    waiting_reason: str | None = Field(
        None,
        description="A run waiting for a worker that no live worker can serve: why (e.g. 'no "
        "live worker has dataset emnist-letters'); null while some live worker could take it.",
    )
    tags: TagList = Field(
        validation_alias=AliasChoices("tags_csv", "tags"),
        description="The run's tags: the spec's at submission, then as edited (PATCH).",
    )
    note: str = Field(description="The run's note: the spec's at submission, then as edited.")
    annotated_by: str | None = Field(None, description=ANNOTATED_BY)
    annotated_at: datetime | None = Field(None, description=ANNOTATED_AT)
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    versions: dict[str, Any]
    segments: list[Segment] = Field(
        default_factory=list,
        description="Each start and resume of the run, oldest first (see Segment).",
    )
    # What the run cost, over all its segments (stored at each heartbeat and at the end).
    peak_rss_bytes: int | None = Field(
        None,
        description="Peak resident memory of the worker process while it ran the run (bytes; "
        "sampled each round and heartbeat); null until measured.",
    )
    cpu_s: float | None = Field(
        None,
        description="CPU seconds (user + system, every thread) of the run, summed over its "
        "segments; null until measured.",
    )
    gpu_peak_bytes: int | None = Field(
        None,
        description="On a GPU: peak memory its tensors took (torch.cuda.max_memory_allocated, "
        "bytes); null on CPU.",
    )
    oom_count: int = Field(
        0,
        description="CUDA out-of-memory errors so far: the first hands the run back to the queue "
        "for a GPU with more free memory, the second fails it.",
    )

    @model_validator(mode="after")
    def _segment_ends(self) -> RunPublic:
        raw = [s.model_dump() for s in self.segments]
        self.segments = segments_out(raw, self.current_round)
        return self


class RunsPublic(BaseModel):
    """A page of runs and the total under the filters."""

    data: list[RunPublic]
    count: int


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


class UserRow(_FromRow):
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


class CheckpointPublic(_FromRow):
    """A stored checkpoint (download it from .../download)."""

    id: IdStr
    round: int
    kind: str
    size: int
    sha256: str
    created_at: datetime


class CheckpointsPublic(BaseModel):
    """GET /runs/{id}/checkpoints."""

    data: list[CheckpointPublic]


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
    x: str = Field(description="the dotted spec field on the x axis")
    by: str = Field(description="the dotted spec field with one series per value")
    statistic: Literal["final", "best", "top5", "time_to_target"]
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


class UserPublic(_FromRow):
    """GET /me."""

    id: IdStr
    name: str
    is_admin: bool


class RunInfoPublic(BaseModel):
    """GET /runs/{id}/info: what is fixed for the run.

    Until a worker has started the run (`pending` true) the partition part
    (partition_fingerprint, num_classes, sizes, label_histogram, model_params, fidelity,
    start_round) is null; a worker fills it in when it computes the split.
    """

    run_id: str
    status: RunStatus
    pending: bool
    spec_hash: str
    num_users: int
    device: str
    partition_fingerprint: str | None = None
    num_classes: int | None = None
    train_sizes: list[int] | None = None
    test_sizes: list[int] | None = None
    label_histogram: list[list[int]] | None = None
    model_params: int | None = None
    fidelity: dict[str, Any] | None = None
    start_round: int | None = None
    versions: dict[str, Any]
    segments: list[Segment] = Field(
        default_factory=list, description="Each start and resume of the run, oldest first."
    )


class WorkerDevice(BaseModel):
    """A device a worker computes on: the CPU (model, cores) or one GPU (name, memory)."""

    kind: Literal["cpu", "cuda"]
    name: str | None = None
    cores: int | None = None
    index: str | None = Field(None, description="GPU: its id in CUDA_VISIBLE_DEVICES.")
    memory_bytes: int | None = Field(None, description="GPU: total memory.")


class WorkerRun(BaseModel):
    """A run a worker holds now."""

    id: IdStr
    algorithm: str
    dataset: str
    current_round: int
    rounds: int


class WorkerPublic(BaseModel):
    """A live worker process (one slot) and what it can run."""

    name: str = Field(description="Node name, slot@host; runs and segments record it.")
    host: str | None
    queues: list[str] = Field(description="The run queues it serves (cpu, gpu), prefix included.")
    slots: int = Field(description="Runs it takes at once.")
    threads: int | None = Field(description="Torch threads per run.")
    devices: list[WorkerDevice]
    code_version: str | None = Field(
        description="The code it runs: git:<commit>[+dirty] or src:<hash of the sources>."
    )
    datasets: list[str] | None = Field(
        description="Datasets it can load (files found; those that failed to load here left "
        "out); null for a worker that does not say (taken to load all)."
    )
    started_at: datetime
    heartbeat_at: datetime
    running: list[WorkerRun] = Field(description="The runs it holds now.")


class WorkersPublic(BaseModel):
    """The live workers of the lab."""

    workers: list[WorkerPublic]
    slots: int = Field(description="Total slots of the live workers.")
    busy: int = Field(description="Slots holding a run now.")
