"""Request and response bodies of the REST API (the dashboard codes against these)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import AliasPath, BaseModel, BeforeValidator, ConfigDict, Field

from fedgen.status import RunStatus


def _as_str(value: Any) -> Any:
    return None if value is None else str(value)


# Ids are UUIDs in the database and strings in the API.
IdStr = Annotated[str, BeforeValidator(_as_str)]
OptionalIdStr = Annotated[str | None, BeforeValidator(_as_str)]


class _FromRow(BaseModel):
    """A response read from an ORM row's attributes (`Model.model_validate(row)`)."""

    model_config = ConfigDict(from_attributes=True)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunCreate(_In):
    """POST /runs: a spec, validated by fedgen.spec.ExperimentSpec."""

    spec: dict[str, Any]


class RunClone(_In):
    """POST /runs/{id}/clone: a partial nested spec merged over the original."""

    changes: dict[str, Any] = Field(default_factory=dict)


class SpecValidate(_In):
    """POST /spec/validate."""

    spec: dict[str, Any]


class SweepCreate(_In):
    """POST /sweeps: base spec and grid of dotted field -> values."""

    name: str = Field("sweep", min_length=1, max_length=200, pattern=r"^[^\x00]*$")
    base: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)


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
    last_acc: float | None
    best_acc: float | None
    error: str | None
    summary: dict[str, Any] | None = Field(
        None, description="The end-of-run summary (final/best accuracy, ...) once succeeded."
    )
    cancel_requested: bool
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    versions: dict[str, Any]


class RunsPublic(BaseModel):
    """A page of runs and the total under the filters."""

    data: list[RunPublic]
    count: int


class MetricsPublic(BaseModel):
    """Columnar per-round metrics, downsampled to at most max_points buckets per series."""

    run_id: str
    status: RunStatus
    rounds: list[int]
    metrics: dict[str, list[float | None]]
    min: dict[str, list[float | None]] | None
    max: dict[str, list[float | None]] | None
    downsampled: bool


# /compare answers 100 runs x 200 rounds x 15 series in one body. Its two types are plain
# dataclasses, not models: the handler's constructor calls are type-checked, nothing is validated
# again at run time, and orjson writes dataclasses natively, about twice as fast as pydantic's
# serializer. FastAPI still documents them in the OpenAPI schema (response_model).
@dataclass(frozen=True, slots=True)
class CompareRun:
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
    rounds: list[int]
    metrics: dict[str, list[float | None]]
    min: dict[str, list[float | None]] | None
    max: dict[str, list[float | None]] | None
    downsampled: bool


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
    created_at: datetime


class SweepsPublic(BaseModel):
    """GET /sweeps."""

    data: list[SweepPublic]
    count: int


class UserPublic(_FromRow):
    """GET /me."""

    id: IdStr
    name: str
    is_admin: bool
