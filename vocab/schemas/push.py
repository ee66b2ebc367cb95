"""POST /runs/push: a local run folder (what `fedgen run` writes) uploaded as a lab run, and the
answer. Every limit explicit; the body as a whole is also capped by FEDGEN_MAX_BODY_BYTES."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from fedgen.spec_base import MAX_ROUNDS
from vocab.schemas.annotations import MAX_TAGS, Tag
from vocab.schemas.base import In
from vocab.schemas.runs import RunPublic

MAX_USERS_PER_ROUND = 10_000
MAX_PUSHED_CHECKPOINTS = 64
MAX_METRICS_PER_ROUND = 256
Name = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[^\x00]*$")]


class PushedUser(In):
    """One user's row of a round (fedgen.events.UserRoundMetrics)."""

    user: int = Field(ge=0, le=10_000_000)
    test_acc: float
    test_loss: float
    num_test: int = Field(ge=0)
    selected: bool
    train_ms: float | None = None
    train_loss: float | None = None


class PushedRound(In):
    """One line of metrics.jsonl: the round, its metrics and its users' rows."""

    round: int = Field(ge=0, le=MAX_ROUNDS)
    metrics: dict[Name, float | None] = Field(max_length=MAX_METRICS_PER_ROUND)
    users: list[PushedUser] = Field(max_length=MAX_USERS_PER_ROUND)


class PushedCheckpoint(In):
    """One file of checkpoints/ (<kind>-<round>.pt), its bytes in base64."""

    kind: Literal["full", "model", "generator"]
    round: int = Field(ge=0, le=MAX_ROUNDS)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    data: str = Field(description="the file's bytes, base64 (standard alphabet)")


class RunPush(In):
    """A local run folder: spec.json, info.json, metrics.jsonl, summary.json and the chosen
    checkpoints (the final model's at least), with the host it ran on and extra tags."""

    spec: dict[str, Any]
    info: dict[str, Any] = Field(description="info.json (fedgen.events.RunInfo)")
    rounds: list[PushedRound] = Field(max_length=MAX_ROUNDS + 1)
    summary: dict[str, Any] | None = Field(description="summary.json; null: not finished")
    checkpoints: list[PushedCheckpoint] = Field(max_length=MAX_PUSHED_CHECKPOINTS)
    host: str = Field("", max_length=255, pattern=r"^[^\x00]*$")
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)


class RunPushed(BaseModel):
    """POST /runs/push: the lab run; `created` false when the same result was pushed before."""

    created: bool
    run: RunPublic
