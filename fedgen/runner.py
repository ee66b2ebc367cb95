"""The round loop: `run(spec, sink, resume_from=None, should_stop=None)`, and `run_twins`.

Each round: sample users, let each selected user train locally, let the server
aggregate (and train whatever it trains), evaluate, emit one `RoundEvent`.
Round 0 reports the initial model. Checkpoints ride on the round's event, so a
sink can store a round's metrics and its checkpoint together or not at all.
`run_twins` trains once for specs that differ only in the test protocol and reports
each round to every one of them, evaluated under its own protocol
(`fedgen.protocol_twins`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fedgen import checkpoint
from fedgen.algorithms.base import Algorithm, build_algorithm
from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.algorithms.registry import get_algorithm
from fedgen.augment import augmenter_for
from fedgen.data.datasets import load_dataset
from fedgen.data.partition import Partition, build_partition
from fedgen.evaluation import Evaluation, evaluate_validation
from fedgen.events import (
    Checkpoint,
    RoundEvent,
    RunInfo,
    RunSummary,
    Sink,
    SummaryStatus,
    UserRoundMetrics,
)
from fedgen.execution import Execution, choose, chunk_size, chunks, client_bytes, free_memory
from fedgen.federated import FederatedData
from fedgen.fidelity import Fidelity, resolve
from fedgen.models.decl import ModelConfig
from fedgen.protocol_twins import check_twins
from fedgen.sampling import sample_users, user_sampler
from fedgen.sizes import FULL_USER_ROWS
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.stats import curve_statistic, summarize_curve, val_best
from fedgen.versions import versions


class RunError(RuntimeError):
    """A run that cannot start or continue (bad device, foreign checkpoint, ...)."""


def resolve_device(name: str) -> torch.device:
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RunError(f"device={name!r} requested but no CUDA device is available on this machine")
    return device


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _train_loss(upload: ClientUpload) -> torch.Tensor:
    if upload.train_loss is None:
        raise RunError(f"user {upload.user}'s upload carries no training loss")
    return upload.train_loss


class Simulation:
    """A prepared run: data on the device, partition, algorithm, sampler. `run()` drives it."""

    def __init__(self, spec: ExperimentSpec) -> None:
        self.spec = spec
        self.fid: Fidelity = resolve(spec)
        self.device = resolve_device(spec.device)
        ds = load_dataset(spec.data, spec.partition)
        self.data_files = [f.to_dict() for f in ds.files]  # what was read, for the run's info
        self.partition: Partition = build_partition(ds, spec.partition, self.fid.draws)
        self.data = FederatedData.build(ds, self.partition, self.device)
        augment = augmenter_for(spec.data.resolved_augment, spec.seed)
        if augment is not None:  # the training batches' transform (data.augment)
            self.data = replace(self.data, augment=augment)
        self.label_histogram = self.partition.label_histogram(ds.train_y.numpy())
        c, h, w = self.data.input_shape
        cfg = ModelConfig(
            spec.model.name,
            c,
            h,
            self.data.num_classes,
            spec.model.resolved_norm,
            w,
            spec.algorithm.projection_head_dim,  # MOON's head: part of the federated model
        )
        self.ctx = RunContext(spec, self.fid, self.data, self.device, cfg, spec.seed)
        self.algo: Algorithm[Any] = build_algorithm(self.ctx)
        self.execution = self._execution()
        self.sampler = user_sampler(spec.seed)  # fedgen.sampling replays its draws
        self.history: list[float] = []
        self.val_history: list[float] = []  # val_acc per round (partition.val_fraction > 0)
        # Per-user lr clock (official): the 0-based round each user last trained in.
        self.lr_clock = [0] * len(self.data.users)
        self.next_round = 0

    def _execution(self) -> Execution:
        """The spec's `execution` for this device and torch's thread count (`fedgen.execution`)."""
        model = self.algo.fed.global_model
        mode, reason = choose(
            self.spec.execution,
            device=self.device,
            threads=torch.get_num_threads(),
            batchable=get_algorithm(self.spec.algorithm.name).batchable,
            model=model,
            model_name=self.spec.model.name,
        )
        if mode == "sequential":
            return Execution(mode, reason)
        per_client = client_bytes(
            model,
            self.data.input_shape,
            self.spec.batch_size,
            get_algorithm(self.spec.algorithm.name).batched_state_copies,
        )
        chunk = chunk_size(
            self.spec.batch_clients,
            self.spec.users_per_round,
            per_client,
            free_memory(self.device),
        )
        return Execution(mode, reason, chunk)

    # -- state -----------------------------------------------------------------
    def full_state(self, server_round: int) -> dict[str, Any]:
        state = self._state(server_round)
        if self.spec.execution != "sequential":
            # A resumed segment continues as this one ran (`auto` may pick otherwise there).
            ex = self.execution
            state["execution"] = {"mode": ex.mode, "reason": ex.reason, "chunk": ex.chunk}
        if self.data.augment is not None:  # its draws continue where they were
            state["augment"] = self.data.augment.state_dict()
        return state

    def _state(self, server_round: int) -> dict[str, Any]:
        return {
            "format": checkpoint.FORMAT_VERSION,
            "round": server_round,
            "spec_hash": self.spec.spec_hash(),
            "result_hash": self.spec.result_hash(),
            "partition_fingerprint": self.partition.fingerprint(),
            "spec_json": self.spec.canonical_json(),
            "history": list(self.history),
            "val_history": list(self.val_history),
            "sampler": self.sampler.bit_generator.state,
            "lr_clock": list(self.lr_clock),
            "algorithm": self.algo.state_dict(),
        }

    def _continues(self, state: dict[str, Any]) -> bool:
        """Whether this spec continues the checkpoint's run: the same result hash, or the same
        spec but for more rounds (`fedgen resume --rounds N` extends a run: no round before R
        depends on R, so rounds 0..R are the ones a run of N rounds has)."""
        if state.get("result_hash") == self.spec.result_hash():
            return True
        raw = state.get("spec_json")
        if not isinstance(raw, str) or int(state.get("round", 0)) > self.spec.rounds:
            return False
        try:
            theirs = parse_spec({**json.loads(raw), "rounds": self.spec.rounds})
        except (ValueError, SpecError):
            return False
        return theirs.result_hash() == self.spec.result_hash()

    def restore(self, source: bytes | str | Path) -> None:
        state = checkpoint.read(source, self.device)
        if not self._continues(state):
            raise RunError(
                "checkpoint belongs to a different spec (result hash differs); cannot resume"
            )
        if state.get("partition_fingerprint") != self.partition.fingerprint():
            raise RunError("checkpoint was made on a different partition (fingerprint differs)")
        self.algo.load_state_dict(state["algorithm"])
        self.sampler.bit_generator.state = state["sampler"]
        self.lr_clock = [int(t) for t in state["lr_clock"]]
        self.history = [float(a) for a in state["history"]]
        self.val_history = [float(a) for a in state.get("val_history", [])]
        self.next_round = int(state["round"]) + 1
        if self.data.augment is not None and isinstance(state.get("augment"), dict):
            self.data.augment.load_state_dict(state["augment"])
        if isinstance(state.get("execution"), dict):
            ex = state["execution"]
            chunk = None if ex["chunk"] is None else int(ex["chunk"])
            self.execution = Execution(str(ex["mode"]), f"as checkpointed: {ex['reason']}", chunk)

    def info(self) -> RunInfo:
        return RunInfo(
            spec_hash=self.spec.spec_hash(),
            partition_fingerprint=self.partition.fingerprint(),
            num_users=len(self.data.users),
            num_classes=self.data.num_classes,
            train_sizes=[u.num_train for u in self.data.users],
            test_sizes=[u.num_test for u in self.data.users],
            label_histogram=self.label_histogram.tolist(),
            model_params=sum(v.numel() for v in self.algo.global_state().values()),
            device=str(self.device),
            execution=self.execution.mode,
            execution_reason=self.execution.reason,
            batch_clients=self.execution.chunk,
            fidelity=self.fid.as_dict(),
            start_round=self.next_round,
            versions=versions(),
            data_files=self.data_files,
        )

    # -- rounds ----------------------------------------------------------------
    def _event(
        self,
        server_round: int,
        ev: Evaluation,
        metrics: dict[str, float],
        selected_ms: dict[int, tuple[float, float]],
    ) -> RoundEvent:
        acc = ev.user_acc.tolist()
        loss = (ev.user_loss / ev.user_count.clamp(min=1)).tolist()
        # Cross-device runs (more than FULL_USER_ROWS users) evaluate and report the round's
        # trained users alone (`evaluated`; round 0: everybody, no rows): 10,000 users' own
        # models every round would dwarf the round's training (docs/metrics.md).
        cross_device = len(self.data.users) > FULL_USER_ROWS
        rows = sorted(selected_ms) if cross_device else range(len(self.data.users))
        seen = [acc[k] for k in rows] if cross_device and selected_ms else acc
        users = [
            UserRoundMetrics(
                user=k,
                test_acc=acc[k],
                test_loss=loss[k],
                num_test=int(ev.user_count[k]),
                selected=k in selected_ms,
                train_ms=selected_ms[k][0] if k in selected_ms else None,
                train_loss=selected_ms[k][1] if k in selected_ms else None,
            )
            for k in rows
        ]
        metrics = {
            "test_acc": ev.global_acc,
            "test_loss": ev.global_loss,
            "user_acc_mean": float(np.mean(seen)),
            "user_acc_min": float(np.min(seen)),
            **metrics,
        }
        if self.data.val_idx.numel():  # partition.val_fraction > 0: the global model's
            val_acc, val_loss = evaluate_validation(
                self.algo.validation_logits(), self.data, self.spec.eval_batch_size
            )
            metrics |= {"val_acc": val_acc, "val_loss": val_loss}
            self.val_history.append(val_acc)
        self.history.append(ev.global_acc)
        return RoundEvent(server_round, metrics, users)

    def initial_event(self) -> RoundEvent:
        t0 = time.perf_counter()
        ev = self.algo.evaluate()
        ms = (time.perf_counter() - t0) * 1e3
        return self._event(0, ev, {"lr": self.spec.lr, "time_eval_ms": ms, "time_total_ms": ms}, {})

    def client_lr(self, user: int, server_round: int) -> float:
        """lr0 x decay^t: t the round index, or (official) the round the user last trained in."""
        t = server_round - 1 if self.fid.lr_schedule == "per_round" else self.lr_clock[user]
        decay: float = self.fid.lr_decay
        return self.spec.lr * decay**t

    def round(self, server_round: int) -> RoundEvent:
        """Train round `server_round` and evaluate it: its event (without checkpoints)."""
        return self.evaluated(self.train(server_round))

    def train(self, server_round: int) -> Trained:
        """Sample, train the chosen users, aggregate: everything of the round but evaluation."""
        spec, algo, device = self.spec, self.algo, self.device
        t_round = time.perf_counter()
        chosen = sample_users(self.sampler, len(self.data.users), spec.users_per_round)
        if self.execution.mode == "batched":
            uploads, user_ms, lrs = self.train_batched(chosen.tolist(), server_round)
        else:
            uploads, user_ms, lrs = self.train_sequential(chosen.tolist(), server_round)
        bytes_down = sum(algo.broadcast_nbytes(self.data.users[k]) for k in chosen.tolist())
        t_server = time.perf_counter()
        alg_metrics = algo.server_update(uploads, server_round)
        _sync(device)
        t_trained = time.perf_counter()
        # Every upload carries its loss (a 0-d tensor): one host sync reads them all.
        losses = torch.stack([_train_loss(u) for u in uploads]).tolist()
        selected = {
            u.user: (ms, loss) for u, ms, loss in zip(uploads, user_ms, losses, strict=True)
        }
        metrics = {
            "lr": float(np.mean(lrs)),
            "bytes_down": float(bytes_down),
            "bytes_up": float(sum(u.nbytes() for u in uploads)),
            "train_loss": float(np.mean(losses)) if losses else float("nan"),
            "time_train_ms": float(sum(user_ms)),
            "time_user_ms": float(np.mean(user_ms)),
            "time_server_ms": (t_trained - t_server) * 1e3,
        }
        return Trained(server_round, metrics, alg_metrics, selected, (t_trained - t_round) * 1e3)

    def evaluated(self, trained: Trained) -> RoundEvent:
        """The trained round's event under this simulation's protocol (`as_twin` sets it)."""
        t_eval = time.perf_counter()
        fed = self.algo.fed
        if len(self.data.users) > FULL_USER_ROWS:  # cross-device: the trained users' models
            fed.eval_users = sorted(trained.selected)
        try:
            ev = self.algo.evaluate()
        finally:
            fed.eval_users = None
        eval_ms = (time.perf_counter() - t_eval) * 1e3
        metrics = {
            **trained.metrics,
            "time_eval_ms": eval_ms,
            "time_total_ms": trained.ms + eval_ms,
            **trained.alg_metrics,
        }
        return self._event(trained.round, ev, metrics, trained.selected)

    @contextmanager
    def as_twin(self, twin: Twin) -> Iterator[None]:
        """Evaluate, checkpoint and summarise as `twin` (its spec, fidelity and history).

        Twins differ only in the test protocol, which the algorithms read through their
        `fid` when they evaluate (`fedgen.protocol_twins`); training is shared.
        """
        algo = self.algo
        saved = (self.spec, self.fid, self.history, self.val_history, algo.fid, algo.fed.fid)
        self.spec, self.fid, self.history = twin.spec, twin.fid, twin.history
        self.val_history = twin.val_history
        algo.fid = algo.fed.fid = twin.fid
        try:
            yield
        finally:
            self.spec, self.fid, self.history, self.val_history, algo.fid, algo.fed.fid = saved

    def train_sequential(
        self, chosen: list[int], server_round: int
    ) -> tuple[list[ClientUpload], list[float], list[float]]:
        """The chosen users' updates one after another: uploads, each user's ms and lr."""
        uploads, user_ms, lrs = [], [], []
        for k in chosen:
            user = self.data.users[k]
            t0 = time.perf_counter()
            lrs.append(self.client_lr(k, server_round))
            uploads.append(self.algo.client_update(user, server_round, lrs[-1]))
            self.lr_clock[k] = server_round - 1
            _sync(self.device)
            user_ms.append((time.perf_counter() - t0) * 1e3)
        return uploads, user_ms, lrs

    def train_batched(
        self, chosen: list[int], server_round: int
    ) -> tuple[list[ClientUpload], list[float], list[float]]:
        """The chosen users' updates in chunks of `execution.chunk` computations: uploads,
        each user's ms (its chunk's time shared equally) and learning rates, in `chosen` order."""
        assert self.execution.chunk is not None
        uploads: list[ClientUpload] = []
        user_ms: list[float] = []
        lrs = [self.client_lr(k, server_round) for k in chosen]
        for part in chunks(list(range(len(chosen))), self.execution.chunk):
            t0 = time.perf_counter()
            users = [self.data.users[chosen[i]] for i in part]
            uploads += self.algo.client_update_batch(users, server_round, [lrs[i] for i in part])
            _sync(self.device)
            user_ms += [(time.perf_counter() - t0) * 1e3 / len(part)] * len(part)
        for k in chosen:
            self.lr_clock[k] = server_round - 1
        return uploads, user_ms, lrs

    def checkpoints_for(self, server_round: int) -> list[Checkpoint]:
        every, last = self.spec.checkpoint_every, self.spec.rounds
        out: list[Checkpoint] = []
        if server_round == last or (every > 0 and server_round > 0 and server_round % every == 0):
            out.append(
                Checkpoint("full", server_round, checkpoint.to_bytes(self.full_state(server_round)))
            )
            out.extend(self.algo.checkpoints(server_round))
        if server_round == last:
            model = {
                "round": server_round,
                "spec_json": self.spec.canonical_json(),
                "model": self.algo.global_state(),
            }
            out.append(Checkpoint("model", server_round, checkpoint.to_bytes(model)))
        return out

    def summary(self, status: SummaryStatus, wall_s: float) -> RunSummary:
        # Only the rounds the protocol evaluates (before_training: not round R, which the
        # official code never sees); `value` is the statistic the fidelity profile reports.
        h = self.history
        rounds, timing = self.spec.rounds, self.fid.eval_timing
        c = summarize_curve(h, timing, rounds)
        vb, vb_round = val_best(h, self.val_history, timing, rounds)
        return RunSummary(
            status=status,
            rounds_done=max(len(h) - 1, 0),
            final_acc=c.final,
            best_acc=c.best,
            top5_mean=c.top5_mean,
            top5_std=c.top5_std,
            statistic=self.fid.statistic,
            value=curve_statistic(h, self.fid.statistic, timing, rounds, self.val_history),
            wall_s=wall_s,
            final_round=c.final_round,
            best_round=c.best_round,
            val_best=vb,
            val_best_round=vb_round,
        )


@dataclass
class Trained:
    """A round trained but not yet evaluated: its metrics so far (the runner's, the
    algorithm's), the selected users' (ms, loss), and the ms it took."""

    round: int
    metrics: dict[str, float]
    alg_metrics: dict[str, float]
    selected: dict[int, tuple[float, float]]
    ms: float


@dataclass
class Twin:
    """One spec of a shared training: where it reports, its fidelity, its accuracy history."""

    spec: ExperimentSpec
    sink: Sink
    fid: Fidelity
    history: list[float] = field(default_factory=list)
    val_history: list[float] = field(default_factory=list)


def run(
    spec: ExperimentSpec,
    sink: Sink,
    resume_from: bytes | str | Path | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> RunSummary:
    """Run `spec` round by round, reporting to `sink`; resume from a 'full' checkpoint if given.

    `should_stop()` is polled between rounds; when it returns True the run ends
    with status 'stopped' after the last completed round.
    """
    t_start = time.perf_counter()
    sim = Simulation(spec)
    if resume_from is not None:
        sim.restore(resume_from)
    (summary,) = _drive(
        sim, [Twin(spec, sink, sim.fid, sim.history, sim.val_history)], should_stop, t_start
    )
    return summary


def run_twins(
    specs: Sequence[ExperimentSpec],
    sinks: Sequence[Sink],
    should_stop: Callable[[], bool] | None = None,
) -> list[RunSummary]:
    """Train once for specs that differ only in `partition.test_protocol` and evaluate
    every round under each one's protocol: each sink gets the events a separate `run` of
    its spec would report (timings aside). ValueError if the specs are not such twins
    (`fedgen.protocol_twins.check_twins`) or the sinks do not pair with them.
    """
    if len(sinks) != len(specs):
        raise ValueError(f"run_twins: {len(specs)} specs but {len(sinks)} sinks")
    check_twins(specs)
    t_start = time.perf_counter()
    sim = Simulation(specs[0])
    twins = [Twin(spec, sink, resolve(spec)) for spec, sink in zip(specs, sinks, strict=True)]
    return _drive(sim, twins, should_stop, t_start)


def _drive(
    sim: Simulation,
    twins: list[Twin],
    should_stop: Callable[[], bool] | None,
    t_start: float,
) -> list[RunSummary]:
    """The round loop: train each round once, then report it to every twin."""
    spec = sim.spec
    for twin in twins:
        with sim.as_twin(twin):
            twin.sink.on_start(sim.info())
    if sim.next_round == 0:
        for twin in twins:
            with sim.as_twin(twin):
                ev0 = sim.initial_event()
                twin.sink.on_round(RoundEvent(0, ev0.metrics, ev0.users, sim.checkpoints_for(0)))
        sim.next_round = 1
    status = SummaryStatus.COMPLETED
    for r in range(sim.next_round, spec.rounds + 1):
        if should_stop is not None and should_stop():
            status = SummaryStatus.STOPPED
            break
        trained = sim.train(r)
        for twin in twins:
            with sim.as_twin(twin):
                event = sim.evaluated(trained)
                twin.sink.on_round(
                    RoundEvent(r, event.metrics, event.users, sim.checkpoints_for(r))
                )
        sim.next_round = r + 1
    wall_s = time.perf_counter() - t_start
    summaries = []
    for twin in twins:
        with sim.as_twin(twin):
            summary = sim.summary(status, wall_s)
        twin.sink.on_finish(summary)
        summaries.append(summary)
    return summaries
