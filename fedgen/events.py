"""What a run reports: the start info, one event per round, checkpoints, the summary.

The runner hands these to a `Sink` (the CLI writes JSON lines and files; the
worker writes one database transaction per round). Everything here is plain
data: JSON-ready scalars, lists and bytes.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol

from fedgen.metric_names import METRICS
from fedgen.stats import summary_text

CheckpointKind = Literal["full", "model", "generator"]


@dataclass(frozen=True)
class Checkpoint:
    """A serialized checkpoint (torch.save bytes, loadable with weights_only=True)."""

    kind: CheckpointKind
    round: int
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class RunInfo:
    """Facts fixed at the start of a run (or of a resumed segment)."""

    spec_hash: str
    partition_fingerprint: str
    num_users: int
    num_classes: int
    train_sizes: list[int]
    test_sizes: list[int]
    label_histogram: list[list[int]]  # users x classes, training labels
    model_params: int
    device: str
    fidelity: dict[str, Any]
    start_round: int  # 0 for a fresh run, r+1 when resumed from checkpoint r
    versions: dict[str, str]
    # The files the data was read from: {root, path (relative to root), size, sha256} each.
    data_files: list[dict[str, Any]] = field(default_factory=list)
    # How the round's clients ran (`fedgen.execution`): 'sequential' or 'batched', why, and
    # under batched the clients per computation.
    execution: str = "sequential"
    execution_reason: str = ""
    batch_clients: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class UserRoundMetrics:
    """One user's view of a round: its test split and, if selected, its local training."""

    user: int
    test_acc: float
    test_loss: float
    num_test: int
    selected: bool
    train_ms: float | None = None
    train_loss: float | None = None


@dataclass(frozen=True)
class RoundEvent:
    """Everything measured in one round. Round 0 is the initial model, before any training.

    `metrics` holds flat scalars; the common keys are listed in `COMMON_METRICS`,
    algorithms add their own prefixed keys (e.g. `gen_teacher_loss`).
    """

    round: int
    metrics: dict[str, float]
    users: list[UserRoundMetrics] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)

    def to_dict(self, with_users: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"round": self.round, "metrics": dict(self.metrics)}
        if with_users:
            out["users"] = [asdict(u) for u in self.users]
        return out


# The keys every algorithm writes, with what each measures (declared in fedgen.metric_names).
COMMON_METRICS: dict[str, str] = {m.key: m.about for m in METRICS.values() if m.common}


class SummaryStatus(StrEnum):
    """How the runner's loop ended (`RunSummary.status`): every round ran, or `should_stop` ended
    it early. Not a run status (vocab.run_status.RunStatus): the worker turns a completed run into
    `succeeded` once every round is stored, a stopped one into `cancelled` or `failed`. Each
    member is its word, the one summary.json and the stored summary hold."""

    COMPLETED = "completed"
    STOPPED = "stopped"


@dataclass(frozen=True)
class RunSummary:
    """The end of a run (or of a stopped segment).

    Accuracies are over the rounds the fidelity's protocol evaluates
    (`fedgen.stats.reported_curve`): under ``eval_timing: before_training`` the model after
    the last aggregation is left out, as the official code never evaluates it, and
    `final_acc` is the accuracy of round `final_round` (R-1 there, R otherwise).
    """

    status: SummaryStatus
    rounds_done: int
    final_acc: float
    best_acc: float
    top5_mean: float
    top5_std: float
    statistic: str
    value: float  # the fidelity's reported statistic
    wall_s: float
    final_round: int = -1  # the round final_acc is from; -1: no round evaluated
    best_round: int = -1  # the (first) round best_acc is from
    # Test accuracy at the round of best validation accuracy (`fedgen.stats.val_best`) and that
    # round; NaN and -1 without validation data (partition.val_fraction 0).
    val_best: float = float("nan")
    val_best_round: int = -1

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = str(self.status)  # the plain word in JSON and the stored summary
        if math.isnan(self.val_best):
            out["val_best"] = None  # JSON has no NaN: stored and answered as null alike
        return out

    def figures(self, rounds: int) -> str:
        """'final 70.42% @29 · best 71.02% @27 · top-5 70.61 ± 0.35%' (docs/metrics.md);
        `rounds` is the spec's R: a round that is not R is named with '@'."""
        return summary_text(
            self.final_acc,
            self.final_round,
            self.best_acc,
            self.best_round,
            self.top5_mean,
            self.top5_std,
            rounds,
        )


class Sink(Protocol):
    """Receives what a run reports. Called from the runner's thread, in order."""

    def on_start(self, info: RunInfo) -> None: ...

    def on_round(self, event: RoundEvent) -> None: ...

    def on_finish(self, summary: RunSummary) -> None: ...


class MemorySink:
    """A sink that keeps every event in memory (tests, notebooks)."""

    def __init__(self) -> None:
        self.info: RunInfo | None = None
        self.events: list[RoundEvent] = []
        self.summary: RunSummary | None = None

    def on_start(self, info: RunInfo) -> None:
        self.info = info

    def on_round(self, event: RoundEvent) -> None:
        self.events.append(event)

    def on_finish(self, summary: RunSummary) -> None:
        self.summary = summary
