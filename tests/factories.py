"""Plain typed factories for server tests: specs, users, runs, rounds, and a fake runner."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from api.models import Run, User
from api.repository import metrics as metrics_repo
from api.repository import runs as runs_repo
from api.repository import users as users_repo
from fedgen.events import Checkpoint, RoundEvent, RunInfo, RunSummary, UserRoundMetrics
from fedgen.spec import ExperimentSpec, parse_spec
from fedgen.sweep import SweepSpec, expand


def make_spec(**overrides: Any) -> dict[str, Any]:
    """A tiny valid spec as a dict; nested overrides merge (e.g. partition={'alpha': 1.0})."""
    spec: dict[str, Any] = {
        "data": {"name": "synthetic", "synthetic_samples": 400},
        "partition": {"num_users": 3},
        "users_per_round": 2,
        "rounds": 2,
        "local_steps": 2,
        "checkpoint_every": 1,
    }
    for k, v in overrides.items():
        if isinstance(v, dict) and isinstance(spec.get(k), dict):
            spec[k] = {**spec[k], **v}
        else:
            spec[k] = v
    return spec


def create_user(session: Session, name: str = "alice", is_admin: bool = False) -> tuple[User, str]:
    """A user and a fresh token (committed)."""
    user, token = users_repo.create_user(session, name, is_admin)
    session.commit()
    return user, token


def create_run(
    session: Session, owner: User, sweep_id: uuid.UUID | None = None, **overrides: Any
) -> Run:
    """A queued run of make_spec(**overrides) (committed)."""
    spec = parse_spec(make_spec(**overrides))
    run = runs_repo.create_run(
        session,
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        owner_id=owner.id,
        queue="cpu",
        sweep_id=sweep_id,
    )
    session.commit()
    return run


def create_sweep_runs(
    session: Session, owner: User, grid: dict[str, list[Any]], base: dict[str, Any] | None = None
) -> tuple[uuid.UUID, list[Run]]:
    """A sweep row and its expanded runs, committed (no enqueue)."""
    from api.repository import sweeps as sweeps_repo

    base = base or make_spec()
    sweep = sweeps_repo.create_sweep(session, name="t", base=base, grid=grid, owner_id=owner.id)
    runs = []
    for spec in expand(SweepSpec(name="t", base=base, grid=grid)):
        runs.append(
            runs_repo.create_run(
                session,
                spec=spec.model_dump(mode="json"),
                spec_hash=spec.spec_hash(),
                owner_id=owner.id,
                queue="cpu",
                sweep_id=sweep.id,
            )
        )
    session.commit()
    return sweep.id, runs


def seed_rounds(
    session: Session,
    run: Run,
    accs: list[float],
    status: str = "succeeded",
    users: int = 0,
    extra: Callable[[int], dict[str, float]] | None = None,
) -> None:
    """Write rounds 0..len(accs)-1 through the real write path, then set the status."""
    token = "seed"
    session.query(Run).filter(Run.id == run.id).update({"lease_token": token, "status": "running"})
    for r, acc in enumerate(accs):
        user_rows = [
            {
                "user": u,
                "test_acc": acc,
                "test_loss": 1.0,
                "num_test": 10,
                "selected": u % 2 == 0,
                "train_ms": 5.0,
                "train_loss": 0.5,
            }
            for u in range(users)
        ]
        metrics = {"test_acc": acc, "test_loss": 1.0 - acc, **(extra(r) if extra else {})}
        metrics_repo.write_round(
            session,
            run.id,
            token,
            round_=r,
            metrics=metrics,
            users=user_rows,
            checkpoints=[],
            lease_s=60,
        )
    runs_repo.finish(session, run.id, token, status=status)
    session.commit()


class Killed(BaseException):
    """Simulates the worker process dying mid-run (not an Exception: nothing catches it)."""


def fake_acc(seed: int, r: int) -> float:
    """A deterministic accuracy curve."""
    return round(0.1 + 0.8 * (1 - 0.7**r) + 0.001 * seed, 6)


class FakeRunner:
    """Stands in for fedgen.runner.run: deterministic rounds, 'full' checkpoints, hooks for faults."""

    def __init__(
        self,
        fail_at: int | None = None,
        kill_at: int | None = None,
        on_round: Callable[[int], None] | None = None,
    ) -> None:
        self.fail_at, self.kill_at, self.on_round = fail_at, kill_at, on_round
        self.calls: list[int] = []  # start round of each call

    def __call__(
        self,
        spec: ExperimentSpec,
        sink: Any,
        resume_from: bytes | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> RunSummary:
        start = json.loads(resume_from)["round"] + 1 if resume_from else 0
        self.calls.append(start)
        n = spec.partition.num_users
        sink.on_start(
            RunInfo(
                spec_hash=spec.spec_hash(),
                partition_fingerprint="fp" + spec.spec_hash()[:8],
                num_users=n,
                num_classes=2,
                train_sizes=[10] * n,
                test_sizes=[5] * n,
                label_histogram=[[5, 5]] * n,
                model_params=100,
                device=spec.device,
                fidelity={"profile": "official"},
                start_round=start,
                versions={"fedgen": "test"},
            )
        )
        accs: list[float] = []
        for r in range(start, spec.rounds + 1):
            if r > start and should_stop is not None and should_stop():
                return self._summary("stopped", r - 1, accs)
            if r == self.fail_at:
                raise RuntimeError(f"simulated failure in round {r}")
            if r == self.kill_at:
                raise Killed(r)
            acc = fake_acc(spec.seed, r)
            accs.append(acc)
            ckpts = []
            if spec.checkpoint_every and r % spec.checkpoint_every == 0:
                ckpts.append(Checkpoint("full", r, json.dumps({"round": r}).encode()))
            users = [
                UserRoundMetrics(u, acc, 1.0, 5, u < spec.users_per_round, 3.0, 0.4)
                for u in range(n)
            ]
            sink.on_round(
                RoundEvent(
                    r, {"test_acc": acc, "test_loss": 1 - acc, "time_user_ms": 3.0}, users, ckpts
                )
            )
            if self.on_round:
                self.on_round(r)
        summary = self._summary("completed", spec.rounds, accs)
        sink.on_finish(summary)
        return summary

    @staticmethod
    def _summary(status: str, done: int, accs: list[float]) -> RunSummary:
        last = accs[-1] if accs else 0.0
        return RunSummary(
            status=status,
            rounds_done=done,
            final_acc=last,  # type: ignore[arg-type]
            best_acc=max(accs, default=0.0),
            top5_mean=last,
            top5_std=0.0,
            statistic="final",
            value=last,
            wall_s=0.0,
        )
