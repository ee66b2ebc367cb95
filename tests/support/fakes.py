"""The one fake runner for server and dashboard tests: `fedgen.runner.run`'s call, no training.

`FakeRunner` drives a sink exactly as the real runner does (RunInfo, one RoundEvent per
round, checkpoints on the event, a RunSummary), with deterministic values, resume from
its own 'full' checkpoints, and hooks to fail, die or act after a round.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fedgen.events import (
    Checkpoint,
    RoundEvent,
    RunInfo,
    RunSummary,
    SummaryStatus,
    UserRoundMetrics,
)
from fedgen.spec import ExperimentSpec

NUM_CLASSES = 2
# ms per user local update: FedGen's generator makes its updates slower (paper Table 3).
USER_MS = {"fedgen": 58.0}
DEFAULT_USER_MS = 48.0


class Killed(BaseException):
    """Simulates the worker process dying mid-run (not an Exception: nothing catches it)."""


def die_after(round_: int) -> Callable[[int], None]:
    """A FakeRunner `on_round` hook: the worker dies (Killed) once round `round_` is stored."""

    def hook(r: int) -> None:
        if r == round_:
            raise Killed(r)

    return hook


def fake_acc(seed: int, r: int, algorithm: str = "fedavg") -> float:
    """A deterministic accuracy curve; FedGen's rises faster, each seed adds 0.001."""
    rate = 0.6 if algorithm == "fedgen" else 0.7
    return round(0.1 + 0.8 * (1 - rate**r) + 0.001 * seed, 6)


def _generator_bytes(round_: int) -> bytes:
    """A real (tiny, untrained) generator checkpoint, as the FedGen runner writes them."""
    from fedgen.models.generator import GeneratorConfig, build_generator, generator_checkpoint

    cfg = GeneratorConfig(noise_dim=4, hidden_dim=16, latent_dim=8, num_classes=NUM_CLASSES)
    return generator_checkpoint(build_generator(cfg, seed=round_), round_)


class FakeRunner:
    """Stands in for fedgen.runner.run: deterministic rounds through the sink.

    Each round reports `fake_acc`, the losses and timings the pages chart, and one row per
    user (accuracies spread around the round's); a 'full' checkpoint every
    `spec.checkpoint_every` rounds (resuming from it continues the curve). FedGen runs
    also report the generator's losses and write a real generator checkpoint per round.
    `fail_at` raises in that round, `kill_at` raises `Killed`, `on_round(r)` runs after
    round r; `calls` records the start round of each call.
    """

    def __init__(
        self,
        fail_at: int | None = None,
        kill_at: int | None = None,
        on_round: Callable[[int], None] | None = None,
        versions: dict[str, str] | None = None,
    ) -> None:
        self.fail_at, self.kill_at, self.on_round = fail_at, kill_at, on_round
        self.versions = versions or {"fedgen": "test"}
        self.calls: list[int] = []

    def __call__(
        self,
        spec: ExperimentSpec,
        sink: Any,
        resume_from: bytes | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> RunSummary:
        start = json.loads(resume_from)["round"] + 1 if resume_from else 0
        self.calls.append(start)
        sink.on_start(self._info(spec, start))
        accs: list[float] = []
        for r in range(start, spec.rounds + 1):
            if r > start and should_stop is not None and should_stop():
                return self._summary(SummaryStatus.STOPPED, r - 1, accs)
            if r == self.fail_at:
                raise RuntimeError(f"simulated failure in round {r}")
            if r == self.kill_at:
                raise Killed(r)
            accs.append(fake_acc(spec.seed, r, spec.algorithm.name))
            sink.on_round(self._round(spec, r, accs[-1]))
            if self.on_round:
                self.on_round(r)
        summary = self._summary(SummaryStatus.COMPLETED, spec.rounds, accs)
        sink.on_finish(summary)
        return summary

    def _info(self, spec: ExperimentSpec, start: int) -> RunInfo:
        n = spec.partition.num_users
        return RunInfo(
            spec_hash=spec.spec_hash(),
            partition_fingerprint=f"fp-{spec.partition.alpha}",
            num_users=n,
            num_classes=NUM_CLASSES,
            train_sizes=[10] * n,
            test_sizes=[5] * n,
            label_histogram=[[5] * NUM_CLASSES] * n,
            model_params=100,
            device=spec.device,
            fidelity={"profile": "official"},
            start_round=start,
            versions=dict(self.versions),
        )

    @staticmethod
    def _round(spec: ExperimentSpec, r: int, acc: float) -> RoundEvent:
        fedgen = spec.algorithm.name == "fedgen"
        user_accs = [
            min(max(acc + 0.05 * (u % 3 - 1), 0.0), 1.0) for u in range(spec.partition.num_users)
        ]
        metrics = {
            "test_acc": acc,
            "test_loss": 1 - acc,
            "train_loss": 2.0 * (1 - acc),
            "lr": spec.lr,
            "user_acc_mean": sum(user_accs) / len(user_accs),
            "user_acc_min": min(user_accs),
            "bytes_down": 1e5,
            "bytes_up": 1e5,
            "time_user_ms": USER_MS.get(spec.algorithm.name, DEFAULT_USER_MS),
            "time_train_ms": 100.0,
            "time_server_ms": 20.0,
            "time_eval_ms": 10.0,
            "time_total_ms": 140.0,
        }
        ckpts = []
        if spec.checkpoint_every and r % spec.checkpoint_every == 0:
            ckpts.append(Checkpoint("full", r, json.dumps({"round": r}).encode()))
        if fedgen:
            metrics |= {
                "gen_teacher_loss": 1.0 / (r + 1),
                "gen_diversity_loss": 0.5,
                "gen_ensemble_acc": acc,
                "gen_train_ms": 15.0,
            }
            if r > 0:
                ckpts.append(Checkpoint("generator", r, _generator_bytes(r)))
        users = [
            UserRoundMetrics(u, a, 1.0, 5, u < spec.users_per_round, 3.0, 0.4)
            for u, a in enumerate(user_accs)
        ]
        return RoundEvent(r, metrics, users, ckpts)

    @staticmethod
    def _summary(status: SummaryStatus, done: int, accs: list[float]) -> RunSummary:
        last = accs[-1] if accs else 0.0
        return RunSummary(
            status=status,
            rounds_done=done,
            final_acc=last,
            best_acc=max(accs, default=0.0),
            top5_mean=last,
            top5_std=0.0,
            statistic="final",
            value=last,
            wall_s=0.0,
        )
