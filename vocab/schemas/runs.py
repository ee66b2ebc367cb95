"""A run in requests and responses: submit and clone, the run as shown (with its segments), a page
of runs, what is fixed for it (/info) and the token of its event stream."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    AliasPath,
    BaseModel,
    ConfigDict,
    Field,
    computed_field,
    model_validator,
)

from fedgen import durations
from vocab.run_status import Priority, RunStatus
from vocab.schemas.annotations import ANNOTATED_AT, ANNOTATED_BY, TagList
from vocab.schemas.base import FromRow, IdStr, In, OptionalIdStr
from vocab.schemas.spec import CROSS_FIELD, SpecChangesIn, SpecIn

# The `status` of the last event of a run's event stream (GET /runs/{id}/events) when the run
# was deleted under it: a word of the stream, not a RunStatus (the run itself is cancelled by
# its deletion, or keeps its end state: GET /trash).
STREAM_RUN_GONE = "deleted"

PRIORITY_DOC = (
    "Queue priority of the submitted run(s): high goes before normal before low, each tier "
    "shared round-robin across owners; `high` is for admins only (403 otherwise)."
)


class RunCreate(In):
    """POST /runs: a spec (fedgen.spec.ExperimentSpec; omitted fields take their defaults)."""

    spec: SpecIn = Field(description=CROSS_FIELD)
    priority: Priority = Field(Priority.NORMAL, description=PRIORITY_DOC)


class RunClone(In):
    """POST /runs/{id}/clone: a partial nested spec merged over the original."""

    changes: SpecChangesIn = Field(
        default_factory=dict, description="Merged over the run's spec. " + CROSS_FIELD
    )
    priority: Priority = Field(Priority.NORMAL, description=PRIORITY_DOC)


class Segment(BaseModel):
    """One start of a run's simulation: the first claim, then each resume (after a worker died,
    a database crash or a full disk)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    attempt: int
    """The run's attempt (claims so far) when it started."""
    worker: str | None
    """The worker (node name, slot@host) that ran it."""
    host: str | None = None
    """The host it ran on."""
    slot: str | None = None
    """The worker process (slot) on that host."""
    code_version: str | None = None
    """The code it ran: git:<commit>[+dirty] or src:<hash of the sources>."""
    device: str | None
    start_round: int
    """The first round computed in this segment."""
    last_round: int | None = None
    """The last round it stored (for the last segment, the run's current round); null before its
    first round. It may pass the next segment's start - 1: rounds a killed worker stored
    after its last checkpoint are computed again by the next segment."""
    resumed_from: int | None
    """The round of the checkpoint it resumed from; null when it started afresh."""
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


class RunPublic(FromRow):
    """A run as the API shows it."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    # Read from a Run row whose owner is loaded (lab.repository.runs loads it with the run).

    id: IdStr
    status: RunStatus
    spec: dict[str, Any]
    spec_hash: str
    partition_fingerprint: str | None
    # A row's owner is a User (its name); the JSON body the dashboard parses holds the name.
    owner: str = Field(validation_alias=AliasChoices(AliasPath("owner", "name"), "owner"))
    sweep_id: OptionalIdStr
    attempt: int
    worker: str | None
    device: str | None
    current_round: int
    rounds: int
    last_acc: float | None
    """The test accuracy (a fraction) of the newest stored round the run's protocol counts
    (docs/metrics.md: round R is not counted under eval_timing before_training); once the run
    has a summary, summary.final_acc itself."""
    best_acc: float | None
    """The highest test accuracy (a fraction) over the stored rounds the run's protocol counts;
    once the run has a summary, summary.best_acc itself (one definition: docs/metrics.md)."""
    error: str | None
    summary: dict[str, Any] | None = None
    """The end-of-run summary once succeeded (accuracies as fractions; docs/metrics.md):
    final_acc and final_round, the accuracy of the last model the protocol evaluates (round
    R-1 under eval_timing before_training, whose round R is never evaluated; R otherwise);
    best_acc and best_round, the highest over the same rounds; top5_mean and top5_std, the
    five best of them (the official statistic); value, the fidelity profile's statistic;
    rounds_done; wall_s, the running time of the run's last segment as its runner measured it
    (from loading the data to the last round: what `fedgen run` prints as running time; the
    run's own running time, every segment and storing included, is running_s)."""
    cancel_requested: bool
    priority: Priority
    queue_position: int | None = None
    """Queued runs: 1 = the next to get a free slot of its queue (fair-share order)."""
    expected_start: datetime | None = None
    """Queued runs: estimated start (running runs' median round time x rounds left, and the runs
    ahead per slot); null when unknown (no live worker, no round yet)."""
    waiting_reason: str | None = None
    """A run waiting for a worker that no live worker can serve: why (e.g. 'no live worker has
    dataset emnist-letters'); null while some live worker could take it."""
    tags: TagList = Field(validation_alias=AliasChoices("tags_csv", "tags"))
    """The run's tags: the spec's at submission, then as edited (PATCH)."""
    note: str
    """The run's note: the spec's at submission, then as edited."""
    annotated_by: str | None = Field(None, description=ANNOTATED_BY)
    annotated_at: datetime | None = Field(None, description=ANNOTATED_AT)
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    versions: dict[str, Any]
    segments: list[Segment] = Field(default_factory=list)
    """Each start and resume of the run, oldest first (see Segment)."""
    # What the run cost, over all its segments (stored at each heartbeat and at the end).
    peak_rss_bytes: int | None = None
    """Peak resident memory of the worker process while it ran the run (bytes; sampled each
    round and heartbeat); null until measured."""
    cpu_s: float | None = None
    """CPU seconds (user + system, every thread) of the run, summed over its segments; null
    until measured."""
    gpu_peak_bytes: int | None = None
    """On a GPU: peak memory its tensors took (torch.cuda.max_memory_allocated, bytes); null on
    CPU."""
    oom_count: int = 0
    """CUDA out-of-memory errors so far: the first hands the run back to the queue for a GPU
    with more free memory, the second fails it."""

    @computed_field(  # type: ignore[prop-decorator]
        description=f"Total time in seconds, {durations.HELP[durations.TOTAL_TIME]} "
        "(created_at → finished_at); null until it ends (docs/metrics.md)"
    )
    @property
    def total_s(self) -> float | None:
        return durations.between(self.created_at, self.finished_at)

    @computed_field(  # type: ignore[prop-decorator]
        description=f"Running time in seconds, {durations.HELP[durations.RUNNING_TIME]} "
        "(started_at → finished_at); null until it ends (docs/metrics.md)"
    )
    @property
    def running_s(self) -> float | None:
        return durations.between(self.started_at, self.finished_at)

    @model_validator(mode="after")
    def _segment_ends(self) -> RunPublic:
        raw = [s.model_dump() for s in self.segments]
        self.segments = segments_out(raw, self.current_round)
        return self


class RunsPublic(BaseModel):
    """A page of runs, the total under the filters and the runs per status under the others."""

    data: list[RunPublic]
    count: int = Field(
        description="Runs under the filters: exact up to the lab's count cap per status "
        "(lab.repository.run_counts.COUNT_CAP), an estimate past it"
    )
    count_exact: bool = Field(description="False when `count` is the database's estimate")
    status_counts: dict[RunStatus, int] = Field(
        description="The lab's runs per status under every filter but `status` (every status, "
        "zeros included): what the Runs page counts"
    )
    status_counts_exact: bool = Field(description="False when any status count is an estimate")
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page (newest first); null on the last page"
    )


class DataFile(BaseModel):
    """A file a run read its data from (a folder of images: one entry for the folder)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    root: str
    """The folder it was found under: the data root, or Debian's dataset folder."""
    path: str
    """Relative to `root` (a folder of images ends with `/`)."""
    size: int
    """Bytes on disk (a folder: its images' sizes added up)."""
    sha256: str
    """Of the bytes on disk (a folder: over each image's relative path and sha256, sorted)."""


class RunInfoPublic(BaseModel):
    """GET /runs/{id}/info: what is fixed for the run.

    Until a worker has started the run (`pending` true) the partition part
    (partition_fingerprint, num_classes, sizes, label_histogram, model_params, fidelity,
    start_round) is null; a worker fills it in when it computes the split.
    """

    model_config = ConfigDict(use_attribute_docstrings=True)

    run_id: str
    status: RunStatus
    pending: bool
    """True until a worker has started the run and stored the partition part."""
    spec_hash: str
    """The spec's sha256 over its canonical JSON (first 16 hex digits)."""
    num_users: int
    """partition.num_users of the spec."""
    device: str
    """The device the run ran on (`cpu`, `cuda:0`, ...), else the spec's device request."""
    partition_fingerprint: str | None = None
    """sha256 (16 hex digits) of every user's train and test indices: equal splits, equal
    fingerprints."""
    num_classes: int | None = None
    train_sizes: list[int] | None = None
    """Training samples per user."""
    test_sizes: list[int] | None = None
    """Test samples per user."""
    label_histogram: list[list[int]] | None = None
    """users x classes counts of the training labels."""
    model_params: int | None = None
    """Numbers in the global model's state (parameters and buffers)."""
    fidelity: dict[str, Any] | None = None
    """The run's fidelity profile and its knobs' values (docs/fidelity.md)."""
    start_round: int | None = None
    """The first round of the latest segment: 0 for a fresh run, r+1 when resumed from r."""
    versions: dict[str, Any]
    """Versions of the code and libraries the run used (fedgen, torch, any plugin)."""
    segments: list[Segment] = Field(default_factory=list)
    """Each start and resume of the run, oldest first."""
    data_files: list[DataFile] = Field(default_factory=list)
    """The files the run's data was read from (empty before it started, for generated data,
    and for runs started before this was recorded)."""
    execution: Literal["sequential", "batched"] | None = None
    """How a round's clients trained: one after another or as one stacked computation (the
    spec's `execution` resolved by the worker; null before it started and for runs started
    before this was recorded)."""
    execution_reason: str | None = None
    """Why, e.g. `auto: 2 CPU threads` or `the algorithm's client update does not batch`."""
    batch_clients: int | None = None
    """Under `batched`, the clients per computation (null under `sequential`)."""


class StreamToken(BaseModel):
    """POST /runs/{id}/stream-token: pass `token` as `?token=` to GET /runs/{id}/events."""

    token: str
    run_id: str
    expires_at: int = Field(description="Unix time")
    ttl_s: int


class RoundEventData(BaseModel):
    """The data of a `round` event of GET /runs/{id}/events: the round and its metrics (name ->
    value, as one round of GET /runs/{id}/metrics)."""

    round: int
    metrics: dict[str, float | None] = Field(default_factory=dict)


class StatusEventData(BaseModel):
    """The data of a `status` event of GET /runs/{id}/events: the run's status
    (`STREAM_RUN_GONE` once it was deleted) and the last round sent before it."""

    status: str
    round: int | None = None
